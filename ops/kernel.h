/* SPDX-License-Identifier: Apache-2.0 */
/* ops/kernel.h: what the built-in kernels of every backend share: typed access to tensors,
 * output allocation and checks that name the op, and the tables a backend lists its kernels in.
 *
 * A kernel file includes this header and ops/defs.h (the op types' slots, attributes and plans),
 * never the op framework's own files. A backend lists its kernels in ct__kernel_table values;
 * ops/backends.c, the one file that names the backends, registers them. */
#ifndef CORTEN_OPS_KERNEL_H
#define CORTEN_OPS_KERNEL_H

#include "ops/op_impl.h"

/* The data of a tensor the framework checked (inputs: memory, place and capacity). */
static inline const void *ct__k_in_data(const ct_tensor *t) { return ct__tensor_ptr(t); }

/* ct__k_out_data's way when the output has no fitting memory yet (or on failure). */
void *ct__k_out_data_slow(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dtype);

/* Allocates output (slot, i) as dtype at the op's place; reports the failure naming the op,
 * slot and variable. Inline for the common case of a prepared op run again: the output already
 * holds enough writable memory at the op's place, and only its dtype is set. */
static inline void *ct__k_out_data(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dtype) {
  ct_tensor *t = ct_kernel_out(c, slot, i);
  if (CT__LIKELY(ct__tensor_writable_in_place(t, dtype, c->place))) {
    t->dtype = dtype;
    return ct__tensor_ptr(t);
  }
  return ct__k_out_data_slow(c, slot, i, dtype);
}

/* Data a kernel derives from constant input (slot, i) and keeps between runs (the GEMM's packed
 * weights; ops/consts.c, ct_executor_options.constants). When the input is a constant of the
 * running executor: the kept data, *fresh false, if it was made with this tag (the kernel's key
 * for what it made: the layout, the sizes) and bytes from the memory, dims and dtype the input
 * has now; otherwise bytes of new 64-byte-aligned host memory (the old data given back) for the
 * kernel to fill now, *fresh true, the input's memory frozen (read-only) while kept. NULL when
 * the input is not a constant, its memory is caller memory (wrapped or imported: written behind
 * corten's back) or there is no memory for it: the kernel then works as without the option.
 * Nothing is recorded either way. Call it from the kernel's own thread, not from its pieces. */
void *ct__k_derived(const ct_kernel_ctx *c, size_t slot, size_t i, uint64_t tag, size_t bytes,
                    bool *fresh);
/* Runs kernel fn over view, a context of c's op that differs in its outputs, attributes or
 * inputs (a fused op's kernel running the kernels of the ops it stands for), as part of c's
 * run: a kernel context is always its prep's, which ct__k_derived reads, so a copy cannot be
 * passed on. c's inputs stay constants as they are to c when view keeps them (same_inputs),
 * else view has none. */
ct_status ct__k_run_view(const ct_kernel_ctx *c, const ct_kernel_ctx *view, bool same_inputs,
                         ct_kernel_fn fn);
/* Whether input (slot, i) is a constant of the running executor: a kernel asks before it works
 * out what it would derive (nothing to size or plan in the usual executor). */
bool ct__k_is_constant(const ct_kernel_ctx *c, size_t slot, size_t i);

/* Resizes output (slot, i) to dims, naming the op on failure. */
ct_status ct__k_resize(const ct_kernel_ctx *c, size_t slot, size_t i, ct_ddim dims);

/* Checks that input (slot, i) has dtype want (the kernel's dtype): CT_ERR_TYPE_MISMATCH naming
 * the op, slot and variable otherwise. */
ct_status ct__k_check_dtype(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype want);

/* Int attribute a as a ct_dtype in *out; CT_ERR_INVALID_ARGUMENT naming the op and attribute
 * when it is not one. */
ct_status ct__k_attr_dtype(const ct_kernel_ctx *c, size_t a, ct_dtype *out);

/* numpy broadcasting of a and b (trailing dims aligned; each pair equal or one of them 1) into
 * *out; CT_ERR_SHAPE naming the op and both inputs (slots 0 and 1) otherwise. */
ct_status ct__k_broadcast(const ct_kernel_ctx *c, ct_ddim a, ct_ddim b, ct_ddim *out);

/* A normalised axis in [0, rank), from one that may count from the end (-1 is the last);
 * CT_ERR_OUT_OF_RANGE naming the op and attribute otherwise. Rank 0 accepts 0 and -1. */
ct_status ct__k_axis(const ct_kernel_ctx *c, const char *attr, int64_t axis, int rank,
                     int *out);

/* Rewords the error that a helper outside the op layer recorded (a tensor or memory call) so
 * that it names the op: the message becomes "<op label>: <the helper's message>". */
ct_status ct__k_relabel(const ct_kernel_ctx *c);

/* ---- Kernel tables ------------------------------------------------------------------------- */

/* The kernels of one op type on one backend, by dtype: by_dtype[t] runs dtype t, by_dtype[0]
 * any dtype without a kernel of its own. Write it with CT__KERNELS. */
typedef struct ct__kernel_set {
  const char *type;
  const ct_kernel_fn *by_dtype; /* CT__N_DTYPES entries */
} ct__kernel_set;

#define CT__KERNELS(...) ((const ct_kernel_fn[CT__N_DTYPES]){__VA_ARGS__})

/* The float32 and float64 kernels name##_f32 and name##_f64: CT__KERNELS_F32_F64(add_grad). */
#define CT__KERNELS_F32_F64(name) \
  CT__KERNELS([CT_FLOAT32] = name##_f32, [CT_FLOAT64] = name##_f64)

/* A backend's kernels of one op family: n sets. CT__TABLE(sets) makes one from a static array. */
struct ct__kernel_table {
  const ct__kernel_set *v;
  size_t n;
};

#define CT__TABLE(array) {(array), sizeof(array) / sizeof((array)[0])}

#endif /* CORTEN_OPS_KERNEL_H */
