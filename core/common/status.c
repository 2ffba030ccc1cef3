/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/status.c: status strings and the thread-local last error. */
#include <stdio.h>
#include <string.h>

#include "common/common.h"

#define CT__ERROR_CAP 512

typedef struct ct__error_state {
  ct_status status;
  const char *prefix, *suffix; /* non-NULL: text is still to be built around name */
  size_t name_len;
  char name[CT__ERROR_CAP];
  char text[CT__ERROR_CAP];
} ct__error_state;

static _Thread_local ct__error_state tls_error = {.status = CT_OK, .text = "no error"};
_Thread_local uint64_t ct__errors_recorded; /* errors recorded on this thread so far */
_Thread_local bool ct__errors_quiet;

const uint64_t *ct__error_counter(void) { return &ct__errors_recorded; }

static void append(char *buf, size_t *pos, const char *src, size_t n);

const char *ct_status_str(ct_status s) {
  switch (s) {
    case CT_OK: return "ok";
    case CT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CT_ERR_OUT_OF_MEMORY: return "out of memory";
    case CT_ERR_NOT_FOUND: return "not found";
    case CT_ERR_TYPE_MISMATCH: return "type mismatch";
    case CT_ERR_UNINITIALIZED: return "uninitialized";
    case CT_ERR_OUT_OF_RANGE: return "out of range";
    case CT_ERR_ALREADY_EXISTS: return "already exists";
    case CT_ERR_EXTERNAL_BUFFER: return "external buffer";
    case CT_ERR_SHAPE: return "shape error";
    case CT_ERR_UNSUPPORTED: return "unsupported";
    case CT_ERR_DEVICE: return "device error";
    case CT_ERR_IO: return "i/o error";
    case CT_ERR_FORMAT: return "format error";
    case CT_ERR_READ_ONLY: return "read only";
  }
  return "unknown status";
}

const char *ct_last_error(void) {
  ct__error_state *e = &tls_error;
  if (e->prefix != NULL) {
    size_t pos = 0;
    append(e->text, &pos, e->prefix, strlen(e->prefix));
    append(e->text, &pos, e->name, e->name_len);
    append(e->text, &pos, e->suffix, strlen(e->suffix));
    e->text[pos] = '\0';
    e->prefix = e->suffix = NULL;
  }
  return e->text;
}

ct_status ct_last_status(void) { return tls_error.status; }

void ct__error_status_put(ct_status s) { tls_error.status = s; }

void ct_clear_error(void) {
  tls_error.status = CT_OK;
  tls_error.prefix = tls_error.suffix = NULL;
  memcpy(tls_error.text, "no error", sizeof "no error");
}

static void set_error_v(ct_status s, const char *fmt, va_list ap) {
  ct__error_state *e = &tls_error;
  ct__errors_recorded++;
  e->status = s;
  if (ct__errors_quiet) return;
  e->prefix = e->suffix = NULL;
  if (vsnprintf(e->text, sizeof e->text, fmt, ap) < 0) {
    memcpy(e->text, "(unformattable error message)", sizeof "(unformattable error message)");
  }
}

ct_status ct__error(ct_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error_v(s, fmt, ap);
  va_end(ap);
  return s;
}

void *ct__error_null(ct_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error_v(s, fmt, ap);
  va_end(ap);
  return NULL;
}

/* Appends n bytes of src to buf at *pos, keeping room for the terminator; cuts short when full. */
static void append(char *buf, size_t *pos, const char *src, size_t n) {
  size_t room = CT__ERROR_CAP - 1 - *pos;
  if (n > room) n = room;
  memcpy(buf + *pos, src, n);
  *pos += n;
}

void ct__error_name(ct_status s, const char *prefix, const char *name, size_t len,
                    const char *suffix) {
  ct__errors_recorded++;
  ct__error_state *e = &tls_error;
  if (len > CT__ERROR_CAP) len = CT__ERROR_CAP;
  e->status = s;
  if (ct__errors_quiet) return;
  e->prefix = prefix;
  e->suffix = suffix;
  e->name_len = len;
  memcpy(e->name, name, len);
}
