// Acting on runs: the approvals (`#/approvals`: approve or deny each waiting call, then resume
// its session) and a new prompt (`#/new[?session=ID]`: then the run live).

import { enc, h, link, liveHash, plural, prettyJson, sessionHash } from "./dom.js";
import { busy, go, heading, mount, ready } from "./view.js";
import { api, fail, quiet } from "./api.js";

// ---------------------------------------------------------------------------------------------
// Approvals: every pending destructive call, approve or deny, then resume the session

export async function viewApprovals({ signal }) {
  const list = h("ul", { id: "approvals", class: "approvals" });
  const refresh = h("button", { type: "button", class: "secondary" }, "Refresh");
  const root = mount("approvals", "Approvals", heading("Approvals"),
    h("p", { class: "hint" }, "Calls of destructive tools wait here for a decision. Approving runs the call; denying stores the denial as its result. Either way the session's run resumes."),
    h("p", { class: "actions" }, refresh), list);
  refresh.addEventListener("click", () => go("#/approvals"));
  busy(root);
  try {
    const data = await api("GET", "/sessions?status=awaiting_approval&limit=1000");
    const pending = await Promise.all(data.sessions.map((s) =>
      api("GET", `/sessions/${enc(s.id)}/approvals`).then(
        (r) => ({ session: s.id, approvals: r.approvals || [] }),
        (e) => {
          if (quiet(e)) throw e;
          fail(e, `reading the approvals of ${s.id}`);
          return { session: s.id, approvals: [] };
        })));
    if (signal.aborted) return;
    for (const { session, approvals } of pending) {
      for (const a of approvals) list.appendChild(approvalItem(session, a, list));
    }
    if (!list.children.length) {
      list.after(h("p", { id: "approvals-empty", class: "empty" }, "Nothing waits for a decision."));
    }
  } catch (e) {
    if (quiet(e)) return;
    fail(e, "listing the calls that wait for approval");
  }
  ready(root);
}

function approvalItem(session, a, list) {
  const approve = h("button", { type: "button", class: "approve" }, "Approve");
  const deny = h("button", { type: "button", class: "deny danger" }, "Deny");
  const result = h("p", { class: "approval-result", "aria-live": "polite" });
  const li = h("li", { class: "approval", "data-session": session, "data-call-id": a.callId },
    h("p", { class: "approval-head" }, h("span", { class: "tool-name" }, a.tool), " · call ",
      h("code", {}, a.callId), " · session ", link(sessionHash(session), session)),
    h("pre", { class: "arguments" }, prettyJson(a.arguments)),
    h("p", { class: "actions" }, approve, " ", deny),
    result);
  if (a.decision) {
    li.dataset.decided = "true";
    result.textContent = `${a.decision === "approve" ? "approved" : "denied"} earlier; the run has not resumed yet`;
  }
  const buttons = [approve, deny];
  approve.addEventListener("click", () => decide({ session, callId: a.callId, decision: "approve", li, list, buttons, result }));
  deny.addEventListener("click", () => decide({ session, callId: a.callId, decision: "deny", li, list, buttons, result }));
  return li;
}

/**
 * Records a decision, then resumes the session, unless another of its calls listed here
 * still waits for one (the session resumes after the last).
 */
async function decide({ session, callId, decision, li, list, buttons, result }) {
  const past = decision === "approve" ? "approved" : "denied";
  for (const b of buttons) b.disabled = true;
  result.textContent = decision === "approve" ? "approving…" : "denying…";
  try {
    await api("POST", `/sessions/${enc(session)}/approvals/${enc(callId)}`, { decision });
  } catch (e) {
    if (quiet(e)) return;
    result.textContent = `not ${past}: ${e.message}`;
    for (const b of buttons) b.disabled = false;
    fail(e, `recording the decision on ${callId}`);
    return;
  }
  li.dataset.decided = "true";
  const waiting = [...list.querySelectorAll("li.approval")].some(
    (other) => other !== li && other.dataset.session === session && other.dataset.decided !== "true");
  if (waiting) {
    result.textContent = `${past}; the run resumes once this session's other calls are decided`;
    return;
  }
  try {
    const run = await api("POST", `/sessions/${enc(session)}/resume`);
    result.replaceChildren(`${past}; run `, link(liveHash(session, run.runId), run.runId), " resumed");
  } catch (e) {
    if (quiet(e)) return;
    result.textContent = `${past}; resuming failed: ${e.message}`;
    fail(e, `resuming session ${session}`);
  }
}

// ---------------------------------------------------------------------------------------------
// New prompt: a new session or an existing one, a model, then the live view

export async function viewNew({ signal, query }) {
  const wanted = query.get("session") || "";
  const session = h("select", { id: "prompt-session", name: "session" }, h("option", { value: "" }, "a new session"));
  const model = h("select", { id: "prompt-model", name: "model" });
  const text = h("textarea", { id: "prompt-text", name: "prompt", rows: "8", required: true, spellcheck: "true" });
  const submit = h("button", { id: "prompt-submit", type: "submit" }, "Start the run");
  const error = h("p", { id: "prompt-error", class: "form-error", "aria-live": "polite" });
  const form = h("form", { id: "prompt", class: "stacked", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "prompt-session" }, "Session"), session),
    h("div", { class: "field" }, h("label", { for: "prompt-model" }, "Model"), model),
    h("div", { class: "field" }, h("label", { for: "prompt-text" }, "Prompt"), text),
    h("p", { class: "actions" }, submit), error);
  const root = mount("new", "New prompt", heading("New prompt"), form);
  busy(root);
  submit.disabled = true;

  const [sessions, models] = await Promise.all([
    api("GET", "/sessions?limit=100").catch((e) => {
      if (quiet(e)) throw e;
      fail(e, "listing the sessions");
      return { sessions: [] };
    }),
    api("GET", "/models").catch((e) => {
      if (quiet(e)) throw e;
      fail(e, "listing the models");
      return null;
    }),
  ]).catch((e) => {
    if (quiet(e)) return [null, null];
    throw e;
  });
  if (signal.aborted || !sessions) return;
  for (const s of sessions.sessions) {
    session.appendChild(h("option", { value: s.id }, `${s.id} (${s.status}, ${plural(s.messageCount ?? 0, "message", "messages")})`));
  }
  if (wanted && !sessions.sessions.some((s) => s.id === wanted)) {
    session.appendChild(h("option", { value: wanted }, wanted));
  }
  session.value = wanted;
  fillModels(model, models);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submitPrompt({ session, model, text, submit, error, signal });
  });
  submit.disabled = false;
  ready(root);
}

function fillModels(select, data) {
  const list = (data && data.models) || [];
  if (!list.length) {
    select.appendChild(h("option", { value: "" }, "the server's model"));
    return;
  }
  for (const m of list) {
    select.appendChild(h("option", { value: m.name, selected: m.default === true }, m.default ? `${m.name} (default)` : m.name));
  }
}

async function submitPrompt({ session, model, text, submit, error, signal }) {
  error.textContent = "";
  if (!text.value.trim()) {
    error.textContent = "Write a prompt first.";
    text.focus();
    return;
  }
  submit.disabled = true;
  try {
    let id = session.value;
    if (!id) {
      const created = await api("POST", "/sessions");
      id = created.id;
      // A retry after a failed prompt goes to this session, not to yet another new one.
      session.appendChild(h("option", { value: id }, `${id} (new)`));
      session.value = id;
    }
    const body = { prompt: text.value };
    if (model.value) body.model = model.value;
    const run = await api("POST", `/sessions/${enc(id)}/prompts`, body);
    if (!signal.aborted) go(liveHash(id, run.runId));
  } catch (e) {
    if (quiet(e)) return;
    error.textContent = e.message;
    fail(e, "starting the run");
  } finally {
    submit.disabled = false;
  }
}
