// `head`: a Sluice tool in C (wasi-libc through zig, `wit-bindgen c` 0.63.0 bindings, the
// WASI preview1 reactor adapter) that reads a file from a granted root. wasi-libc opens
// absolute paths through the preopens: the host mounts each granted root at `/<root name>`,
// so `fopen("/data/poem.txt")` just opens.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "head.h"

#define DEFAULT_COUNT 10
#define MAX_COUNT 100

// Ends the call with the `tool-error` case `tag` and a printf-style message; the host shows
// the model {"ok":false,"error":<message>,"kind":<case>}.
static bool fail(head_tool_error_t *err, uint8_t tag, const char *fmt, ...) {
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
static bool file_error(int error, const char *path, head_tool_error_t *err) {
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
    case EISDIR:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_WRONG_KIND,
                  "%s is a directory; head reads files", path);
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

bool exports_head_head(head_head_args_t *args, head_head_page_t *ret, head_tool_error_t *err) {
  uint32_t count = args->count.is_some ? args->count.val : DEFAULT_COUNT;
  // `args` is ours: keep its path string for the result, free the rest when done.
  char *path = malloc(args->path.len + 1);
  if (path == NULL) abort();
  memcpy(path, args->path.ptr, args->path.len);
  path[args->path.len] = '\0';
  ret->path = args->path;
  args->path = (head_string_t){0};
  head_head_args_free(args);
  bool ok = false;
  if (count < 1 || count > MAX_COUNT) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT, "count must be 1 to %d; got %u",
         MAX_COUNT, count);
    goto done;
  }
  FILE *file = fopen(path, "r");
  if (file == NULL) {
    file_error(errno, path, err);
    goto done;
  }
  // A directory opens too (reading it fails with EBADF): check what was opened.
  struct stat st;
  if (fstat(fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(file);
    file_error(EISDIR, path, err);
    goto done;
  }
  ret->lines.ptr = calloc(count, sizeof(head_string_t));
  ret->lines.len = 0;
  ret->stopped_by = EXAMPLE_HEAD_LINES_STOPPED_BY_END_OF_FILE;
  char *line = NULL;
  size_t size = 0;
  ssize_t n;
  errno = 0;
  while ((n = getline(&line, &size, file)) >= 0) {
    // getline splits at "\n"; drop it and a "\r" before it.
    if (n > 0 && line[n - 1] == '\n') {
      n--;
      if (n > 0 && line[n - 1] == '\r') n--;
    }
    if (!is_utf8((const unsigned char *)line, (size_t)n)) {
      fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_BINARY_FILE, "%s is not UTF-8 text", path);
      break;
    }
    if (ret->lines.len == count) {
      ret->stopped_by = EXAMPLE_HEAD_LINES_STOPPED_BY_LINE_LIMIT;
      ok = true;
      break;
    }
    head_string_dup_n(&ret->lines.ptr[ret->lines.len++], line, (size_t)n);
  }
  if (n < 0) {
    if (ferror(file)) file_error(errno, path, err);
    else ok = true;
  }
  free(line);
  fclose(file);
  if (!ok) head_list_string_free(&ret->lines);
done:
  free(path);
  if (!ok) head_string_free(&ret->path);
  return ok;
}
