// The sessions view (`#/sessions`): paged (50), searched by id, filtered by status.

import { classWord, fmt, h, link, sessionHash, tableWrap, timeEl } from "./dom.js";
import { busy, heading, mount, ready, remember } from "./view.js";
import { api, childController, fail, quiet } from "./api.js";

const SESSIONS_PAGE = 50;
const SEARCH_DEBOUNCE_MS = 250;
const STATUSES = ["idle", "running", "awaiting_approval", "completed", "aborted", "error"];

export async function viewSessions({ signal, query }) {
  const state = {
    q: query.get("q") || "",
    status: STATUSES.includes(query.get("status")) ? query.get("status") : "",
    offset: Math.max(0, Number.parseInt(query.get("offset") || "0", 10) || 0),
  };
  const search = h("input", { id: "session-search", type: "search", value: state.q, autocomplete: "off", spellcheck: "false", placeholder: "part of an id" });
  const status = h("select", { id: "session-status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s }, s)));
  status.value = state.status;
  const tbody = h("tbody");
  const table = h("table", { id: "sessions" },
    h("caption", { class: "visually-hidden" }, "Sessions, newest first"),
    h("thead", {}, h("tr", {}, ["Session", "Status", "Created", "Last activity", "Messages"].map(
      (t) => h("th", { scope: "col", class: t === "Messages" ? "num" : null }, t)))),
    tbody);
  const prev = h("button", { id: "sessions-prev", type: "button", disabled: true }, "Previous");
  const next = h("button", { id: "sessions-next", type: "button", disabled: true }, "Next");
  const range = h("span", { id: "sessions-range", class: "range", "aria-live": "polite" });
  const refresh = h("button", { type: "button", class: "secondary" }, "Refresh");
  const filters = h("form", { class: "toolbar", role: "search", novalidate: true },
    h("div", { class: "field" }, h("label", { for: "session-search" }, "Search by id"), search),
    h("div", { class: "field" }, h("label", { for: "session-status" }, "Status"), status),
    refresh);
  const root = mount("sessions", "Sessions", heading("Sessions"), filters,
    tableWrap(table, "Sessions"), h("div", { class: "pager" }, prev, range, next));

  let loading = null;
  async function load() {
    loading?.abort();
    loading = childController(signal);
    const { signal: s } = loading;
    busy(root);
    const params = new URLSearchParams({ limit: String(SESSIONS_PAGE), offset: String(state.offset) });
    if (state.q) params.set("q", state.q);
    if (state.status) params.set("status", state.status);
    const kept = new URLSearchParams(params);
    kept.delete("limit");
    if (state.offset === 0) kept.delete("offset");
    remember(`#/sessions${kept.toString() ? `?${kept}` : ""}`);
    try {
      const data = await api("GET", `/sessions?${params}`, undefined, { signal: s });
      const total = data.total ?? data.sessions.length;
      if (data.sessions.length === 0 && state.offset > 0 && total > 0) {
        state.offset = Math.floor((total - 1) / SESSIONS_PAGE) * SESSIONS_PAGE;
        return load();
      }
      tbody.replaceChildren(...sessionRows(data.sessions));
      const first = data.sessions.length ? state.offset + 1 : 0;
      const last = state.offset + data.sessions.length;
      range.textContent = data.sessions.length ? `${fmt(first)}–${fmt(last)} of ${fmt(total)}` : `0 of ${fmt(total)}`;
      prev.disabled = state.offset === 0;
      next.disabled = last >= total;
      ready(root);
    } catch (e) {
      if (quiet(e)) return;
      fail(e, "listing the sessions");
      tbody.replaceChildren(h("tr", {}, h("td", { colspan: "5" }, "The sessions could not be listed (see the error above).")));
      ready(root);
    }
  }

  let timer = 0;
  signal.addEventListener("abort", () => clearTimeout(timer));
  const searchNow = () => {
    clearTimeout(timer);
    state.q = search.value.trim();
    state.offset = 0;
    load();
  };
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(searchNow, SEARCH_DEBOUNCE_MS);
  });
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    searchNow();
  });
  status.addEventListener("change", () => {
    state.status = status.value;
    state.offset = 0;
    load();
  });
  refresh.addEventListener("click", () => load());
  prev.addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - SESSIONS_PAGE);
    load();
  });
  next.addEventListener("click", () => {
    state.offset += SESSIONS_PAGE;
    load();
  });
  await load();
}

function sessionRows(sessions) {
  if (sessions.length === 0) {
    return [h("tr", {}, h("td", { colspan: "5", class: "empty" }, "No sessions match."))];
  }
  return sessions.map((s) => h("tr", { "data-session": s.id },
    h("th", { scope: "row" }, link(sessionHash(s.id), s.id)),
    h("td", { class: `status status-${classWord(s.status)}`, title: s.lastError || null }, s.status),
    h("td", {}, timeEl(s.createdAt)),
    h("td", {}, timeEl(s.updatedAt)),
    h("td", { class: "num" }, fmt(s.messageCount))));
}
