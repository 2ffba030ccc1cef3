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
 * bool written as TVM writes it: code 1 (uint), 1 bit, one byte per element.
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
 * where: "params file 'x.params': entry 7 ('conv1.b'): claims 4096 data bytes, 12 remain at
 * offset 9120". Trailing bytes after the last record are an error too.
 *
 * Thread-safety: the scope rules apply (ct_params_load changes the scope; ct_params_save reads
 * it and must not run alongside changes to the variables it saves). */
#ifndef CORTEN_PARAMS_H
#define CORTEN_PARAMS_H

#include <stddef.h>

#include <corten/scope.h>
#include <corten/status.h>
#include <corten/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the tensors of the named variables to path as a parameter dictionary, in the order of
 * names. names == NULL (n ignored) saves every local variable of scope that holds a tensor,
 * sorted by name; variables holding other types are skipped. Given names are looked up as
 * ct_scope_find_var does (the scope, then its ancestors). Tensors on other places are copied to
 * the host for writing.
 * The save is atomic: the bytes go to a new file beside path (path + ".tmp-<pid>-<n>"), which is
 * flushed to disk (fsync), renamed over path, and the directory synced. On any failure the
 * temporary file is removed and an existing file at path is left as it was. A new file's mode is
 * 0666 less the umask.
 * Errors: NULL path or scope, an empty path, a NULL or empty name in names, a name given twice,
 * CT_ERR_INVALID_ARGUMENT; a name not found,
 * CT_ERR_NOT_FOUND; a variable holding another type, CT_ERR_TYPE_MISMATCH; an empty variable
 * or a tensor without memory (with names == NULL too: no tensor is left out silently),
 * CT_ERR_UNINITIALIZED; a tensor whose dims exceed its capacity, CT_ERR_OUT_OF_RANGE; the file
 * cannot be created, written, synced or renamed, CT_ERR_IO (naming the path and the system's
 * reason); no memory, CT_ERR_OUT_OF_MEMORY. Every variable is checked before the temporary file
 * is created, so these errors write nothing. */
CT_API ct_status ct_params_save(const char *path, const ct_scope *scope, const char *const *names,
                                size_t n);

/* Reads the parameter dictionary at path into scope: each entry into the local variable of its
 * name (created when missing), which ends holding a new CPU tensor with the entry's dims, dtype
 * and data (a tensor it held before is let go of; its other views keep the old memory).
 * All or nothing: every tensor is read and checked first, and the scope changes only when all
 * of them are good; on any error the scope is exactly as it was.
 * Errors: NULL path or scope, CT_ERR_INVALID_ARGUMENT; the file cannot be opened or read, or is
 * not a regular file, CT_ERR_IO; malformed, truncated or foreign contents, a name that is empty,
 * holds a NUL byte or comes twice, a dtype, rank or device corten cannot hold, or a single-tensor
 * file (use ct_tensor_load), CT_ERR_FORMAT; an existing local variable of an entry's name
 * holding another type than a tensor, CT_ERR_TYPE_MISMATCH; no memory, CT_ERR_OUT_OF_MEMORY. */
CT_API ct_status ct_params_load(const char *path, ct_scope *scope);

/* As ct_params_load, from len bytes at buf (which may be NULL when len is 0; the bytes are
 * copied, buf is not kept). Messages name the input "params buffer". */
CT_API ct_status ct_params_load_memory(const void *buf, size_t len, ct_scope *scope);

/* Writes t to path as a single-tensor file (TVM's NDArray::Save layout), atomically as
 * ct_params_save does. Errors as ct_params_save for one tensor (NULL t,
 * CT_ERR_INVALID_ARGUMENT). */
CT_API ct_status ct_tensor_save(const char *path, const ct_tensor *t);

/* Reads a single-tensor file into t, which ends a new CPU tensor holding its dims, dtype and
 * data (t lets go of what it held). On error t is unchanged. Errors as ct_params_load; a
 * dictionary file is CT_ERR_FORMAT (use ct_params_load). */
CT_API ct_status ct_tensor_load(const char *path, ct_tensor *t);

/* As ct_tensor_load, from len bytes at buf. */
CT_API ct_status ct_tensor_load_memory(const void *buf, size_t len, ct_tensor *t);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_PARAMS_H */
