/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/cpu_kernels.h: the CPU backend's kernel tables, one per op family
 * (ops/cpu/<family>.c), registered by ops/backends.c. */
#ifndef CORTEN_OPS_CPU_KERNELS_H
#define CORTEN_OPS_CPU_KERNELS_H

#include "ops/kernel.h"
#include "ops/defs.h"
#include "ops/expr/expr_impl.h"

extern const ct__kernel_table ct__cpu_attention, ct__cpu_decomposed_norm;
extern const ct__kernel_table ct__cpu_elementwise, ct__cpu_matmul, ct__cpu_random, ct__cpu_reduce,
    ct__cpu_shape;
extern const ct__kernel_table ct__cpu_elementwise_grad;
extern const ct__kernel_table ct__cpu_matmul_grad, ct__cpu_reduce_grad;

/* Gathers the elements of x (es bytes each) into o in o's order along plan p (ops/defs.h: each
 * dim's extent and stride in x): transpose and its gradient, reduce_sum's gradient. */
void ct__cpu_gather(void *o, const void *x, size_t es, const ct__tr_plan *p);

extern const ct__kernel_table ct__cpu_loss, ct__cpu_optimizer;
extern const ct__kernel_table ct__cpu_conv; /* conv2d, pool2d and their gradients */
extern const ct__kernel_table ct__cpu_conv_block; /* inverted_residual */
extern const ct__kernel_table ct__cpu_nn, ct__cpu_norm; /* the layers: ops/cpu/nn.c, norm.c */
/* The collectives over MPI (ops/cpu/comm.c). */
extern const ct__kernel_table ct__cpu_comm;
/* The families added for ONNX import (ops/defs.h). */
extern const ct__kernel_table ct__cpu_math, ct__cpu_index, ct__cpu_reduce_ext, ct__cpu_rnn_layers;
extern const ct__kernel_table ct__cpu_resample; /* ops/cpu/resample.c */
extern const ct__kernel_table ct__cpu_misc;     /* ops/cpu/misc_ops.c */
extern const ct__kernel_table ct__cpu_quant;    /* ops/cpu/quant.c */
extern const ct__kernel_table ct__cpu_quant_int; /* ops/cpu/quant_int.c */
extern const ct__kernel_table ct__cpu_signal;    /* ops/cpu/signal.c */
extern const ct__kernel_table ct__cpu_conv_transpose; /* ops/cpu/conv_transpose.c */
extern const ct__kernel_table ct__cpu_pool_nd, ct__cpu_pool_nd_norm; /* ops/cpu/pool_nd*.c */

/* a op b for signed integers of type T, wrapping through their unsigned type U (signed overflow
 * is undefined in C): how every integer kernel adds, subtracts and multiplies. */
#define CT__WRAP(U, T, a, op, b) ((T)((U)(a)op(U)(b)))

/* The expression engine of corten/expr.h (ops/cpu/expr.c). */
extern const ct__expr_engine ct__cpu_expr;

#endif /* CORTEN_OPS_CPU_KERNELS_H */
