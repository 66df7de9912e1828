// A run, live (`#/sessions/ID/live[?run=RUNID]`): its server-sent events as they come, its
// status, and a button that cancels it.

import { bytes, clip, enc, h, link, plural, sessionHash, setStatus } from "./dom.js";
import { heading, mount, ready } from "./view.js";
import { api, fail, quiet, readEvents, request } from "./api.js";

export async function viewLive({ signal, params: [id], query }) {
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
