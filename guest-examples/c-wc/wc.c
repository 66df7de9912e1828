// `wc`: a Sluice tool written in C (wasi-libc), built as a WASI preview1 reactor module and
// made a component with the preview1 adapter.
//
// It counts the lines, words, UTF-8 characters and bytes of each file it is given, reading
// 64 KiB at a time, and returns as many files as fit the page budget the host grants the
// call (`sluice:tools/budget` `page-bytes`), with `next_index` to continue.
//
// The bindings (`wc.h`, `wc.c`, `wc_component_type.o`) are generated from wit/ by
// `wit-bindgen c`; this file implements `exports_wc_wc`. Ownership, as the generated code
// expects: the arguments belong to this function (free them), and every string and list in
// the result must be allocated with malloc (the generated post-return function frees them).

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

#include "wc.h"

// Most paths one call may name.
#define MAX_PATHS 100
// Bytes read at a time.
#define CHUNK_BYTES 65536
// Bytes of caller input repeated in a message.
#define MAX_QUOTED_BYTES 200
// Most roots looked at.
#define MAX_ROOTS 64

typedef example_wc_counts_file_counts_t file_counts_t;

// Ends the call with a `tool-error` case `tag` and a printf-style message: the host shows
// the model {"ok":false,"error":<message>,"kind":<case>}.
static bool fail(wc_tool_error_t *err, uint8_t tag, const char *fmt, ...) {
  char message[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  err->tag = tag;
  // Every case carries a string at the same place; the post-return function frees it.
  wc_string_dup(&err->val.invalid_argument, message);
  return false;
}

// `s` for a message, NUL-terminated in `buf`: cut to MAX_QUOTED_BYTES on a character
// boundary, with `…` when cut.
static const char *quote(const wc_string_t *s, char buf[MAX_QUOTED_BYTES + 4]) {
  size_t n = s->len;
  if (n > MAX_QUOTED_BYTES) {
    n = MAX_QUOTED_BYTES;
    while (n > 0 && (s->ptr[n] & 0xC0) == 0x80) n--;
  }
  memcpy(buf, s->ptr, n);
  if (n < s->len) {
    memcpy(buf + n, "\xE2\x80\xA6", 3);
    n += 3;
  }
  buf[n] = 0;
  return buf;
}

// Bytes of `s` written as a JSON string without its quotes (as the host writes it).
static size_t escaped_len(const wc_string_t *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->len; i++) {
    uint8_t b = s->ptr[i];
    if (b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t')
      n += 2;
    else if (b < 0x20)
      n += 6;
    else
      n += 1;
  }
  return n;
}

static size_t digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

// Bytes of one entry of `files` in the result, with its leading comma.
static size_t entry_bytes(const file_counts_t *c) {
  return strlen(",{\"path\":\"\",\"lines\":,\"words\":,\"chars\":,\"bytes\":,\"maxLineBytes\":}") +
         escaped_len(&c->path) + digits(c->lines) + digits(c->words) + digits(c->chars) +
         digits(c->bytes) + digits(c->max_line_bytes);
}

// Finds the guest path of the root called `name` (default: the first the host preopened;
// the host preopens root `logs` at `/logs`) and copies it, NUL-terminated, into `dir`.
static bool root_dir(const wc_option_string_t *name, char dir[256], wc_tool_error_t *err) {
  char names[512] = "";
  bool any = false;
  for (__wasi_fd_t fd = 3; fd < 3 + MAX_ROOTS; fd++) {
    __wasi_prestat_t prestat;
    if (__wasi_fd_prestat_get(fd, &prestat) != __WASI_ERRNO_SUCCESS) break;
    size_t len = prestat.u.dir.pr_name_len;
    if (prestat.tag != __WASI_PREOPENTYPE_DIR || len == 0 || len >= 256) continue;
    char path[256];
    if (__wasi_fd_prestat_dir_name(fd, (uint8_t *)path, len) != __WASI_ERRNO_SUCCESS) continue;
    path[len] = 0;
    const char *root = path[0] == '/' ? path + 1 : path;
    if (!name->is_some || (name->val.len == strlen(root) &&
                           memcmp(name->val.ptr, root, name->val.len) == 0)) {
      snprintf(dir, 256, "/%s", root);
      return true;
    }
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", any ? ", " : "", root);
    any = true;
  }
  if (!name->is_some)
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "this tool was granted no root; the operator grants one with "
                "`read = [\"NAME\"]` in its policy");
  char q[MAX_QUOTED_BYTES + 4];
  return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
              "unknown root %s; this tool's roots are: %s", quote(&name->val, q), names);
}

// The tool-error for `errno` after opening or reading `path`.
static bool file_error(int error, const wc_string_t *path, wc_tool_error_t *err) {
  char q[MAX_QUOTED_BYTES + 4];
  quote(path, q);
  switch (error) {
    case ENOENT:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_NOT_FOUND, "no such file or directory: %s",
                  q);
    case ENOTDIR:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_WRONG_KIND,
                  "a component of the path is not a directory: %s", q);
    case EISDIR:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_WRONG_KIND,
                  "%s is a directory; wc counts files", q);
    // Inside the sandbox, `..` above the root or a symlink out of it is "not permitted".
    case EPERM:
    case EACCES:
    case ENOTCAPABLE:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_OUTSIDE_ROOT,
                  "path is outside the root: %s; give a path relative to the root, without "
                  "`..` above it or symlinks that leave it",
                  q);
    default:
      return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_IO, "failed to read %s: %s", q,
                  strerror(error));
  }
}

// Counts the file `dir`/`path` into `c` (whose `path` is set by the caller).
static bool count_file(const char *dir, const wc_string_t *path, file_counts_t *c,
                       wc_tool_error_t *err) {
  char q[MAX_QUOTED_BYTES + 4];
  if (path->len == 0)
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "a path is empty; give file paths relative to the root");
  if (path->ptr[0] == '/')
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_OUTSIDE_ROOT,
                "path is outside the root: %s; give a path relative to the root",
                quote(path, q));
  if (memchr(path->ptr, 0, path->len))
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "a path holds a NUL character: %s", quote(path, q));
  size_t full_len = strlen(dir) + 1 + path->len + 1;
  char *full = malloc(full_len);
  snprintf(full, full_len, "%s/%.*s", dir, (int)path->len, (const char *)path->ptr);
  int fd = open(full, O_RDONLY);
  free(full);
  if (fd < 0) return file_error(errno, path, err);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return file_error(EISDIR, path, err);
  }
  static uint8_t buf[CHUNK_BYTES];
  bool in_word = false;
  uint64_t line = 0;
  uint8_t last = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      int error = errno;
      close(fd);
      return file_error(error, path, err);
    }
    if (n == 0) break;
    c->bytes += (uint64_t)n;
    for (ssize_t i = 0; i < n; i++) {
      uint8_t b = buf[i];
      if ((b & 0xC0) != 0x80) c->chars++;
      if (b == '\n') {
        c->lines++;
        uint64_t len = line - (last == '\r' ? 1 : 0);
        if (len > c->max_line_bytes) c->max_line_bytes = len;
        line = 0;
      } else {
        line++;
      }
      bool space = b == ' ' || b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == '\r';
      if (space) {
        in_word = false;
      } else if (!in_word) {
        in_word = true;
        c->words++;
      }
      last = b;
    }
  }
  close(fd);
  if (line > c->max_line_bytes) c->max_line_bytes = line;
  return true;
}

static bool run(wc_wc_args_t *args, wc_wc_report_t *ret, wc_tool_error_t *err) {
  size_t count = args->paths.len;
  if (count == 0 || count > MAX_PATHS)
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "paths must name 1 to %d files; got %zu", MAX_PATHS, count);
  size_t offset = args->offset.is_some ? args->offset.val : 0;
  if (offset >= count)
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "offset must be less than the number of paths (%zu); got %zu", count, offset);
  // The result shows many paths, each counted below, so ask for the page of a result
  // that shows no path of its own.
  wc_string_t none = {(uint8_t *)"", 0};
  uint32_t page = sluice_tools_budget_page_bytes(&none);
  if (page == 0)
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_PAGE_TOO_SMALL,
                "the result cannot fit: agent.max_tool_result_bytes is %u bytes, which leaves "
                "no room for a page; raise agent.max_tool_result_bytes",
                sluice_tools_budget_max_result_bytes());
  char dir[256];
  if (!root_dir(&args->root, dir, err)) return false;

  // The result without files, with every number at its widest.
  size_t used = strlen("{\"files\":[],\"totalLines\":,\"totalWords\":,\"totalBytes\":,"
                       "\"nextIndex\":}") +
                3 * 20 + 10;
  file_counts_t *files = calloc(count - offset, sizeof *files);
  size_t shown = 0;
  memset(ret, 0, sizeof *ret);
  for (size_t i = offset; i < count; i++) {
    file_counts_t c = {0};
    c.path = args->paths.ptr[i];  // borrowed until it is kept below
    if (!count_file(dir, &c.path, &c, err)) {
      for (size_t j = 0; j < shown; j++) wc_string_free(&files[j].path);
      free(files);
      return false;
    }
    size_t bytes = entry_bytes(&c) - (shown == 0 ? 1 : 0);
    if (used + bytes > page) {
      if (shown == 0) {
        free(files);
        char q[MAX_QUOTED_BYTES + 4];
        return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_PAGE_TOO_SMALL,
                    "the counts of %s do not fit a page of %u bytes; raise "
                    "agent.max_tool_result_bytes",
                    quote(&c.path, q), page);
      }
      ret->next_index.is_some = true;
      ret->next_index.val = (uint32_t)i;
      break;
    }
    used += bytes;
    wc_string_dup_n(&c.path, (const char *)args->paths.ptr[i].ptr, args->paths.ptr[i].len);
    files[shown++] = c;
    ret->total_lines += c.lines;
    ret->total_words += c.words;
    ret->total_bytes += c.bytes;
  }
  ret->files.ptr = files;
  ret->files.len = shown;
  return true;
}

bool exports_wc_wc(wc_wc_args_t *args, wc_wc_report_t *ret, wc_tool_error_t *err) {
  bool ok = run(args, ret, err);
  wc_wc_args_free(args);
  return ok;
}
