// `{{name}}`: a Sluice tool in JavaScript (componentize-js 0.23.0) that reads a text file from
// a granted root one page at a time. Each page holds as many whole lines as fit the page
// budget the host grants the call (`sluice:tools/budget` `page-bytes`), and says where the
// next page starts (`nextCursor`).
//
// There is no `fs` module: the world imports wasi:filesystem, and the tool finds the root a
// path is under among the preopens (the host mounts each granted root at `/<root name>`).
// Bindings: records are objects with camelCase fields, `option<T>` is `T` or `undefined`,
// `u64` is a BigInt; returning gives `ok`, throwing `{ tag, val }` gives that `tool-error`.

import { maxResultBytes, pageBytes } from 'sluice:tools/budget@0.1.5';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const CHUNK_BYTES = 65536n;
const encoder = new TextEncoder();

function fail(tag, message) {
  throw { tag, val: message };
}

export function {{name_camel}}({ path, cursor = 0n }) {
  // The bytes of JSON this page may fill: 0 when the cap leaves no room for one.
  const page = pageBytes(path);
  if (page === 0) {
    fail(
      'page-too-small',
      `the cap (agent.max_tool_result_bytes, ${maxResultBytes()} bytes) leaves no room for a page of ${path}; raise it or use a shorter path`,
    );
  }
  try {
    const file = open(path);
    const { type, size } = file.stat();
    if (type === 'directory') {
      fail('wrong-kind', `${path} is a directory; give the path of a text file`);
    }
    if (cursor > size) {
      fail(
        'invalid-argument',
        `cursor ${cursor} is past the end of ${path} (${size} bytes); pass the nextCursor of a page, or leave cursor out to start at the beginning`,
      );
    }
    return readPage(file, path, cursor, page);
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

// The lines of `file` from byte `cursor` that fit `page` bytes of JSON.
function readPage(file, path, cursor, page) {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const lines = [];
  let used = 2; // the list's `[]`
  let offset = cursor; // where the next line starts
  let readAt = cursor; // where the next read starts
  let pending = new Uint8Array(0);
  let eof = false;
  for (;;) {
    let nl;
    while ((nl = pending.indexOf(10)) >= 0 || (eof && pending.length > 0)) {
      const taken = nl >= 0 ? nl + 1 : pending.length;
      // Split at "\n"; drop it and a "\r" before it.
      let end = nl >= 0 ? nl : pending.length;
      if (nl > 0 && pending[nl - 1] === 13) end--;
      let line;
      try {
        line = decoder.decode(pending.subarray(0, end));
      } catch {
        fail('binary-file', `${path} is not UTF-8 text`);
      }
      // The line as the host writes it: a JSON string, and a comma after the first.
      const cost = encoder.encode(JSON.stringify(line)).length + (lines.length > 0 ? 1 : 0);
      if (used + cost > page) {
        if (lines.length === 0) {
          fail(
            'page-too-small',
            `the line at byte ${offset} of ${path} does not fit a page of ${page} bytes; raise agent.max_tool_result_bytes`,
          );
        }
        return { path, lines, nextCursor: offset };
      }
      used += cost;
      lines.push(line);
      offset += BigInt(taken);
      pending = pending.subarray(taken);
    }
    if (eof) return { path, lines };
    const [chunk, end] = file.read(CHUNK_BYTES, readAt);
    readAt += BigInt(chunk.length);
    eof = end || chunk.length === 0;
    const joined = new Uint8Array(pending.length + chunk.length);
    joined.set(pending);
    joined.set(chunk, pending.length);
    pending = joined;
  }
}
