// A session (`#/sessions/ID`): its transcript, 100 messages a page, with observation marks,
// call facts and shrunk originals (from the audit).

import { binarySize, bytes, classWord, enc, fmt, groupDigits, h, link, liveHash, plural, prettyJson, sessionHash, setStatus, timeEl, utf8Length } from "./dom.js";
import { busy, heading, mount, ready, remember } from "./view.js";
import { api, childController, fail, quiet } from "./api.js";

const TRANSCRIPT_PAGE = 100;
const CUT_MARKER = "…[truncated; full result is ";

export async function viewSession({ signal, params: [id], query }) {
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
