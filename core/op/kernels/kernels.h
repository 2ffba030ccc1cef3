/* core/op/kernels/kernels.h: what corten's own CPU kernels share: typed access to tensors,
 * output allocation that names the op, numpy broadcasting, and dtype dispatch. */
#ifndef CORTEN_CORE_OP_KERNELS_H
#define CORTEN_CORE_OP_KERNELS_H

#include "op/op_impl.h"

/* The data of a tensor the framework checked (inputs: memory, place and capacity). */
static inline const void *ct__k_in_data(const ct_tensor *t) { return ct__tensor_ptr(t); }

/* Allocates output (slot, i) as dtype at the op's place; reports the failure naming the op,
 * slot and variable. */
void *ct__k_out_data(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dtype);

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
 * CT_ERR_OUT_OF_RANGE naming the op and attribute otherwise. rank 0 accepts 0 and -1 when
 * allow_scalar is set. */
ct_status ct__k_axis(const ct_kernel_ctx *c, const char *attr, int64_t axis, int rank,
                     int *out);

/* The registration helpers of each kernel family (called by ct__register_builtin_ops). */
void ct__register_elementwise_ops(void);
void ct__register_matmul_ops(void);
void ct__register_random_ops(void);
void ct__register_reduce_ops(void);
void ct__register_shape_ops(void);
void ct__register_rnn_ops(void);

/* Registers def and its CPU kernels (fns[dtype] for each dtype with one; fns[0] for any
 * dtype). A failure here is a bug in corten's own definitions, so it aborts. */
void ct__register_cpu(const ct_op_def *def, const ct_kernel_fn fns[CT__N_DTYPES]);

/* A kernel table for ct__register_cpu, by dtype: CT__KERNELS([CT_FLOAT32] = f, [0] = any). */
#define CT__KERNELS(...) ((const ct_kernel_fn[CT__N_DTYPES]){__VA_ARGS__})

/* The slots most op types have: X; X and Y; X taking many variables; Out. */
extern const ct_slot_def ct__slot_x[1], ct__slot_xy[2], ct__slot_xs[1], ct__slot_out[1];

/* ---- Shared with the CUDA kernels (core/cuda/cuda_ops.c), so both places plan alike ---------- */

/* A binary elementwise op's walk over Out: dims aligned at the end, stride 0 where an input is
 * broadcast, neighbouring dims merged where both inputs stay contiguous (rank at least 1). */
typedef struct ct__bcast_plan {
  int rank;
  int64_t d[CT_MAX_RANK];
  int64_t sx[CT_MAX_RANK], sy[CT_MAX_RANK];
} ct__bcast_plan;

void ct__plan_bcast(ct_ddim x, ct_ddim y, ct_ddim out, ct__bcast_plan *p);

/* The shape of a matmul (numpy rules, see matmul.c): batch dims of the result, and each
 * operand's batch strides in matrices (0 where broadcast). */
typedef struct ct__mm_shape {
  int64_t m, n, k;
  int batch_rank;
  int64_t batch[CT_MAX_RANK];
  int64_t bx[CT_MAX_RANK], by[CT_MAX_RANK];
  int64_t n_batch;
  ct_ddim out;
} ct__mm_shape;

/* Plans the matmul of inputs X and Y under transpose_x / transpose_y (attributes 0 and 1);
 * CT_ERR_SHAPE or CT_ERR_OUT_OF_RANGE naming the op otherwise. */
ct_status ct__mm_plan(const ct_kernel_ctx *c, ct__mm_shape *s);

/* The random ops' checks and values (random.c), attributes as the op types define them:
 * fill_constant's value fits the kernel's dtype; uniform's min <= max or gaussian's std >= 0;
 * the run's seed (a fresh one for seed 0); the values of dtype t that uniform values in [lo, hi)
 * are clamped to. */
ct_status ct__fill_check(const ct_kernel_ctx *c, double v);
ct_status ct__random_check_range(const ct_kernel_ctx *c, bool gaussian);
uint64_t ct__random_seed(const ct_kernel_ctx *c);
void ct__uniform_bounds(ct_dtype t, double lo, double hi, double *vmin, double *vmax);

/* reshape's kernel (shape.c): Out shares X's memory with new dims, whatever the place; it never
 * touches the data, so the CUDA place registers it too. */
ct_status ct__reshape_kernel(const ct_kernel_ctx *c);

/* reduce_sum's summed dims (reduce.c): flags over X's rank from attribute `dim` (all dims when
 * it is empty); CT_ERR_OUT_OF_RANGE or CT_ERR_INVALID_ARGUMENT naming the op otherwise. */
ct_status ct__rs_dims(const ct_kernel_ctx *c, int rank, bool red[CT_MAX_RANK]);

/* transpose's permutation (shape.c): attribute `axis` normalised, with the CPU's errors. */
ct_status ct__tr_perm(const ct_kernel_ctx *c, int perm[CT_MAX_RANK]);

/* transpose's walk over Out in memory order: its dims with extent-1 dims dropped and neighbours
 * merged where X's strides continue across them; is is each dim's stride in X (elements). The
 * product of d is X's element count. */
typedef struct ct__tr_plan {
  int rank; /* at least 1 */
  int64_t d[CT_MAX_RANK], is[CT_MAX_RANK];
} ct__tr_plan;

void ct__tr_make_plan(ct_ddim x, const int perm[CT_MAX_RANK], ct__tr_plan *p);

/* CUDA builds: registers the CUDA kernels of the built-in ops (core/cuda/cuda_ops.c). */
void ct__register_cuda_ops(void);

#endif /* CORTEN_CORE_OP_KERNELS_H */
