// The console's DOM and words: `h()` builds elements (every API string as text, never as HTML),
// the console's links and hashes, and the formatting of numbers, sizes, times and JSON.
// Imports nothing.

/**
 * Builds an element: `attrs` through setAttribute (`true` sets an empty attribute, `false`,
 * `null` and `undefined` set none), children as nodes or as text. Refuses event-handler and
 * style attributes, and links that are not fragments or paths on this server.
 */
export function h(tag, attrs, ...children) {
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

export const $ = (selector, root = document) => root.querySelector(selector);

/** A status word with its colour class (`status status-<word>`). */
export function statusBadge(word, attrs = {}) {
  const w = String(word ?? "unknown");
  return h("span", { ...attrs, class: `status status-${classWord(w)}` }, w);
}

/** Sets an element's text to a status word and its class to match. */
export function setStatus(el, word, extraClass = "") {
  el.textContent = word;
  el.className = `status status-${classWord(word)}${extraClass ? ` ${extraClass}` : ""}`;
}

export const classWord = (w) => String(w).toLowerCase().replace(/[^a-z0-9_-]/g, "");

/** A link inside the console (an id goes into the hash encoded). */
export const link = (hash, text, attrs = {}) => h("a", { ...attrs, href: hash }, text);

export const enc = encodeURIComponent;

export const sessionHash = (id) => `#/sessions/${enc(id)}`;
export const liveHash = (id, runId) => `#/sessions/${enc(id)}/live${runId ? `?run=${enc(runId)}` : ""}`;

/** A table inside a region that scrolls sideways on narrow screens (focusable to scroll). */
export const tableWrap = (table, label) => h("div", { class: "table-wrap", role: "region", "aria-label": label, tabindex: "0" }, table);

// ---------------------------------------------------------------------------------------------
// Formatting

/** An integer with thousands separators: 1234567 → "1,234,567". */
export function fmt(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return String(n ?? "—");
  return groupDigits(String(Math.trunc(n)));
}

export const groupDigits = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");

export const bytes = (n) => `${fmt(n)} bytes`;

/** Bytes as KiB/MiB with one decimal (the exact count goes in a title). */
export function binarySize(n) {
  if (typeof n !== "number") return "—";
  if (n >= 1048576) return `${(n / 1048576).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return bytes(n);
}

/** A string's length in UTF-8 bytes, without encoding it. */
export function utf8Length(s) {
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

export const plural = (n, one, many) => `${fmt(n)} ${n === 1 ? one : many}`;

/** A `<time>` in local time ("2026-11-30 04:03:08"), the stored ISO time as its title. */
export function timeEl(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, "0");
  const text = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return h("time", { datetime: iso, title: iso }, text);
}

/** JSON text pretty-printed when it parses; anything else as it is. */
export function prettyJson(value) {
  if (typeof value !== "string") return JSON.stringify(value, null, 2) ?? "";
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

export const clip = (s, max) => (s.length > max ? `${s.slice(0, max)}…` : s);
