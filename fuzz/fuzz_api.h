/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_api.h: the command language of the stateful API fuzzer (fuzz_api.c), shared with
 * fuzz/make_seeds.c, which writes its seeds. An input is a list of commands, each an opcode
 * byte (taken modulo FA_N_OPS) followed by its argument bytes (zeros once the input runs out).
 *
 * A tensor argument is one byte: bit 2 clear: standalone tensor (bits 0-1); bit 2 set: the
 * tensor of variable "a".."d" (bits 0-1) of scope (bits 3-4 modulo 3). An extent byte indexes
 * fa_extents (modulo its size); a rank byte is taken modulo 5 (modulo 3 for data commands). */
#ifndef CORTEN_FUZZ_API_H
#define CORTEN_FUZZ_API_H

#include <stdint.h>

enum fa_op {
  FA_RESIZE,      /* tensor, rank, extents...                                         */
  FA_MUTABLE,     /* tensor, dtype                                                    */
  FA_SET_VALUE,   /* tensor, dtype, rank, extents...   (small extents only)           */
  FA_COPY,        /* dst tensor, src tensor                                           */
  FA_SHARE,       /* dst, src                                                         */
  FA_SLICE,       /* dst, src, begin, end                                             */
  FA_FLATTEN,     /* dst, src, num_col_dims                                           */
  FA_WRAP,        /* tensor, buffer, dtype, rank, extents...                          */
  FA_EXPORT,      /* tensor, slot: ct_tensor_to_dlpack                                */
  FA_EXPORT_DROP, /* slot: the export's deleter                                       */
  FA_IMPORT,      /* tensor, slot: ct_tensor_from_dlpack of an export                 */
  FA_IMPORT_OWN,  /* tensor, buffer, dtype, rank, extents...: a DLPack of the fuzzer's */
  FA_TENSOR_NEW,  /* i: frees standalone tensor i and makes a new one                 */
  FA_SCOPE_VAR,   /* scope, name                                                      */
  FA_ERASE,       /* scope, name                                                      */
  FA_KID_RESET,   /* frees scope 1 (a kid of scope 0) and makes a new kid             */
  FA_CHAIN,       /* k: a chain of 10 * (k % 8) nested kids under scope 2 (100,000
                     for k = 255), then dropped                                        */
  FA_OP_NEW,      /* slot, type, in1, in2, out, shape rank, shape extents...          */
  FA_OP_RUN,      /* slot, scope                                                      */
  FA_OP_FREE,     /* slot                                                             */
  FA_PROG_NEW,    /* slot                                                             */
  FA_APPEND,      /* program slot, op slot                                            */
  FA_SET_PROGRAM, /* op slot, program slot: the op's step_program                     */
  FA_EXEC,        /* program slot, scope, flags (bit 0 free_intermediates, bit 1 a
                     second run, bit 2 erase variable (bits 3-4) between the runs)    */
  FA_FAULT,       /* n: allocation n of the next command fails                        */
  FA_N_OPS
};

/* Op types of FA_OP_NEW (the type byte modulo FA_N_TYPES). */
enum fa_type {
  FA_RELU,
  FA_TANH,
  FA_SCALE,
  FA_RESHAPE,
  FA_ADD,
  FA_DIV,
  FA_MATMUL,
  FA_MEAN,
  FA_RECURRENT,
  FA_N_TYPES
};

/* Extents: small ones, then the large ones whose products overflow. */
static const int64_t fa_extents[] = {0, 1, 2, 3, 4, 5, 8, -1,
                                     (int64_t)1 << 31, (int64_t)1 << 62, INT64_MAX, (int64_t)3 << 61};
#define FA_N_EXTENTS ((int)(sizeof fa_extents / sizeof fa_extents[0]))
#define FA_SMALL_EXTENTS 7 /* fa_extents[0..6] */

/* dtype bytes (modulo 4). */
#define FA_N_DTYPES 4

#endif /* CORTEN_FUZZ_API_H */
