/* SPDX-License-Identifier: Apache-2.0 */
/* ops/backends.c: the registration table of the built-in ops, and the one file that names the
 * backends.
 *
 * The op types come from ops/defs/ (slots, attributes, infer-shape; no kernels); each backend
 * lists its kernels in tables (ops/cpu/cpu_kernels.h, ops/cuda/cuda_kernels.h). The kernels that
 * never touch element data (reshape shares memory, recurrent runs its step program at the op's
 * place) serve every backend. A new backend adds its tables here and nowhere else.
 *
 * Data only: the registry (ops/registry.c) walks these tables once, on first use, so the calls
 * run one way (registry -> tables), never back. */
#include "ops/cpu/cpu_kernels.h"
#include "ops/defs.h"
#include "ops/defs/index.h"
#ifdef CORTEN_HAVE_CUDA
#include "ops/cuda/cuda_kernels.h"
#endif

static const ct__def_table *const op_types[] = {
    &ct__elementwise_defs, &ct__matmul_defs, &ct__attention_defs, &ct__decomposed_norm_defs,
    &ct__random_defs,
    &ct__reduce_defs,      &ct__shape_defs,  &ct__recurrent_defs,
    &ct__elementwise_grad_defs,
    &ct__recurrent_grad_defs,
    &ct__matmul_grad_defs, &ct__reduce_grad_defs, &ct__shape_grad_defs,
    &ct__loss_defs,
    &ct__optimizer_defs,
    &ct__conv_defs,        &ct__conv_grad_defs, &ct__conv_block_defs,
    &ct__nn_defs, &ct__nn_grad_defs, &ct__norm_defs, &ct__norm_grad_defs,
    &ct__comm_defs,
    &ct__math_defs, &ct__index_defs, &ct__reduce_ext_defs, &ct__rnn_layers_defs,
    &ct__misc_defs,
    &ct__quant_defs, &ct__quant_int_defs, &ct__signal_defs,
    &ct__resample_defs,
    &ct__conv_transpose_defs, &ct__conv_nd_defs,
    &ct__pool_nd_defs, &ct__pool_nd_norm_defs, &ct__pool_nd_grad_defs,
};

/* Kernels that only describe (views over the input's memory, with dims of their own), so they
 * run at any place: one registration for every backend. */
static const ct__kernel_set any_place_sets[] = {
    {"reshape", CT__KERNELS([0] = ct__reshape_kernel)},
    {"squeeze", CT__KERNELS([0] = ct__ix_squeeze_kernel)},
    {"unsqueeze", CT__KERNELS([0] = ct__ix_unsqueeze_kernel)},
    {"flatten", CT__KERNELS([0] = ct__ix_flatten_kernel)},
    {"recurrent", CT__KERNELS([0] = ct__recurrent_kernel)},
    {"recurrent_grad", CT__KERNELS([0] = ct__recurrent_grad_kernel)},
    {"reshape_grad", CT__KERNELS([0] = ct__reshape_grad_kernel)},
};
static const ct__kernel_table any_place = CT__TABLE(any_place_sets);

static const ct__backend_table kernel_tables[] = {
    {CT_DEVICE_CPU, &ct__cpu_elementwise},
    {CT_DEVICE_CPU, &ct__cpu_matmul},
    {CT_DEVICE_CPU, &ct__cpu_attention},
    {CT_DEVICE_CPU, &ct__cpu_decomposed_norm},
    {CT_DEVICE_CPU, &ct__cpu_random},
    {CT_DEVICE_CPU, &ct__cpu_reduce},
    {CT_DEVICE_CPU, &ct__cpu_shape},
    {CT_DEVICE_CPU, &ct__cpu_elementwise_grad},
    {CT_DEVICE_CPU, &ct__cpu_matmul_grad},
    {CT_DEVICE_CPU, &ct__cpu_reduce_grad},
    {CT_DEVICE_CPU, &ct__cpu_loss},
    {CT_DEVICE_CPU, &ct__cpu_optimizer},
    {CT_DEVICE_CPU, &ct__cpu_conv}, {CT_DEVICE_CPU, &ct__cpu_conv_block},
    {CT_DEVICE_CPU, &ct__cpu_nn}, {CT_DEVICE_CPU, &ct__cpu_norm},
    {CT_DEVICE_CPU, &ct__cpu_comm},
    {CT_DEVICE_CPU, &ct__cpu_math},
    {CT_DEVICE_CPU, &ct__cpu_index},
    {CT_DEVICE_CPU, &ct__cpu_reduce_ext},
    {CT_DEVICE_CPU, &ct__cpu_rnn_layers},
    {CT_DEVICE_CPU, &ct__cpu_misc},
    {CT_DEVICE_CPU, &ct__cpu_quant}, {CT_DEVICE_CPU, &ct__cpu_quant_int},
    {CT_DEVICE_CPU, &ct__cpu_signal},
    {CT_DEVICE_CPU, &ct__cpu_resample},
    {CT_DEVICE_CPU, &ct__cpu_conv_transpose},
    {CT_DEVICE_CPU, &ct__cpu_pool_nd}, {CT_DEVICE_CPU, &ct__cpu_pool_nd_norm},
    {CT_DEVICE_CPU, &any_place},
#ifdef CORTEN_HAVE_CUDA
    {CT_DEVICE_CUDA, &ct__cuda_elementwise},
    {CT_DEVICE_CUDA, &ct__cuda_matmul},
    {CT_DEVICE_CUDA, &ct__cuda_random},
    {CT_DEVICE_CUDA, &ct__cuda_reduce},
    {CT_DEVICE_CUDA, &ct__cuda_shape},
    {CT_DEVICE_CUDA, &any_place},
    {CT_DEVICE_CUDA, &ct__cuda_elementwise_grad},
    {CT_DEVICE_CUDA, &ct__cuda_matmul_grad},
    {CT_DEVICE_CUDA, &ct__cuda_reduce_grad},
    {CT_DEVICE_CUDA, &ct__cuda_loss},
    {CT_DEVICE_CUDA, &ct__cuda_optimizer},
    {CT_DEVICE_CUDA, &ct__cuda_conv},
    {CT_DEVICE_CUDA, &ct__cuda_nn}, {CT_DEVICE_CUDA, &ct__cuda_norm},
    {CT_DEVICE_CUDA, &ct__cuda_comm},
#endif
};

/* The expression engines (corten/expr.h), one per place kind. */
const ct__expr_engine *const ct__expr_engines[] = {
    &ct__cpu_expr,
#ifdef CORTEN_HAVE_CUDA
    &ct__cuda_expr,
#endif
    NULL};

/* What the built-in types compute, family by family (each table beside its family's defs). */
static const ct__doc_table *const op_docs[] = {
    &ct__comm_docs, &ct__conv_docs, &ct__conv_block_docs, &ct__conv_transpose_docs,
    &ct__conv_nd_docs,
    &ct__elementwise_docs,
    &ct__index_docs, &ct__index_misc_docs, &ct__index_slice_docs, &ct__loss_docs, &ct__math_docs,
    &ct__matmul_docs, &ct__attention_docs, &ct__decomposed_norm_docs,
    &ct__misc_ops_docs, &ct__nn_docs, &ct__norm_docs, &ct__optimizer_docs,
    &ct__pool_nd_docs, &ct__pool_nd_norm_docs, &ct__quant_docs, &ct__quant_int_docs, &ct__signal_docs,
    &ct__random_docs,
    &ct__recurrent_docs, &ct__reduce_docs, &ct__reduce_ext_docs, &ct__reduce_ext_loss_docs,
    &ct__reduce_ext_norm_docs, &ct__resample_docs, &ct__rnn_layers_docs, &ct__shape_docs,
};

const ct__builtins ct__builtin_ops = {
    .types = op_types,
    .n_types = sizeof(op_types) / sizeof(op_types[0]),
    .docs = op_docs,
    .n_docs = sizeof(op_docs) / sizeof(op_docs[0]),
    .kernels = kernel_tables,
    .n_kernels = sizeof(kernel_tables) / sizeof(kernel_tables[0]),
};
