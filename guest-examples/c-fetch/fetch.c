// `fetch`: a Sluice tool in C (wasi-libc through zig, `wit-bindgen c` 0.63.0 bindings, the
// WASI preview1 reactor adapter) that GETs a URL through wasi:http. libc has no HTTP client:
// the tool calls wasi:http/outgoing-handler `handle` itself, blocks on the response's
// pollable and reads the body with `blocking-read`.
//
// Ownership, as wit-bindgen c has it: a handle passed by value (`own`) is given away; a
// pointer argument is only read; what an import returns is ours to free or drop. Children go
// before their parents: a pollable before its future, the body's stream before the body.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"

#define DEFAULT_MAX_BYTES 1024
#define MAX_MAX_BYTES 4096
#define USER_AGENT "sluice-example-fetch/0.1"
#define CHUNK_BYTES 65536

// Ends the call with the `tool-error` case `tag` and a printf-style message; the host shows
// the model {"ok":false,"error":<message>,"kind":<case>}.
static bool fail(fetch_tool_error_t *err, uint8_t tag, const char *fmt, ...) {
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

// The WIT names of wasi:http's `error-code` cases, by tag.
static const char *const ERROR_CODES[] = {
    "DNS-timeout",
    "DNS-error",
    "destination-not-found",
    "destination-unavailable",
    "destination-IP-prohibited",
    "destination-IP-unroutable",
    "connection-refused",
    "connection-terminated",
    "connection-timeout",
    "connection-read-timeout",
    "connection-write-timeout",
    "connection-limit-reached",
    "TLS-protocol-error",
    "TLS-certificate-error",
    "TLS-alert-received",
    "HTTP-request-denied",
    "HTTP-request-length-required",
    "HTTP-request-body-size",
    "HTTP-request-method-invalid",
    "HTTP-request-URI-invalid",
    "HTTP-request-URI-too-long",
    "HTTP-request-header-section-size",
    "HTTP-request-header-size",
    "HTTP-request-trailer-section-size",
    "HTTP-request-trailer-size",
    "HTTP-response-incomplete",
    "HTTP-response-header-section-size",
    "HTTP-response-header-size",
    "HTTP-response-body-size",
    "HTTP-response-trailer-section-size",
    "HTTP-response-trailer-size",
    "HTTP-response-transfer-coding",
    "HTTP-response-content-coding",
    "HTTP-response-timeout",
    "HTTP-upgrade-failed",
    "HTTP-protocol-error",
    "loop-detected",
    "configuration-error",
    "internal-error",
};

// The io error for a request that failed with `code` (which this frees). A host the policy
// does not list fails here too (HTTP-request-denied), but then the host ends the call with its
// own `http-denied` error, whatever the tool answers.
static bool request_failed(const char *url, wasi_http_types_error_code_t *code,
                           fetch_tool_error_t *err) {
  const char *name = code->tag < sizeof ERROR_CODES / sizeof *ERROR_CODES
                         ? ERROR_CODES[code->tag]
                         : "unknown error";
  fetch_option_string_t *detail = &code->val.internal_error;
  if (code->tag == WASI_HTTP_TYPES_ERROR_CODE_INTERNAL_ERROR && detail->is_some) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_IO, "GET %s failed: %s: %.*s", url, name,
         (int)detail->val.len, (const char *)detail->val.ptr);
  } else {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_IO, "GET %s failed: %s", url, name);
  }
  wasi_http_types_error_code_free(code);
  return false;
}

// The length of the longest prefix of s[0..n) that is whole UTF-8 characters (no overlong
// forms, no surrogates), and in *tail whether the rest is one character cut off by the end
// rather than bytes that are not UTF-8.
static size_t utf8_prefix(const unsigned char *s, size_t n, bool *tail) {
  size_t i = 0;
  *tail = false;
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
    } else return i;
    for (size_t k = 1; k <= more; k++) {
      if (i + k == n) {
        *tail = true;
        return i;
      }
      unsigned char b = s[i + k];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += more + 1;
  }
  return n;
}

// GETs `url` (NUL-terminated, `len` bytes) into `ret`: status, content type, length, and the
// first `max_bytes` bytes of the body in `head` (at least `max_bytes` long).
static bool get(const char *url, size_t len, uint32_t max_bytes, fetch_fetch_page_t *ret,
                unsigned char *head, size_t *head_len, fetch_tool_error_t *err) {
  wasi_http_types_scheme_t scheme;
  const char *rest;
  if (strncmp(url, "https://", 8) == 0) {
    scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTPS;
    rest = url + 8;
  } else if (strncmp(url, "http://", 7) == 0) {
    scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTP;
    rest = url + 7;
  } else {
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "url must start with http:// or https://; got %s", url);
  }
  if (strlen(url) != len) {
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "url is not a valid URL: %s", url);
  }
  // The authority ends at the first `/`, `?` or `#`; the fragment is not sent.
  size_t authority_len = strcspn(rest, "/?#");
  if (authority_len == 0) {
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT, "url has no host: %s",
                url);
  }
  const char *path = rest + authority_len;
  size_t path_len = strcspn(path, "#");
  char *path_with_query = malloc(path_len + 2);
  if (path_with_query == NULL) abort();
  snprintf(path_with_query, path_len + 2, "%s%.*s", path[0] == '/' ? "" : "/", (int)path_len,
           path);

  wasi_http_types_own_fields_t headers = wasi_http_types_constructor_fields();
  wasi_http_types_field_name_t name;
  fetch_string_set(&name, "user-agent");
  wasi_http_types_field_value_t value = {(uint8_t *)USER_AGENT, strlen(USER_AGENT)};
  wasi_http_types_header_error_t header_error;
  if (!wasi_http_types_method_fields_append(wasi_http_types_borrow_fields(headers), &name,
                                            &value, &header_error))
    abort();  // a constant header: never refused
  wasi_http_types_own_outgoing_request_t request =
      wasi_http_types_constructor_outgoing_request(headers);
  wasi_http_types_borrow_outgoing_request_t r = wasi_http_types_borrow_outgoing_request(request);
  fetch_string_t authority = {(uint8_t *)rest, authority_len};
  fetch_string_t path_string;
  fetch_string_set(&path_string, path_with_query);
  bool valid = wasi_http_types_method_outgoing_request_set_scheme(r, &scheme) &&
               wasi_http_types_method_outgoing_request_set_authority(r, &authority) &&
               wasi_http_types_method_outgoing_request_set_path_with_query(r, &path_string);
  free(path_with_query);
  if (!valid) {
    wasi_http_types_outgoing_request_drop_own(request);
    return fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT,
                "url is not a valid URL: %s", url);
  }

  wasi_http_types_own_future_incoming_response_t future;
  wasi_http_types_error_code_t code;
  if (!wasi_http_outgoing_handler_handle(request, NULL, &future, &code))
    return request_failed(url, &code, err);
  wasi_http_types_borrow_future_incoming_response_t f =
      wasi_http_types_borrow_future_incoming_response(future);
  wasi_io_poll_own_pollable_t ready = wasi_http_types_method_future_incoming_response_subscribe(f);
  wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(ready));
  wasi_io_poll_pollable_drop_own(ready);
  // Once it is ready: ok(ok(response)) or ok(err(error-code)).
  wasi_http_types_result_result_own_incoming_response_error_code_void_t outcome;
  bool got = wasi_http_types_method_future_incoming_response_get(f, &outcome);
  wasi_http_types_future_incoming_response_drop_own(future);
  if (!got || outcome.is_err) abort();  // ready, and taken once
  if (outcome.val.ok.is_err) return request_failed(url, &outcome.val.ok.val.err, err);
  wasi_http_types_own_incoming_response_t response = outcome.val.ok.val.ok;
  wasi_http_types_borrow_incoming_response_t resp =
      wasi_http_types_borrow_incoming_response(response);

  ret->status = wasi_http_types_method_incoming_response_status(resp);
  wasi_http_types_own_headers_t response_headers =
      wasi_http_types_method_incoming_response_headers(resp);
  wasi_http_types_list_field_value_t types;
  fetch_string_set(&name, "content-type");
  wasi_http_types_method_fields_get(wasi_http_types_borrow_fields(response_headers), &name,
                                    &types);
  wasi_http_types_fields_drop_own(response_headers);
  bool whole;
  ret->content_type.is_some =
      types.len > 0 && utf8_prefix(types.ptr[0].ptr, types.ptr[0].len, &whole) ==
                           types.ptr[0].len;
  if (ret->content_type.is_some)
    fetch_string_dup_n(&ret->content_type.val, (const char *)types.ptr[0].ptr,
                       types.ptr[0].len);
  wasi_http_types_list_field_value_free(&types);

  wasi_http_types_own_incoming_body_t body;
  if (!wasi_http_types_method_incoming_response_consume(resp, &body)) abort();  // once
  wasi_io_streams_own_input_stream_t stream;
  if (!wasi_http_types_method_incoming_body_stream(wasi_http_types_borrow_incoming_body(body),
                                                   &stream))
    abort();  // once
  bool ok = true;
  uint64_t total = 0;
  *head_len = 0;
  for (;;) {
    fetch_list_u8_t chunk;
    wasi_io_streams_stream_error_t stream_error;
    if (!wasi_io_streams_method_input_stream_blocking_read(
            wasi_io_streams_borrow_input_stream(stream), CHUNK_BYTES, &chunk, &stream_error)) {
      if (stream_error.tag == WASI_IO_STREAMS_STREAM_ERROR_LAST_OPERATION_FAILED) {
        wasi_io_error_own_error_t e = stream_error.val.last_operation_failed;
        fetch_string_t why;
        wasi_io_error_method_error_to_debug_string(wasi_io_error_borrow_error(e), &why);
        ok = fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_IO, "reading the body of %s failed: %.*s",
                  url, (int)why.len, (const char *)why.ptr);
        fetch_string_free(&why);
        wasi_io_error_error_drop_own(e);
      }
      break;  // closed: the end of the body
    }
    total += chunk.len;
    size_t keep = max_bytes - *head_len < chunk.len ? max_bytes - *head_len : chunk.len;
    memcpy(head + *head_len, chunk.ptr, keep);
    *head_len += keep;
    fetch_list_u8_free(&chunk);
  }
  wasi_io_streams_input_stream_drop_own(stream);
  wasi_http_types_future_trailers_drop_own(wasi_http_types_static_incoming_body_finish(body));
  wasi_http_types_incoming_response_drop_own(response);
  ret->bytes = total;
  return ok;
}

bool exports_fetch_fetch(fetch_fetch_args_t *args, fetch_fetch_page_t *ret,
                         fetch_tool_error_t *err) {
  uint32_t max_bytes = args->max_bytes.is_some ? args->max_bytes.val : DEFAULT_MAX_BYTES;
  // `args` is ours: keep its url string for the result, and a NUL-terminated copy.
  char *url = malloc(args->url.len + 1);
  if (url == NULL) abort();
  memcpy(url, args->url.ptr, args->url.len);
  url[args->url.len] = '\0';
  *ret = (fetch_fetch_page_t){.url = args->url};
  args->url = (fetch_string_t){0};
  fetch_fetch_args_free(args);
  bool ok = false;
  unsigned char *head = NULL;
  if (max_bytes < 1 || max_bytes > MAX_MAX_BYTES) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_INVALID_ARGUMENT, "maxBytes must be 1 to %d; got %u",
         MAX_MAX_BYTES, max_bytes);
    goto done;
  }
  head = malloc(max_bytes);
  if (head == NULL) abort();
  size_t head_len;
  if (!get(url, ret->url.len, max_bytes, ret, head, &head_len, err)) goto done;
  ret->cut = ret->bytes > head_len;
  bool tail;
  size_t text_len = utf8_prefix(head, head_len, &tail);
  // A character the cut split is dropped; any other bad byte means it is not text.
  if (text_len < head_len && !(ret->cut && tail)) {
    fail(err, SLUICE_TOOLS_TYPES_TOOL_ERROR_BINARY_FILE, "the body of %s is not UTF-8 text", url);
    goto done;
  }
  fetch_string_dup_n(&ret->text, (const char *)head, text_len);
  ok = true;
done:
  free(head);
  free(url);
  if (!ok) {
    fetch_string_free(&ret->url);
    fetch_option_string_free(&ret->content_type);
  }
  return ok;
}
