// How the server is set up: its tools (`#/tools`: what is loaded, from where, with which grants
// and limits) and its run-time configuration (`#/config`).

import { binarySize, bytes, fmt, h, statusBadge, tableWrap } from "./dom.js";
import { busy, heading, mount, ready } from "./view.js";
import { api, fail, quiet } from "./api.js";

// ---------------------------------------------------------------------------------------------
// Tools: what is loaded, from where, with which grants and limits

export async function viewTools({ signal }) {
  const tbody = h("tbody");
  const table = h("table", { id: "tools" },
    h("caption", { class: "visually-hidden" }, "Tools, in the order the model sees them, then those that did not load"),
    h("thead", {}, h("tr", {}, ["Name", "Available", "Source", "Component", "Digest", "Signature", "Grants", "Limits", "Annotations"].map(
      (t) => h("th", { scope: "col" }, t)))),
    tbody);
  const root = mount("tools", "Tools", heading("Tools"), tableWrap(table, "Tools"));
  busy(root);
  try {
    const data = await api("GET", "/tools");
    if (signal.aborted) return;
    const tools = data.tools || [];
    tbody.replaceChildren(...(tools.length
      ? tools.map(toolRow)
      : [h("tr", {}, h("td", { colspan: "9", class: "empty" }, "No tools are loaded."))]));
  } catch (e) {
    if (quiet(e)) return;
    fail(e, "listing the tools");
  }
  ready(root);
}

function toolRow(t) {
  return h("tr", { "data-tool": t.name },
    h("th", { scope: "row" }, h("code", {}, t.name)),
    h("td", {}, t.available
      ? statusBadge("available")
      : [statusBadge("unavailable"), t.reason ? h("p", { class: "reason" }, t.reason) : null]),
    h("td", {}, t.source ?? "—"),
    h("td", { class: "wrap" }, t.component ?? "—"),
    h("td", {}, digestEl(t.digest)),
    h("td", {}, t.signature ?? "—"),
    h("td", {}, grantsList(t.grants || {})),
    h("td", {}, limitsList(t.limits || {})),
    h("td", {}, annotationWords(t.annotations || {})));
}

function digestEl(digest) {
  if (!digest) return "—";
  const d = String(digest);
  const [algo, hex] = d.includes(":") ? d.split(/:(.*)/s) : ["", d];
  const short = `${algo ? `${algo}:` : ""}${hex.slice(0, 12)}${hex.length > 12 ? "…" : ""}`;
  return h("code", { class: "digest", title: d }, short);
}

function grantsList(g) {
  const items = [];
  const add = (label, values) => {
    if (Array.isArray(values) && values.length) items.push(h("li", {}, `${label}: `, values.join(", ")));
  };
  add("read", g.read);
  add("write", g.write);
  add("http", g.http);
  add("methods", g.httpMethods);
  if (g.toolCalls) items.push(h("li", {}, "calls other tools"));
  return items.length ? h("ul", { class: "plain" }, items) : "no grants";
}

function limitsList(l) {
  const items = [];
  if (typeof l.memoryMib === "number") items.push(h("li", {}, `memory ${fmt(l.memoryMib)} MiB`));
  if (typeof l.timeoutMs === "number") items.push(h("li", {}, `timeout ${fmt(l.timeoutMs)} ms`));
  if (typeof l.httpMaxResponseBytes === "number") {
    items.push(h("li", { title: `HTTP responses up to ${bytes(l.httpMaxResponseBytes)}` }, `HTTP ≤ ${binarySize(l.httpMaxResponseBytes)}`));
  }
  return items.length ? h("ul", { class: "plain limits" }, items) : "—";
}

function annotationWords(a) {
  const words = [];
  if (a.destructive) words.push("destructive");
  if (a.readOnly) words.push("read-only");
  if (a.openWorld) words.push("open-world");
  return words.length ? words.join(", ") : "none";
}

// ---------------------------------------------------------------------------------------------
// Configuration: the run-time keys, PUT only those changed

const CONFIG_NUMBERS = [
  ["max_tool_result_bytes", "Largest tool result kept (bytes)", "max_tool_result_bytes, 1,024 to 1,048,576: a result over this is cut, and the model told how to ask for less."],
  ["max_turns", "Most turns in a run", "max_turns, 1 to 10,000: the most model requests one run makes."],
];

export async function viewConfig({ signal }) {
  const inputs = {};
  const fields = CONFIG_NUMBERS.map(([key, label, hint]) => {
    inputs[key] = h("input", { id: `config-${key}`, name: key, type: "number", inputmode: "numeric", step: "1", "aria-describedby": `config-${key}-hint` });
    return h("div", { class: "field" }, h("label", { for: `config-${key}` }, label), inputs[key],
      h("p", { class: "hint", id: `config-${key}-hint` }, hint));
  });
  inputs.auto_approve = h("input", { id: "config-auto_approve", name: "auto_approve", type: "checkbox", "aria-describedby": "config-auto_approve-hint" });
  const save = h("button", { id: "config-save", type: "submit" }, "Save");
  const message = h("p", { id: "config-message", class: "form-message", "aria-live": "polite" });
  const form = h("form", { id: "config", class: "stacked", novalidate: true }, fields,
    h("div", { class: "field check" }, inputs.auto_approve,
      h("label", { for: "config-auto_approve" }, "Run destructive tools without asking"),
      h("p", { class: "hint", id: "config-auto_approve-hint" }, "auto_approve: when off, a destructive call waits in Approvals.")),
    h("p", { class: "actions" }, save), message);
  const root = mount("config", "Configuration", heading("Configuration"),
    h("p", { class: "hint" }, "Changes apply to runs that start afterwards, in every process sharing the store."), form);

  let loaded = null;
  async function load() {
    busy(root);
    loaded = await api("GET", "/agent/config");
    if (signal.aborted) return;
    for (const [key] of CONFIG_NUMBERS) inputs[key].value = loaded[key] ?? "";
    inputs.auto_approve.checked = loaded.auto_approve === true;
    ready(root);
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!loaded) return;
    const changed = changedConfig(inputs, loaded);
    for (const el of Object.values(inputs)) el.removeAttribute("aria-invalid");
    message.className = "form-message";
    if (!Object.keys(changed).length) {
      message.textContent = "nothing changed";
      return;
    }
    save.disabled = true;
    message.textContent = "saving…";
    try {
      await api("PUT", "/agent/config", changed);
      await load();
      message.textContent = "saved";
      message.classList.add("ok");
    } catch (e) {
      if (quiet(e)) return;
      message.textContent = e.message;
      message.classList.add("error");
      const bad = e.body && inputs[e.body.key];
      if (bad) {
        bad.setAttribute("aria-invalid", "true");
        bad.focus();
      }
      ready(root);
    } finally {
      save.disabled = false;
    }
  });

  try {
    await load();
  } catch (e) {
    if (quiet(e)) return;
    fail(e, "reading the configuration");
    ready(root);
  }
}

/** The keys whose input differs from what was loaded; a number that does not parse goes as typed (the API says why it is wrong). */
function changedConfig(inputs, loaded) {
  const changed = {};
  for (const [key] of CONFIG_NUMBERS) {
    const raw = inputs[key].value.trim();
    const value = /^-?\d+$/.test(raw) ? Number(raw) : raw;
    if (value !== loaded[key]) changed[key] = value;
  }
  if (inputs.auto_approve.checked !== (loaded.auto_approve === true)) changed.auto_approve = inputs.auto_approve.checked;
  return changed;
}
