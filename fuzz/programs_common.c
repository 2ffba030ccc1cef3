/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/programs_common.c: the helpers the three checks of the program fuzzer (fuzz_programs.c)
 * share, declared in programs.h: the case in words and the failure report, data streams and
 * snapshots of tensors, families of dims that broadcast together, and the op specifications
 * that (a) and (b) generate, describe and build. */
#include <stdarg.h>

#include "programs.h"

/* ---- Reporting ------------------------------------------------------------------------------ */

char story[16384]; /* the case in words, printed with a failure */
size_t story_len;

__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...) {
  if (story_len + 1 >= sizeof story) return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(story + story_len, sizeof story - story_len, fmt, ap);
  va_end(ap);
  if (w > 0) story_len += (size_t)w;
  if (story_len >= sizeof story) story_len = sizeof story - 1;
}

__attribute__((noreturn, format(printf, 1, 2))) void broken(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fuzz_programs: broken promise: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(last error: %s)\nthe case:\n%s\n", ct_last_error(), story);
  abort();
}

const char *dims_s(ct_ddim d, char *buf, size_t cap) { return ct_ddim_str(d, buf, cap); }

const char *dt_s(ct_dtype dt) {
  return dt == CT_FLOAT32 ? "f32" : dt == CT_FLOAT64 ? "f64" : ct_dtype_name(dt);
}

/* ---- Data ----------------------------------------------------------------------------------- */

/* Element i of the stream `seed`: a multiple of 1/64 in [-3, 3] (exact in both dtypes), and
 * with `special` now and then 0, -0, +-1e30, infinity or NaN. */
NO_COVERAGE double value_at(uint32_t seed, int64_t i, bool special) {
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

NO_COVERAGE void fill(void *p, ct_dtype dt, int64_t n, uint32_t seed, bool special) {
  for (int64_t i = 0; i < n; i++) put_elem(p, dt, i, value_at(seed, i, special));
}

void *xalloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  FZ_CHECK(p != NULL);
  return p;
}

/* A tensor of dims and dtype holding the stream `seed` (set_value: a block of its own). */
void set_stream(ct_tensor *t, ct_ddim dims, ct_dtype dt, uint32_t seed, bool special) {
  int64_t n = ct_ddim_numel(dims);
  void *buf = xalloc((size_t)n * 8 + 8);
  fill(buf, dt, n, seed, special);
  FZ_CHECK(ct_tensor_set_value(t, buf, dims, dt, ct_cpu()) == CT_OK);
  free(buf);
}

/* The release of a wrapped buffer: counts its runs in the int at ctx ((a) and (c) check that
 * it ran once). */
void on_release(void *ctx) { ++*(int *)ctx; }

snap take(const ct_tensor *t) {
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

void drop(snap *s) {
  free(s->bytes);
  s->bytes = NULL;
}

/* Whether b shows what a shows (dims, dtype, bytes); writes the first difference into why. A
 * NaN matches any NaN: neither IEEE 754 nor C fixes the sign or payload of the NaN an
 * arithmetic operation returns, and compilers may swap the operands of + and *, so which of
 * two NaNs comes out is no promise (tests/test_fuse.c's assert_same_values says the same). */
bool same_view(const snap *a, const snap *b, char *why, size_t cap) {
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
bool bcast(ct_ddim a, ct_ddim b, ct_ddim *out) {
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

family pick_family(fz_bytes *in, bool small) {
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

ct_ddim family_dims(family f, uint8_t b) {
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
void pick_rows(uint8_t b, int64_t d0, int64_t *begin, int64_t *end) {
  if ((b & 7) == 0 || d0 == 0) {
    *begin = (b >> 3) % (d0 + 1);
    *end = *begin + (b >> 5) % (d0 - *begin + 1);
  } else {
    *begin = (b >> 3) % d0;
    *end = *begin + 1 + (b >> 5) % (d0 - *begin);
  }
}

/* ---- Op specifications, shared by (a) and (b) ----------------------------------------------- */

const op_type op_types[] = {
    {"elementwise_add", K_BIN}, {"elementwise_sub", K_BIN}, {"elementwise_mul", K_BIN},
    {"elementwise_div", K_BIN}, {"relu", K_UN},            {"sigmoid", K_UN},
    {"tanh", K_UN},             {"exp", K_UN},             {"log", K_UN},
    {"scale", K_SCALE},         {"matmul", K_MATMUL},      {"reduce_sum", K_RSUM},
    {"mean", K_MEAN},           {"reshape", K_RESHAPE},    {"transpose", K_TRANSPOSE},
    {"sum", K_SUM},             {"softmax", K_SOFTMAX},    {"assign", K_ASSIGN},
};

const char *var_name(int v) {
  static const char *const names[MAXV] = {"v0", "v1", "v2", "v3", "v4",  "v5",
                                          "v6", "v7", "v8", "v9", "v10", "v11"};
  return names[v];
}

/* The dims of o's output from its inputs' (as the op types infer them); false when they fail. */
bool sim_dims(const op_spec *o, const ct_ddim *in, ct_ddim *out) {
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
void gen_op(fz_bytes *in, const model *m, op_spec *o) {
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

void say_op(const op_spec *o, int index) {
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
ct_op *make_op(const op_spec *o, const char *out_name) {
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

void append(ct_program *p, ct_op *op) { FZ_CHECK(ct_program_append(p, op) == CT_OK); }

ct_tensor *var_tensor(ct_scope *s, int v) {
  ct_var *x = ct_scope_var(s, var_name(v));
  FZ_CHECK(x != NULL);
  ct_tensor *t = ct_var_tensor(x);
  FZ_CHECK(t != NULL);
  return t;
}

const ct_tensor *find_tensor(const ct_scope *s, const char *name) {
  const ct_var *v = ct_scope_find_var(s, name);
  return v != NULL && ct_var_is(v, &ct_tensor_type) ? ct_var_get_tensor(v) : NULL;
}
