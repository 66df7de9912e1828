// The API: the token (sessionStorage only), `request()`/`api()` with the bearer token, a 401
// that signs out, failures shown in #error, and the reader of a text/event-stream body.

import { $ } from "./dom.js";
import { viewSignal } from "./view.js";

const TOKEN_KEY = "sluice.token";

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

export function setToken(token) {
  memoryToken = token;
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    /* storage refused: the in-memory copy lasts until the page is closed */
  }
}

export function clearToken() {
  memoryToken = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* nothing stored */
  }
}

export const signedIn = () => getToken() !== null;

// ---------------------------------------------------------------------------------------------
// Requests

/** What a refused token (401 on an API call) does: app.js signs out, with the reason. */
let refused = () => {};

/** Sets what a 401 on an API call made with the stored token does (`refused(reason)`). */
export function onTokenRefused(handler) {
  refused = handler;
}

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
export async function request(method, path, body, opts = {}) {
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
    refused("the token was refused (401)");
  }
  throw err;
}

/** `request()`, then the answer's JSON (null for an empty body). */
export async function api(method, path, body, opts = {}) {
  const res = await request(method, path, body, opts);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

/** True for failures not to show: an aborted request, or a 401 already handled by signing out. */
export const quiet = (e) => e && (e.name === "AbortError" || e.handled === true);

/** Shows a failure in #error, in words: what was being done, the HTTP status, the API's text. */
export function fail(e, doing) {
  if (quiet(e)) return;
  const status = e && e.status ? ` (HTTP ${e.status})` : "";
  setError(`${doing} failed${status}: ${e && e.message ? e.message : String(e)}`);
}

export function setError(text) {
  const el = $("#error");
  if (el) el.textContent = text;
}

/** An AbortController that also aborts with `parent`. */
export function childController(parent) {
  const c = new AbortController();
  if (parent.aborted) c.abort();
  else parent.addEventListener("abort", () => c.abort(), { once: true });
  return c;
}

// ---------------------------------------------------------------------------------------------
// Server-sent events (read with fetch: EventSource cannot send the token)

/** Reads a text/event-stream body, calling `onEvent` with each event's parsed `data:` JSON. */
export async function readEvents(res, onEvent) {
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
