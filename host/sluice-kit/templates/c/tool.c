// `{{name}}`: a Sluice tool in C (wasi-libc through zig, `wit-bindgen c` 0.63.0 bindings, the
// WASI preview1 reactor adapter) that reads a text file from a granted root one page at a
// time. Each page holds as many whole lines as fit the page budget the host grants the call
// (`sluice:tools/budget` `page-bytes`), and says where the next page starts (`next_cursor`).
// wasi-libc opens absolute paths through the preopens: the host mounts each granted root at
// `/<root name>`, so `fopen("/data/notes.txt")` just opens.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "{{name_snake}}.h"

// Ends the call with the `tool-error` case `tag` and a printf-style message; the host shows
// the model {"ok":false,"error":<message>,"kind":<case>}.
static bool fail({{name_snake}}_tool_error_t *err, uint8_t tag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *message = malloc((size_t)n + 1);
  if (message == NULL) abort();
  va_start(ap, fmt);
  vsnprintf(message, (size_t)n + 1, fmt, ap);
  va_end(ap);
  err->tag = tag;
  // Every case carries a string at the same place; the generated post-return frees it.
  err->val.io.ptr = (uint8_t *)message;
  err->val.io.len = (size_t)n;
  return false;
}

// The tool-error for `errno` after opening or reading `path`.
static bool file_error(int error, const char *path, {{name_snake}}_tool_error_t *err) {
  switch (error) {
    case ENOENT:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_NOT_FOUND, "no such file or directory: %s",
                  path);
    // `..` above a root, or a symlink out of it.
    case EPERM:
    case EACCES:
    case ENOTCAPABLE:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_OUTSIDE_ROOT,
                  "not permitted: %s; give a path under a granted root, mounted at /<root name>",
                  path);
    default:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_IO, "cannot read %s: %s", path,
                  strerror(error));
  }
}

// Whether s[0..n) is UTF-8 (a WIT `string` must be): no overlong forms, no surrogates.
static bool is_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t more;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) more = 0;
    else if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else return false;
    if (n - i - 1 < more) return false;
    for (size_t k = 1; k <= more; k++) {
      unsigned char b = s[i + k];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += more + 1;
  }
  return true;
}

// The bytes of s[0..n) written as a JSON string, without its quotes: `"` and `\` and the
// control characters with a short escape take two bytes, other control characters six.
static size_t escaped_len(const unsigned char *s, size_t n) {
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    if (c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f')
      bytes += 2;
    else if (c < 0x20) bytes += 6;
    else bytes += 1;
  }
  return bytes;
}

// Fills `ret->lines` with the lines of `file` from byte `cursor` that fit `page` bytes of
// JSON, and `ret->next_cursor` when the file has more.
static bool read_page(FILE *file, const char *path, uint64_t cursor, size_t page,
                      {{name_snake}}_page_t *ret, {{name_snake}}_tool_error_t *err) {
  size_t used = 2;         // the list's `[]`
  uint64_t offset = cursor;  // where the next line starts
  size_t capacity = 0;
  char *line = NULL;
  size_t size = 0;
  ssize_t n;
  bool ok = false;
  errno = 0;
  while ((n = getline(&line, &size, file)) >= 0) {
    // Split at "\n"; drop it and a "\r" before it.
    size_t len = (size_t)n;
    if (len > 0 && line[len - 1] == '\n') {
      len--;
      if (len > 0 && line[len - 1] == '\r') len--;
    }
    if (!is_utf8((const unsigned char *)line, len)) {
      fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_BINARY_FILE, "%s is not UTF-8 text", path);
      break;
    }
    // The line as the host writes it: a JSON string, and a comma after the first.
    size_t cost = escaped_len((const unsigned char *)line, len) + 2 + (ret->lines.len > 0);
    if (used + cost > page) {
      if (ret->lines.len == 0) {
        fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_PAGE_TOO_SMALL,
             "the line at byte %llu of %s does not fit a page of %zu bytes; raise "
             "agent.max_tool_result_bytes",
             (unsigned long long)offset, path, page);
        break;
      }
      ret->next_cursor.is_some = true;
      ret->next_cursor.val = offset;
      ok = true;
      break;
    }
    if (ret->lines.len == capacity) {
      capacity = capacity ? 2 * capacity : 16;
      ret->lines.ptr = realloc(ret->lines.ptr, capacity * sizeof *ret->lines.ptr);
      if (ret->lines.ptr == NULL) abort();
    }
    {{name_snake}}_string_dup_n(&ret->lines.ptr[ret->lines.len++], line, len);
    used += cost;
    offset += (uint64_t)n;
  }
  if (n < 0) {
    if (ferror(file)) file_error(errno, path, err);
    else ok = true;
  }
  free(line);
  if (!ok) {{name_snake}}_list_string_free(&ret->lines);
  return ok;
}

bool exports_{{name_snake}}_{{name_snake}}({{name_snake}}_page_args_t *args, {{name_snake}}_page_t *ret,
                            {{name_snake}}_tool_error_t *err) {
  uint64_t cursor = args->cursor.is_some ? args->cursor.val : 0;
  // `args` is ours: keep its path string for the result, free the rest.
  memset(ret, 0, sizeof *ret);
  ret->path = args->path;
  args->path = ({{name_snake}}_string_t){0};
  {{name_snake}}_page_args_free(args);
  char *path = malloc(ret->path.len + 1);
  if (path == NULL) abort();
  memcpy(path, ret->path.ptr, ret->path.len);
  path[ret->path.len] = '\0';

  bool ok = false;
  FILE *file = NULL;
  // The bytes of JSON this page may fill: 0 when the cap leaves no room for one.
  uint32_t page = sluice_tools_budget_page_bytes(&ret->path);
  if (page == 0) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_PAGE_TOO_SMALL,
         "the cap (agent.max_tool_result_bytes, %u bytes) leaves no room for a page of %s; "
         "raise it or use a shorter path",
         sluice_tools_budget_max_result_bytes(), path);
    goto done;
  }
  file = fopen(path, "r");
  if (file == NULL) {
    file_error(errno, path, err);
    goto done;
  }
  // A directory opens too: check what was opened.
  struct stat st;
  if (fstat(fileno(file), &st) != 0) {
    file_error(errno, path, err);
    goto done;
  }
  if (S_ISDIR(st.st_mode)) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_WRONG_KIND,
         "%s is a directory; give the path of a text file", path);
    goto done;
  }
  if (cursor > (uint64_t)st.st_size) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
         "cursor %llu is past the end of %s (%llu bytes); pass the nextCursor of a page, or "
         "leave cursor out to start at the beginning",
         (unsigned long long)cursor, path, (unsigned long long)st.st_size);
    goto done;
  }
  if (fseeko(file, (off_t)cursor, SEEK_SET) != 0) {
    file_error(errno, path, err);
    goto done;
  }
  ok = read_page(file, path, cursor, page, ret, err);
done:
  if (file != NULL) fclose(file);
  free(path);
  if (!ok) {{name_snake}}_string_free(&ret->path);
  return ok;
}
