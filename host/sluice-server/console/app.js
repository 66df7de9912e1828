// Sluice's operator console: one plain-JavaScript module, no build step, no library.
//
// Served by `sluice serve` under a strict Content-Security-Policy: no inline script or style,
// no eval, no other origin. Every string that comes from the API (transcripts, tool names and
// arguments, errors, ids) reaches the page as text: through `h()` (text nodes and
// setAttribute) or textContent, never as HTML.
//
// Layout: helpers (DOM, formatting, the token, `api()`), the router, then one section per view
// (sign-in, sessions, session, live, approvals, new prompt, tools, configuration). Each view
// mounts its root in `main#view` with `data-view`, and sets `data-ready="true"` once its data
// is loaded and rendered (`"false"` again while it reloads); navigating away aborts its
// requests and streams.

const TOKEN_KEY = "sluice.token";
const SESSIONS_PAGE = 50;
const TRANSCRIPT_PAGE = 100;
const SEARCH_DEBOUNCE_MS = 250;
const STATUSES = ["idle", "running", "awaiting_approval", "completed", "aborted", "error"];
const CUT_MARKER = "…[truncated; full result is ";

// ---------------------------------------------------------------------------------------------
// DOM

/**
 * Builds an element: `attrs` through setAttribute (`true` sets an empty attribute, `false`,
 * `null` and `undefined` set none), children as nodes or as text. Refuses event-handler and
 * style attributes, and links that are not fragments or paths on this server.
 */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    const lower = name.toLowerCase();
    if (lower.startsWith("on") || lower === "style" || lower === "srcdoc") {
      throw new Error(`h(): refusing attribute ${name} (handlers and styles are not set as markup)`);
    }
    if (value === false || value === null || value === undefined) continue;
    if ((lower === "href" || lower === "src") && !/^(#|\/(?!\/))/.test(String(value))) {
      throw new Error(`h(): refusing ${name} ${JSON.stringify(String(value))} (only #… and /… are linked)`);
    }
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children: nodes as they are, arrays flattened, anything else as a text node. */
function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
  return el;
}

const $ = (selector, root = document) => root.querySelector(selector);

/** A status word with its colour class (`status status-<word>`). */
function statusBadge(word, attrs = {}) {
  const w = String(word ?? "unknown");
  return h("span", { ...attrs, class: `status status-${classWord(w)}` }, w);
}

/** Sets an element's text to a status word and its class to match. */
function setStatus(el, word, extraClass = "") {
  el.textContent = word;
  el.className = `status status-${classWord(word)}${extraClass ? ` ${extraClass}` : ""}`;
}

const classWord = (w) => String(w).toLowerCase().replace(/[^a-z0-9_-]/g, "");

/** A link inside the console (an id goes into the hash encoded). */
const link = (hash, text, attrs = {}) => h("a", { ...attrs, href: hash }, text);

const enc = encodeURIComponent;

const sessionHash = (id) => `#/sessions/${enc(id)}`;
const liveHash = (id, runId) => `#/sessions/${enc(id)}/live${runId ? `?run=${enc(runId)}` : ""}`;

// ---------------------------------------------------------------------------------------------
// Formatting

/** An integer with thousands separators: 1234567 → "1,234,567". */
function fmt(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return String(n ?? "—");
  return groupDigits(String(Math.trunc(n)));
}

const groupDigits = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");

const bytes = (n) => `${fmt(n)} bytes`;

/** Bytes as KiB/MiB with one decimal (the exact count goes in a title). */
function binarySize(n) {
  if (typeof n !== "number") return "—";
  if (n >= 1048576) return `${(n / 1048576).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return bytes(n);
}

/** A string's length in UTF-8 bytes, without encoding it. */
function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

const plural = (n, one, many) => `${fmt(n)} ${n === 1 ? one : many}`;

/** A `<time>` in local time ("2026-11-30 04:03:08"), the stored ISO time as its title. */
function timeEl(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, "0");
  const text = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return h("time", { datetime: iso, title: iso }, text);
}

/** JSON text pretty-printed when it parses; anything else as it is. */
function prettyJson(value) {
  if (typeof value !== "string") return JSON.stringify(value, null, 2) ?? "";
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

const clip = (s, max) => (s.length > max ? `${s.slice(0, max)}…` : s);

// ---------------------------------------------------------------------------------------------
// The token (sessionStorage only; an in-memory copy when storage is unavailable)

let memoryToken = null;

/** The token, "" for a server without one, or null when signed out. */
function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return memoryToken;
  }
}

function setToken(token) {
  memoryToken = token;
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    /* storage refused: the in-memory copy lasts until the page is closed */
  }
}

function clearToken() {
  memoryToken = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* nothing stored */
  }
}

const signedIn = () => getToken() !== null;

// ---------------------------------------------------------------------------------------------
// The API

/** An API failure: `status` (0 when the server was not reached) and the API's `error` text. */
class ApiError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

/**
 * Sends a request and answers its Response when 2xx. The bearer token goes in
 * `Authorization` (not when it is empty); a body goes as JSON. A 401 signs out.
 * Options: `signal` (default: the current view's), `token` (default: the stored one),
 * `accept`.
 */
async function request(method, path, body, opts = {}) {
  const token = opts.token !== undefined ? opts.token : getToken();
  const headers = { Accept: opts.accept || "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, signal: opts.signal || viewSignal(), cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(`the server could not be reached (${e.message})`, 0, null);
  }
  if (res.ok) return res;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  const message = data && typeof data.error === "string" ? data.error : `${res.status} ${res.statusText}`.trim();
  const err = new ApiError(message, res.status, data);
  if (res.status === 401 && opts.token === undefined && signedIn()) {
    err.handled = true;
    signOut("the token was refused (401)");
  }
  throw err;
}

/** `request()`, then the answer's JSON (null for an empty body). */
async function api(method, path, body, opts = {}) {
  const res = await request(method, path, body, opts);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

/** True for failures not to show: an aborted request, or a 401 already handled by signing out. */
const quiet = (e) => e && (e.name === "AbortError" || e.handled === true);

/** Shows a failure in #error, in words: what was being done, the HTTP status, the API's text. */
function fail(e, doing) {
  if (quiet(e)) return;
  const status = e && e.status ? ` (HTTP ${e.status})` : "";
  setError(`${doing} failed${status}: ${e && e.message ? e.message : String(e)}`);
}

function setError(text) {
  const el = $("#error");
  if (el) el.textContent = text;
}

/** An AbortController that also aborts with `parent`. */
function childController(parent) {
  const c = new AbortController();
  if (parent.aborted) c.abort();
  else parent.addEventListener("abort", () => c.abort(), { once: true });
  return c;
}

// ---------------------------------------------------------------------------------------------
// Router

const ROUTES = [
  [/^\/sessions$/, viewSessions],
  [/^\/sessions\/([^/]+)$/, viewSession],
  [/^\/sessions\/([^/]+)\/live$/, viewLive],
  [/^\/approvals$/, viewApprovals],
  [/^\/new$/, viewNew],
  [/^\/tools$/, viewTools],
  [/^\/config$/, viewConfig],
];

let viewController = new AbortController();
const viewSignal = () => viewController.signal;

/** The hash as a path ("/sessions/ID/live") and its query (`?run=…`). */
function parseHash() {
  const raw = location.hash.replace(/^#/, "");
  const q = raw.indexOf("?");
  return {
    path: q < 0 ? raw : raw.slice(0, q),
    query: new URLSearchParams(q < 0 ? "" : raw.slice(q + 1)),
  };
}

/** Renders the view the hash names (the sign-in while signed out), aborting the last one. */
function route(focus = false) {
  viewController.abort();
  viewController = new AbortController();
  setError("");
  if (!signedIn()) {
    showNav(false);
    viewSignin("");
    return;
  }
  showNav(true);
  const { path, query } = parseHash();
  if (!path.startsWith("/") || path === "/") {
    location.replace("#/sessions");
    return;
  }
  const ctx = { signal: viewController.signal, query, params: [] };
  let view = viewNotFound;
  for (const [pattern, fn] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    try {
      ctx.params = m.slice(1).map(decodeURIComponent);
      view = fn;
    } catch {
      view = viewNotFound;
    }
    break;
  }
  markCurrent(path);
  view(ctx).catch((e) => fail(e, "showing the page"));
  if (focus) $("#view h1")?.focus();
}

/** Goes to `hash`, rendering again when it is already the current one. */
function go(hash) {
  if (location.hash === hash) route(true);
  else location.hash = hash;
}

/** Rewrites the hash to the view's state (page, search) without a new history entry. */
function remember(hash) {
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function showNav(visible) {
  $("#nav").hidden = !visible;
}

function markCurrent(path) {
  for (const a of document.querySelectorAll("#nav a")) {
    const target = a.getAttribute("href").slice(1);
    if (path === target || path.startsWith(`${target}/`)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

/** Replaces main#view's content with a view root (`data-view`), titled `title`. */
function mount(name, title, ...children) {
  document.title = `${title} · Sluice`;
  const root = h("section", { "data-view": name, "aria-labelledby": "view-title" }, children);
  $("#view").replaceChildren(root);
  return root;
}

const heading = (...text) => h("h1", { id: "view-title", tabindex: "-1" }, text);

function ready(root) {
  root.setAttribute("data-ready", "true");
  root.removeAttribute("aria-busy");
}

function busy(root) {
  root.setAttribute("data-ready", "false");
  root.setAttribute("aria-busy", "true");
}

function signOut(reason) {
  clearToken();
  viewController.abort();
  viewController = new AbortController();
  setError("");
  showNav(false);
  viewSignin(reason);
}

async function viewNotFound({ signal }) {
  const root = mount("notfound", "Not found", heading("Nothing here"),
    h("p", {}, "The console has no page at this address. ", link("#/sessions", "See the sessions"), "."));
  if (!signal.aborted) ready(root);
}

// ---------------------------------------------------------------------------------------------
// Sign-in

/** The sign-in form: the token is checked with GET /healthz before it is kept. */
function viewSignin(reason) {
  document.title = "Sign in · Sluice";
  const token = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", spellcheck: "false", "aria-describedby": "token-hint signin-error" });
  const submit = h("button", { id: "signin-submit", type: "submit" }, "Sign in");
  const error = h("p", { id: "signin-error", class: "form-error", "aria-live": "polite" }, reason);
  const form = h("form", { id: "signin", novalidate: true },
    h("label", { for: "token" }, "Token"),
    token,
    h("p", { id: "token-hint", class: "hint" },
      "The server's bearer token (SLUICE_SERVER_TOKEN or --token-file). It is kept in this tab's session storage only. A loopback server started without a token takes an empty one."),
    submit, error);
  const root = h("section", { "data-view": "signin", "aria-labelledby": "view-title", class: "signin" },
    heading("Sign in"), form);
  $("#view").replaceChildren(root);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    signIn(token.value.trim(), submit, error);
  });
  ready(root);
  token.focus();
}

async function signIn(token, submit, error) {
  submit.disabled = true;
  error.textContent = "";
  try {
    await api("GET", "/healthz", undefined, { token });
    setToken(token);
    go("#/sessions");
  } catch (e) {
    if (e.name === "AbortError") return;
    error.textContent = signinFailure(e);
    $("#token")?.focus();
  } finally {
    submit.disabled = false;
  }
}

/** Why a token was not accepted, in words. */
function signinFailure(e) {
  switch (e.status) {
    case 401: return "the token was refused (401)";
    case 0: return e.message;
    case 403: return `the server refused this page (403): ${e.message}`;
    default:
      if (e.status >= 500) return `the server failed (${e.status}): ${e.message}`;
      return `the server answered ${e.status}: ${e.message}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Sessions: paged (50), searched by id, filtered by status

async function viewSessions({ signal, query }) {
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

/** A table inside a region that scrolls sideways on narrow screens (focusable to scroll). */
const tableWrap = (table, label) => h("div", { class: "table-wrap", role: "region", "aria-label": label, tabindex: "0" }, table);

// ---------------------------------------------------------------------------------------------
// A session: its transcript, 100 messages a page, with observation marks and call facts

async function viewSession({ signal, params: [id], query }) {
  let from = Math.max(1, Number.parseInt(query.get("from") || "1", 10) || 1);
  const status = h("span", { id: "session-status", class: "status" }, "…");
  const facts = h("p", { class: "session-facts" });
  const lastError = h("p", { class: "last-error", hidden: true });
  const live = h("a", { id: "session-live", href: liveHash(id) }, "Watch live");
  const links = h("p", { class: "actions" },
    h("a", { id: "session-continue", href: `#/new?session=${enc(id)}`, class: "button-link" }, "Continue this session"),
    " ", live);
  const prev = h("button", { id: "transcript-prev", type: "button", disabled: true }, "Previous 100");
  const next = h("button", { id: "transcript-next", type: "button", disabled: true }, "Next 100");
  const range = h("span", { id: "transcript-range", class: "range", "aria-live": "polite" });
  const transcript = h("ol", { id: "transcript", class: "transcript" });
  const root = mount("session", `Session ${id}`, heading("Session ", h("code", {}, id)),
    h("p", { class: "session-status-line" }, "Status: ", status), facts, lastError, links,
    h("div", { class: "pager" }, prev, range, next), transcript);

  // The audit (shrunk originals, call facts) is read once per view, beside the first page.
  const auditRead = api("GET", `/sessions/${enc(id)}/audit`).then(indexAudit, (e) => {
    if (!quiet(e)) fail(e, "reading the session's audit");
    if (e.name === "AbortError") throw e;
    return indexAudit(null);
  });
  auditRead.catch(() => {});

  let loading = null;
  async function load() {
    loading?.abort();
    loading = childController(signal);
    const s = loading.signal;
    busy(root);
    remember(from === 1 ? sessionHash(id) : `${sessionHash(id)}?from=${from}`);
    try {
      const data = await api("GET", `/sessions/${enc(id)}?from=${from}&limit=${TRANSCRIPT_PAGE}`, undefined, { signal: s });
      const total = data.session.messageCount ?? 0;
      if (data.messages.length === 0 && from > 1 && total > 0) {
        from = Math.floor((total - 1) / TRANSCRIPT_PAGE) * TRANSCRIPT_PAGE + 1;
        return load();
      }
      const audit = await auditRead;
      if (s.aborted) return;
      showSessionHeader(data, { status, facts, lastError, live });
      renderTranscript(transcript, data.messages, audit);
      const msgs = data.messages;
      range.textContent = msgs.length
        ? `messages ${fmt(msgs[0].seq)}–${fmt(msgs[msgs.length - 1].seq)} of ${fmt(total)}`
        : "no messages yet";
      prev.disabled = from <= 1;
      next.disabled = data.nextFrom === null || data.nextFrom === undefined;
      next.dataset.from = String(data.nextFrom ?? "");
      ready(root);
    } catch (e) {
      if (quiet(e)) return;
      fail(e, `reading session ${id}`);
      status.textContent = "unknown";
      ready(root);
    }
  }

  prev.addEventListener("click", () => {
    from = Math.max(1, from - TRANSCRIPT_PAGE);
    load();
  });
  next.addEventListener("click", () => {
    const n = Number(next.dataset.from);
    if (!n) return;
    from = n;
    load();
  });
  await load();
}

function showSessionHeader(data, { status, facts, lastError, live }) {
  const s = data.session;
  setStatus(status, s.status);
  facts.replaceChildren("Created ", timeEl(s.createdAt), " · last activity ", timeEl(s.updatedAt),
    " · ", plural(s.messageCount ?? 0, "message", "messages"));
  lastError.hidden = !s.lastError;
  lastError.textContent = s.lastError ? `Last error: ${s.lastError}` : "";
  const run = data.run;
  if (run && run.running) {
    live.setAttribute("href", liveHash(s.id, run.runId));
    live.textContent = `Watch run ${run.runId} live`;
  } else {
    live.setAttribute("href", liveHash(s.id));
    live.textContent = "Watch the next run live";
  }
  if (s.status === "awaiting_approval") {
    facts.append(" · ", link("#/approvals", "a call waits for approval"));
  }
}

/** The audit by message `seq`: shrunk entries (oldest first) and each call's facts. */
function indexAudit(data) {
  const shrunk = new Map();
  const calls = new Map();
  for (const a of (data && data.audit) || []) {
    if (!shrunk.has(a.seq)) shrunk.set(a.seq, []);
    shrunk.get(a.seq).push(a);
  }
  for (const c of (data && data.calls) || []) calls.set(c.seq, c);
  return { shrunk, calls };
}

function renderTranscript(ol, messages, audit) {
  const callNames = new Map();
  for (const m of messages) for (const c of m.toolCalls || []) callNames.set(c.id, c.name);
  ol.setAttribute("start", String(messages.length ? messages[0].seq : 1));
  ol.replaceChildren(...messages.map((m) => messageItem(m, audit, callNames)));
}

function messageItem(m, audit, callNames) {
  const content = typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "");
  const li = h("li", { class: `message role-${classWord(m.role)}`, id: `message-${m.seq}`, "data-seq": m.seq, "data-role": m.role },
    h("div", { class: "message-head" },
      h("span", { class: "role" }, m.role),
      h("span", { class: "seq" }, `#${m.seq}`),
      h("span", { class: "size" }, bytes(utf8Length(content))),
      timeEl(m.createdAt)));
  // A tool message: which call it answers, its mark and facts, then what the model saw, then
  // (when shrunk) the original on demand.
  const entries = m.role === "tool" ? audit.shrunk.get(m.seq) : undefined;
  if (m.role === "tool") li.appendChild(observationHead(m, content, audit, callNames));
  li.appendChild(h("pre", { class: content ? "content" : "content empty" }, content));
  if (entries) li.appendChild(shrunkDetails(m.seq, entries));
  for (const call of m.toolCalls || []) li.appendChild(toolCallBlock(call));
  return li;
}

function toolCallBlock(call) {
  return h("div", { class: "tool-call", "data-call-id": call.id },
    h("p", { class: "tool-call-head" }, "Calls ", h("span", { class: "tool-name" }, call.name),
      h("span", { class: "call-id" }, ` (${call.id})`)),
    h("pre", { class: "arguments" }, prettyJson(call.arguments)));
}

/** Which call a tool message answers, what the model saw of its result (the mark) and what the call cost (the facts). */
function observationHead(m, content, audit, callNames) {
  const entries = audit.shrunk.get(m.seq);
  const call = audit.calls.get(m.seq);
  const name = callNames.get(m.toolCallId) || (call && call.tool);
  const mark = observationMark(content, entries);
  return h("div", { class: "observation" },
    h("p", { class: "observation-head" },
      "Result of ", name ? h("span", { class: "tool-name" }, name) : "a call",
      m.toolCallId ? h("span", { class: "call-id" }, ` (${m.toolCallId})`) : null,
      " ", h("span", { class: `mark mark-${mark.kind}`, "data-mark": mark.kind }, mark.text)),
    call ? callFacts(call.facts || {}) : null);
}

/**
 * The contract's marks: shrunk on recovery (the audit holds the seq) / cut from N bytes (the
 * cap's marker) / paged · next cursor X (an `ok` result with a next page) / whole.
 */
function observationMark(content, shrunkEntries) {
  if (shrunkEntries && shrunkEntries.length) return { kind: "shrunk", text: "shrunk on recovery" };
  const at = content.lastIndexOf(CUT_MARKER);
  if (at >= 0) {
    const m = /^(\d+) bytes/.exec(content.slice(at + CUT_MARKER.length));
    if (m) return { kind: "cut", text: `cut from ${groupDigits(m[1])} bytes` };
  }
  if (content.trimStart().startsWith("{")) {
    try {
      const v = JSON.parse(content);
      const r = v && v.ok === true && v.result && typeof v.result === "object" ? v.result : {};
      // A page's cursor: `nextCursor` (search, …), else `nextOffset` (read_file, list_dir).
      const cursor = r.nextCursor ?? r.nextOffset;
      if (typeof cursor === "number" || typeof cursor === "string") {
        return { kind: "paged", text: `paged · next cursor ${cursor}` };
      }
    } catch {
      /* not JSON: whole */
    }
  }
  return { kind: "whole", text: "whole" };
}

function callFacts(f) {
  const parts = [];
  if (typeof f.guestUs === "number") parts.push(`guest ${fmt(f.guestUs)} µs`);
  if (typeof f.peakMemoryBytes === "number") parts.push(`peak memory ${binarySize(f.peakMemoryBytes)}`);
  if (f.outcome) parts.push(String(f.outcome));
  const detail = [];
  if (typeof f.queueWaitUs === "number") detail.push(`queue wait ${fmt(f.queueWaitUs)} µs`);
  if (typeof f.peakMemoryBytes === "number") detail.push(`peak memory ${bytes(f.peakMemoryBytes)}`);
  if (typeof f.httpRequests === "number") detail.push(`HTTP requests ${fmt(f.httpRequests)} (${fmt(f.httpDenied ?? 0)} denied)`);
  if (f.digest) detail.push(`digest ${f.digest}`);
  return h("p", { class: "facts", title: detail.join(" · ") || null }, parts.length ? parts.join(" · ") : "no facts recorded");
}

/** The shrink's when and why, and a button that shows the original from the audit. */
function shrunkDetails(seq, entries) {
  const first = entries[0];
  const last = entries[entries.length - 1];
  const originalId = `original-${seq}`;
  const button = h("button", { type: "button", class: "show-original", "aria-expanded": "false", "aria-controls": originalId }, "Show original");
  let pre = null;
  button.addEventListener("click", () => {
    if (!pre) {
      pre = h("pre", { class: "original", id: originalId }, first.original ?? "");
      wrap.appendChild(pre);
    } else {
      pre.hidden = !pre.hidden;
    }
    const open = !pre.hidden;
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide original" : "Show original";
  });
  const original = String(first.original ?? "");
  const wrap = h("div", { class: "shrunk" },
    h("p", { class: "audit-note" }, "Shrunk ", timeEl(last.changedAt),
      last.reason ? `: ${last.reason}` : "",
      ` (original ${bytes(utf8Length(original))}`,
      entries.length > 1 ? `, shrunk ${entries.length} times)` : ")"),
    button);
  return wrap;
}

// ---------------------------------------------------------------------------------------------
// A run, live: the server-sent events read with fetch (EventSource cannot send the token)

async function viewLive({ signal, params: [id], query }) {
  const runId = query.get("run") || "";
  const status = h("span", { id: "run-status", class: "status status-running", "aria-live": "polite" }, runId ? "running" : "connecting");
  const cancel = h("button", { id: "run-cancel", type: "button", class: "danger" }, "Cancel the run");
  const note = h("p", { class: "run-note", "aria-live": "polite" });
  const events = h("ol", { id: "events", class: "events" });
  const after = h("p", { class: "actions" }, link(sessionHash(id), "Read the transcript"));
  const root = mount("live", `Live ${id}`, heading("Live: session ", h("code", {}, id)),
    h("p", { class: "run-line" }, "Run: ", status, runId ? h("span", { class: "run-id" }, ` (${runId})`) : null),
    h("p", { class: "actions" }, cancel), note, events, after);

  const run = { finished: false };
  cancel.addEventListener("click", () => cancelRun(id, note));

  try {
    const data = await api("GET", `/sessions/${enc(id)}?from=1&limit=1`);
    if (!runId) {
      if (data.run && data.run.running) setStatus(status, "running");
      else setStatus(status, "waiting for a run", "status-idle");
    }
    if (data.session.status === "awaiting_approval") note.replaceChildren(approvalsPointer());
  } catch (e) {
    if (quiet(e)) return;
    fail(e, `reading session ${id}`);
    setStatus(status, "unknown");
    ready(root);
    return;
  }

  const url = `/sessions/${enc(id)}/events${runId ? `?runId=${enc(runId)}` : ""}`;
  try {
    const res = await request("GET", url, undefined, { accept: "text/event-stream", signal });
    ready(root);
    await readEvents(res, (event) => {
      events.appendChild(eventItem(event));
      onRunEvent(event, { status, cancel, note, run });
    });
    if (!run.finished && !signal.aborted) {
      note.textContent = "The event stream ended before the run finished; reload the page to follow it again.";
    }
  } catch (e) {
    if (quiet(e)) return;
    fail(e, "following the run's events");
    ready(root);
  }
}

function onRunEvent(event, { status, cancel, note, run }) {
  switch (event.type) {
    case "started":
      setStatus(status, "running");
      break;
    case "awaiting_approval":
      note.replaceChildren(approvalsPointer());
      break;
    case "finished":
      run.finished = true;
      setStatus(status, String(event.status ?? "finished"));
      cancel.disabled = true;
      if (event.status === "awaiting_approval") note.replaceChildren(approvalsPointer());
      else note.textContent = "";
      break;
    default:
  }
}

const approvalsPointer = () => h("span", {}, "A call waits for a decision: ", link("#/approvals", "go to the approvals"), ".");

async function cancelRun(id, note) {
  note.textContent = "Cancel requested; waiting for the run to end.";
  try {
    await api("POST", `/sessions/${enc(id)}/cancel`);
  } catch (e) {
    if (quiet(e)) return;
    note.textContent = "";
    fail(e, "cancelling the run");
  }
}

/** Reads a text/event-stream body, calling `onEvent` with each event's parsed `data:` JSON. */
async function readEvents(res, onEvent) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const take = (block) => {
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
    if (!data) return;
    try {
      onEvent(JSON.parse(data));
    } catch (e) {
      if (e instanceof SyntaxError) onEvent({ type: "unreadable", raw: data });
      else throw e;
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = (buffer + value).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      take(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  }
  if (buffer.trim()) take(buffer);
}

/** One event as a line a person reads. */
function eventItem(e) {
  const type = String(e.type ?? "unknown");
  const li = h("li", { class: "event", "data-type": type },
    typeof e.seq === "number" ? [h("span", { class: "event-seq" }, `#${e.seq}`), " "] : null,
    h("span", { class: "event-text" }, eventSummary(e)));
  if (type === "awaiting_approval") li.append(" ", link("#/approvals", "decide"));
  if (type === "finished") {
    if (e.lastError) li.appendChild(h("p", { class: "last-error" }, `Last error: ${e.lastError}`));
    if (e.answer) li.appendChild(h("pre", { class: "answer" }, e.answer));
  }
  return li;
}

function eventSummary(e) {
  switch (e.type) {
    case "started":
      return `run ${e.runId ?? ""} started${e.prompt ? `: “${clip(String(e.prompt), 200)}”` : " (resumed)"}`;
    case "model_request":
      return `model request ${bytes(e.bytes)}`;
    case "model_reply":
      return e.toolCalls ? `model replied with ${plural(e.toolCalls, "tool call", "tool calls")}` : "model replied with no tool calls";
    case "tool_started":
      return `tool ${e.name} started (${e.callId})`;
    case "tool_finished": {
      const notes = [];
      if (e.truncated) notes.push(`of ${bytes(e.fullBytes)}, cut`);
      if (e.paged) notes.push("paged");
      if (e.error) notes.push("an error");
      return `tool ${e.name} finished: ${bytes(e.bytes)}${notes.length ? ` (${notes.join(", ")})` : ""}`;
    }
    case "shrunk":
      return `shrunk ${plural((e.seqs || []).length, "observation", "observations")} (messages ${(e.seqs || []).join(", ")}): ${bytes(e.fromBytes)} → ${bytes(e.toBytes)}`;
    case "awaiting_approval":
      return `awaiting approval: tool ${e.name} (${e.callId})`;
    case "finished":
      return `finished: ${e.status}${typeof e.requests === "number" ? ` after ${plural(e.requests, "model request", "model requests")}` : ""}`;
    case "unreadable":
      return `an event that is not JSON: ${clip(String(e.raw), 200)}`;
    default:
      return `${e.type}: ${clip(JSON.stringify(e), 300)}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Approvals: every pending destructive call, approve or deny, then resume the session

async function viewApprovals({ signal }) {
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

async function viewNew({ signal, query }) {
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

// ---------------------------------------------------------------------------------------------
// Tools: what is loaded, from where, with which grants and limits

async function viewTools({ signal }) {
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

async function viewConfig({ signal }) {
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

// ---------------------------------------------------------------------------------------------
// Start

function start() {
  $("#signout").addEventListener("click", () => {
    signOut("");
  });
  // The skip link focuses main without touching the hash (the hash is the router's).
  $("#skip-link").addEventListener("click", (ev) => {
    ev.preventDefault();
    $("#view").focus();
  });
  // A nav link to the page already shown loads it again.
  $("#nav").addEventListener("click", (ev) => {
    const a = ev.target.closest("a[href^='#/']");
    if (a && a.getAttribute("href") === location.hash) {
      ev.preventDefault();
      route(true);
    }
  });
  window.addEventListener("hashchange", () => {
    if (location.hash === "" || location.hash.startsWith("#/")) route(true);
  });
  window.addEventListener("unhandledrejection", (ev) => fail(ev.reason, "the console"));
  route(false);
}

start();
