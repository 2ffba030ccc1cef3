/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/programs.h: what the parts of the program fuzzer (fuzz_programs.c) share. The helpers
 * (programs_common.c): the case in words and the failure report, data streams and snapshots of
 * tensors, families of dims that broadcast together, and the op specifications that (a) and (b)
 * generate; the three checks: (a) executors (programs_exec.c), (b) the backward pass
 * (programs_grad.c), (c) expressions (programs_expr.c). */
#ifndef CORTEN_FUZZ_PROGRAMS_H
#define CORTEN_FUZZ_PROGRAMS_H

#include <math.h>
#include <stdbool.h>

#include "fuzz_util.h"

/* ---- Reporting ------------------------------------------------------------------------------ */

extern char story[16384]; /* the case in words, printed with a failure */
extern size_t story_len;

__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void broken(const char *fmt, ...);

const char *dims_s(ct_ddim d, char *buf, size_t cap);
#define DS(d) dims_s((d), (char[64]){0}, 64)

const char *dt_s(ct_dtype dt);

/* The oracle's element loops: libFuzzer's comparison tracing there costs most of an input's
 * time and says nothing about corten, so it is left out. */
#if defined(__clang__)
#define NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))
#else
#define NO_COVERAGE
#endif

/* ---- Data ----------------------------------------------------------------------------------- */

double value_at(uint32_t seed, int64_t i, bool special);
void fill(void *p, ct_dtype dt, int64_t n, uint32_t seed, bool special);
void *xalloc(size_t bytes);
void set_stream(ct_tensor *t, ct_ddim dims, ct_dtype dt, uint32_t seed, bool special);
void on_release(void *ctx);

/* What the caller can read of a tensor. */
typedef struct snap {
  bool present, readable, external;
  ct_ddim dims;
  ct_dtype dt;
  const void *ptr;
  size_t n;
  unsigned char *bytes;
} snap;

snap take(const ct_tensor *t);
void drop(snap *s);
bool same_view(const snap *a, const snap *b, char *why, size_t cap);

/* ---- Dims ----------------------------------------------------------------------------------- */

bool bcast(ct_ddim a, ct_ddim b, ct_ddim *out);

/* A family of dims that broadcast together: [r, c] and what broadcasts to it. */
typedef struct family {
  int64_t r, c;
} family;

family pick_family(fz_bytes *in, bool small);
ct_ddim family_dims(family f, uint8_t b);
void pick_rows(uint8_t b, int64_t d0, int64_t *begin, int64_t *end);

/* ---- Op specifications, shared by (a) and (b) ----------------------------------------------- */

enum {
  K_BIN, K_UN, K_SCALE, K_MATMUL, K_RSUM, K_MEAN, K_RESHAPE, K_TRANSPOSE, K_SUM, K_SOFTMAX,
  K_ASSIGN
};

typedef struct op_type {
  const char *name;
  int kind;
} op_type;

extern const op_type op_types[];
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

/* The model of the variables while a program is generated: which exist, their dims and dtype,
 * and which share a block through reshape (views: (b) never writes them again, since a write
 * into one changes the other behind the names the backward pass follows). */
typedef struct model {
  int n_vars, n_leaves;
  ct_ddim dims[MAXV];
  ct_dtype dt[MAXV];
  bool view[MAXV];
} model;

const char *var_name(int v);
bool sim_dims(const op_spec *o, const ct_ddim *in, ct_ddim *out);
void gen_op(fz_bytes *in, const model *m, op_spec *o);
void say_op(const op_spec *o, int index);
ct_op *make_op(const op_spec *o, const char *out_name);
void append(ct_program *p, ct_op *op);
ct_tensor *var_tensor(ct_scope *s, int v);
const ct_tensor *find_tensor(const ct_scope *s, const char *name);

/* ---- The checks ----------------------------------------------------------------------------- */

void check_a(fz_bytes *in);
void check_b(fz_bytes *in);
void check_c(fz_bytes *in);

#endif /* CORTEN_FUZZ_PROGRAMS_H */
