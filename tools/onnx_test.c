/* SPDX-License-Identifier: Apache-2.0 */
/* tools/onnx_test.c: `corten onnx-test DIR...`, ONNX's backend conformance tests run through
 * corten. A test is a folder holding model.onnx and test_data_set_N folders with input_K.pb and
 * output_K.pb (serialized TensorProtos); DIR is such a folder or one holding them (Debian's
 * libonnx-testdata: data/node, data/pytorch-converted, ...). Each data set's inputs go to the
 * model's inputs in order, the program runs once with the graph passes (the executor's
 * optimize option) and once without, which must give the same bits, and each output is
 * compared as ONNX's own runner does: the same dtype and dims, integers and bools exact, floats within rtol 1e-3 and
 * atol 1e-7 (NaN where NaN is expected).
 *
 * A test is `passed`, `unsupported` (the load or a kernel says CT_ERR_UNSUPPORTED: corten says
 * it cannot; or bfloat16 data stored as uint16 that cannot be compared, below), or `wrong` (any
 * other failure, or a value out of tolerance: corten ran and was wrong, or failed where it
 * should not). A test on the list of known data errors (its expected
 * values contradict the operator's definition, as ONNX's own tracker says) that fails its
 * comparison counts as `bad data`, never as passed; once its data is fixed upstream it passes or
 * fails as any other. The table gives the counts per op type (the model's first node's), then the
 * totals; the exit status is 1 when a test is wrong or fewer than --min-pass percent passed.
 *
 * --round-trip: a test that passed is also saved with ct_onnx_save, loaded again, and run on
 * every data set, whose outputs must be the first import's bit for bit (else wrong); an export
 * that says CT_ERR_UNSUPPORTED makes the test unsupported. --threads N: the kernels' thread
 * count (ct_set_num_threads; default one per core), so that the passes' equality is checked at
 * several counts. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <corten/corten.h>

#include "tool.h"

enum { PASSED, UNSUPPORTED, WRONG, BAD_DATA };

/* Tests whose data contradict the operator's definition, and where ONNX says so. */
static const struct {
  const char *test, *why;
} bad_data[] = {
    {"test_adam_multiple", "the model lacks the epsilon (1e-2) its outputs were computed with, "
                           "so the operator's default 0 applies (onnx/onnx#7749, fixed by #7763)"},
};

static const char *bad_data_reason(const char *test) {
  for (size_t i = 0; i < sizeof bad_data / sizeof bad_data[0]; i++) {
    if (strcmp(bad_data[i].test, test) == 0) return bad_data[i].why;
  }
  return NULL;
}

typedef struct tally {
  char op[64];
  int n[4];
} tally;

typedef struct run_state {
  tally *t;
  size_t n_t, cap_t;
  int total[4];
  bool verbose, round_trip;
} run_state;

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir whose names start with prefix, sorted; *n of them (free each and the list). */
static char **list(const char *dir, const char *prefix, size_t *n) {
  *n = 0;
  DIR *d = opendir(dir);
  if (d == NULL) return NULL;
  char **v = NULL;
  size_t cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      char **g = realloc(v, cap * sizeof *g);
      if (g == NULL) break;
      v = g;
    }
    size_t len = strlen(e->d_name) + 1;
    v[*n] = malloc(len);
    if (v[*n] == NULL) break;
    memcpy(v[*n], e->d_name, len);
    (*n)++;
  }
  closedir(d);
  if (v != NULL) qsort(v, *n, sizeof *v, cmp_str);
  return v;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

static double elem(const void *p, ct_dtype dt, int64_t i) {
  switch (dt) {
    case CT_BOOL: case CT_UINT8: return ((const uint8_t *)p)[i];
    case CT_INT8: return ((const int8_t *)p)[i];
    case CT_INT16: return ((const int16_t *)p)[i];
    case CT_INT32: return ((const int32_t *)p)[i];
    case CT_INT64: return (double)((const int64_t *)p)[i];
    case CT_UINT16: return ((const uint16_t *)p)[i];
    case CT_UINT32: return ((const uint32_t *)p)[i];
    case CT_UINT64: return (double)((const uint64_t *)p)[i];
    case CT_FLOAT32: return ((const float *)p)[i];
    case CT_FLOAT64: return ((const double *)p)[i];
    case CT_FLOAT16: {
      uint16_t h = ((const uint16_t *)p)[i];
      int e = (h >> 10) & 31, m = h & 1023;
      double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
      return h & 0x8000 ? -v : v;
    }
    case CT_BFLOAT16: {
      uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
      float f;
      memcpy(&f, &b, 4);
      return f;
    }
    default: return 0;
  }
}

/* Compares got with want as ONNX's runner does; *why says what differs. */
static bool same(const ct_tensor *got, const ct_tensor *want, char *why, size_t cap) {
  char a[128], b[128];
  ct_dtype dg = ct_tensor_dtype(got), dw = ct_tensor_dtype(want);
  if (dg != dw) {
    snprintf(why, cap, "dtype %s, expected %s", ct_dtype_name(dg), ct_dtype_name(dw));
    return false;
  }
  if (!ct_ddim_equal(ct_tensor_dims(got), ct_tensor_dims(want))) {
    snprintf(why, cap, "dims %s, expected %s", ct_ddim_str(ct_tensor_dims(got), a, sizeof a),
             ct_ddim_str(ct_tensor_dims(want), b, sizeof b));
    return false;
  }
  int64_t n = ct_tensor_numel(want);
  const void *pg = ct_tensor_data(got, dg), *pw = ct_tensor_data(want, dw);
  if (n > 0 && (pg == NULL || pw == NULL)) {
    snprintf(why, cap, "no data: %s", ct_last_error());
    return false;
  }
  bool floating = dw == CT_FLOAT16 || dw == CT_BFLOAT16 || dw == CT_FLOAT32 || dw == CT_FLOAT64;
  size_t es = ct_dtype_size(dw);
  for (int64_t i = 0; i < n; i++) {
    double x = elem(pg, dg, i), y = elem(pw, dw, i);
    /* Integers bit for bit (a double holds int64 and uint64 values inexactly). */
    bool ok = floating ? (isnan(y) ? isnan(x) : (x == y || fabs(x - y) <= 1e-7 + 1e-3 * fabs(y)))
              : dw == CT_BOOL ? x == y
                              : memcmp((const char *)pg + (size_t)i * es,
                                       (const char *)pw + (size_t)i * es, es) == 0;
    if (!ok) {
      snprintf(why, cap, "element %lld is %.9g, expected %.9g", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

/* Whether a and b hold the same dtype, dims and bytes. */
static bool same_bits(const ct_tensor *a, const ct_tensor *b) {
  ct_dtype dt = ct_tensor_dtype(a);
  if (dt != ct_tensor_dtype(b) || !ct_ddim_equal(ct_tensor_dims(a), ct_tensor_dims(b))) {
    return false;
  }
  size_t n = (size_t)ct_tensor_numel(a) * ct_dtype_size(dt);
  const void *pa = ct_tensor_data(a, dt), *pb = ct_tensor_data(b, dt);
  return n == 0 || (pa != NULL && pb != NULL && memcmp(pa, pb, n) == 0);
}

/* ---- bfloat16 data stored as uint16 ----------------------------------------------------------- *
 * ONNX's data of the bfloat16 Cast and CastLike tests (up to onnx 1.12, Debian's) store bfloat16
 * tensors as TensorProto uint16: numpy had no bfloat16, so the generator wrote the bits as uint16
 * (onnx/onnx#6151). ONNX's own runner hands those 2-byte values to the backend as they are. The
 * runner does the same, and only here (ct_onnx_load_tensor still reads uint16 as uint16): where
 * the model declares a bfloat16 input or output and the file holds uint16 of the declared dims
 * (extents the model leaves symbolic match any), each element's 2 bytes are taken as bfloat16's
 * bits, and the values are then fed, or compared as any bfloat16 output is. */

/* Whether uint16 data of dims d fit a declaration of dtype dt and dims dd (rank -1: none). */
static bool is_bf16_as_uint16(ct_dtype dt, ct_ddim dd, ct_ddim d) {
  if (dt != CT_BFLOAT16) return false;
  if (dd.rank < 0) return true;
  if (dd.rank != d.rank) return false;
  for (int k = 0; k < d.rank; k++) {
    if (dd.d[k] >= 0 && dd.d[k] != d.d[k]) return false;
  }
  return true;
}

/* t (uint16) holds the same bytes as bfloat16; false with why on failure. */
static bool reinterpret_bf16(ct_tensor *t, char *why, size_t cap) {
  size_t n = (size_t)ct_tensor_numel(t);
  uint16_t *bits = malloc((n ? n : 1) * sizeof *bits);
  const void *p = ct_tensor_data(t, CT_UINT16);
  bool ok = bits != NULL && (n == 0 || p != NULL);
  if (ok) {
    if (n) memcpy(bits, p, n * sizeof *bits);
    ok = ct_tensor_set_value(t, bits, ct_tensor_dims(t), CT_BFLOAT16, ct_cpu()) == CT_OK;
  }
  if (!ok) snprintf(why, cap, "bfloat16 stored as uint16: %s", ct_last_error());
  free(bits);
  return ok;
}

/* The one way ONNX 1.12's expected bfloat16 values differ from corten's Cast: its generator
 * truncated the float bits where Cast rounds to nearest even (the spec then said neither,
 * onnx/onnx#3876; ONNX's later generator, numpy's astype to ml_dtypes' bfloat16, rounds to nearest
 * even, as corten and onnxruntime do). True only for a model whose one input is float32 of
 * want's element count, when every element where got and want differ is want = the input's
 * float bits truncated and got = the same bits rounded to nearest even (a Cast rounding any
 * other way stays wrong); *at is the first such element. */
static bool truncated_only(const ct_tensor *in, const ct_tensor *got, const ct_tensor *want,
                           int64_t *at) {
  *at = -1;
  int64_t n = ct_tensor_numel(want);
  if (in == NULL || ct_tensor_dtype(in) != CT_FLOAT32 || ct_tensor_numel(in) != n ||
      !ct_ddim_equal(ct_tensor_dims(got), ct_tensor_dims(want))) {
    return false;
  }
  const uint16_t *g = ct_tensor_data(got, CT_BFLOAT16), *w = ct_tensor_data(want, CT_BFLOAT16);
  const float *x = ct_tensor_data(in, CT_FLOAT32);
  if (g == NULL || w == NULL || x == NULL) return false;
  for (int64_t i = 0; i < n; i++) {
    if (g[i] == w[i]) continue;
    uint32_t u;
    memcpy(&u, &x[i], sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return false; /* inf and NaN: no rounding question */
    uint16_t trunc = (uint16_t)(u >> 16);
    uint16_t rne = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    if (w[i] != trunc || g[i] != rne) return false;
    if (*at < 0) *at = i;
  }
  return *at >= 0;
}

/* Loads data set `set`'s inputs into model m's input variables in s; PASSED, UNSUPPORTED or
 * WRONG. */
static int feed(const char *dir, const char *set, ct_onnx_model *m, ct_scope *s, char *why,
                size_t cap) {
  char path[4096];
  for (size_t k = 0; k < ct_onnx_input_count(m); k++) {
    snprintf(path, sizeof path, "%s/%s/input_%zu.pb", dir, set, k);
    if (!exists(path)) continue; /* an optional input the set leaves out */
    ct_tensor *t = ct_var_tensor(ct_scope_var(s, ct_onnx_input_name(m, k)));
    if (t == NULL || ct_onnx_load_tensor(path, t) != CT_OK) {
      snprintf(why, cap, "input %zu: %s", k, ct_last_error());
      return ct_last_status() == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
    }
    ct_ddim dd = {.rank = -1};
    ct_dtype declared = CT_DTYPE_UNDEFINED;
    (void)ct_onnx_input_info(m, k, &dd, &declared);
    if (declared == CT_BFLOAT16 && ct_tensor_dtype(t) == CT_UINT16) {
      char a[128], b[128];
      if (!is_bf16_as_uint16(declared, dd, ct_tensor_dims(t))) {
        snprintf(why, cap, "input %zu: the model declares bfloat16 of dims %s but the data file "
                 "holds uint16 of dims %s: not taken as bfloat16 bits", k,
                 ct_ddim_str(dd, a, sizeof a), ct_ddim_str(ct_tensor_dims(t), b, sizeof b));
        return UNSUPPORTED;
      }
      if (!reinterpret_bf16(t, why, cap)) return WRONG;
    }
  }
  return PASSED;
}

/* Compares output k of model m (got) with its expected value (want, which a bfloat16 output
 * stored as uint16 turns into bfloat16 bits); PASSED, UNSUPPORTED or WRONG with why. */
static int check_output(ct_onnx_model *m, ct_scope *s, size_t k, const ct_tensor *got,
                        ct_tensor *want, char *why, size_t cap) {
  const char *name = ct_onnx_output_name(m, k);
  ct_ddim dd = {.rank = -1};
  ct_dtype declared = CT_DTYPE_UNDEFINED;
  (void)ct_onnx_output_info(m, k, &dd, &declared);
  bool bf16 = ct_tensor_dtype(want) == CT_UINT16 &&
              is_bf16_as_uint16(declared, dd, ct_tensor_dims(want));
  if (bf16 && !reinterpret_bf16(want, why, cap)) return WRONG;
  char detail[300];
  if (same(got, want, detail, sizeof detail)) return PASSED;
  int64_t at;
  const ct_var *in = ct_onnx_input_count(m) == 1 ? ct_scope_find_var(s, ct_onnx_input_name(m, 0))
                                                 : NULL;
  if (bf16 && truncated_only(in != NULL ? ct_var_get_tensor(in) : NULL, got, want, &at)) {
    const uint16_t *g = ct_tensor_data(got, CT_BFLOAT16), *w = ct_tensor_data(want, CT_BFLOAT16);
    snprintf(why, cap, "output %zu ('%s'): the expected bfloat16 values are the floats truncated "
             "where corten's Cast rounds to nearest even (element %lld: expected 0x%04x, corten "
             "0x%04x): ONNX 1.12's generator truncated, and the spec said neither (onnx/onnx#3876)",
             k, name, (long long)at, (unsigned)w[at], (unsigned)g[at]);
    return UNSUPPORTED;
  }
  snprintf(why, cap, "output %zu ('%s'): %s", k, name, detail);
  return WRONG;
}

/* Runs data set `set` of test `dir` over model m in scope s; PASSED, UNSUPPORTED or WRONG. */
static int run_set(const char *dir, const char *set, ct_onnx_model *m, ct_scope *s, char *why,
                   size_t cap) {
  char path[4096];
  int fed = feed(dir, set, m, s, why, cap);
  if (fed != PASSED) return fed;
  /* The program runs with the graph passes, as `corten run` and corten.onnx.load run it, and
   * again without; the two must give the same bits. */
  ct_tensor *optimized[16] = {NULL};
  size_t n_out = ct_onnx_output_count(m) < 16 ? ct_onnx_output_count(m) : 16;
  for (int pass = 0; pass < 2; pass++) {
    ct_executor_options o = {.optimize = pass == 0};
    ct_executor *e = ct_executor_new_with(ct_onnx_program(m), s, ct_cpu(), &o);
    ct_status st = e != NULL ? ct_executor_run(e) : ct_last_status();
    ct_executor_free(e);
    if (st != CT_OK) {
      snprintf(why, cap, "run%s: %s", pass == 0 ? "" : " without optimize", ct_last_error());
      for (size_t k = 0; k < n_out; k++) ct_tensor_free(optimized[k]);
      return st == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
    }
    for (size_t k = 0; k < n_out; k++) {
      const ct_var *v = ct_scope_find_var(s, ct_onnx_output_name(m, k));
      const ct_tensor *got = v ? ct_var_get_tensor(v) : NULL;
      if (got == NULL || !ct_tensor_has_memory(got)) continue;
      if (pass == 0) {
        optimized[k] = ct_tensor_new();
        if (optimized[k] != NULL && ct_tensor_copy(optimized[k], got, ct_cpu()) != CT_OK) {
          ct_tensor_free(optimized[k]);
          optimized[k] = NULL;
        }
      } else if (optimized[k] != NULL && !same_bits(optimized[k], got)) {
        snprintf(why, cap, "output %zu ('%s'): the graph passes changed its bits", k,
                 ct_onnx_output_name(m, k));
        for (size_t j = 0; j < n_out; j++) ct_tensor_free(optimized[j]);
        return WRONG;
      }
    }
  }
  for (size_t k = 0; k < n_out; k++) ct_tensor_free(optimized[k]);
  for (size_t k = 0; k < ct_onnx_output_count(m); k++) {
    snprintf(path, sizeof path, "%s/%s/output_%zu.pb", dir, set, k);
    ct_tensor *want = ct_tensor_new();
    const ct_var *v = ct_scope_find_var(s, ct_onnx_output_name(m, k));
    const ct_tensor *got = v ? ct_var_get_tensor(v) : NULL;
    int r = PASSED;
    if (want == NULL || ct_onnx_load_tensor(path, want) != CT_OK) {
      snprintf(why, cap, "output %zu's expected value: %s", k, ct_last_error());
      r = ct_last_status() == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
    } else if (got == NULL) {
      snprintf(why, cap, "output %zu ('%s') holds no tensor", k, ct_onnx_output_name(m, k));
      r = WRONG;
    } else {
      r = check_output(m, s, k, got, want, why, cap);
    }
    ct_tensor_free(want);
    if (r != PASSED) return r;
  }
  return PASSED;
}

/* Runs m over s once (graph passes on) and checks that it succeeded; WRONG or UNSUPPORTED with
 * why otherwise. */
static int run_once(ct_onnx_model *m, ct_scope *s, const char *what, char *why, size_t cap) {
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(ct_onnx_program(m), s, ct_cpu(), &o);
  ct_status st = e != NULL ? ct_executor_run(e) : ct_last_status();
  ct_executor_free(e);
  if (st == CT_OK) return PASSED;
  snprintf(why, cap, "%s: %s", what, ct_last_error());
  return st == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
}

/* --round-trip: m (which passed) saved with ct_onnx_save and loaded again must give the same
 * bits as m on every data set. PASSED, UNSUPPORTED (the export says so) or WRONG. */
static int round_trip(const char *dir, char **sets, size_t n_sets, ct_onnx_model *m, ct_scope *s,
                      char *why, size_t cap) {
  char file[4096];
  const char *tmp = getenv("TMPDIR");
  snprintf(file, sizeof file, "%s/corten-round-trip-XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
  int fd = mkstemp(file);
  if (fd < 0) {
    snprintf(why, cap, "round trip: cannot make a temporary file");
    return WRONG;
  }
  close(fd);
  const char *in[64], *out[64];
  size_t n_in = ct_onnx_input_count(m), n_out = ct_onnx_output_count(m);
  if (n_in > 64 || n_out > 64) n_in = n_out = 0;
  for (size_t k = 0; k < n_in; k++) in[k] = ct_onnx_input_name(m, k);
  for (size_t k = 0; k < n_out; k++) out[k] = ct_onnx_output_name(m, k);
  ct_scope *s2 = NULL;
  ct_onnx_model *m2 = NULL;
  int r = PASSED;
  if (ct_onnx_save(file, ct_onnx_program(m), s, in, n_in, out, n_out) != CT_OK) {
    snprintf(why, cap, "export: %s", ct_last_error());
    r = ct_last_status() == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
  } else if ((s2 = ct_scope_new()) == NULL || (m2 = ct_onnx_load(file, s2)) == NULL) {
    snprintf(why, cap, "the export's load: %s", ct_last_error());
    r = WRONG;
  }
  for (size_t i = 0; i < n_sets && r == PASSED; i++) {
    if ((r = feed(dir, sets[i], m, s, why, cap)) != PASSED ||
        (r = feed(dir, sets[i], m2, s2, why, cap)) != PASSED ||
        (r = run_once(m, s, "run", why, cap)) != PASSED ||
        (r = run_once(m2, s2, "the export's run", why, cap)) != PASSED) {
      break;
    }
    for (size_t k = 0; k < n_out && r == PASSED; k++) {
      const ct_var *a = ct_scope_find_var(s, out[k]), *b = ct_scope_find_var(s2, out[k]);
      const ct_tensor *ta = a ? ct_var_get_tensor(a) : NULL, *tb = b ? ct_var_get_tensor(b) : NULL;
      if (ta == NULL || tb == NULL || !same_bits(ta, tb)) {
        snprintf(why, cap, "round trip: output %zu ('%s') differs from the first import's bits",
                 k, out[k]);
        r = WRONG;
      }
    }
  }
  ct_onnx_free(m2);
  ct_scope_free(s2);
  remove(file);
  return r;
}

static void count(run_state *rs, const char *op, int result) {
  size_t i = 0;
  while (i < rs->n_t && strcmp(rs->t[i].op, op) != 0) i++;
  if (i == rs->n_t) {
    if (rs->n_t == rs->cap_t) {
      size_t cap = rs->cap_t ? 2 * rs->cap_t : 64;
      tally *g = realloc(rs->t, cap * sizeof *g);
      if (g == NULL) return;
      rs->t = g;
      rs->cap_t = cap;
    }
    memset(&rs->t[i], 0, sizeof rs->t[i]);
    snprintf(rs->t[i].op, sizeof rs->t[i].op, "%s", op);
    rs->n_t++;
  }
  rs->t[i].n[result]++;
  rs->total[result]++;
}

/* One test folder. */
static void run_test(run_state *rs, const char *dir) {
  char model[4096], ops[256] = "", why[1024] = "";
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  if (ct_onnx_op_types(model, ops, sizeof ops) != CT_OK || ops[0] == '\0') {
    snprintf(ops, sizeof ops, "(unreadable)");
  }
  char *comma = strchr(ops, ',');
  if (comma) *comma = '\0'; /* the first node's op type */
  ct_scope *s = ct_scope_new();
  ct_onnx_model *m = s ? ct_onnx_load(model, s) : NULL;
  int result = PASSED;
  if (m == NULL) {
    snprintf(why, sizeof why, "load: %s", ct_last_error());
    result = ct_last_status() == CT_ERR_UNSUPPORTED ? UNSUPPORTED : WRONG;
  } else {
    size_t n_sets;
    char **sets = list(dir, "test_data_set_", &n_sets);
    for (size_t i = 0; i < n_sets && result == PASSED; i++) {
      result = run_set(dir, sets[i], m, s, why, sizeof why);
    }
    if (result == PASSED && rs->round_trip) {
      result = round_trip(dir, sets, n_sets, m, s, why, sizeof why);
    }
    free_list(sets, n_sets);
  }
  ct_onnx_free(m);
  ct_scope_free(s);
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  const char *bad = result == WRONG ? bad_data_reason(base) : NULL;
  if (bad != NULL) {
    result = BAD_DATA;
    printf("bad data %s (%s): %s; corten: %.300s\n", base, ops, bad, why);
  }
  count(rs, ops, result);
  if (result == WRONG) printf("WRONG %s (%s): %.600s\n", base, ops, why);
  else if (rs->verbose && result != BAD_DATA) {
    printf("%s %s (%s)%s%.400s\n", result == PASSED ? "passed" : "unsupported", base, ops,
           result == PASSED ? "" : ": ", result == PASSED ? "" : why);
  }
}

static void run_dir(run_state *rs, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (exists(path)) {
    run_test(rs, dir);
    return;
  }
  size_t n;
  char **tests = list(dir, "", &n);
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, tests[i]);
    if (is_dir(path)) run_dir(rs, path);
  }
  free_list(tests, n);
}

static int cmp_tally(const void *a, const void *b) {
  return strcmp(((const tally *)a)->op, ((const tally *)b)->op);
}

int corten_onnx_test(int argc, char **argv) {
  run_state rs = {0};
  double min_pass = 0;
  int first = 0;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (strcmp(argv[first], "--verbose") == 0) rs.verbose = true;
    else if (strcmp(argv[first], "--round-trip") == 0) rs.round_trip = true;
    else if (strcmp(argv[first], "--min-pass") == 0 && first + 1 < argc) min_pass = atof(argv[++first]);
    else if (strcmp(argv[first], "--threads") == 0 && first + 1 < argc) {
      char *end;
      long t = strtol(argv[++first], &end, 10);
      if (*end != '\0' || t < 1 || t > 256) {
        fprintf(stderr, "corten onnx-test: --threads wants a count from 1 to 256, not '%s'\n",
                argv[first]);
        return 2;
      }
      ct_set_num_threads((int)t);
    } else {
      fprintf(stderr, "corten onnx-test: unknown option '%s'\n", argv[first]);
      return 2;
    }
  }
  if (first == argc) {
    fprintf(stderr, "corten onnx-test: give at least one folder of tests\n");
    return 2;
  }
  for (int i = first; i < argc; i++) {
    if (!is_dir(argv[i])) {
      fprintf(stderr, "corten onnx-test: '%s' is not a folder\n", argv[i]);
      return 1;
    }
    run_dir(&rs, argv[i]);
  }
  qsort(rs.t, rs.n_t, sizeof *rs.t, cmp_tally);
  printf("threads: %d\n", ct_get_num_threads());
  printf("%-32s %8s %12s %8s %9s\n", "op type", "passed", "unsupported", "wrong", "bad data");
  for (size_t i = 0; i < rs.n_t; i++) {
    printf("%-32s %8d %12d %8d %9d\n", rs.t[i].op, rs.t[i].n[PASSED], rs.t[i].n[UNSUPPORTED],
           rs.t[i].n[WRONG], rs.t[i].n[BAD_DATA]);
  }
  int all = rs.total[PASSED] + rs.total[UNSUPPORTED] + rs.total[WRONG] + rs.total[BAD_DATA];
  double pct = all ? 100.0 * rs.total[PASSED] / all : 0;
  printf("total: %d tests, %d passed (%.1f%%), %d unsupported, %d wrong, %d bad data\n", all,
         rs.total[PASSED], pct, rs.total[UNSUPPORTED], rs.total[WRONG], rs.total[BAD_DATA]);
  free(rs.t);
  if (rs.total[WRONG] > 0) return 1;
  if (pct < min_pass) {
    printf("FAIL: %.1f%% passed, below --min-pass %.1f%%\n", pct, min_pass);
    return 1;
  }
  return 0;
}
