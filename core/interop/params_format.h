/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/params_format.h: reading and writing TVM / CVM-runtime parameter files (the layout
 * is in corten/params.h). The reader hands each checked tensor to a sink, so the same parser
 * stages a whole dictionary for an all-or-nothing load and streams entries one at a time for
 * ct_params_inspect (both in params.c), on which the `corten inspect` tool is built. */
#ifndef CORTEN_CORE_INTEROP_PARAMS_FORMAT_H
#define CORTEN_CORE_INTEROP_PARAMS_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <corten/tensor.h>

#define CT__PARAMS_DICT_MAGIC UINT64_C(0xF7E58D4F05049CB7)
#define CT__PARAMS_TENSOR_MAGIC UINT64_C(0xDD5E40F096B4A13F)
#define CT__MXNET_LIST_MAGIC UINT64_C(0x112) /* MXNet's NDArray list: a foreign .params file */

/* Smallest dictionary entry: a name length (8) plus the fixed part of a tensor record (40). */
#define CT__PARAMS_MIN_ENTRY 48
/* Fixed part of a tensor record: magic, reserved, device type and id, ndim, dtype, data bytes. */
#define CT__PARAMS_RECORD_FIXED 40

typedef enum ct__params_kind {
  CT__PARAMS_ANY = 0,
  CT__PARAMS_DICT = 1,   /* a name -> tensor dictionary */
  CT__PARAMS_TENSOR = 2, /* one tensor record (NDArray::Save) */
} ct__params_kind;

/* Where the bytes come from: memory, or a file read front to back. */
typedef struct ct__params_src {
  const unsigned char *buf; /* memory input, or NULL */
  FILE *file;               /* file input, or NULL */
  uint64_t size;            /* bytes in all */
  uint64_t off;             /* bytes consumed */
  char label[320];          /* "params file 'x.params'" or "params buffer", for messages */
} ct__params_src;

/* A source over len bytes at buf (not copied). */
void ct__params_src_memory(ct__params_src *s, const void *buf, size_t len);

/* A source over the regular file at path. CT_ERR_IO when it cannot be opened or is not a
 * regular file. Close with ct__params_src_close. */
ct_status ct__params_src_file(ct__params_src *s, const char *path);
void ct__params_src_close(ct__params_src *s);

/* Where an entry lies in the input. */
typedef struct ct__params_pos {
  uint64_t index;  /* entry number in file order, from 0 */
  uint64_t record; /* offset of its tensor record (the record's magic; 0 for a single tensor) */
  uint64_t data;   /* offset of its data */
} ct__params_pos;

/* What the reader hands over. */
typedef struct ct__params_sink {
  /* Optional: called once the header is read, with the kind found and the entry count (1 for a
   * single tensor). A failure stops the read and is returned. */
  ct_status (*begin)(void *ctx, ct__params_kind kind, uint64_t count);
  /* Called for each entry in file order with its position, its name (NUL-terminated, valid
   * during the call; NULL for a single tensor) and a new CPU tensor the sink takes over (it
   * frees it even when it fails). A failure stops the read and is returned. */
  ct_status (*entry)(void *ctx, const ct__params_pos *pos, const char *name, ct_tensor *t);
  void *ctx;
} ct__params_sink;

/* Reads the whole source, checking every field, and feeds the sink. want says which kind the
 * caller accepts (CT__PARAMS_ANY: both). Errors: CT_ERR_FORMAT naming the offset and the
 * entry, CT_ERR_IO when a file read fails, CT_ERR_OUT_OF_MEMORY, or the sink's failure. */
ct_status ct__params_read(ct__params_src *src, ct__params_kind want, const ct__params_sink *sink);

/* name as messages show it, in buf: at most 60 bytes (then "..."), control bytes as '?'. Returns
 * buf. cap must be at least 64. */
const char *ct__params_name_shown(const char *name, char *buf, size_t cap);

/* The system's text for errno value e, in buf (thread-safe). */
const char *ct__errno_str(int e, char *buf, size_t cap);

/* ---- Writing -------------------------------------------------------------------------------- */

/* A file being written atomically: bytes go to a temporary file beside the target, which
 * ct__params_out_commit syncs and renames over it. */
typedef struct ct__params_out {
  int fd;
  const char *path;   /* the target, as the caller named it (for messages) */
  char *target;       /* where the file goes: path, or the file a symbolic link at path names */
  char *tmp_path;     /* the temporary file, removed on abort */
  uint64_t written;   /* bytes handed over so far */
  size_t used;        /* bytes waiting in buf */
  unsigned char buf[1 << 16];
} ct__params_out;

/* Creates the temporary file. CT_ERR_IO (naming path and the system's reason), or
 * CT_ERR_OUT_OF_MEMORY. */
ct_status ct__params_out_open(ct__params_out *o, const char *path, const char *what);
/* Appends n bytes. CT_ERR_IO on a failed write. */
ct_status ct__params_out_write(ct__params_out *o, const void *p, size_t n, const char *what);
ct_status ct__params_out_u64(ct__params_out *o, uint64_t v, const char *what);
/* Writes one tensor record for t (its data read on the host; t must hold checked memory on a
 * host-readable place). */
ct_status ct__params_out_record(ct__params_out *o, const ct_tensor *t, const char *what);
/* Flushes, fsyncs, renames over the target and syncs the directory; on failure removes the
 * temporary file. Either way o is closed. */
ct_status ct__params_out_commit(ct__params_out *o, const char *what);
/* Closes and removes the temporary file. */
void ct__params_out_abort(ct__params_out *o);

#endif /* CORTEN_CORE_INTEROP_PARAMS_FORMAT_H */
