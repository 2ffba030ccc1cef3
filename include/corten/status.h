/* SPDX-License-Identifier: Apache-2.0 */
/* corten/status.h: status codes and the thread-local last error.
 *
 * Every public function that can fail reports it: one returning ct_status returns the code, one
 * returning a pointer returns NULL. Either way the failing thread's ct_last_status() then holds
 * the code and ct_last_error() a sentence naming the objects involved and the fix. A successful
 * call may leave the previous failure's text in place; read it only after a failure.
 *
 * Thread-safety: every function here may be called from any thread at any time; the last error
 * belongs to the calling thread. */
#ifndef CORTEN_STATUS_H
#define CORTEN_STATUS_H

#include <corten/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a call returns: CT_OK, or a small negative code per kind of failure. New codes go at the
 * end. */
typedef enum ct_status {
  CT_OK = 0,
  CT_ERR_INVALID_ARGUMENT = -1, /* NULL where an object is needed, bad enum, negative dim ... */
  CT_ERR_OUT_OF_MEMORY = -2,    /* host or device allocation failed */
  CT_ERR_NOT_FOUND = -3,        /* no such variable / op type / kid scope */
  CT_ERR_TYPE_MISMATCH = -4,    /* variable holds another type; tensor holds another dtype */
  CT_ERR_UNINITIALIZED = -5,    /* variable holds nothing; tensor holds no memory yet */
  CT_ERR_OUT_OF_RANGE = -6,     /* slice bounds, rank > CT_MAX_RANK, dims beyond capacity */
  CT_ERR_ALREADY_EXISTS = -7,   /* rename onto an existing name, double registration */
  CT_ERR_EXTERNAL_BUFFER = -8,  /* would grow or free memory the tensor does not own */
  CT_ERR_SHAPE = -9,            /* dims unset, or inconsistent shapes in an op */
  CT_ERR_UNSUPPORTED = -10,     /* no kernel for this place/dtype; feature not built in */
  CT_ERR_DEVICE = -11,          /* CUDA error, or no such device */
  CT_ERR_IO = -12,              /* open/read/write/rename failed */
  CT_ERR_FORMAT = -13,          /* malformed or foreign file or DLPack tensor */
  CT_ERR_READ_ONLY = -14,       /* would write memory its producer lent read-only (DLPack) */
} ct_status;

/* A short static text for a code: "ok", "type mismatch", "format error" ...; "unknown status"
 * for a value outside the enum. Never NULL. */
CT_API const char *ct_status_str(ct_status s);

/* This thread's last failure, as a sentence naming the objects and the fix: "variable 'fc1.w'
 * holds ct_tensor, asked for int64". "no error" before the thread's first failure. Never NULL.
 * The text stays valid until this thread's next failing call. */
CT_API const char *ct_last_error(void);

/* This thread's last failure code; CT_OK before the first failure. */
CT_API ct_status ct_last_status(void);

/* Forgets this thread's last failure: ct_last_status() is CT_OK and ct_last_error() "no error"
 * until the next failure. Useful before a call whose failure you want to tell apart. */
CT_API void ct_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_STATUS_H */
