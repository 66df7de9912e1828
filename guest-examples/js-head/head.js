// `head`: a Sluice tool in JavaScript (componentize-js 0.23.0) that reads a file from a
// granted root. There is no `fs` module: the world imports wasi:filesystem, and the tool
// finds the root a path is under among the preopens (the host mounts each granted root at
// `/<root name>`) and opens the rest of the path in it.
//
// Bindings: records are objects with camelCase fields (`stoppedBy`), `option<T>` is `T` or
// `undefined`, enum cases are their WIT strings (`'line-limit'`); returning gives `ok`, and
// throwing `{ tag, val }` gives `err` with that `tool-error` case.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const DEFAULT_COUNT = 10;
const MAX_COUNT = 100;
const CHUNK_BYTES = 65536n;

function fail(tag, message) {
  throw { tag, val: message };
}

export function head({ path, count = DEFAULT_COUNT }) {
  if (!(count >= 1 && count <= MAX_COUNT)) {
    fail('invalid-argument', `count must be 1 to ${MAX_COUNT}; got ${count}`);
  }
  let file;
  try {
    file = open(path);
    if (file.stat().type === 'directory') {
      fail('wrong-kind', `${path} is a directory; head reads files`);
    }
    const [lines, stoppedBy] = readLines(file, count, path);
    return { path, lines, stoppedBy };
  } catch (e) {
    if (e.tag) throw e;
    // A WASI filesystem error: its `payload` is the `error-code` case.
    switch (e.payload) {
      case 'no-entry':
        fail('not-found', `no such file or directory: ${path}`);
      case 'not-permitted':
      case 'access':
        fail(
          'outside-root',
          `not permitted: ${path}; give a path under a granted root, mounted at /<root name>`,
        );
      default:
        fail('io', `cannot read ${path}: ${e.payload ?? e}`);
    }
  }
}

// Opens `path` (`/<root name>/...`) in the preopen it is under.
function open(path) {
  for (const [dir, mount] of getDirectories()) {
    if (path === mount || path.startsWith(mount + '/')) {
      const rest = path.slice(mount.length + 1) || '.';
      return dir.openAt({ symlinkFollow: true }, rest, {}, { read: true });
    }
  }
  fail('not-found', `no such file or directory: ${path}`);
}

// The first `count` lines of `file`, split at "\n" (a "\r" before it dropped), and why it
// stopped.
function readLines(file, count, path) {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const lines = [];
  let pending = new Uint8Array(0);
  let offset = 0n;
  let eof = false;
  for (;;) {
    let nl;
    while ((nl = pending.indexOf(10)) >= 0 || (eof && pending.length > 0)) {
      const end = nl >= 0 ? nl : pending.length;
      let line;
      try {
        line = decoder.decode(pending.subarray(0, end));
      } catch {
        fail('binary-file', `${path} is not UTF-8 text`);
      }
      pending = pending.subarray(end + 1);
      if (lines.length === count) return [lines, 'line-limit'];
      lines.push(nl >= 0 && line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    if (eof) return [lines, 'end-of-file'];
    const [chunk, end] = file.read(CHUNK_BYTES, offset);
    offset += BigInt(chunk.length);
    eof = end || chunk.length === 0;
    const joined = new Uint8Array(pending.length + chunk.length);
    joined.set(pending);
    joined.set(chunk, pending.length);
    pending = joined;
  }
}
