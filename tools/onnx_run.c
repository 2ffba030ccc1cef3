/* SPDX-License-Identifier: Apache-2.0 */
/* tools/onnx_run.c: `corten run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K]
 * [--no-optimize] [--no-constants] [--profile FILE]`.
 * Loads an ONNX model, gives each input the array of a .npy file (NumPy's format: a magic, a
 * Python-literal header with descr, fortran_order and shape, then the C-ordered data) or, when
 * none is named, values of the declared dims (symbolic dims 1; floats drawn uniformly in [-1, 1)
 * from a fixed seed, integers 0), runs the program K times (default 1) and prints each output's
 * dtype, dims, sum and sum of magnitudes, then the median time of a run. The executor runs the
 * graph passes (ct_executor_options.optimize, docs/design/passes.md) unless --no-optimize, and
 * takes the model's weights as constants (ct_executor_options.constants: packed once,
 * docs/design/constants.md) unless --no-constants, and releases the values between the inputs
 * and the outputs after their last use (free_intermediates, the outputs kept). With
 * --profile, the runs are profiled (corten/profile.h): the table per op type is printed and a
 * Chrome trace written to FILE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <corten/corten.h>

#include "tool.h"

/* The dtype of a .npy descr ('<f4', '|b1' ...); undefined when corten has none. */
static ct_dtype npy_dtype(const char *d) {
  static const struct { const char *descr; ct_dtype dt; } map[] = {
      {"<f4", CT_FLOAT32}, {"<f8", CT_FLOAT64}, {"<f2", CT_FLOAT16}, {"<i8", CT_INT64},
      {"<i4", CT_INT32},   {"<i2", CT_INT16},   {"|i1", CT_INT8},    {"|u1", CT_UINT8},
      {"|b1", CT_BOOL},    {"<u2", CT_UINT16},  {"<u4", CT_UINT32},  {"<u8", CT_UINT64}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (strncmp(d, map[i].descr, 3) == 0) return map[i].dt;
  }
  return CT_DTYPE_UNDEFINED;
}

/* Reads the .npy file at path into t. false with a message on stderr. */
static bool read_npy(const char *path, ct_tensor *t) {
  FILE *f = fopen(path, "rb");
  unsigned char head[12];
  if (f == NULL || fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "corten run: '%s' is not a .npy file\n", path);
    if (f) fclose(f);
    return false;
  }
  size_t hlen = head[8] | (size_t)head[9] << 8;
  if (head[6] >= 2) { /* versions 2 and 3: a 4-byte header length */
    if (fread(head + 10, 1, 2, f) != 2) hlen = 0;
    else hlen = head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
  }
  char *h = hlen > 0 && hlen < 65536 ? calloc(1, hlen + 1) : NULL;
  bool ok = h != NULL && fread(h, 1, hlen, f) == hlen;
  const char *descr = ok ? strstr(h, "'descr':") : NULL, *fo = ok ? strstr(h, "'fortran_order':") : NULL;
  const char *shape = ok ? strstr(h, "'shape':") : NULL;
  ct_dtype dt = CT_DTYPE_UNDEFINED;
  ct_ddim dims = {.rank = 0};
  if (descr && fo && shape) {
    const char *q = strchr(descr + 8, '\'');
    dt = q ? npy_dtype(q + 1) : CT_DTYPE_UNDEFINED;
    ok = strncmp(fo + 16, " False", 6) == 0 || strncmp(fo + 16, "False", 5) == 0;
    const char *p = strchr(shape, '(');
    while (ok && p != NULL && *++p != ')') {
      while (*p == ' ' || *p == ',') p++;
      if (*p == ')') break;
      if (dims.rank >= CT_MAX_RANK) ok = false;
      else dims.d[dims.rank++] = strtoll(p, (char **)&p, 10), p--;
    }
  } else {
    ok = false;
  }
  int64_t n = ct_ddim_numel(dims);
  void *data = ok && dt != CT_DTYPE_UNDEFINED && n >= 0 ? malloc((size_t)n * ct_dtype_size(dt) + 1) : NULL;
  if (data != NULL) ok = fread(data, ct_dtype_size(dt), (size_t)n, f) == (size_t)n;
  if (!ok || data == NULL || ct_tensor_set_value(t, data, dims, dt, ct_cpu()) != CT_OK) {
    fprintf(stderr, "corten run: '%s': %s\n", path,
            data == NULL ? "an unreadable header, a Fortran-ordered array or a dtype corten has "
                           "no tensor of"
                         : ok ? ct_last_error() : "the file ends before its data");
    ok = false;
  }
  free(data);
  free(h);
  fclose(f);
  return ok;
}

bool tool_random_input(ct_onnx_model *m, size_t i, ct_tensor *t) {
  ct_ddim dims;
  ct_dtype dt;
  if (ct_onnx_input_info(m, i, &dims, &dt) != CT_OK || dt == CT_DTYPE_UNDEFINED) {
    fprintf(stderr, "corten: input '%s' has no declared dims or dtype: give it with --input\n",
            ct_onnx_input_name(m, i));
    return false;
  }
  for (int k = 0; k < dims.rank; k++) {
    if (dims.d[k] < 0) dims.d[k] = 1;
  }
  if (ct_tensor_resize(t, dims) != CT_OK) return false;
  void *p = ct_tensor_mutable_data(t, dt, ct_cpu());
  if (p == NULL) return false;
  int64_t n = ct_ddim_numel(dims);
  uint64_t st = 0x9e3779b97f4a7c15u + i;
  memset(p, 0, (size_t)n * ct_dtype_size(dt));
  for (int64_t j = 0; j < n && (dt == CT_FLOAT32 || dt == CT_FLOAT64); j++) {
    st = st * 6364136223846793005u + 1442695040888963407u;
    double v = (double)(st >> 11) / 9007199254740992.0 * 2 - 1;
    if (dt == CT_FLOAT32) ((float *)p)[j] = (float)v;
    else ((double *)p)[j] = v;
  }
  return true;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_output(ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_var(s, name);
  const ct_tensor *t = v ? ct_var_get_tensor(v) : NULL;
  char d[128];
  if (t == NULL) {
    printf("%s\t(no tensor)\n", name);
    return;
  }
  ct_dtype dt = ct_tensor_dtype(t);
  const void *p = ct_tensor_data(t, dt);
  double sum = 0, mag = 0;
  for (int64_t i = 0; p != NULL && i < ct_tensor_numel(t); i++) {
    double x = dt == CT_FLOAT32 ? ((const float *)p)[i]
               : dt == CT_FLOAT64 ? ((const double *)p)[i]
               : dt == CT_INT64 ? (double)((const int64_t *)p)[i]
               : dt == CT_INT32 ? ((const int32_t *)p)[i]
               : dt == CT_UINT64 ? (double)((const uint64_t *)p)[i]
               : dt == CT_UINT32 ? ((const uint32_t *)p)[i]
               : dt == CT_UINT16 ? ((const uint16_t *)p)[i]
               : dt == CT_BOOL || dt == CT_UINT8 ? ((const uint8_t *)p)[i] : 0;
    sum += x;
    mag += fabs(x);
  }
  printf("%s\t%s\t%s\tsum %.9g\tsum|x| %.9g\n", name, ct_dtype_name(dt),
         ct_ddim_str(ct_tensor_dims(t), d, sizeof d), sum, mag);
}

int corten_run(int argc, char **argv) {
  const char *model = NULL;
  int repeat = 1, threads = 0;
  bool optimize = true, constants = true;
  const char *profile = NULL;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--no-optimize") == 0) optimize = false;
    else if (strcmp(argv[i], "--no-constants") == 0) constants = false;
    else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) profile = argv[++i];
    else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) i++;
    else if (argv[i][0] != '-' && model == NULL) model = argv[i];
    else {
      fprintf(stderr, "usage: corten run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K] "
                    "[--no-optimize] [--no-constants] [--profile FILE]\n");
      return 2;
    }
  }
  if (model == NULL || repeat < 1) {
    fprintf(stderr, "usage: corten run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K] "
                    "[--no-optimize] [--no-constants] [--profile FILE]\n");
    return 2;
  }
  if (threads > 0) ct_set_num_threads(threads);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *m = s ? ct_onnx_load(model, s) : NULL;
  int rc = 1;
  if (m == NULL) {
    fprintf(stderr, "corten run: %s\n", ct_last_error());
    ct_scope_free(s);
    return 1;
  }
  bool ok = true;
  for (size_t k = 0; k < ct_onnx_input_count(m) && ok; k++) {
    const char *name = ct_onnx_input_name(m, k), *file = NULL;
    for (int i = 0; i + 1 < argc; i++) {
      size_t len = strlen(name);
      if (strcmp(argv[i], "--input") == 0 && strncmp(argv[i + 1], name, len) == 0 &&
          argv[i + 1][len] == '=') {
        file = argv[i + 1] + len + 1;
      }
    }
    ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
    ok = t != NULL && (file ? read_npy(file, t) : tool_random_input(m, k, t));
  }
  /* The weights are the executor's constants (the tool's scope is its own: nothing else writes
   * them), so conv2d and matmul pack them once. */
  size_t n_const = constants ? ct_onnx_constant_count(m) : 0;
  const char **const_names = calloc(n_const + 1, sizeof *const_names);
  for (size_t i = 0; const_names != NULL && i < n_const; i++) {
    const_names[i] = ct_onnx_constant_name(m, i);
  }
  /* The values between the inputs and the outputs are released after their last use, as
   * corten.onnx's Model.run does (the outputs kept): the peak memory a run needs. */
  size_t n_out = ct_onnx_output_count(m);
  const char **out_names = calloc(n_out + 1, sizeof *out_names);
  for (size_t i = 0; out_names != NULL && i < n_out; i++) out_names[i] = ct_onnx_output_name(m, i);
  ct_executor_options opts = {.optimize = optimize, .constants = const_names,
                              .n_constants = const_names != NULL ? n_const : 0,
                              .free_intermediates = out_names != NULL, .keep = out_names,
                              .n_keep = out_names != NULL ? n_out : 0};
  ct_executor *e = ok ? ct_executor_new_with(ct_onnx_program(m), s, ct_cpu(), &opts) : NULL;
  double *times = calloc((size_t)repeat, sizeof *times);
  ct_profile *prof = profile != NULL && e != NULL ? ct_profile_start(CT_PROFILE_PROCESS) : NULL;
  if (profile != NULL && e != NULL && prof == NULL) {
    fprintf(stderr, "corten run: %s\n", ct_last_error());
    ct_executor_free(e);
    e = NULL;
    ok = false; /* reported: not again below */
  }
  for (int r = 0; e != NULL && times != NULL && r < repeat; r++) {
    double t0 = now();
    if (ct_executor_run(e) != CT_OK) {
      fprintf(stderr, "corten run: %s\n", ct_last_error());
      break;
    }
    times[r] = now() - t0;
    if (r + 1 == repeat) rc = 0;
  }
  if (prof != NULL) {
    ct_profile_stop(prof);
    size_t need = 0;
    ct_profile_table(prof, CT_PROFILE_BY_TOTAL, NULL, 0, &need);
    char *table = malloc(need);
    if (table != NULL && ct_profile_table(prof, CT_PROFILE_BY_TOTAL, table, need, NULL) == CT_OK) {
      fputs(table, stdout);
    }
    free(table);
    if (ct_profile_save_chrome_trace(prof, profile) != CT_OK) {
      fprintf(stderr, "corten run: %s\n", ct_last_error());
      rc = 1;
    } else {
      printf("trace: %s (%zu events; open it in chrome://tracing or ui.perfetto.dev)\n", profile,
             ct_profile_count(prof));
    }
    ct_profile_free(prof);
  }
  if (e == NULL && ok) fprintf(stderr, "corten run: %s\n", ct_last_error());
  if (rc == 0) {
    for (size_t k = 0; k < ct_onnx_output_count(m); k++) print_output(s, ct_onnx_output_name(m, k));
    qsort(times, (size_t)repeat, sizeof *times, cmp_double);
    printf("median time: %.3f ms over %d run%s, %d thread%s\n", times[repeat / 2] * 1e3, repeat,
           repeat == 1 ? "" : "s", ct_get_num_threads(), ct_get_num_threads() == 1 ? "" : "s");
  }
  free(times);
  free(const_names);
  free(out_names);
  ct_executor_free(e);
  ct_onnx_free(m);
  ct_scope_free(s);
  return rc;
}
