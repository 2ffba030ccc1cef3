/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_programs.c: the differential fuzzer (docs/design/reliability.md, "The program
 * fuzzer"). The first byte picks one of three checks; the rest describes its case.
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
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>

#include <corten/expr.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- Reporting ------------------------------------------------------------------------------ */

static char story[16384]; /* the case in words, printed with a failure */
static size_t story_len;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
  if (story_len + 1 >= sizeof story) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(story + story_len, sizeof story - story_len, fmt, ap);
  va_end(ap);
  if (w > 0) story_len += (size_t)w;
  if (story_len >= sizeof story) story_len = sizeof story - 1;
}

__attribute__((noreturn, format(printf, 1, 2))) static void broken(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_programs: broken promise: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(last error: %s)\nthe case:\n%s\n", ct_last_error(), story);
  abort();
}

static const char *dims_s(ct_ddim d, char *buf, size_t cap) { return ct_ddim_str(d, buf, cap); }
#define DS(d) dims_s((d), (char[64]){0}, 64)

static const char *dt_s(ct_dtype dt) {
  return dt == CT_FLOAT32 ? "f32" : dt == CT_FLOAT64 ? "f64" : ct_dtype_name(dt);
}


/* The oracle's element loops: libFuzzer's comparison tracing there costs most of an input's
 * time and says nothing about corten, so it is left out. */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))
#else
#define NO_COVERAGE
#endif

/* ---- Data ----------------------------------------------------------------------------------- */

/* Element i of the stream `seed`: a multiple of 1/64 in [-3, 3] (exact in both dtypes), and
 * with `special` now and then 0, -0, +-1e30, infinity or NaN. */
NO_COVERAGE static double value_at(uint32_t seed, int64_t i, bool special) {
  uint32_t h = seed ^ ((uint32_t)i * 0x9E3779B1u);
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  if (special && h % 53 == 0) {
    static const double sp[] = {0.0, -0.0, 1e30, -1e30, INFINITY, NAN};
    return sp[(h >> 8) % 6];
  }
  return ((double)(h % 385) - 192.0) / 64.0;
}

static void put_elem(void *p, ct_dtype dt, int64_t i, double v) {
  if (dt == CT_FLOAT32) {
    ((float *)p)[i] = (float)v;
  } else {
    ((double *)p)[i] = v;
  }
}

static double get_elem(const void *p, ct_dtype dt, int64_t i) {
  return dt == CT_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

NO_COVERAGE static void fill(void *p, ct_dtype dt, int64_t n, uint32_t seed, bool special) {
  for (int64_t i = 0; i < n; i++) put_elem(p, dt, i, value_at(seed, i, special));
}

static void *xalloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  FZ_CHECK(p != NULL);
  return p;
}

/* A tensor of dims and dtype holding the stream `seed` (set_value: a block of its own). */
static void set_stream(ct_tensor *t, ct_ddim dims, ct_dtype dt, uint32_t seed, bool special) {
  int64_t n = ct_ddim_numel(dims);
  void *buf = xalloc((size_t)n * 8 + 8);
  fill(buf, dt, n, seed, special);
  FZ_CHECK(ct_tensor_set_value(t, buf, dims, dt, ct_cpu()) == CT_OK);
  free(buf);
}

/* What the caller can read of a tensor. */
typedef struct snap {
  bool present, readable, external;
  ct_ddim dims;
  ct_dtype dt;
  const void *ptr;
  size_t n;
  unsigned char *bytes;
} snap;

static snap take(const ct_tensor *t) {
  snap s = {0};
  s.dims.rank = -1;
  if (t == NULL) return s;
  s.present = true;
  s.dims = ct_tensor_dims(t);
  s.dt = ct_tensor_dtype(t);
  s.external = ct_tensor_is_external(t);
  if (ct_tensor_has_memory(t) && s.dt != CT_DTYPE_UNDEFINED && s.dims.rank >= 0) {
    const void *d = ct_tensor_data(t, s.dt);
    if (d != NULL) {
      s.readable = true;
      s.ptr = d;
      s.n = (size_t)ct_tensor_numel(t) * ct_dtype_size(s.dt);
      s.bytes = malloc(s.n ? s.n : 1);
      FZ_CHECK(s.bytes != NULL);
      memcpy(s.bytes, d, s.n);
    }
  }
  ct_clear_error();
  return s;
}

static void drop(snap *s) {
  free(s->bytes);
  s->bytes = NULL;
}

/* Whether b shows what a shows (dims, dtype, bytes); writes the first difference into why. A
 * NaN matches any NaN: neither IEEE 754 nor C fixes the sign or payload of the NaN an
 * arithmetic operation returns, and compilers may swap the operands of + and *, so which of
 * two NaNs comes out is no promise (tests/test_fuse.c's assert_same_values says the same). */
static bool same_view(const snap *a, const snap *b, char *why, size_t cap) {
  if (a->present != b->present || a->readable != b->readable) {
    snprintf(why, cap, "holds %s data (expected %s)", b->readable ? "readable" : "no readable",
             a->readable ? "readable" : "none");
    return false;
  }
  if (!ct_ddim_equal(a->dims, b->dims) || a->dt != b->dt || a->external != b->external) {
    snprintf(why, cap, "has dims %s %s%s (expected %s %s%s)", DS(b->dims), dt_s(b->dt),
             b->external ? " external" : "", DS(a->dims), dt_s(a->dt),
             a->external ? " external" : "");
    return false;
  }
  if (!a->readable || memcmp(a->bytes, b->bytes, a->n) == 0) return true;
  size_t es = ct_dtype_size(a->dt);
  for (size_t i = 0; i < a->n / es; i++) {
    double x = get_elem(a->bytes, a->dt, (int64_t)i), y = get_elem(b->bytes, b->dt, (int64_t)i);
    if (memcmp(a->bytes + i * es, b->bytes + i * es, es) != 0 && !(isnan(x) && isnan(y))) {
      snprintf(why, cap, "element %zu is %.17g (expected %.17g)", i, y, x);
      return false;
    }
  }
  return true;
}

/* ---- Dims ----------------------------------------------------------------------------------- */

/* The dims numpy broadcasting gives a and b; false when they do not broadcast (or are unset). */
static bool bcast(ct_ddim a, ct_ddim b, ct_ddim *out) {
  if (a.rank < 0 || b.rank < 0) return false;
  int r = a.rank > b.rank ? a.rank : b.rank;
  out->rank = r;
  for (int k = 0; k < r; k++) {
    int64_t x = k < r - a.rank ? 1 : a.d[k - (r - a.rank)];
    int64_t y = k < r - b.rank ? 1 : b.d[k - (r - b.rank)];
    if (x != y && x != 1 && y != 1) return false;
    out->d[k] = x == 1 ? y : x;
  }
  return true;
}

/* A family of dims that broadcast together: [r, c] and what broadcasts to it. */
typedef struct family {
  int64_t r, c;
} family;

static family pick_family(fz_bytes *in, bool small) {
  static const int64_t cols[] = {1, 2, 3, 5, 8, 130, 513, 600, 2100};
  static const int64_t small_cols[] = {1, 2, 3, 4};
  uint8_t b = fz_u8(in);
  family f;
  if (small) {
    f.r = 1 + b % 3;
    f.c = small_cols[(b >> 2) % 4];
  } else {
    f.r = 1 + b % 4;
    f.c = cols[(b >> 2) % 9];
    if (f.c == 2100 && f.r > 2) f.r = 2; /* 4200 elements: math kernels split over threads */
  }
  return f;
}

static ct_ddim family_dims(family f, uint8_t b) {
  switch (b % 8) {
    case 2: return CT_DIMS(f.c);
    case 3: return CT_DIMS(f.r, 1);
    case 4: return CT_DIMS(1, f.c);
    case 5: return CT_DIMS(1);
    case 6: return CT_DIMS();
    case 7:
      if ((b >> 3) % 4 == 0) return (b >> 5) & 1 ? CT_DIMS(f.r + 1, f.c) : CT_DIMS(f.c + 1);
      return CT_DIMS(f.r, f.c);
    default: return CT_DIMS(f.r, f.c);
  }
}

/* Rows [*begin, *end) of d0 from byte b: mostly at least one row, now and then any (empty ones
 * included). */
static void pick_rows(uint8_t b, int64_t d0, int64_t *begin, int64_t *end) {
  if ((b & 7) == 0 || d0 == 0) {
    *begin = (b >> 3) % (d0 + 1);
    *end = *begin + (b >> 5) % (d0 - *begin + 1);
  } else {
    *begin = (b >> 3) % d0;
    *end = *begin + 1 + (b >> 5) % (d0 - *begin);
  }
}

/* ---- Op specifications, shared by (a) and (b) ----------------------------------------------- */

enum {
  K_BIN, K_UN, K_SCALE, K_MATMUL, K_RSUM, K_MEAN, K_RESHAPE, K_TRANSPOSE, K_SUM, K_SOFTMAX,
  K_ASSIGN
};

static const struct {
  const char *name;
  int kind;
} op_types[] = {
    {"elementwise_add", K_BIN}, {"elementwise_sub", K_BIN}, {"elementwise_mul", K_BIN},
    {"elementwise_div", K_BIN}, {"relu", K_UN},            {"sigmoid", K_UN},
    {"tanh", K_UN},             {"exp", K_UN},             {"log", K_UN},
    {"scale", K_SCALE},         {"matmul", K_MATMUL},      {"reduce_sum", K_RSUM},
    {"mean", K_MEAN},           {"reshape", K_RESHAPE},    {"transpose", K_TRANSPOSE},
    {"sum", K_SUM},             {"softmax", K_SOFTMAX},    {"assign", K_ASSIGN},
};
#define OP_RELU 4

#define MAXV 12    /* variables v0 .. v11 */
#define MAXOPS 10
#define MAXIN 3
#define MAX_ELEMS 8400 /* the largest result a generated op may have */

typedef struct op_spec {
  int type; /* index into op_types */
  int in[MAXIN], n_in;
  int out;
  double scale, bias;
  bool after, tx, ty, keep;
  int64_t ints[4]; /* reduce_sum's dim, reshape's shape, transpose's axis */
  int n_ints;
} op_spec;

static const char *var_name(int v) {
  static const char *const names[MAXV] = {"v0", "v1", "v2", "v3", "v4",  "v5",
                                          "v6", "v7", "v8", "v9", "v10", "v11"};
  return names[v];
}

/* The dims of o's output from its inputs' (as the op types infer them); false when they fail. */
static bool sim_dims(const op_spec *o, const ct_ddim *in, ct_ddim *out) {
  for (int i = 0; i < o->n_in; i++) {
    if (in[i].rank < 0) return false;
  }
  ct_ddim x = in[0];
  switch (op_types[o->type].kind) {
    case K_BIN: return bcast(in[0], in[1], out);
    case K_UN: case K_SCALE: case K_ASSIGN: case K_SOFTMAX: *out = x; return true;
    case K_MEAN: *out = CT_DIMS(); return true;
    case K_SUM:
      for (int i = 1; i < o->n_in; i++) {
        if (!ct_ddim_equal(in[i], x)) return false;
      }
      *out = x;
      return true;
    case K_MATMUL: {
      ct_ddim y = in[1];
      if (x.rank < 1 || x.rank > 2 || y.rank < 1 || y.rank > 2) return false;
      bool xv = x.rank == 1, yv = y.rank == 1, tx = o->tx && !xv, ty = o->ty && !yv;
      int64_t xr = xv ? 1 : x.d[0], xc = x.d[x.rank - 1];
      int64_t yr = y.d[0], yc = yv ? 1 : y.d[1];
      int64_t m = tx ? xc : xr, k = tx ? xr : xc, ky = ty ? yc : yr, n = ty ? yr : yc;
      if (k != ky) return false;
      out->rank = 0;
      if (!xv) out->d[out->rank++] = m;
      if (!yv) out->d[out->rank++] = n;
      return true;
    }
    case K_RSUM: {
      bool red[CT_MAX_RANK] = {false};
      for (int k = 0; k < CT_MAX_RANK; k++) red[k] = o->n_ints == 0;
      int lim = x.rank == 0 ? 1 : x.rank; /* a rank-0 X takes 0 and -1 */
      for (int i = 0; i < o->n_ints; i++) {
        int64_t a = o->ints[i] < 0 ? o->ints[i] + lim : o->ints[i];
        if (a < 0 || a >= lim || red[a]) return false;
        red[a] = true;
      }
      out->rank = 0;
      for (int k = 0; k < x.rank; k++) {
        if (!red[k]) {
          out->d[out->rank++] = x.d[k];
        } else if (o->keep) {
          out->d[out->rank++] = 1;
        }
      }
      return true;
    }
    case K_RESHAPE: {
      int64_t n = ct_ddim_numel(x), known = 1;
      int infer = -1;
      out->rank = o->n_ints;
      for (int i = 0; i < o->n_ints; i++) {
        int64_t d = o->ints[i];
        if (d == -1) {
          infer = i;
          continue;
        }
        if (d == 0) {
          if (i >= x.rank) return false;
          d = x.d[i];
        }
        out->d[i] = d;
        known *= d;
      }
      if (infer >= 0) {
        if (known <= 0 || n % known != 0) return false;
        out->d[infer] = n / known;
      } else if (known != n) {
        return false;
      }
      return true;
    }
    case K_TRANSPOSE:
      if (o->n_ints != x.rank) return false;
      out->rank = x.rank;
      for (int k = 0; k < x.rank; k++) out->d[k] = x.d[o->ints[k]];
      return true;
    default: return false;
  }
}

/* The model of the variables while a program is generated: which exist, their dims and dtype,
 * and which share a block through reshape (views: (b) never writes them again, since a write
 * into one changes the other behind the names the backward pass follows). */
typedef struct model {
  int n_vars, n_leaves;
  ct_ddim dims[MAXV];
  ct_dtype dt[MAXV];
  bool view[MAXV];
} model;

/* transpose's axis: the dims of a rank-r input reversed. */
static void set_reversal(op_spec *o, int r) {
  o->n_ints = r < 0 ? 0 : r > 4 ? 4 : r;
  for (int k = 0; k < o->n_ints; k++) o->ints[k] = r - 1 - k;
}

/* Whether variable v can go with x into op o (with its inputs so far) and give a result of at
 * most MAX_ELEMS. */
static bool fits(const model *m, op_spec *o, int slot, int v) {
  ct_ddim in[MAXIN], out;
  for (int i = 0; i < slot; i++) in[i] = m->dims[o->in[i]];
  in[slot] = m->dims[v];
  if (slot > 0 && m->dt[v] != m->dt[o->in[0]]) return false;
  if (slot + 1 < o->n_in) return in[slot].rank >= 0; /* the later inputs decide */
  op_spec probe = *o;
  if (op_types[o->type].kind == K_TRANSPOSE) set_reversal(&probe, in[0].rank);
  if (!sim_dims(&probe, in, &out)) return false;
  int64_t n = ct_ddim_numel(out);
  return n >= 0 && n <= MAX_ELEMS;
}

/* Picks a variable for input `slot` of o among the first n of m: from a byte-chosen start, the
 * first that fits, unless the byte asks for any (1 in 8: a program that may fail). */
static int pick_input(fz_bytes *in, const model *m, op_spec *o, int slot, int n) {
  uint8_t b = fz_u8(in);
  int start = (b >> 3) % n;
  if ((b & 7) == 0) return start;
  for (int k = 0; k < n; k++) {
    int v = (start + k) % n;
    if (fits(m, o, slot, v)) return v;
  }
  return start;
}

/* Generates op o's type, attributes and inputs over the variables of m (its output is the
 * caller's to choose). */
static void gen_op(fz_bytes *in, const model *m, op_spec *o) {
  memset(o, 0, sizeof *o);
  uint8_t b = fz_u8(in) % 32;
  if (b < 12) {
    o->type = b % 4;
  } else if (b < 22) {
    o->type = 4 + (b - 12) % 6;
  } else {
    o->type = 10 + (b - 22) % 8;
  }
  int kind = op_types[o->type].kind;
  uint8_t a = fz_u8(in);
  o->n_in = kind == K_BIN || kind == K_MATMUL ? 2 : kind == K_SUM ? 2 + a % 2 : 1;
  if (kind == K_SCALE) {
    static const double scales[] = {0.5, -1.25, 2.0, 0.1, 3.0, -1.0, 1.0, 0.0};
    static const double biases[] = {0.0, 0.37, -1.0, 1.5};
    o->scale = scales[a % 8];
    o->bias = biases[(a >> 3) % 4];
    o->after = (a >> 5) & 1;
  } else if (kind == K_MATMUL) {
    o->tx = a & 1;
    o->ty = (a >> 1) & 1;
  } else if (kind == K_RSUM) {
    static const int64_t dims[][2] = {{0, 0}, {0, 0}, {1, 0}, {-1, 0}, {0, 1}};
    static const int counts[] = {0, 1, 1, 1, 2};
    int c = a % 5;
    o->n_ints = counts[c];
    o->ints[0] = dims[c][0];
    o->ints[1] = dims[c][1];
    o->keep = (a >> 3) & 1;
  } else if (kind == K_RESHAPE) {
    static const int64_t shapes[][2] = {{-1, 0}, {1, -1}, {-1, 1}, {0, -1}};
    int c = a % 4;
    o->n_ints = c == 0 ? 1 : 2;
    o->ints[0] = shapes[c][0];
    o->ints[1] = shapes[c][1];
  }
  for (int s = 0; s < o->n_in; s++) o->in[s] = pick_input(in, m, o, s, m->n_vars);
  if (kind == K_TRANSPOSE) set_reversal(o, m->dims[o->in[0]].rank);
}

static void say_op(const op_spec *o, int index) {
  say("  op #%d: %s = %s(", index, o->out >= 0 ? var_name(o->out) : "loss",
      op_types[o->type].name);
  for (int i = 0; i < o->n_in; i++) say("%s%s", i ? ", " : "", var_name(o->in[i]));
  say(")");
  switch (op_types[o->type].kind) {
    case K_SCALE: say(" scale=%g bias=%g bias_after_scale=%d", o->scale, o->bias, o->after); break;
    case K_MATMUL: say(" transpose_x=%d transpose_y=%d", o->tx, o->ty); break;
    case K_RSUM: case K_RESHAPE: case K_TRANSPOSE:
      say(" %s=[", op_types[o->type].kind == K_RSUM      ? "dim"
                   : op_types[o->type].kind == K_RESHAPE ? "shape"
                                                         : "axis");
      for (int i = 0; i < o->n_ints; i++) say("%s%lld", i ? "," : "", (long long)o->ints[i]);
      say("]");
      if (op_types[o->type].kind == K_RSUM) say(" keep_dim=%d", o->keep);
      break;
    default: break;
  }
  say("\n");
}

/* The op of o; out_name overrides the output's name when not NULL. */
static ct_op *make_op(const op_spec *o, const char *out_name) {
  ct_op *op = ct_op_new(op_types[o->type].name);
  FZ_CHECK(op != NULL);
  int kind = op_types[o->type].kind;
  const char *ins[MAXIN];
  for (int i = 0; i < o->n_in; i++) ins[i] = var_name(o->in[i]);
  if (kind == K_SUM) {
    FZ_CHECK(ct_op_set_inputs(op, "X", ins, (size_t)o->n_in) == CT_OK);
  } else {
    FZ_CHECK(ct_op_set_input(op, "X", ins[0]) == CT_OK);
    if (o->n_in > 1) FZ_CHECK(ct_op_set_input(op, "Y", ins[1]) == CT_OK);
  }
  FZ_CHECK(ct_op_set_output(op, "Out", out_name ? out_name : var_name(o->out)) == CT_OK);
  switch (kind) {
    case K_SCALE:
      FZ_CHECK(ct_op_set_attr_float(op, "scale", o->scale) == CT_OK);
      FZ_CHECK(ct_op_set_attr_float(op, "bias", o->bias) == CT_OK);
      FZ_CHECK(ct_op_set_attr_bool(op, "bias_after_scale", o->after) == CT_OK);
      break;
    case K_MATMUL:
      FZ_CHECK(ct_op_set_attr_bool(op, "transpose_x", o->tx) == CT_OK);
      FZ_CHECK(ct_op_set_attr_bool(op, "transpose_y", o->ty) == CT_OK);
      break;
    case K_RSUM:
      FZ_CHECK(ct_op_set_attr_ints(op, "dim", o->ints, (size_t)o->n_ints) == CT_OK);
      FZ_CHECK(ct_op_set_attr_bool(op, "keep_dim", o->keep) == CT_OK);
      break;
    case K_RESHAPE:
      FZ_CHECK(ct_op_set_attr_ints(op, "shape", o->ints, (size_t)o->n_ints) == CT_OK);
      break;
    case K_TRANSPOSE:
      FZ_CHECK(ct_op_set_attr_ints(op, "axis", o->ints, (size_t)o->n_ints) == CT_OK);
      break;
    default: break;
  }
  return op;
}

static void append(ct_program *p, ct_op *op) { FZ_CHECK(ct_program_append(p, op) == CT_OK); }

static ct_tensor *var_tensor(ct_scope *s, int v) {
  ct_var *x = ct_scope_var(s, var_name(v));
  FZ_CHECK(x != NULL);
  ct_tensor *t = ct_var_tensor(x);
  FZ_CHECK(t != NULL);
  return t;
}

static const ct_tensor *find_tensor(const ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_var(s, name);
  return v != NULL && ct_var_is(v, &ct_tensor_type) ? ct_var_get_tensor(v) : NULL;
}

/* ---- (a) Executors -------------------------------------------------------------------------- */

#define MAXL 6 /* leaves v0 .. v5 */

enum { L_OWN, L_SHARE, L_SLICE, L_WRAP, L_FLAT };

typedef struct leaf_spec {
  int kind;
  ct_dtype dt;
  ct_ddim dims;       /* L_OWN, L_WRAP */
  int src;            /* L_SHARE, L_SLICE, L_FLAT: an earlier leaf */
  int64_t begin, end; /* L_SLICE; L_FLAT: begin is num_col_dims */
  int buf;            /* L_WRAP */
  int64_t off;
  uint32_t seed;
} leaf_spec;

typedef struct prog_a {
  ct_dtype dt;
  bool special;
  int runs;
  int n_leaves;
  leaf_spec leaf[MAXL];
  int64_t buf_n[2];
  ct_dtype buf_dt[2];
  uint32_t buf_seed[2];
  int n_ops;
  op_spec op[MAXOPS];
  bool compared[MAXV];
  model m;
} prog_a;

static void gen_leaves(fz_bytes *in, prog_a *g, family f) {
  model *m = &g->m;
  g->n_leaves = 2 + fz_u8(in) % (MAXL - 1);
  for (int i = 0; i < g->n_leaves; i++) {
    leaf_spec *l = &g->leaf[i];
    uint8_t b = fz_u8(in), c = fz_u8(in), d = fz_u8(in);
    l->seed = (uint32_t)fz_take(in, 2) * 7919u + (uint32_t)i;
    l->dt = (c & 15) == 15 ? (g->dt == CT_FLOAT32 ? CT_FLOAT64 : CT_FLOAT32) : g->dt;
    int kind = b % 8;
    l->kind = i == 0 || kind < 3 ? L_OWN : kind == 3 ? L_SHARE : kind == 4 ? L_SLICE
              : kind == 7 ? L_FLAT : L_WRAP;
    l->src = i > 0 ? (b >> 3) % i : 0;
    const ct_ddim *sd = &m->dims[l->src];
    if ((l->kind == L_SLICE || l->kind == L_FLAT) && sd->rank < 1) l->kind = L_SHARE;
    switch (l->kind) {
      case L_OWN: l->dims = family_dims(f, c >> 4 | (d & 0xf0)); break;
      case L_SHARE:
        l->dims = *sd;
        l->dt = m->dt[l->src];
        break;
      case L_SLICE: {
        int64_t d0 = sd->d[0];
        pick_rows(d, d0, &l->begin, &l->end);
        l->dims = *sd;
        l->dims.d[0] = l->end - l->begin;
        l->dt = m->dt[l->src];
        break;
      }
      case L_FLAT: {
        int k = d % (sd->rank + 1);
        int64_t a = 1, z = 1;
        for (int j = 0; j < sd->rank; j++) *(j < k ? &a : &z) *= sd->d[j];
        l->begin = k;
        l->dims = CT_DIMS(a, z);
        l->dt = m->dt[l->src];
        break;
      }
      default: { /* L_WRAP: a buffer, at an offset that may overlap another wrap of it */
        l->buf = d & 1;
        l->dims = family_dims(f, c >> 4 | (d & 0xf0));
        if (g->buf_n[l->buf] > 0) l->dt = g->buf_dt[l->buf];
        int o = (d >> 1) % 4;
        l->off = o < 2 ? 0 : o == 2 ? 1 : f.c;
        int64_t need = l->off + ct_ddim_numel(l->dims);
        if (g->buf_n[l->buf] == 0) {
          g->buf_dt[l->buf] = l->dt;
          g->buf_seed[l->buf] = l->seed ^ 0x5a5a5a5au;
        }
        if (need > g->buf_n[l->buf]) g->buf_n[l->buf] = need;
        break;
      }
    }
    m->dims[i] = l->dims;
    m->dt[i] = l->dt;
  }
  m->n_leaves = m->n_vars = g->n_leaves;
}

static void say_prog_a(const prog_a *g) {
  static const char *const kinds[] = {"own", "share", "slice", "wrap", "flatten_to_2d"};
  say("(a) executors: %s, %d run(s), special values %s\n", dt_s(g->dt), g->runs,
      g->special ? "on" : "off");
  for (int i = 0; i < g->n_leaves; i++) {
    const leaf_spec *l = &g->leaf[i];
    say("  leaf %s: %s %s %s", var_name(i), kinds[l->kind], DS(l->dims), dt_s(l->dt));
    if (l->kind == L_SHARE) say(" of %s", var_name(l->src));
    if (l->kind == L_SLICE) say(" rows [%lld, %lld) of %s", (long long)l->begin, (long long)l->end,
                                var_name(l->src));
    if (l->kind == L_FLAT) say(" of %s at %lld", var_name(l->src), (long long)l->begin);
    if (l->kind == L_WRAP) say(" buffer %d (%lld elements) at element %lld", l->buf,
                               (long long)g->buf_n[l->buf], (long long)l->off);
    if (l->kind == L_OWN) say(" seed %u", l->seed);
    if (l->kind == L_WRAP) say(" seed %u", g->buf_seed[l->buf]);
    say("\n");
  }
  for (int k = 0; k < g->n_ops; k++) say_op(&g->op[k], k);
}

/* Whether a second run keeps every result within MAX_ELEMS: an op may read a variable that a
 * later op rewrote in the first run with other dims (v3 [4200, 1] transposed into v3 [1, 4200]
 * makes v3 * v5 a [4200, 4200] on the next run). */
static bool second_run_fits(const prog_a *g) {
  model m = g->m; /* the dims the first run leaves */
  for (int k = 0; k < g->n_ops; k++) {
    const op_spec *o = &g->op[k];
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m.dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > MAX_ELEMS) return false;
    m.dims[o->out] = out;
  }
  return true;
}

static void decode_a(fz_bytes *in, prog_a *g) {
  memset(g, 0, sizeof *g);
  uint8_t h = fz_u8(in);
  g->dt = h & 1 ? CT_FLOAT64 : CT_FLOAT32;
  g->special = (h >> 1) % 4 == 0;
  g->runs = 1 + ((h >> 3) & 1);
  family f = pick_family(in, false);
  gen_leaves(in, g, f);
  model *m = &g->m;
  g->n_ops = 1 + fz_u8(in) % MAXOPS;
  int n = 0;
  for (int k = 0; k < g->n_ops && (k == 0 || in->n > 0); k++) { /* ends with the input */
    op_spec *o = &g->op[n];
    gen_op(in, m, o);
    uint8_t b = fz_u8(in);
    bool fresh = b % 8 < 5 && m->n_vars < MAXV;
    if (fresh) {
      o->out = m->n_vars++;
    } else {
      o->out = (b >> 3) % m->n_vars; /* overwritten, in place when it is an input */
    }
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m->dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > MAX_ELEMS) { /* too large to be cheap: dropped */
      if (fresh) m->n_vars--;
      continue;
    }
    m->dims[o->out] = out;
    m->dt[o->out] = m->dt[o->in[0]];
    n++;
  }
  g->n_ops = n;
  if (g->runs == 2 && !second_run_fits(g)) g->runs = 1;
  /* Compared: the leaves, and the created variables whose last write comes at or after their
   * last read (the results free_intermediates keeps, which fuse_elementwise never fuses). */
  for (int v = 0; v < m->n_vars; v++) {
    int last_read = -1, last_write = -1;
    for (int k = 0; k < g->n_ops; k++) {
      for (int i = 0; i < g->op[k].n_in; i++) {
        if (g->op[k].in[i] == v) last_read = k;
      }
      if (g->op[k].out == v) last_write = k;
    }
    g->compared[v] = v < g->n_leaves || last_write >= last_read;
  }
}

static ct_program *build_a(const prog_a *g) {
  ct_program *p = ct_program_new();
  FZ_CHECK(p != NULL);
  for (int k = 0; k < g->n_ops; k++) append(p, make_op(&g->op[k], NULL));
  return p;
}

static void on_release(void *ctx) { ++*(int *)ctx; }

static ct_scope *scope_a(const prog_a *g, void *bufs[2], int released[MAXL]) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  for (int i = 0; i < g->n_leaves; i++) {
    const leaf_spec *l = &g->leaf[i];
    ct_tensor *t = var_tensor(s, i);
    const ct_tensor *src = find_tensor(s, var_name(l->src)); /* the viewed leaf, for views */
    ct_status st = CT_OK;
    switch (l->kind) {
      case L_OWN: set_stream(t, l->dims, l->dt, l->seed, g->special); break;
      case L_SHARE: st = ct_tensor_share(t, src); break;
      case L_SLICE: st = ct_tensor_slice(t, src, l->begin, l->end); break;
      case L_FLAT: st = ct_tensor_flatten_to_2d(t, src, (int)l->begin); break;
      default:
        st = ct_tensor_wrap(t, (char *)bufs[l->buf] + l->off * (int64_t)ct_dtype_size(l->dt),
                            l->dims, l->dt, ct_cpu(), on_release, &released[i]);
        break;
    }
    FZ_CHECK(st == CT_OK);
  }
  return s;
}

typedef struct outcome {
  ct_status status;
  bool made; /* the executor was made */
  snap var[MAXV];
  snap buf[2];
} outcome;

static void run_a(const prog_a *g, const ct_program *p, bool fuse, bool free_them, int threads,
                  outcome *r) {
  memset(r, 0, sizeof *r);
  ct_set_num_threads(threads);
  void *bufs[2] = {NULL, NULL};
  int released[MAXL] = {0};
  for (int b = 0; b < 2; b++) {
    if (g->buf_n[b] == 0) continue;
    bufs[b] = xalloc((size_t)g->buf_n[b] * ct_dtype_size(g->buf_dt[b]));
    fill(bufs[b], g->buf_dt[b], g->buf_n[b], g->buf_seed[b], g->special);
  }
  ct_scope *s = scope_a(g, bufs, released);
  ct_executor_options o = {.free_intermediates = free_them, .fuse_elementwise = fuse};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  r->made = e != NULL;
  r->status = e != NULL ? CT_OK : ct_last_status();
  for (int k = 0; k < g->runs && r->status == CT_OK; k++) r->status = ct_executor_run(e);
  if (r->status == CT_OK) {
    for (int v = 0; v < g->m.n_vars; v++) {
      if (g->compared[v]) r->var[v] = take(find_tensor(s, var_name(v)));
    }
  }
  ct_executor_free(e);
  ct_scope_free(s);
  for (int i = 0; i < g->n_leaves; i++) {
    if (g->leaf[i].kind == L_WRAP && released[i] != 1) {
      broken("fuse=%d free=%d threads=%d: the release of %s's buffer ran %d times", fuse,
             free_them, threads, var_name(i), released[i]);
    }
  }
  for (int b = 0; b < 2; b++) {
    if (bufs[b] == NULL) continue;
    size_t n = (size_t)g->buf_n[b] * ct_dtype_size(g->buf_dt[b]);
    r->buf[b] = (snap){.present = true, .readable = true, .dims = CT_DIMS(g->buf_n[b]),
                       .dt = g->buf_dt[b], .n = n, .bytes = malloc(n)};
    FZ_CHECK(r->buf[b].bytes != NULL);
    memcpy(r->buf[b].bytes, bufs[b], n);
    free(bufs[b]);
  }
  ct_set_num_threads(1);
}

static void drop_outcome(outcome *r) {
  for (int v = 0; v < MAXV; v++) drop(&r->var[v]);
  for (int b = 0; b < 2; b++) drop(&r->buf[b]);
}

static void check_a(fz_bytes *in) {
  prog_a g;
  decode_a(in, &g);
  say_prog_a(&g);
  ct_program *p = build_a(&g);
  outcome ref, got;
  run_a(&g, p, false, false, 1, &ref);
  static const struct { bool fuse, free_them; int threads; } cfgs[] = {
      {true, false, 1},  {false, true, 1}, {true, true, 1}, {false, false, 3},
      {true, false, 3},  {false, true, 3}, {true, true, 3}};
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    run_a(&g, p, cfgs[c].fuse, cfgs[c].free_them, cfgs[c].threads, &got);
    char cfg[96], why[256];
    snprintf(cfg, sizeof cfg, "fuse_elementwise=%d free_intermediates=%d threads=%d",
             cfgs[c].fuse, cfgs[c].free_them, cfgs[c].threads);
    /* A fused group's members run at its root's turn, so when one of them fails, an op between
     * may fail first with its own status: with fuse_elementwise any failure matches one. */
    bool same_failure = got.status == ref.status ||
                        (cfgs[c].fuse && got.status != CT_OK && ref.status != CT_OK);
    if (!same_failure || got.made != ref.made) {
      broken("%s: status %s%s, the plain executor's %s%s", cfg, ct_status_str(got.status),
             got.made ? "" : " (executor not made)", ct_status_str(ref.status),
             ref.made ? "" : " (executor not made)");
    }
    if (ref.status == CT_OK) {
      for (int v = 0; v < g.m.n_vars; v++) {
        if (g.compared[v] && !same_view(&ref.var[v], &got.var[v], why, sizeof why)) {
          broken("%s: variable %s %s", cfg, var_name(v), why);
        }
      }
      for (int b = 0; b < 2; b++) {
        if (ref.buf[b].present && !same_view(&ref.buf[b], &got.buf[b], why, sizeof why)) {
          broken("%s: external buffer %d: %s", cfg, b, why);
        }
      }
    }
    drop_outcome(&got);
  }
  drop_outcome(&ref);
  ct_program_free(p);
}

/* ---- (b) The backward pass ------------------------------------------------------------------ */

#define BL 4 /* leaves v0 .. v3 */

typedef struct prog_b {
  int n_leaves;
  ct_ddim dims[BL];
  uint32_t seed[BL];
  bool param[BL];
  int n_ops;
  op_spec op[MAXOPS];
  int loss_src, loss_after; /* mean(loss_src) -> loss, right after op loss_after */
  model m;
} prog_b;

/* Leaf values away from 0: +-[0.4, 1.14], multiples of 1/64. */
static double smooth_at(uint32_t seed, int64_t i) {
  double v = value_at(seed, i, false);
  double mag = 0.4 + fmod(fabs(v) * 64.0, 48.0) / 64.0;
  return v < 0 ? -mag : mag;
}

static void decode_b(fz_bytes *in, prog_b *g) {
  memset(g, 0, sizeof *g);
  model *m = &g->m;
  family f = pick_family(in, true);
  uint8_t h = fz_u8(in);
  g->n_leaves = 1 + h % BL;
  int n_params = 0;
  for (int i = 0; i < g->n_leaves; i++) {
    uint8_t b = fz_u8(in);
    g->dims[i] = family_dims(f, b);
    if (g->dims[i].rank > 0 && ct_ddim_numel(g->dims[i]) != ct_ddim_numel(CT_DIMS(f.r, f.c)) &&
        (b & 0xf8) == 0) {
      g->dims[i] = CT_DIMS(f.r, f.c);
    }
    g->seed[i] = (uint32_t)fz_take(in, 2) * 104729u + (uint32_t)i;
    g->param[i] = i == 0 || ((b >> 3) & 3) != 0;
    n_params += g->param[i];
    m->dims[i] = g->dims[i];
    m->dt[i] = CT_FLOAT64;
  }
  m->n_leaves = m->n_vars = g->n_leaves;
  uint8_t shape = fz_u8(in);
  bool overwrite = shape % 3 == 0 && n_params < g->n_leaves; /* an off-path op rewrites */
  g->n_ops = 1 + (shape >> 2) % 6;
  int n = 0;
  for (int k = 0; k < g->n_ops && (k == 0 || in->n > 0); k++) {
    op_spec *o = &g->op[n];
    uint8_t b = fz_u8(in);
    /* Outputs: a new variable, or a created one reshape did not make (never a leaf). */
    int rewritable[MAXV], n_rw = 0;
    bool fresh = false;
    for (int v = m->n_leaves; v < m->n_vars; v++) {
      if (!m->view[v]) rewritable[n_rw++] = v;
    }
    if (overwrite && n_rw > 0 && k > 0 && b % 3 == 0) {
      /* An op off the gradient path: a unary op of a leaf that is no parameter, into a
       * variable an earlier op wrote (its readers now see another value). */
      memset(o, 0, sizeof *o);
      static const int types[] = {7, 6, 9, 5}; /* exp, tanh, scale, sigmoid */
      o->type = types[(b >> 2) % 4];
      o->scale = 2.0;
      o->after = true;
      o->n_in = 1;
      int c = (b >> 4) % g->n_leaves;
      while (g->param[c]) c = (c + 1) % g->n_leaves;
      o->in[0] = c;
      o->out = rewritable[fz_u8(in) % n_rw];
    } else {
      gen_op(in, m, o);
      bool is_reshape = op_types[o->type].kind == K_RESHAPE;
      if (m->n_vars < MAXV && (is_reshape || b % 8 < 6 || n_rw == 0)) {
        o->out = m->n_vars++;
        fresh = true;
      } else if (n_rw > 0) {
        o->out = rewritable[(b >> 3) % n_rw];
      } else {
        continue; /* no variable left to write */
      }
    }
    ct_ddim ins[MAXIN], out;
    for (int i = 0; i < o->n_in; i++) ins[i] = m->dims[o->in[i]];
    if (!sim_dims(o, ins, &out)) out.rank = -1;
    if (ct_ddim_numel(out) > 64) {
      if (fresh) m->n_vars--;
      continue;
    }
    m->dims[o->out] = out;
    m->dt[o->out] = CT_FLOAT64;
    if (op_types[o->type].kind == K_RESHAPE) { /* both sides now view one block */
      m->view[o->out] = m->view[o->in[0]] = true;
    }
    n++;
  }
  g->n_ops = n;
  if (n == 0) return;
  uint8_t l = fz_u8(in);
  int src_op = n - 1 - (l % 4 == 0 && n > 1 ? 1 : 0);
  g->loss_src = g->op[src_op].out;
  g->loss_after = src_op + (int)((l >> 2) % (unsigned)(n - src_op));
}

static void say_prog_b(const prog_b *g) {
  say("(b) backward: float64 leaves:");
  for (int i = 0; i < g->n_leaves; i++) {
    say(" %s %s%s seed %u;", var_name(i), DS(g->dims[i]), g->param[i] ? " (param)" : "",
        g->seed[i]);
  }
  say("\n");
  for (int k = 0; k < g->n_ops; k++) {
    say_op(&g->op[k], k);
    if (k == g->loss_after) say("  loss = mean(%s)\n", var_name(g->loss_src));
  }
}

static ct_program *build_b(const prog_b *g) {
  ct_program *p = ct_program_new();
  FZ_CHECK(p != NULL);
  for (int k = 0; k < g->n_ops; k++) {
    append(p, make_op(&g->op[k], NULL));
    if (k == g->loss_after) {
      op_spec mean = {.type = 12, .n_in = 1, .in = {g->loss_src}};
      append(p, make_op(&mean, "loss"));
    }
  }
  return p;
}

static ct_scope *scope_b(const prog_b *g) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  for (int i = 0; i < g->n_leaves; i++) {
    int64_t n = ct_ddim_numel(g->dims[i]);
    double v[64];
    FZ_CHECK(n <= 64);
    for (int64_t k = 0; k < n; k++) v[k] = smooth_at(g->seed[i], k);
    FZ_CHECK(ct_tensor_set_value(var_tensor(s, i), v, g->dims[i], CT_FLOAT64, ct_cpu()) == CT_OK);
  }
  return s;
}

static double loss_of(const ct_scope *s) {
  const ct_tensor *t = find_tensor(s, "loss");
  FZ_CHECK(t != NULL && ct_tensor_numel(t) == 1);
  return *(const double *)ct_tensor_data(t, CT_FLOAT64);
}

/* The loss after one run of e with element i of pv moved by d (put back after). */
static double loss_at(ct_executor *e, const ct_scope *s, double *pv, int64_t i, double d) {
  double keep = pv[i];
  pv[i] = keep + d;
  FZ_CHECK(ct_executor_run(e) == CT_OK);
  double l = loss_of(s);
  pv[i] = keep;
  return l;
}

static double central(ct_executor *e, const ct_scope *s, double *pv, int64_t i, double h) {
  return (loss_at(e, s, pv, i, h) - loss_at(e, s, pv, i, -h)) / (2 * h);
}

/* Whether the forward values in s are tame enough for central differences: the loss and every
 * variable finite and below 1e4 in size (*mag: the largest), every relu input whose value the scope
 * still holds at least 1e-3 from 0 (false when one was written again, as it cannot be seen). */
static bool tame(const prog_b *g, const ct_scope *s, double *mag) {
  double l = loss_of(s);
  if (!isfinite(l) || fabs(l) > 1e4) return false;
  *mag = fmax(1, fabs(l));
  for (int v = 0; v < g->m.n_vars; v++) {
    const ct_tensor *t = find_tensor(s, var_name(v));
    if (t == NULL || !ct_tensor_has_memory(t)) continue;
    const double *x = ct_tensor_data(t, CT_FLOAT64);
    if (x == NULL) return false;
    for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
      if (!isfinite(x[i]) || fabs(x[i]) > 1e4) return false;
      if (fabs(x[i]) > *mag) *mag = fabs(x[i]);
    }
  }
  for (int k = 0; k < g->n_ops; k++) {
    if (g->op[k].type != OP_RELU) continue;
    int x = g->op[k].in[0], writes = 0;
    for (int j = 0; j < g->n_ops; j++) writes += g->op[j].out == x;
    if (writes > (x < g->n_leaves ? 0 : 1) || g->op[k].out == x) return false;
    const ct_tensor *t = find_tensor(s, var_name(x));
    const double *xv = t ? ct_tensor_data(t, CT_FLOAT64) : NULL;
    if (xv == NULL) return false;
    for (int64_t i = 0; i < ct_tensor_numel(t); i++) {
      if (fabs(xv[i]) < 1e-3) return false;
    }
  }
  return true;
}

static void check_b(fz_bytes *in) {
  prog_b g;
  decode_b(in, &g);
  if (g.n_ops == 0) return;
  say_prog_b(&g);
  const char *params[BL];
  size_t n_params = 0;
  for (int i = 0; i < g.n_leaves; i++) {
    if (g.param[i]) params[n_params++] = var_name(i);
  }
  ct_program *fwd = build_b(&g), *train = build_b(&g);
  size_t before = ct_program_size(train);
  ct_status st = ct_program_append_backward(train, "loss", params, n_params);
  if (st != CT_OK) {
    if (st != CT_ERR_UNSUPPORTED) broken("append_backward: %s", ct_status_str(st));
    if (ct_program_size(train) != before) broken("append_backward failed and changed the program");
    ct_program_free(fwd);
    ct_program_free(train);
    return;
  }
  say("  append_backward accepted it (%zu ops)\n", ct_program_size(train));
  ct_scope *sf = scope_b(&g), *st1 = scope_b(&g), *st2 = scope_b(&g);
  ct_executor *ef = ct_executor_new(fwd, sf, ct_cpu());
  FZ_CHECK(ef != NULL);
  ct_status sfwd = ct_executor_run(ef);
  ct_executor *et = ct_executor_new(train, st1, ct_cpu());
  ct_status strain = et != NULL ? ct_executor_run(et) : ct_last_status();
  if (sfwd != CT_OK) goto out; /* the forward program fails: nothing to differentiate */
  if (strain != CT_OK) {
    broken("the forward program runs but its training program fails: %s",
           ct_status_str(strain));
  }
  double lf = loss_of(sf), lt = loss_of(st1);
  if (memcmp(&lf, &lt, sizeof lf) != 0 && !(isnan(lf) && isnan(lt))) {
    broken("the training program's loss %.17g differs from the forward program's %.17g", lt, lf);
  }
  /* The training program fused and freeing intermediates: the same gradients, bit for bit. */
  ct_executor_options o = {.free_intermediates = true, .fuse_elementwise = true};
  ct_executor *e2 = ct_executor_new_with(train, st2, ct_cpu(), &o);
  FZ_CHECK(e2 != NULL);
  ct_status s2 = ct_executor_run(e2);
  ct_executor_free(e2);
  if (s2 != CT_OK) broken("the training program fails fused: %s", ct_status_str(s2));
  double mag;
  bool smooth = tame(&g, sf, &mag);
  for (size_t k = 0; k < n_params; k++) {
    char gname[32], why[256];
    snprintf(gname, sizeof gname, "%s@GRAD", params[k]);
    const ct_tensor *gt = find_tensor(st1, gname);
    const ct_tensor *pt = find_tensor(sf, params[k]);
    if (gt == NULL || !ct_ddim_equal(ct_tensor_dims(gt), ct_tensor_dims(pt))) {
      broken("%s: %s", gname, gt == NULL ? "missing" : "dims differ from the parameter's");
    }
    snap a = take(gt), b = take(find_tensor(st2, gname));
    if (!same_view(&a, &b, why, sizeof why)) broken("%s fused and freeing: %s", gname, why);
    drop(&a);
    drop(&b);
    if (!smooth) continue;
    const double *grad = ct_tensor_data(gt, CT_FLOAT64);
    double *pv = ct_tensor_mutable_data((ct_tensor *)pt, CT_FLOAT64, ct_cpu());
    FZ_CHECK(grad != NULL && pv != NULL);
    for (int64_t i = 0; i < ct_tensor_numel(pt); i++) {
      double num = central(ef, sf, pv, i, 1e-6);
      if (!isfinite(num)) continue; /* a step reached a pole or left log's domain */
      double tol = 1e-5 * fmax(fabs(num), fabs(grad[i])) + 1e-9 * mag;
      if (fabs(grad[i] - num) <= tol) continue;
      /* Two more step sizes: a real difference is one on which they agree. */
      double n2 = central(ef, sf, pv, i, 1e-4), n3 = central(ef, sf, pv, i, 1e-5);
      double tol2 = 1e-5 * fmax(fabs(n2), fabs(n3)) + 1e-9 * mag;
      if (!isfinite(n2) || !isfinite(n3) || !(fabs(n2 - n3) <= tol2) ||
          fabs(grad[i] - n3) <= tol2 || fabs(grad[i] - n2) <= tol2) {
        continue;
      }
      broken("%s[%lld] = %.12g, central differences %.12g (h 1e-6), %.12g (1e-5), %.12g (1e-4)",
             gname, (long long)i, grad[i], num, n3, n2);
    }
  }
out:
  ct_executor_free(ef);
  ct_executor_free(et);
  ct_scope_free(sf);
  ct_scope_free(st1);
  ct_scope_free(st2);
  ct_program_free(fwd);
  ct_program_free(train);
}

/* ---- (c) Expressions ------------------------------------------------------------------------ */

enum { E_LEAF, E_SCALAR, E_UN, E_BIN };
#define MAXN 16

typedef struct enode {
  int kind, op, leaf, a, b;
  double v;
} enode;

/* The tensors leaves may read. */
enum {
  P_DST, P_SHARE, P_OLD_SHARE, P_SLICE, P_OLD_SLICE, P_FLAT, P_IND1, P_IND2, P_WRAP, NP
};
static const char *const pool_names[NP] = {
    "dst", "share(dst)", "share(dst) before the resize", "slice of dst",
    "slice of dst before the resize", "flatten_to_2d(dst)", "independent 1", "independent 2",
    "another wrap"};

typedef struct case_c {
  enode n[MAXN];
  int n_nodes;
  ct_tensor *pool[NP];
  bool independent[NP]; /* memory no other pool tensor can touch */
  ct_tensor *copy[NP];  /* deep copies taken before the assignment; NULL: unreadable */
  ct_dtype dt;
} case_c;

static int gen_node(fz_bytes *in, case_c *c, int depth) {
  if (c->n_nodes >= MAXN) return -1;
  int k = c->n_nodes++;
  enode *e = &c->n[k];
  uint8_t b = fz_u8(in);
  int room = MAXN - c->n_nodes;
  if (depth >= 4 || room < 2 || b % 8 < 3) {
    static const double scalars[] = {0.5, -1.5, 2.0, 0.375, 0.0, 3.0, -0.25, 1e-3};
    if ((b >> 3) % 8 == 0) {
      e->kind = E_SCALAR;
      e->v = scalars[(b >> 6) % 4 + ((fz_u8(in) & 1) ? 4 : 0)];
    } else {
      e->kind = E_LEAF;
      e->leaf = fz_u8(in) % NP;
    }
    return k;
  }
  if (b % 8 < 5) {
    e->kind = E_UN;
    e->op = CT_EXPR_NEG + (b >> 3) % 8; /* NEG .. ABS */
    e->a = gen_node(in, c, depth + 1);
    if (e->a < 0) e->kind = E_SCALAR, e->v = 1.0;
    return k;
  }
  e->kind = E_BIN;
  e->op = CT_EXPR_ADD + (b >> 3) % 7; /* ADD .. POW */
  e->a = gen_node(in, c, depth + 1);
  e->b = gen_node(in, c, depth + 1);
  if (e->a < 0 || e->b < 0) e->kind = E_SCALAR, e->v = 0.5;
  return k;
}

static const char *const expr_names[] = {"?",   "add", "sub",  "mul",     "div",  "max",
                                         "min", "pow", "neg",  "exp",     "log",  "tanh",
                                         "sigmoid", "relu", "sqrt", "abs"};

static void say_node(const case_c *c, int k) {
  const enode *e = &c->n[k];
  switch (e->kind) {
    case E_LEAF: say("[%s]", pool_names[e->leaf]); break;
    case E_SCALAR: say("%g", e->v); break;
    case E_UN:
      say("%s(", expr_names[e->op]);
      say_node(c, e->a);
      say(")");
      break;
    default:
      say("%s(", expr_names[e->op]);
      say_node(c, e->a);
      say(", ");
      say_node(c, e->b);
      say(")");
  }
}

static ct_expr *build_expr(const case_c *c, int k) {
  const enode *e = &c->n[k];
  switch (e->kind) {
    case E_LEAF: return ct_expr_tensor(c->pool[e->leaf]);
    case E_SCALAR: return ct_expr_scalar(e->v);
    case E_UN: return ct_expr_unary((ct_expr_op)e->op, build_expr(c, e->a));
    default:
      return ct_expr_binary((ct_expr_op)e->op, build_expr(c, e->a), build_expr(c, e->b));
  }
}

/* Runs op `type` over copies of x (and y) in a scope of its own; NULL when it fails. */
static ct_tensor *ref_op(const char *type, const ct_tensor *x, const ct_tensor *y) {
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  ct_tensor *r = NULL;
  ct_op *op = ct_op_new(type);
  FZ_CHECK(op != NULL);
  FZ_CHECK(ct_tensor_copy(var_tensor(s, 0), x, ct_cpu()) == CT_OK);
  FZ_CHECK(ct_op_set_input(op, "X", var_name(0)) == CT_OK);
  if (y != NULL) {
    FZ_CHECK(ct_tensor_copy(var_tensor(s, 1), y, ct_cpu()) == CT_OK);
    FZ_CHECK(ct_op_set_input(op, "Y", var_name(1)) == CT_OK);
  }
  FZ_CHECK(ct_op_set_output(op, "Out", var_name(2)) == CT_OK);
  if (ct_op_run(op, s, ct_cpu()) == CT_OK) {
    r = ct_tensor_new();
    FZ_CHECK(r != NULL && ct_tensor_copy(r, find_tensor(s, var_name(2)), ct_cpu()) == CT_OK);
  }
  ct_clear_error();
  ct_op_free(op);
  ct_scope_free(s);
  return r;
}

static ct_tensor *scalar_tensor(ct_dtype dt, double v) {
  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(t != NULL);
  double d = v;
  float f = (float)v;
  FZ_CHECK(ct_tensor_set_value(t, dt == CT_FLOAT32 ? (const void *)&f : (const void *)&d,
                               CT_DIMS(), dt, ct_cpu()) == CT_OK);
  return t;
}

static float c_max_f(float a, float b) { return a > b || a != a ? a : b; }
static double c_max_d(double a, double b) { return a > b || a != a ? a : b; }
static float c_min_f(float a, float b) { return a < b || a != a ? a : b; }
static double c_min_d(double a, double b) { return a < b || a != a ? a : b; }

/* out[i] = kind(a[i], b[i]) over the broadcast strides sa, sb. */
NO_COVERAGE static void map_elems(int kind, ct_dtype dt, ct_ddim out, const int64_t *sa,
                                  const int64_t *sb, const void *pa, const void *pb, void *o) {
  int r = out.rank;
  int64_t n = ct_ddim_numel(out);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, ia = 0, ib = 0;
    for (int k = r - 1; k >= 0; k--) {
      int64_t idx = rem % out.d[k];
      rem /= out.d[k];
      ia += idx * sa[k];
      ib += idx * sb[k];
    }
    if (dt == CT_FLOAT32) {
      float x = ((const float *)pa)[ia], y = ((const float *)pb)[ib], z;
      switch (kind) {
        case CT_EXPR_MAX: z = c_max_f(x, y); break;
        case CT_EXPR_MIN: z = c_min_f(x, y); break;
        case CT_EXPR_POW: z = powf(x, y); break;
        case CT_EXPR_SQRT: z = sqrtf(x); break;
        case CT_EXPR_NEG: z = -x; break;
        default: z = fabsf(x); break;
      }
      ((float *)o)[i] = z;
    } else {
      double x = ((const double *)pa)[ia], y = ((const double *)pb)[ib], z;
      switch (kind) {
        case CT_EXPR_MAX: z = c_max_d(x, y); break;
        case CT_EXPR_MIN: z = c_min_d(x, y); break;
        case CT_EXPR_POW: z = pow(x, y); break;
        case CT_EXPR_SQRT: z = sqrt(x); break;
        case CT_EXPR_NEG: z = -x; break;
        default: z = fabs(x); break;
      }
      ((double *)o)[i] = z;
    }
  }
}

/* Node kinds no op has (max, min, pow, neg, sqrt, abs), in C in the dtype, with broadcasting:
 * neg is the sign flip -x of the header (x * -1 would keep a NaN's sign). */
static ct_tensor *ref_c(int kind, const ct_tensor *a, const ct_tensor *b) {
  ct_dtype dt = ct_tensor_dtype(a);
  ct_ddim da = ct_tensor_dims(a), db = b ? ct_tensor_dims(b) : da, out;
  if ((b != NULL && ct_tensor_dtype(b) != dt) || !bcast(da, db, &out)) return NULL;
  int r = out.rank;
  int64_t sa[CT_MAX_RANK], sb[CT_MAX_RANK], ta = 1, tb = 1;
  for (int k = r - 1; k >= 0; k--) {
    int64_t xa = k - (r - da.rank) >= 0 ? da.d[k - (r - da.rank)] : 1;
    int64_t xb = k - (r - db.rank) >= 0 ? db.d[k - (r - db.rank)] : 1;
    sa[k] = xa == 1 ? 0 : ta;
    sb[k] = xb == 1 ? 0 : tb;
    ta *= xa;
    tb *= xb;
  }
  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(t != NULL && ct_tensor_resize(t, out) == CT_OK);
  void *o = ct_tensor_mutable_data(t, dt, ct_cpu());
  const void *pa = ct_tensor_data(a, dt), *pb = b ? ct_tensor_data(b, dt) : pa;
  FZ_CHECK(o != NULL && pa != NULL && pb != NULL);
  map_elems(kind, dt, out, sa, sb, pa, pb, o);
  return t;
}


/* The dtype of the tree's first tensor leaf; `fallback` when it has none. */
static ct_dtype tree_dtype(const case_c *c, int k, ct_dtype fallback) {
  const enode *e = &c->n[k];
  if (e->kind == E_LEAF) return ct_tensor_dtype(c->pool[e->leaf]);
  if (e->kind == E_SCALAR) return fallback;
  ct_dtype d = tree_dtype(c, e->a, CT_DTYPE_UNDEFINED);
  if (d == CT_DTYPE_UNDEFINED && e->kind == E_BIN) d = tree_dtype(c, e->b, CT_DTYPE_UNDEFINED);
  return d == CT_DTYPE_UNDEFINED ? fallback : d;
}

/* Node k evaluated op by op over the copies; NULL when an op refuses (shapes, dtypes) or a
 * leaf was unreadable. */
static ct_tensor *ref_eval(const case_c *c, int k) {
  const enode *e = &c->n[k];
  static const char *const bin_ops[] = {NULL, "elementwise_add", "elementwise_sub",
                                        "elementwise_mul", "elementwise_div"};
  static const char *const un_ops[] = {[CT_EXPR_EXP] = "exp", [CT_EXPR_LOG] = "log",
                                       [CT_EXPR_TANH] = "tanh", [CT_EXPR_SIGMOID] = "sigmoid",
                                       [CT_EXPR_RELU] = "relu"};
  if (e->kind == E_LEAF) {
    if (c->copy[e->leaf] == NULL) return NULL;
    ct_tensor *t = ct_tensor_new();
    FZ_CHECK(t != NULL && ct_tensor_copy(t, c->copy[e->leaf], ct_cpu()) == CT_OK);
    return t;
  }
  if (e->kind == E_SCALAR) return scalar_tensor(c->dt, e->v);
  ct_tensor *a = ref_eval(c, e->a), *b = NULL, *r = NULL;
  if (a == NULL) return NULL;
  if (e->kind == E_BIN) {
    b = ref_eval(c, e->b);
    if (b == NULL) {
      ct_tensor_free(a);
      return NULL;
    }
  }
  if (e->kind == E_BIN && e->op <= CT_EXPR_DIV) {
    r = ref_op(bin_ops[e->op], a, b);
  } else if (e->kind == E_BIN || e->op == CT_EXPR_SQRT || e->op == CT_EXPR_ABS ||
             e->op == CT_EXPR_NEG) {
    r = ref_c(e->op, a, b);
  } else {
    r = ref_op(un_ops[e->op], a, NULL);
  }
  ct_tensor_free(a);
  ct_tensor_free(b);
  return r;
}

/* Copies every leaf, computes the reference, assigns the tree into dst (pool[P_DST]) with mode
 * at `threads` threads, and checks the outcome. */
static void assign_case(case_c *c, int root, int mode, int threads) {
  for (int k = 0; k < NP; k++) {
    if (c->pool[k] == NULL) continue;
    c->copy[k] = ct_tensor_new();
    FZ_CHECK(c->copy[k] != NULL);
    if (ct_tensor_copy(c->copy[k], c->pool[k], ct_cpu()) != CT_OK) {
      ct_tensor_free(c->copy[k]); /* its dims exceed its memory: the ops refuse it */
      c->copy[k] = NULL;
    }
  }
  ct_clear_error();
  /* The reference: the tree op by op, then the mode applied to a copy of dst. */
  ct_dtype tdt = tree_dtype(c, root, ct_tensor_dtype(c->pool[P_DST]));
  c->dt = tdt;
  ct_tensor *val = ref_eval(c, root), *want = val;
  if (val != NULL && mode != CT_SAVETO) {
    static const char *const mode_ops[] = {NULL, "elementwise_add", "elementwise_sub",
                                           "elementwise_mul", "elementwise_div"};
    /* A mode that would change dst's dims is refused (numpy's in-place rule): decided from the
     * dims, before a broadcast that may be large. */
    ct_ddim both;
    bool keeps = c->copy[P_DST] != NULL &&
                 bcast(ct_tensor_dims(c->copy[P_DST]), ct_tensor_dims(val), &both) &&
                 ct_ddim_equal(both, ct_tensor_dims(c->copy[P_DST]));
    want = keeps ? ref_op(mode_ops[mode], c->copy[P_DST], val) : NULL;
    ct_tensor_free(val);
  }
  snap before[NP];
  for (int k = 0; k < NP; k++) before[k] = take(c->pool[k]);
  ct_expr *e = build_expr(c, root);
  FZ_CHECK(e != NULL);
  ct_set_num_threads(threads);
  ct_status st = ct_expr_assign(c->pool[P_DST], (ct_assign)mode, e);
  ct_set_num_threads(1);
  ct_expr_free(e);
  char why[256];
  if (st != CT_OK) {
    say("  refused: %s\n", ct_status_str(st));
    snap after = take(c->pool[P_DST]);
    if (!same_view(&before[P_DST], &after, why, sizeof why) || after.ptr != before[P_DST].ptr) {
      broken("refused (%s) but dst %s", ct_status_str(st),
             after.ptr != before[P_DST].ptr ? "moved to other memory" : why);
    }
    drop(&after);
    for (int k = 1; k < NP; k++) {
      after = take(c->pool[k]);
      if (!same_view(&before[k], &after, why, sizeof why)) {
        broken("refused (%s) but the leaf %s %s", ct_status_str(st), pool_names[k], why);
      }
      drop(&after);
    }
  } else {
    if (want == NULL) broken("assigned (CT_OK) an expression the ops refuse");
    snap got = take(c->pool[P_DST]), exp = take(want);
    if (got.external != before[P_DST].external) broken("dst lost or gained an external buffer");
    exp.external = got.external; /* the reference is a tensor of its own */
    if (!same_view(&exp, &got, why, sizeof why)) broken("dst %s", why);
    drop(&got);
    drop(&exp);
    for (int k = 0; k < NP; k++) {
      if (!c->independent[k]) continue;
      snap after = take(c->pool[k]);
      if (!same_view(&before[k], &after, why, sizeof why)) {
        broken("the independent leaf %s %s", pool_names[k], why);
      }
      drop(&after);
    }
  }
  for (int k = 0; k < NP; k++) {
    drop(&before[k]);
    ct_tensor_free(c->copy[k]);
    c->copy[k] = NULL;
  }
  ct_tensor_free(want);
}

/* The dims node k broadcasts to (false when its leaves do not broadcast); *most: the largest
 * element count of a node under it that does. */
static bool tree_dims(const case_c *c, int k, ct_ddim *out, int64_t *most) {
  const enode *e = &c->n[k];
  ct_ddim a, b;
  bool ok;
  switch (e->kind) {
    case E_LEAF: *out = ct_tensor_dims(c->pool[e->leaf]); ok = out->rank >= 0; break;
    case E_SCALAR: *out = CT_DIMS(); ok = true; break;
    case E_UN: ok = tree_dims(c, e->a, out, most); break;
    default: {
      bool oa = tree_dims(c, e->a, &a, most), ob = tree_dims(c, e->b, &b, most);
      ok = oa && ob && bcast(a, b, out);
    }
  }
  if (ok && ct_ddim_numel(*out) > *most) *most = ct_ddim_numel(*out);
  return ok;
}

static void check_c(fz_bytes *in) {
  case_c c;
  memset(&c, 0, sizeof c);
  uint8_t h = fz_u8(in), rs = fz_u8(in), vb = fz_u8(in);
  c.dt = h & 1 ? CT_FLOAT64 : CT_FLOAT32;
  ct_dtype other = c.dt == CT_FLOAT32 ? CT_FLOAT64 : CT_FLOAT32;
  int mode = (h >> 1) % 5;
  bool wrap_dst = (h >> 4) % 3 == 0, special = (h >> 6) == 0;
  family f = pick_family(in, false);
  size_t es = ct_dtype_size(c.dt);
  uint32_t seed = (uint32_t)fz_take(in, 2);
  int64_t rows = f.r, cols = f.c, pad = cols; /* the buffer has a row to spare */
  /* dst: a tensor of its own, or a wrap of a buffer another leaf may wrap too. */
  void *buf = NULL, *buf2 = NULL;
  int released = 0, released2 = 0;
  ct_tensor *dst = c.pool[P_DST] = ct_tensor_new();
  FZ_CHECK(dst != NULL);
  if (wrap_dst) {
    buf = xalloc((size_t)(rows * cols + pad) * es);
    fill(buf, c.dt, rows * cols + pad, seed, special);
    FZ_CHECK(ct_tensor_wrap(dst, buf, CT_DIMS(rows, cols), c.dt, ct_cpu(), on_release,
                            &released) == CT_OK);
  } else {
    set_stream(dst, CT_DIMS(rows, cols), c.dt, seed, special);
  }
  ct_tensor *t;
  FZ_CHECK((t = c.pool[P_OLD_SHARE] = ct_tensor_new()) != NULL);
  FZ_CHECK(ct_tensor_share(t, dst) == CT_OK);
  FZ_CHECK((t = c.pool[P_OLD_SLICE] = ct_tensor_new()) != NULL);
  int64_t b0, e0, b1, e1;
  pick_rows(vb, rows, &b0, &e0);
  FZ_CHECK(ct_tensor_slice(t, dst, b0, e0) == CT_OK);
  /* The resize in place: none, fewer rows, flat, one row, or more than the memory holds. */
  ct_ddim now = CT_DIMS(rows, cols);
  switch (rs % 8) {
    case 4: now = CT_DIMS(rows > 1 ? rows - 1 : 1, cols); break;
    case 5: now = CT_DIMS(rows * cols); break;
    case 6: now = CT_DIMS(cols); break;
    case 7: now = (rs >> 3) & 1 ? CT_DIMS(rows + 1, cols) : CT_DIMS(rows, cols + 1); break;
    default: break;
  }
  FZ_CHECK(ct_tensor_resize(dst, now) == CT_OK);
  /* Views made after it (refused, and then absent, when the dims exceed the memory). */
  FZ_CHECK((t = c.pool[P_SHARE] = ct_tensor_new()) != NULL);
  if (ct_tensor_share(t, dst) != CT_OK) ct_tensor_free(t), c.pool[P_SHARE] = NULL;
  FZ_CHECK((t = c.pool[P_SLICE] = ct_tensor_new()) != NULL);
  pick_rows((uint8_t)(vb * 37u + rs), now.d[0], &b1, &e1);
  if (ct_tensor_slice(t, dst, b1, e1) != CT_OK) ct_tensor_free(t), c.pool[P_SLICE] = NULL;
  FZ_CHECK((t = c.pool[P_FLAT] = ct_tensor_new()) != NULL);
  if (ct_tensor_flatten_to_2d(t, dst, (rs >> 5) % (now.rank + 1)) != CT_OK) {
    ct_tensor_free(t), c.pool[P_FLAT] = NULL;
  }
  ct_clear_error();
  /* Independent leaves, of dims that broadcast with dst's now (mostly). */
  family fn = {now.rank == 2 ? now.d[0] : 1, now.d[now.rank - 1]};
  for (int k = P_IND1; k <= P_IND2; k++) {
    uint8_t b = fz_u8(in);
    FZ_CHECK((t = c.pool[k] = ct_tensor_new()) != NULL);
    set_stream(t, family_dims(fn, b), (b >> 3) % 16 == 0 ? other : c.dt,
               seed * 31u + (uint32_t)k, special);
    c.independent[k] = true;
  }
  /* Another wrap: of dst's buffer at an offset (the same memory, another block), or of a
   * buffer of its own. */
  uint8_t w = fz_u8(in);
  FZ_CHECK((t = c.pool[P_WRAP] = ct_tensor_new()) != NULL);
  ct_ddim wd = family_dims(fn, w >> 2);
  int64_t wn = ct_ddim_numel(wd), off = w % 4 == 0 ? 0 : w % 4 == 1 ? 1 : cols;
  if (buf != NULL && off + wn <= rows * cols + pad) {
    FZ_CHECK(ct_tensor_wrap(t, (char *)buf + off * (int64_t)es, wd, c.dt, ct_cpu(), NULL, NULL) ==
             CT_OK);
  } else {
    buf2 = xalloc((size_t)wn * es);
    fill(buf2, c.dt, wn, seed ^ 0x77u, special);
    FZ_CHECK(ct_tensor_wrap(t, buf2, wd, c.dt, ct_cpu(), on_release, &released2) == CT_OK);
    c.independent[P_WRAP] = true;
    off = -1;
  }
  int root = gen_node(in, &c, 0);
  FZ_CHECK(root >= 0);
  int threads = fz_u8(in) & 1 ? 3 : 1; /* the engine splits large libm trees over threads */
  for (int k = 0; k < MAXN; k++) { /* a leaf without its tensor reads an independent one */
    if (k < c.n_nodes && c.n[k].kind == E_LEAF && c.pool[c.n[k].leaf] == NULL) c.n[k].leaf = P_IND1;
  }
  static const char *const modes[] = {"CT_SAVETO", "CT_PLUSTO", "CT_MINUSTO", "CT_MULTO",
                                      "CT_DIVTO"};
  say("(c) expression: %s dst %s %s, resized in place to %s; views: old slice rows [%lld, "
      "%lld), slice rows [%lld, %lld); leaves %s %s, another wrap %s %s (at %lld); "
      "special values %s; %d thread(s)\n  dst %s= ",
      dt_s(c.dt), DS(CT_DIMS(rows, cols)), wrap_dst ? "wrapping a buffer" : "of its own",
      DS(now), (long long)b0, (long long)e0, (long long)b1, (long long)e1,
      DS(ct_tensor_dims(c.pool[P_IND1])), DS(ct_tensor_dims(c.pool[P_IND2])),
      off >= 0 ? "of dst's buffer" : "of its own buffer", DS(wd), (long long)off,
      special ? "on" : "off", threads, modes[mode]);
  say_node(&c, root);
  say("\n");
  /* A tree with a node past MAX_ELEMS (a flattened dst [r*c, 1] against a row [c]) would cost
   * megabytes per node: skipped. */
  ct_ddim td;
  int64_t most = 0;
  (void)tree_dims(&c, root, &td, &most);
  if (most <= MAX_ELEMS) {
    assign_case(&c, root, mode, threads);
  } else {
    say("  skipped: a node of %lld elements\n", (long long)most);
  }
  for (int k = 0; k < NP; k++) ct_tensor_free(c.pool[k]);
  if ((buf != NULL && released != 1) || (buf2 != NULL && released2 != 1)) {
    broken("a buffer's release ran %d times", buf != NULL && released != 1 ? released : released2);
  }
  free(buf);
  free(buf2);
}

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
