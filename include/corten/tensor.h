/* SPDX-License-Identifier: Apache-2.0 */
/* corten/tensor.h: an n-dimensional array with dims, a dtype, a place and counted memory.
 *
 * A tensor is a small header (dims, dtype, place, offset) over a block of memory that any number
 * of tensors may share; the block goes back to its allocator, or to its owner's release call for
 * an external buffer, when the last tensor viewing it lets go. A new tensor has unset dims (rank
 * -1) and no memory. Memory appears only in ct_tensor_mutable_data (or a call that writes data:
 * copy, set_value), so setting dims never allocates.
 *
 * The capacity of a tensor is the bytes of its block from its offset to the block's end; its
 * data takes numel x dtype size of them.
 *
 * Thread-safety: a tensor header is not locked; calls that change a tensor must not run
 * alongside other calls on the same tensor. Different tensors sharing one block may be used
 * from different threads (the count is atomic); their data is the caller's to synchronise. */
#ifndef CORTEN_TENSOR_H
#define CORTEN_TENSOR_H

#include <corten/status.h>
#include <corten/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_tensor ct_tensor;

/* A tensor with unset dims (rank -1), undefined dtype, CPU place and no memory, owned by the
 * caller: free it with ct_tensor_free. (A tensor held by a variable belongs to the variable.)
 * Errors (NULL returned):
 *   CT_ERR_OUT_OF_MEMORY     no host memory for the tensor */
CT_NODISCARD CT_API ct_tensor *ct_tensor_new(void);

/* Lets go of the memory (freed if this was its last view) and frees the tensor. NULL: no-op. */
CT_API void ct_tensor_free(ct_tensor *t);

/* Sets the dims; never allocates and keeps the memory, so dims larger than the capacity take
 * effect at the next ct_tensor_mutable_data.
 * Errors (the dims stay as they were):
 *   CT_ERR_INVALID_ARGUMENT  t is NULL, or dims has a rank below 0 or a negative extent
 *   CT_ERR_OUT_OF_RANGE      rank above CT_MAX_RANK, or numel x 8 bytes overflows */
CT_API ct_status ct_tensor_resize(ct_tensor *t, ct_ddim dims);

/* The data, writable, as `dtype` at `place`, allocating only when it must: when the tensor holds
 * no memory, its memory is on another place, or its capacity is short of numel x dtype size.
 * Otherwise it returns the same block, even when the dtype changes (the tensor's dtype becomes
 * `dtype`). When it must reallocate it first lets go of the old block, so the peak never holds
 * both; the new block's contents are undefined. The memory belongs to the tensor (and its
 * views): the pointer stays valid while they hold it.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  t is NULL, dtype is CT_DTYPE_UNDEFINED or outside the enum, or
 *                            place is not a valid place
 *   CT_ERR_SHAPE             the dims are unset
 *   CT_ERR_EXTERNAL_BUFFER   the tensor wraps an external buffer that is too small or on another
 *                            place
 *   CT_ERR_READ_ONLY         the tensor views memory lent read-only (ct_tensor_is_read_only)
 *   CT_ERR_UNSUPPORTED       a place this build cannot allocate on
 *   CT_ERR_DEVICE            a CUDA place without such a device, or a CUDA failure
 *   CT_ERR_OUT_OF_MEMORY     the allocator failed
 * (numel x dtype size cannot overflow: every call that sets dims refuses dims whose numel x 8
 * bytes would.)
 * On any failure the dims, dtype and place are unchanged and nothing leaks. When the failure is
 * the allocator's, a tensor that held no memory still holds none, and one that was the sole
 * holder of its block holds none either: that block had already been given up so the peak never
 * holds both, and its contents were being discarded anyway. A view whose block other views
 * share keeps it until the new block exists, so after a failure it is exactly as it was. */
CT_API void *ct_tensor_mutable_data(ct_tensor *t, ct_dtype dtype, ct_place place);

/* The data, read-only, as `dtype`; the memory belongs to the tensor, as for
 * ct_tensor_mutable_data.
 * Errors (NULL returned):
 *   CT_ERR_INVALID_ARGUMENT  t is NULL
 *   CT_ERR_UNINITIALIZED     the tensor holds no memory
 *   CT_ERR_TYPE_MISMATCH     the tensor holds another dtype
 *   CT_ERR_OUT_OF_RANGE      the dims grew past the capacity since the last mutable_data */
CT_API const void *ct_tensor_data(const ct_tensor *t, ct_dtype dtype);

/* Accessors; they never fail. For NULL t: unset dims, CT_DTYPE_UNDEFINED, the CPU place, numel
 * -1, false. The dtype is the one of the last mutable_data (or copy, set_value, wrap),
 * CT_DTYPE_UNDEFINED before; the place is the memory's, or the CPU place when the tensor holds
 * none. numel is -1 while the dims are unset. */
CT_API ct_ddim ct_tensor_dims(const ct_tensor *t);
CT_API ct_dtype ct_tensor_dtype(const ct_tensor *t);
CT_API ct_place ct_tensor_place(const ct_tensor *t);
CT_API int64_t ct_tensor_numel(const ct_tensor *t);
CT_API bool ct_tensor_has_memory(const ct_tensor *t);
CT_API bool ct_tensor_is_external(const ct_tensor *t);
/* Whether t views memory its producer lent read-only (a DLPack 1.x import with the read-only
 * flag, and every view of it): ct_tensor_mutable_data, ct_tensor_copy and ct_tensor_set_value
 * into it fail with CT_ERR_READ_ONLY, and so does an op writing it; reading is unrestricted. */
CT_API bool ct_tensor_is_read_only(const ct_tensor *t);

/* Bytes from the tensor's offset to the end of its block; 0 without memory or for NULL t. */
CT_API size_t ct_tensor_capacity(const ct_tensor *t);

/* Whether a and b view the same block (at any offsets). false when either is NULL or holds no
 * memory. */
CT_API bool ct_tensor_shares_memory(const ct_tensor *a, const ct_tensor *b);

/* Views. Each makes dst a view of src's memory (dst lets go of what it held first; dst may be
 * src itself) and copies the external flag with it. The memory lives until its last view goes.
 *   share          the same dims, dtype, place and offset
 *   slice          rows [begin, end) of dim 0: dims [end-begin, d1, ...], offset moved by
 *                  begin rows; begin == end gives an empty view
 *   flatten_to_2d  dims [d0*...*d(k-1), dk*...*d(rank-1)] for k = num_col_dims, 0 <= k <= rank
 * Errors (dst unchanged):
 *   CT_ERR_INVALID_ARGUMENT  dst or src is NULL
 *   CT_ERR_UNINITIALIZED     src holds no memory
 *   CT_ERR_OUT_OF_RANGE      src's dims exceed its capacity, a slice of a scalar, begin/end
 *                            outside 0 <= begin <= end <= d0, or num_col_dims outside
 *                            [0, rank] */
CT_API ct_status ct_tensor_share(ct_tensor *dst, const ct_tensor *src);
CT_API ct_status ct_tensor_slice(ct_tensor *dst, const ct_tensor *src, int64_t begin,
                                 int64_t end);
CT_API ct_status ct_tensor_flatten_to_2d(ct_tensor *dst, const ct_tensor *src, int num_col_dims);

/* Points t at caller memory: numel(dims) x dtype size bytes at data, on place. The buffer stays
 * the caller's: the tensor never frees or grows it; release(ctx), if release is not NULL, runs
 * once when the last view of the buffer goes. t lets go of what it held first.
 * data may be NULL when the buffer has no bytes (numel 0); the tensor then points at a non-NULL
 * placeholder, so ct_tensor_data succeeds on it as on any other tensor.
 * Errors (t unchanged, the buffer not taken: release is not called):
 *   CT_ERR_INVALID_ARGUMENT  t is NULL, data is NULL while numel > 0, the dims are unset or have
 *                            a negative extent, dtype is CT_DTYPE_UNDEFINED (or outside the
 *                            enum), or place is not a valid place
 *   CT_ERR_OUT_OF_RANGE      rank above CT_MAX_RANK, or a byte size that overflows
 *   CT_ERR_UNSUPPORTED       a place this build does not support
 *   CT_ERR_DEVICE            a CUDA place without such a device
 *   CT_ERR_OUT_OF_MEMORY     no host memory for corten's record of the buffer */
CT_API ct_status ct_tensor_wrap(ct_tensor *t, void *data, ct_ddim dims, ct_dtype dtype,
                                ct_place place, void (*release)(void *ctx), void *ctx);

/* Deep copy of src's data, dims and dtype into dst at dst_place. dst may be src.
 * - dst external: the bytes are copied in place when they fit its buffer and dst_place is the
 *   buffer's place; otherwise CT_ERR_EXTERNAL_BUFFER. dst stays external.
 * - dst normal: dst ends with memory of its own that no other tensor shares; its block is
 *   reused when no other view holds it, it is on dst_place and it is large enough, otherwise a
 *   new one is allocated (the old one let go first).
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  dst or src is NULL, or dst_place is not a valid place
 *   CT_ERR_UNINITIALIZED     src holds no memory
 *   CT_ERR_OUT_OF_RANGE      src's dims exceed its capacity
 *   CT_ERR_EXTERNAL_BUFFER   dst is external and the bytes do not fit its buffer, or dst_place
 *                            is not the buffer's place
 *   CT_ERR_READ_ONLY         dst views memory lent read-only
 *   CT_ERR_UNSUPPORTED       a place this build does not support
 *   CT_ERR_DEVICE            a CUDA place without such a device, or a failed CUDA copy
 *   CT_ERR_OUT_OF_MEMORY     allocation failed; dst keeps its dims and dtype, as
 *                            ct_tensor_mutable_data says */
CT_API ct_status ct_tensor_copy(ct_tensor *dst, const ct_tensor *src, ct_place dst_place);

/* Copies numel(dims) x dtype size bytes from src (memory at src_place, which stays the
 * caller's) into t, which takes dims and dtype. An external t is written in place when the
 * bytes fit (else CT_ERR_EXTERNAL_BUFFER); a normal t is resized as needed under the rule of
 * ct_tensor_copy, staying on its place when it holds memory and going to src_place otherwise.
 * Errors:
 *   CT_ERR_INVALID_ARGUMENT  t is NULL, src is NULL while numel > 0, the dims are unset or have
 *                            a negative extent, dtype is CT_DTYPE_UNDEFINED (or outside the
 *                            enum), or src_place is not a valid place
 *   CT_ERR_OUT_OF_RANGE      rank above CT_MAX_RANK, or a byte size that overflows
 *   then those of ct_tensor_copy */
CT_API ct_status ct_tensor_set_value(ct_tensor *t, const void *src, ct_ddim dims, ct_dtype dtype,
                                     ct_place src_place);

/* Hands everything src has to dst (dims, dtype, place, memory, the external flag), letting go
 * of what dst held first; src ends as a new tensor (unset dims, no memory). NULL or dst == src:
 * no-op. */
CT_API void ct_tensor_move(ct_tensor *dst, ct_tensor *src);

#ifdef __cplusplus
}
#endif

#endif /* CORTEN_TENSOR_H */
