// `fetch`: a Sluice tool in JavaScript (componentize-js 0.23.0) that GETs a URL through
// wasi:http. The global `fetch` is StarlingMonkey's, which sends through
// wasi:http/outgoing-handler when the build keeps the `http` feature (no `--disable http`).
// It is async; an export may be an async function: componentize-js runs the event loop until
// its promise settles, and the component function returns the result.

const DEFAULT_MAX_BYTES = 1024;
const MAX_MAX_BYTES = 4096;
const USER_AGENT = 'sluice-example-fetch/0.1';

function fail(tag, message) {
  throw { tag, val: message };
}

// The export is named `fetch` too: inside it, `globalThis.fetch` is the HTTP client.
async function fetchPage({ url, maxBytes = DEFAULT_MAX_BYTES }) {
  if (!(maxBytes >= 1 && maxBytes <= MAX_MAX_BYTES)) {
    fail('invalid-argument', `maxBytes must be 1 to ${MAX_MAX_BYTES}; got ${maxBytes}`);
  }
  const rest = url.startsWith('https://')
    ? url.slice('https://'.length)
    : url.startsWith('http://')
      ? url.slice('http://'.length)
      : fail('invalid-argument', `url must start with http:// or https://; got ${url}`);
  if (/^[/?#]|^$/.test(rest)) {
    fail('invalid-argument', `url has no host: ${url}`);
  }
  try {
    new URL(url);
  } catch {
    fail('invalid-argument', `url is not a valid URL: ${url}`);
  }
  let response;
  try {
    response = await globalThis.fetch(url, { headers: { 'user-agent': USER_AGENT } });
  } catch (e) {
    // A host the policy does not list fails here too, but then the host ends the call with
    // its own `http-denied` error, whatever the tool answers; this is for failures (no such
    // host, refused, timeout). StarlingMonkey's message does not say which.
    fail('io', `GET ${url} failed: ${e.message ?? e}`);
  }
  let body;
  try {
    body = new Uint8Array(await response.arrayBuffer());
  } catch (e) {
    fail('io', `reading the body of ${url} failed: ${e.message ?? e}`);
  }
  const head = body.subarray(0, maxBytes);
  const cut = body.length > head.length;
  let text;
  try {
    // stream: the cut may split a character; a split one at the end is left out.
    const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    text = decoder.decode(head, { stream: cut });
  } catch {
    fail('binary-file', `the body of ${url} is not UTF-8 text`);
  }
  return {
    url,
    status: response.status,
    contentType: response.headers.get('content-type') ?? undefined,
    bytes: BigInt(body.length),
    text,
    cut,
  };
}

export { fetchPage as fetch };
