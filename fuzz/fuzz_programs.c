/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_programs.c: the differential fuzzer (docs/design/reliability.md, "The program
 * fuzzer"). The first byte picks one of three checks; the rest describes its case. This file
 * holds the entry; the checks live in programs_exec.c (a), programs_grad.c (b) and
 * programs_expr.c (c), over the helpers of programs_common.c, all declared in programs.h.
 *
 * (a) Executors. A program of ops (elementwise, activations, scale, matmul, reductions, reshape,
 *     transpose, sum, softmax, assign) over a scope whose variables may view one another (share,
 *     slice, flatten) or wrap external buffers, with outputs written in place, in float32 or
 *     float64. It runs under a plain executor at one thread, then under fuse_elementwise,
 *     free_intermediates and both, at one and at three threads, each over a fresh scope built
 *     alike. Every run must return the plain run's status (with fuse_elementwise, any failure
 *     where it failed: a fused member fails at its root's turn), and when that is CT_OK, leave the
 *     plain run's dims, dtype and bits in every variable the caller can still read (those that
 *     existed before the executor, and the results: created variables no later op reads) and
 *     in every external buffer; every buffer's release runs once.
 * (b) The backward pass. A float64 program over a few leaves ending in a mean, some leaves
 *     parameters, sometimes with a forward variable overwritten later by an op off the gradient
 *     path. ct_program_append_backward refuses it (CT_ERR_UNSUPPORTED), or every parameter's
 *     gradient agrees with central differences of the forward program (points where the
 *     program is not smooth enough to tell are skipped); the training program fused and
 *     freeing intermediates then gives the plain one's bits.
 * (c) Expressions. A tree of ct_expr nodes whose tensor leaves may alias dst (dst itself, views
 *     of it made before or after a resize in place, slices and flattenings of its block, a
 *     second wrap of its buffer), assigned with every ct_assign mode. Either the assignment is
 *     refused and dst and every leaf keep their dims and bits, or dst holds exactly what the
 *     ops (elementwise_*, exp, log, tanh, sigmoid, relu) and C (max, min, pow, -, sqrt, abs) give
 *     one node at a time over copies of the leaves taken before, the mode applied to a copy of
 *     dst by the op of the same name.
 * A broken promise prints the case in words and aborts. */
#include "programs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- The entry ------------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_bytes in = {data, size};
  story_len = 0;
  story[0] = '\0';
  ct_set_num_threads(1); /* (a) and (c) choose their own */
  switch (fz_u8(&in) % 3) {
    case 0: check_a(&in); break;
    case 1: check_b(&in); break;
    default: check_c(&in); break;
  }
  ct_clear_error();
  return 0;
}
