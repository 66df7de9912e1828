// The current view: its lifetime (an AbortController, aborted when the next view starts, which
// ends its requests and streams), its frame in `main#view` (`mount`, `heading`, `ready`,
// `busy`) and the hash (`remember`, `go`).

import { $, h } from "./dom.js";

let viewController = new AbortController();
export const viewSignal = () => viewController.signal;

/** Aborts the current view (its requests and streams) and answers the next one's signal. */
export function nextView() {
  viewController.abort();
  viewController = new AbortController();
  return viewController.signal;
}

/** What `go()` renders with: the router's `route(focus)`, set by app.js. */
let router = () => {};

/** Sets the router `go()` calls when the hash it is given is already the current one. */
export function routeWith(render) {
  router = render;
}

/** Goes to `hash`, rendering again when it is already the current one. */
export function go(hash) {
  if (location.hash === hash) router(true);
  else location.hash = hash;
}

/** Rewrites the hash to the view's state (page, search) without a new history entry. */
export function remember(hash) {
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

/** Replaces main#view's content with a view root (`data-view`), titled `title`. */
export function mount(name, title, ...children) {
  document.title = `${title} · Sluice`;
  const root = h("section", { "data-view": name, "aria-labelledby": "view-title" }, children);
  $("#view").replaceChildren(root);
  return root;
}

export const heading = (...text) => h("h1", { id: "view-title", tabindex: "-1" }, text);

export function ready(root) {
  root.setAttribute("data-ready", "true");
  root.removeAttribute("aria-busy");
}

export function busy(root) {
  root.setAttribute("data-ready", "false");
  root.setAttribute("aria-busy", "true");
}
