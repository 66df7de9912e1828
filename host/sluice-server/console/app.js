// Sluice's operator console: plain-JavaScript ES modules, no build step, no library.
//
// Served by `sluice serve` under a strict Content-Security-Policy: no inline script or style,
// no eval, no other origin. Every string that comes from the API (transcripts, tool names and
// arguments, errors, ids) reaches the page as text: through `h()` (text nodes and
// setAttribute) or textContent, never as HTML.
//
// The modules, each owning one concern; imports go one way only (no cycles, no view imports
// another, none imports app.js):
//
//   app.js         the entry: router, sign-in, navigation    imports every module below
//   sessions.js    the session list                          ┐
//   transcript.js  a session's transcript                    │ the views: each imports
//   live.js        a run, live                               │ api.js, view.js and dom.js
//   operate.js     approvals, new prompt                     │
//   setup.js       tools, configuration                      ┘
//   api.js         the token, requests, 401, event streams   imports view.js, dom.js
//   view.js        the current view: lifetime, frame, hash   imports dom.js
//   dom.js         h(), links, formatting                    imports nothing
//
// Two calls go upwards, so are set by app.js at start instead of imported: `go()` (view.js)
// renders with the router (`routeWith`), and a refused token signs out (`onTokenRefused`).
//
// Each view mounts its root in `main#view` with `data-view`, and sets `data-ready="true"` once
// its data is loaded and rendered (`"false"` again while it reloads); navigating away aborts
// its requests and streams.

import { $, h, link } from "./dom.js";
import { go, heading, mount, nextView, ready, routeWith } from "./view.js";
import { api, clearToken, fail, onTokenRefused, setError, setToken, signedIn } from "./api.js";
import { viewSessions } from "./sessions.js";
import { viewSession } from "./transcript.js";
import { viewLive } from "./live.js";
import { viewApprovals, viewNew } from "./operate.js";
import { viewConfig, viewTools } from "./setup.js";

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
  const signal = nextView();
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
  const ctx = { signal, query, params: [] };
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

function signOut(reason) {
  clearToken();
  nextView();
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
// Start

function start() {
  routeWith(route);
  onTokenRefused(signOut);
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
