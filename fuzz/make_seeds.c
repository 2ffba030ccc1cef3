/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the seed corpora of the fuzz targets into the directory given (fuzz/corpus): parameter
 * files and single-tensor files saved by corten (every dtype, ranks 0 to CT_MAX_RANK, empty
 * tensors, long and odd names), and a few hand-made descriptions for the DLPack and op-wiring
 * targets. Seeds are generated rather than copied from third-party files. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <corten/corten.h>

#include "fuzz_api.h"

static char dir[512];

static void put(ct_scope *s, const char *name, ct_dtype dt, ct_ddim dims) {
  unsigned char buf[4096];
  size_t n = (size_t)ct_ddim_numel(dims) * ct_dtype_size(dt);
  for (size_t i = 0; i < n && i < sizeof buf; i++) buf[i] = (unsigned char)(i * 13 + 1);
  if (dt == CT_BOOL) for (size_t i = 0; i < n; i++) buf[i] &= 1;
  if (ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, name)), buf, dims, dt, ct_cpu()) != CT_OK) {
    fprintf(stderr, "make_seeds: %s\n", ct_last_error());
  }
}

static void save(const char *sub, const char *file, ct_scope *s) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
  if (ct_params_save(path, s, NULL, 0) != CT_OK) fprintf(stderr, "make_seeds: %s\n", ct_last_error());
}

static void raw(const char *sub, const char *file, const unsigned char *b, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
  FILE *f = fopen(path, "wb");
  if (f == NULL) return;
  fwrite(b, 1, n, f);
  fclose(f);
}

/* The API fuzzer's seeds (fuzz_api.h). Tensor bytes: 0..3 standalone tensors, 4 | i the
 * variable names[i] of scope 0. Three are a mutation or two away from a defect of issue 21 (the
 * fuzzer reaches those in seconds); three carry the scenario of a defect whole, because random
 * mutation did not reach them within minutes (docs/design/reliability.md, "The API fuzzer"). */
static void api_seeds(void) {
  char sub[600];
  snprintf(sub, sizeof sub, "%s/api", dir);
  mkdir(sub, 0777);
  /* A recurrent op holding program 0, appended to program 1; a matmul appended to program 0. */
  static const unsigned char programs[] = {
      FA_PROG_NEW, 0, FA_PROG_NEW, 1, FA_OP_NEW, 0, FA_RECURRENT, 0, 0, 0, 0,
      FA_SET_PROGRAM, 0, 0, FA_APPEND, 1, 0, FA_OP_NEW, 1, FA_MATMUL, 0, 1, 2, 0,
      FA_APPEND, 0, 1};
  raw("api", "programs", programs, sizeof programs);
  /* [0, 2^31, 2], a large but valid empty tensor, flattened and sliced. */
  static const unsigned char dims[] = {FA_RESIZE, 0, 3, 0, 8, 2, FA_FLATTEN, 1, 0, 1,
                                       FA_SLICE, 2, 0, 0, 0};
  raw("api", "empty_dims", dims, sizeof dims);
  /* A chain of 70 kids; DLPack round trips; a fault in a copy. */
  static const unsigned char misc[] = {
      FA_CHAIN, 7, FA_SET_VALUE, 0, 0, 2, 2, 3, FA_EXPORT, 0, 0, FA_IMPORT, 1, 0,
      FA_IMPORT_OWN, 2, 1, 0, 1, 4, FA_FAULT, 0, FA_COPY, 3, 0, FA_EXPORT, 6, 1};
  raw("api", "chain_dlpack_fault", misc, sizeof misc);
  /* a = [4] float32, b wraps 4 floats; reshape of a (shape [2, 2]) into b. */
  static const unsigned char reshape[] = {
      FA_SET_VALUE, 4, 0, 1, 4, FA_WRAP, 5, 0, 0, 1, 4,
      FA_OP_NEW, 1, FA_RESHAPE, 0, 0, 1, 2, 2, 2, FA_OP_RUN, 1, 0};
  raw("api", "reshape_into_external", reshape, sizeof reshape);
  /* a = [4] float32, b wraps 2 floats; relu of a into b (refused: the buffer is too small). */
  static const unsigned char relu[] = {FA_SET_VALUE, 4, 0, 1, 4, FA_WRAP, 5, 0, 0, 1, 2,
                                       FA_OP_NEW, 0, FA_RELU, 0, 0, 1, 0, FA_OP_RUN, 0, 0};
  raw("api", "relu_into_small_external", relu, sizeof relu);
  /* An executor runs relu a -> b, b is erased, the executor runs again; then a new variable c. */
  static const unsigned char erase[] = {
      FA_SET_VALUE, 4, 0, 1, 4, FA_OP_NEW, 0, FA_RELU, 0, 0, 1, 0, FA_PROG_NEW, 0,
      FA_APPEND, 0, 0, FA_EXEC, 0, 0, 2 | 4 | 1 << 3, FA_SCOPE_VAR, 0, 2};
  raw("api", "executor_writes_erased_variable", erase, sizeof erase);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[1]);
  static const ct_dtype all[] = {CT_BOOL,    CT_INT8,     CT_UINT8,   CT_INT16,  CT_INT32,
                                 CT_INT64,   CT_FLOAT16,  CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64};
  ct_scope *s = ct_scope_new();
  save("params_load", "empty.params", s);
  put(s, "fc.w", CT_FLOAT32, CT_DIMS(3, 4));
  put(s, "fc.b", CT_FLOAT32, CT_DIMS(4));
  save("params_load", "mlp.params", s);
  ct_scope_free(s);
  s = ct_scope_new();
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "t_%s", ct_dtype_name(all[i]));
    put(s, name, all[i], CT_DIMS(2, 3));
  }
  save("params_load", "dtypes.params", s);
  ct_scope_free(s);
  s = ct_scope_new();
  put(s, "scalar", CT_FLOAT64, CT_DIMS());
  put(s, "empty", CT_INT32, CT_DIMS(0, 5));
  put(s, "rank9", CT_UINT8, CT_DIMS(1, 2, 1, 2, 1, 2, 1, 2, 1));
  put(s, "a.very.long.parameter.name.that.goes.on.and.on/with/slashes and spaces", CT_INT8,
      CT_DIMS(7));
  save("params_load", "shapes.params", s);
  {
    char path[1024];
    snprintf(path, sizeof path, "%s/params_load/single.tensor", dir);
    if (ct_tensor_save(path, ct_var_get_tensor(ct_scope_find_var(s, "rank9"))) != CT_OK) {
      fprintf(stderr, "make_seeds: %s\n", ct_last_error());
    }
  }
  ct_scope_free(s);

  /* DLPack: flags 0 (plain CPU, shape given, no strides), ndim byte, shape bytes, strides
   * bytes, dtype code, bits index, byte_offset, misalignment: a float32 [2,3]. */
  unsigned char dl[40] = {0};
  dl[0] = 0;
  dl[1] = 3;    /* ndim 2 (value - 1) */
  dl[2] = 0x20; /* shape[0] = 2 */
  dl[3] = 0x30; /* shape[1] = 3 */
  dl[26] = 2;   /* code float */
  dl[27] = 3;   /* bits 32 */
  raw("dlpack", "float32_2x3", dl, sizeof dl);
  dl[0] = 4; /* with strides */
  dl[14] = 0x30;
  dl[15] = 0x10;
  raw("dlpack", "strided", dl, sizeof dl);

  /* Op wiring: variables a..f, then ops; byte meanings follow fuzz_op_wiring.c. */
  static const unsigned char mm[] = {
      /* a: tensor rank 2 [2,3] float32 */ 4, 2, 2, 3, 0,
      /* b: tensor rank 2 [3,4] float32 */ 4, 2, 3, 4, 0,
      /* c..f missing */ 0, 0, 0, 0,
      /* 1 op */ 0,
      /* matmul, 3 wirings */ 0, 3,
      /* X <- a */ 0, 1, 0, 1,
      /* Y <- b */ 1, 1, 1, 1,
      /* Out -> c */ 2, 1, 2, 0,
      /* no attrs */ 0,
      /* free intermediates */ 1};
  raw("op_wiring", "matmul", mm, sizeof mm);
  static const unsigned char relu[] = {4, 1, 5, 0, 0, 0, 0, 0, 0, 0, 1, 5, 2, 0, 1, 0, 1,
                                       2, 1, 1, 0, 1, 10, 1, 16, 0};
  raw("op_wiring", "relu_scale", relu, sizeof relu);
  api_seeds();
  return 0;
}
