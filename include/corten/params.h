/* SPDX-License-Identifier: Apache-2.0 */
/* corten/params.h: parameter files in TVM's and CVM-runtime's format, byte for byte.
 *
 * A parameter dictionary (TVM's save_param_dict / load_param_dict, CVM's CVMSaveParamsDict) maps
 * names to tensors. Everything is little-endian, with no padding:
 *
 *   dict    u64 magic 0xF7E58D4F05049CB7, u64 reserved (0), u64 count,
 *           count x (u64 length, name bytes, no NUL), u64 count again, count x tensor record
 *   record  u64 magic 0xDD5E40F096B4A13F, u64 reserved (0), i32 device_type (1, CPU),
 *           i32 device_id (0), i32 ndim, u8 dtype code, u8 bits, u16 lanes (1),
 *           i64 shape[ndim], i64 data bytes, then the data, row-major
 *
 * A single-tensor file (TVM's NDArray::Save) is one record on its own; ct_tensor_save and
 * ct_tensor_load read and write those. dtype codes and bits are DLPack's (see corten/dlpack.h),
 * bool written as current TVM writes it: code 6 (kDLBool), 8 bits, one byte per element; the
 * older form (code 1 uint, 1 bit, also one byte per element) is still read.
 *
 * What is byte-identical: corten writes exactly the layout above, with reserved fields 0,
 * device (1, 0), lanes 1 and each tensor's data as it is in memory. Saving the tensors of a
 * loaded file with names in the file's order reproduces the file byte for byte; with
 * names == NULL the entries come sorted by name (strcmp order), so the result equals the
 * original with its entries put in that order: the same header, and each name and each record
 * byte-identical to the original's. (TVM >= 0.8 writes its entries unordered.)
 *
 * Loading treats the bytes as untrusted: every count and length is checked against the bytes
 * that remain before it is used, nothing is allocated before the bytes it stands for are known
 * to be there, and no size computation can overflow. Any malformed, truncated or foreign input
 * (an MXNet .params file, magic 0x112, is named as such) is CT_ERR_FORMAT, and the message says
 * where: "params file 'x.params': tensor 7 ('conv1.b'): claims 4096 data bytes, 12 remain at
 * offset 9120". Trailing bytes after the last record are an error too.
 *
 * ct_params_inspect lists what a file holds (either kind) without a scope: each entry's name,
 * dtype, dims, byte offsets and data, one tensor in memory at a time. The `corten inspect` tool
 * is built on it.
 *
 * Thread-safety: the scope rules apply (ct_params_load changes the scope; ct_params_save reads
 * it and must not run alongside changes to the variables it saves). Inspecting touches no shared
 * state: any number of threads may inspect at once, each with its own visitor. */
#ifndef CORTEN_PARAMS_H
#define CORTEN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include <corten/export.h>
#include <corten/scope.h>
#include <corten/status.h>
#include <corten/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Dictionaries and scopes --------------------------------------------------------------------
 * Writes the tensors of the named variables to path as a parameter dictionary, in the order of
 * names. names == NULL (n ignored) saves every local variable of scope that holds a tensor,
 * sorted by name; variables holding other types are skipped. Given names are looked up as
 * ct_scope_find_var does (the scope, then its ancestors). Tensors on other places are copied to
 * the host for writing. The scope and its tensors stay the caller's; nothing is changed in them.
 * The save is atomic: the bytes go to a new file beside path (path + ".tmp-<host>-<pid>-<n>"),
 * which is flushed to disk (fsync), renamed over path, and the directory synced. On any failure
 * the temporary file is removed and an existing file at path is left as it was; the temporary
 * file of a save that was killed is removed by the next save of the same path. A new file's mode is
 * 0666 less the umask.
 * Errors (every variable is checked before the temporary file is created, so the argument and
 * variable errors write nothing):
 *   CT_ERR_INVALID_ARGUMENT  path or scope is NULL, path is empty, a name in names is NULL or
 *                            empty, or a name is given twice
 *   CT_ERR_NOT_FOUND         a name is not found
 *   CT_ERR_TYPE_MISMATCH     a variable holds another type than a tensor
 *   CT_ERR_UNINITIALIZED     an empty variable, or a tensor without memory (with names == NULL
 *                            too: no tensor is left out silently)
 *   CT_ERR_OUT_OF_RANGE      a tensor whose dims exceed its capacity
 *   CT_ERR_IO                the file cannot be created, written, synced or renamed (the
 *                            message names the path and the system's reason)
 *   CT_ERR_DEVICE            copying a CUDA tensor to the host failed
 *   CT_ERR_OUT_OF_MEMORY     no host memory */
CT_API ct_status ct_params_save(const char *path, const ct_scope *scope, const char *const *names,
                                size_t n);

/* Reads the parameter dictionary at path into scope: each entry into the local variable of its
 * name (created when missing), which ends holding a new CPU tensor with the entry's dims, dtype
 * and data (a tensor it held before is let go of; its other views keep the old memory).
 * All or nothing: every tensor is read and checked first, and the scope changes only when all
 * of them are good.
 * Errors (the scope exactly as it was):
 *   CT_ERR_INVALID_ARGUMENT  path or scope is NULL
 *   CT_ERR_IO                the file cannot be opened or read, or is not a regular file
 *   CT_ERR_FORMAT            malformed, truncated or foreign contents; a name that is empty,
 *                            holds a NUL byte or comes twice; a dtype, rank or device corten
 *                            cannot hold; or a single-tensor file (use ct_tensor_load)
 *   CT_ERR_TYPE_MISMATCH     an existing local variable of an entry's name holds another type
 *                            than a tensor
 *   CT_ERR_OUT_OF_MEMORY     no host memory */
CT_API ct_status ct_params_load(const char *path, ct_scope *scope);

/* As ct_params_load, from len bytes at buf (the bytes are copied into the tensors, buf is not
 * kept). Messages name the input "params buffer".
 * Errors: those of ct_params_load but CT_ERR_IO, and
 *   CT_ERR_INVALID_ARGUMENT  buf is NULL with len > 0 (NULL with len 0 is an empty input), or
 *                            scope is NULL */
CT_API ct_status ct_params_load_memory(const void *buf, size_t len, ct_scope *scope);

/* ---- Single tensors -----------------------------------------------------------------------------
 * Writes t to path as a single-tensor file (TVM's NDArray::Save layout), atomically as
 * ct_params_save does. t stays the caller's, unchanged.
 * Errors: those of ct_params_save for one tensor, with
 *   CT_ERR_INVALID_ARGUMENT  path or t is NULL, or path is empty */
CT_API ct_status ct_tensor_save(const char *path, const ct_tensor *t);

/* Reads a single-tensor file into t, which ends a new CPU tensor holding its dims, dtype and
 * data (t lets go of what it held).
 * Errors (t unchanged):
 *   CT_ERR_INVALID_ARGUMENT  path or t is NULL
 *   CT_ERR_IO                the file cannot be opened or read, or is not a regular file
 *   CT_ERR_FORMAT            malformed, truncated or foreign contents; a dtype, rank or device
 *                            corten cannot hold; or a dictionary file (use ct_params_load)
 *   CT_ERR_OUT_OF_MEMORY     no host memory */
CT_API ct_status ct_tensor_load(const char *path, ct_tensor *t);

/* As ct_tensor_load, from len bytes at buf (copied; buf is not kept).
 * Errors (t unchanged): those of ct_tensor_load but CT_ERR_IO, with
 *   CT_ERR_INVALID_ARGUMENT  buf is NULL with len > 0, or t is NULL */
CT_API ct_status ct_tensor_load_memory(const void *buf, size_t len, ct_tensor *t);

/* ---- Listing a file -----------------------------------------------------------------------------
 * What a parameter file holds. */
typedef enum ct_params_kind {
  CT_PARAMS_DICT = 1,   /* a parameter dictionary (ct_params_save, TVM's save_param_dict) */
  CT_PARAMS_TENSOR = 2, /* a single-tensor file (ct_tensor_save, TVM's NDArray::Save) */
} ct_params_kind;

/* The input as a whole, known once its header is read. */
typedef struct ct_params_info {
  ct_params_kind kind;
  uint64_t count;  /* entries: the dictionary's count, 1 for a single-tensor file */
  uint64_t nbytes; /* bytes of the whole input: the file's size, or len */
} ct_params_info;

/* One entry, lent to the visitor for the duration of its call. */
typedef struct ct_params_entry {
  uint64_t index;          /* position in the file, from 0 */
  const char *name;        /* NUL-terminated; NULL in a single-tensor file */
  ct_dtype dtype;
  ct_ddim dims;
  uint64_t nbytes;         /* data bytes: numel x dtype size */
  uint64_t offset;         /* byte offset of the entry's tensor record (its magic); 0 in a
                              single-tensor file */
  uint64_t data_offset;    /* byte offset of the entry's data */
  const ct_tensor *tensor; /* a CPU tensor holding the dims, dtype and data */
} ct_params_entry;

/* What ct_params_inspect calls, in file order, on the calling thread; ctx is passed through.
 *   begin  optional: once, when the header is read (for a dictionary, after its names have
 *          been read and checked), before any entry
 *   entry  optional: once per entry, right after its record has been read and checked
 * A function that returns anything but CT_OK stops the read, and ct_params_inspect returns that
 * status (this is also the way to stop early on purpose). */
typedef struct ct_params_visitor {
  ct_status (*begin)(void *ctx, const ct_params_info *info);
  ct_status (*entry)(void *ctx, const ct_params_entry *entry);
  void *ctx;
} ct_params_visitor;

/* Reads the parameter file at path, a dictionary or a single tensor, front to back with every
 * check of ct_params_load, and shows it to the visitor: the info, then each entry in file order.
 * One tensor is in memory at a time: each entry's tensor, its name and the entry itself belong
 * to corten and are freed when the entry function returns; to keep a tensor, ct_tensor_share or
 * ct_tensor_copy it into one of your own. NULL visitor: the file is read and checked only.
 * Entries are shown as they are read, so a problem found later (a malformed later entry,
 * trailing bytes) fails the call after the earlier entries were shown: act on what was shown
 * only when the call returns CT_OK.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  path is NULL
 *   CT_ERR_IO                the file cannot be opened or read, or is not a regular file
 *   CT_ERR_FORMAT            malformed, truncated or foreign contents; a name that is empty,
 *                            holds a NUL byte or comes twice; a dtype, rank or device corten
 *                            cannot hold (the message names the entry and the byte offset)
 *   CT_ERR_OUT_OF_MEMORY     no host memory for a name or a tensor
 *   any other                a visitor function's status, returned as it is; its own message
 *                            is kept, or when it recorded none, the message names the function
 *                            and the entry */
CT_API ct_status ct_params_inspect(const char *path, const ct_params_visitor *visitor);

/* As ct_params_inspect, from len bytes at buf (not copied; buf must stay valid during the call).
 * Errors: those of ct_params_inspect but CT_ERR_IO, with
 *   CT_ERR_INVALID_ARGUMENT  buf is NULL with len > 0 */
CT_API ct_status ct_params_inspect_memory(const void *buf, size_t len,
                                          const ct_params_visitor *visitor);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_PARAMS_H */
