// `query_json`: a Sluice tool written in JavaScript and built with componentize-js.
//
// It reads a JSON (or JSON Lines) file from one of the roots the operator granted, through
// the WASI filesystem interfaces the world imports (componentize-js has no `fs` module),
// selects values with a small path language, and returns as many matches as fit the page
// budget the host grants the call (`sluice:tools/budget` `page-bytes`), with `nextOffset` to
// continue. A value too large for a page comes back cut, marked `cut`.
//
// Bindings, as componentize-js maps the WIT: records are objects with camelCase fields,
// `option<T>` is `T` or `undefined`, enums are strings, `u32` a number, `u64` a BigInt;
// returning gives `ok`, and throwing a string gives `err` (for `result<T, string>`).

import { maxResultBytes, pageBytes } from 'sluice:tools/budget@0.1.5';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

// Largest file read, in bytes: the file is parsed whole.
const MAX_FILE_BYTES = 16 << 20;
// Bytes read from the file per call to the host.
const CHUNK_BYTES = 1 << 20;
// Characters of caller input repeated in a message.
const MAX_QUOTED_CHARS = 200;

const quote = (s) => (s.length <= MAX_QUOTED_CHARS ? s : s.slice(0, MAX_QUOTED_CHARS) + '…');

// Ends the call with an error: the host shows the model {"ok":false,"error":<message>}.
function fail(message) {
  throw message;
}

export function queryJson(args) {
  const query = args.query ?? '$';
  const offset = args.offset ?? 0;
  if (args.limit !== undefined && args.limit < 1) {
    fail(`limit must be an integer of at least 1; got ${args.limit}`);
  }
  const page = pageBytes(args.path);
  if (page === 0) {
    fail(
      `the result cannot fit: agent.max_tool_result_bytes is ${maxResultBytes()} bytes, which ` +
        'leaves no room for a page; raise agent.max_tool_result_bytes or use a shorter path',
    );
  }
  const steps = parseQuery(query);
  const doc = readDocument(args.path, args.root);
  const found = [];
  select(doc, '$', steps, 0, found);
  if (offset > 0 && offset >= found.length) {
    fail(`offset must be less than the number of matches (${found.length}); got ${offset}`);
  }
  const result = {
    path: args.path,
    query,
    total: found.length,
    offset,
    matches: [],
    // The largest value it can take, so that the size counted here is an upper bound.
    nextOffset: 4294967295,
  };
  let used = jsonBytes(result);
  for (let i = offset; i < found.length; i++) {
    if (args.limit !== undefined && result.matches.length >= args.limit) break;
    const first = result.matches.length === 0;
    const entry = describe(found[i]);
    const room = page - used - (first ? 0 : 1);
    let size = jsonBytes(entry);
    if (size > room) {
      // The first match of a page always comes back, cut if need be.
      if (!first || !cutToFit(entry, room)) break;
      size = jsonBytes(entry);
    }
    result.matches.push(entry);
    used += size + (first ? 0 : 1);
  }
  if (found.length > offset && result.matches.length === 0) {
    fail(`a match does not fit a page of ${page} bytes; raise agent.max_tool_result_bytes`);
  }
  const next = offset + result.matches.length;
  result.nextOffset = next < found.length ? next : undefined;
  return result;
}

// --- The document -----------------------------------------------------------------------

function readDocument(path, rootName) {
  const rel = relativePath(path);
  const dir = rootDescriptor(rootName);
  let file;
  try {
    file = dir.openAt({ symlinkFollow: true }, rel, {}, { read: true });
  } catch (e) {
    fail(fsError(e, path));
  }
  let stat;
  try {
    stat = file.stat();
  } catch (e) {
    fail(fsError(e, path));
  }
  if (stat.type === 'directory') {
    fail(`${quote(path)} is a directory; give a JSON file`);
  }
  const size = Number(stat.size);
  if (size > MAX_FILE_BYTES) {
    fail(
      `${quote(path)} is ${size} bytes; query_json reads files of up to ${MAX_FILE_BYTES} bytes`,
    );
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  while (at < size) {
    let chunk, eof;
    try {
      [chunk, eof] = file.read(BigInt(Math.min(CHUNK_BYTES, size - at)), BigInt(at));
    } catch (e) {
      fail(fsError(e, path));
    }
    bytes.set(chunk.subarray(0, size - at), at);
    at += chunk.length;
    if (eof || chunk.length === 0) break;
  }
  const text = new TextDecoder('utf-8').decode(bytes.subarray(0, Math.min(at, size)));
  const lines = /\.(jsonl|ndjson)$/i.test(path);
  try {
    if (!lines) return JSON.parse(text);
    const values = [];
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        values.push(JSON.parse(line));
      } catch (e) {
        throw new SyntaxError(`line ${i + 1}: ${e.message}`);
      }
    });
    return values;
  } catch (e) {
    fail(`${quote(path)} is not valid JSON${lines ? ' Lines' : ''}: ${e.message}`);
  }
}

// `path` checked to stay inside the root (the sandbox enforces it too; this says why).
function relativePath(path) {
  const parts = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) outsideRoot(path);
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  if (path.startsWith('/')) outsideRoot(path);
  return parts.length === 0 ? '.' : parts.join('/');
}

function outsideRoot(path) {
  fail(
    `path is outside the root: ${quote(path)}; give a path relative to the root, without ` +
      '`..` above it or symlinks that leave it',
  );
}

// The descriptor of the root called `name` (default: the first the host preopened; the host
// preopens root `logs` at `/logs`).
function rootDescriptor(name) {
  const roots = getDirectories().map(([descriptor, guestPath]) => [
    descriptor,
    guestPath.replace(/^\//, ''),
  ]);
  if (roots.length === 0) {
    fail(
      'this tool was granted no root; the operator grants one with `read = ["NAME"]` in its policy',
    );
  }
  if (name === undefined) return roots[0][0];
  const root = roots.find(([, n]) => n === name);
  if (!root) {
    fail(`unknown root ${quote(name)}; this tool's roots are: ${roots.map(([, n]) => n).join(', ')}`);
  }
  return root[0];
}

// A WASI filesystem error (its `payload` is the error-code case) as a message.
function fsError(e, path) {
  const code = e && e.payload !== undefined ? e.payload : String(e);
  switch (code) {
    case 'no-entry':
      return `no such file or directory: ${quote(path)}`;
    case 'not-directory':
      return `a component of the path is not a directory: ${quote(path)}`;
    case 'is-directory':
      return `${quote(path)} is a directory; give a JSON file`;
    case 'not-permitted':
    case 'access':
      return (
        `path is outside the root: ${quote(path)}; give a path relative to the root, without ` +
        '`..` above it or symlinks that leave it'
      );
    default:
      return `failed to read ${quote(path)}: ${code}`;
  }
}

// --- The query --------------------------------------------------------------------------

// Parses `query` into steps: {member: name}, {index: n}, {all: true}, {deep: name | null}.
function parseQuery(query) {
  let q = query.trim();
  if (q === '' || q === '$') return [];
  if (q.startsWith('$')) q = q.slice(1);
  else if (!q.startsWith('.') && !q.startsWith('[')) q = '.' + q;
  const steps = [];
  let i = 0;
  const bad = (why) =>
    fail(`query ${quote(query)} is not valid at ${quote(q.slice(i))}: ${why}`);
  const name = () => {
    const m = /^[^.[\]\s]+/.exec(q.slice(i));
    if (!m) bad('a name must follow `.`');
    i += m[0].length;
    return m[0];
  };
  while (i < q.length) {
    if (q.startsWith('..', i)) {
      i += 2;
      if (q[i] === '*') {
        i++;
        steps.push({ deep: null });
      } else {
        steps.push({ deep: name() });
      }
    } else if (q[i] === '.') {
      i++;
      if (q[i] === '*') {
        i++;
        steps.push({ all: true });
      } else {
        steps.push({ member: name() });
      }
    } else if (q[i] === '[') {
      const close = q.indexOf(']', i);
      const inner = close < 0 ? '' : q.slice(i + 1, close).trim();
      if (close < 0) bad('`[` without `]`');
      if (inner === '*') {
        steps.push({ all: true });
      } else if (/^-?\d+$/.test(inner)) {
        steps.push({ index: Number(inner) });
      } else if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) {
        steps.push({ member: JSON.parse(inner) });
      } else if (/^'[^']*'$/.test(inner)) {
        steps.push({ member: inner.slice(1, -1) });
      } else {
        bad('brackets hold `*`, an index or a quoted name');
      }
      i = close + 1;
    } else {
      bad('expected `.`, `..` or `[`');
    }
  }
  return steps;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const memberPath = (at, key) => (IDENT.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`);

// Children of `value` in document order: [path, child, member name (objects only)].
function children(value, at) {
  if (Array.isArray(value)) return value.map((v, i) => [`${at}[${i}]`, v, undefined]);
  if (value !== null && typeof value === 'object') {
    return Object.keys(value).map((k) => [memberPath(at, k), value[k], k]);
  }
  return [];
}

// Appends to `out` every [path, value] that `steps[k..]` select from `value` at `at`.
function select(value, at, steps, k, out) {
  if (k === steps.length) {
    out.push([at, value]);
    return;
  }
  const step = steps[k];
  if ('member' in step) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      if (Object.prototype.hasOwnProperty.call(value, step.member)) {
        select(value[step.member], memberPath(at, step.member), steps, k + 1, out);
      }
    }
  } else if ('index' in step) {
    if (Array.isArray(value)) {
      const i = step.index < 0 ? value.length + step.index : step.index;
      if (i >= 0 && i < value.length) select(value[i], `${at}[${i}]`, steps, k + 1, out);
    }
  } else if ('all' in step) {
    for (const [p, child] of children(value, at)) select(child, p, steps, k + 1, out);
  } else {
    // `..name` / `..*`: every descendant, in document order.
    for (const [p, child, key] of children(value, at)) {
      if (step.deep === null || key === step.deep) select(child, p, steps, k + 1, out);
      select(child, p, steps, k, out);
    }
  }
}

// --- The result -------------------------------------------------------------------------

function describe([at, value]) {
  const kind =
    value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'object' ? 'object' : typeof value;
  const size =
    kind === 'array' ? value.length : kind === 'object' ? Object.keys(value).length : undefined;
  return { at, kind, size, json: JSON.stringify(value), cut: undefined };
}

// Cuts `entry.json` so that the entry takes at most `room` bytes; false when even an empty
// `json` does not fit.
function cutToFit(entry, room) {
  const full = entry.json;
  entry.cut = true;
  entry.json = '…';
  if (jsonBytes(entry) > room) return false;
  let lo = 0;
  let hi = full.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    entry.json = cutAt(full, mid) + '…';
    if (jsonBytes(entry) <= room) lo = mid;
    else hi = mid - 1;
  }
  entry.json = cutAt(full, lo) + '…';
  return true;
}

// The first `n` UTF-16 units of `s`, without half a surrogate pair.
function cutAt(s, n) {
  const code = s.charCodeAt(n - 1);
  return code >= 0xd800 && code <= 0xdbff ? s.slice(0, n - 1) : s.slice(0, n);
}

// Bytes of `value` as compact JSON in UTF-8, as the host writes it (absent fields left out).
function jsonBytes(value) {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}
