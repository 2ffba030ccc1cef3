/* SPDX-License-Identifier: Apache-2.0 */
/* tests/comm_fuzz.c: a seeded random driver of the collectives (corten/comm.h) under mpirun,
 * where one rank at times leaves the common order: it skips a collective, swaps two adjacent
 * ones, runs one with another dtype or dims, or runs one more than the others.
 *
 *   comm_fuzz [SEED [ROUNDS [FIRST]]]     defaults: 32, 200, 0
 *
 * Each round makes a fresh communicator (a fresh scope, the time limit LIMIT set before
 * ct_comm_init_mpi) on every rank, derives a short program of collectives from the round's seed
 * (every op type, the dtypes each takes, small X that travels with the header exchange and large
 * X that goes through MPI, in place or not, random roots) and, in some rounds, a deviation of one
 * rank. Every rank knows every rank's sequence of calls, so it predicts what each of its own
 * calls must do, turn by turn, the way comm.h states the rules:
 *   - every rank at the turn runs the same collective on the same dtype, dims and root: CT_OK,
 *     and Out holds the exact result (the values are small integers that every dtype holds);
 *   - the same collective and root, another dtype or dims: CT_ERR_TYPE_MISMATCH (dtype first)
 *     or CT_ERR_SHAPE, naming the first disagreeing rank; the communicator stays usable (also
 *     when a skip or swap brought the two calls together: the header cannot tell, and a skip
 *     that meets the same header succeeds on the other step's values, which the oracle expects);
 *   - another collective or root: CT_ERR_INVALID_ARGUMENT, "out of step", and the communicator
 *     broken on every rank;
 *   - a rank that does not come (it ran out of calls, or its communicator broke): CT_ERR_DEVICE
 *     after the time limit, naming it as not arrived, and this communicator broken;
 *   - a broken communicator: CT_ERR_DEVICE naming "broken", at once (under LIMIT / 2).
 * Besides, on every call: a failure is one of those four codes and its message names the op type
 * and "communicator 'comm'"; no call takes longer than LIMIT + MARGIN; a failed call leaves an
 * in-place X as it was and an out-of-place Out as it was or holding no memory; X of an
 * out-of-place call is never written. With CORTEN_COMM_FUZZ_LENIENT_OUT=1 in the environment a
 * changed Out after a failed call is counted in the PASS line instead of failing the run.
 *
 * Rounds stay apart: the program owns MPI (MPI_Init_thread) and, after each round, every rank
 * meets the others in a nonblocking allreduce on its own duplicate of MPI_COMM_WORLD, polled to a
 * deadline (a rank that ran out of calls waits there while the others time out). It also carries
 * "a rank failed", so every rank stops after the first failing round. A broken communicator may
 * leave requests pending, so a process that saw one leaves without MPI_Finalize (as corten does):
 * tests/run_comm_fuzz.sh runs mpirun with --enable-recovery and counts the "PASS rank" lines.
 * A failure prints the seed, the round and each rank's calls: `comm_fuzz SEED 1 ROUND` replays
 * that round alone. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include <corten/corten.h>

static const double LIMIT = 1.5;  /* the communicators' time limit, seconds */
static const double MARGIN = 3.0; /* what a call may take past it */
static const double SYNC_WAIT = 60.0;

enum { MAX_RANKS = 8, MAX_STEPS = 8, MAX_CALLS = MAX_STEPS + 1, EXTRA_STEP = 1000 };
enum { MAX_REPORTS = 6 }; /* detailed failure lines per rank */

/* ---- The collectives ------------------------------------------------------------------------ */

enum coll { C_SUM, C_MAX, C_BCAST, C_GATHER, C_SCATTER, C_REDUCE, N_COLLS };
static const char *const coll_type[N_COLLS] = {
    [C_SUM] = "c_allreduce_sum", [C_MAX] = "c_allreduce_max", [C_BCAST] = "c_broadcast",
    [C_GATHER] = "c_allgather",  [C_SCATTER] = "c_reducescatter", [C_REDUCE] = "c_reduce_sum",
};

static bool rooted(int k) { return k == C_BCAST || k == C_REDUCE; }
static bool reduces(int k) { return k != C_BCAST && k != C_GATHER; }

/* The dtypes the MPI engine reduces; the byte movers (broadcast, allgather) take bool too. */
static const ct_dtype arith[] = {CT_INT8,    CT_UINT8,    CT_INT16,   CT_INT32,  CT_INT64,
                                 CT_FLOAT16, CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64};
enum { N_ARITH = sizeof arith / sizeof arith[0] };

/* One call of one rank: the collective, X's dtype and dims, the root (0 where the op has none),
 * whether Out is X, and the step whose values X holds. */
typedef struct {
  int kind;
  ct_dtype dtype;
  ct_ddim dims;
  int root;
  bool in_place;
  int step;
} call;

enum dev { DEV_NONE, DEV_SKIP, DEV_SWAP, DEV_ALTER, DEV_EXTRA, N_DEVS };
static const char *const dev_name[N_DEVS] = {"none", "skip", "swap", "alter", "extra"};

typedef struct {
  int n;
  call c[MAX_CALLS];
} seq;

typedef struct {
  int len;               /* steps of the common program */
  enum dev dev;
  int deviant, at;       /* the rank that deviates, and the step where it does */
  seq ranks[MAX_RANKS];  /* what each rank runs */
} plan;

/* ---- Random numbers: splitmix64, one stream per round --------------------------------------- */

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi) { /* uniform in [lo, hi] */
  return lo + (int64_t)(next(s) % (uint64_t)(hi - lo + 1));
}

static bool chance(uint64_t *s, int percent) { return pick(s, 0, 99) < percent; }

/* ---- Values: small integers every dtype holds exactly, also summed over every rank ----------- */

static int n_ranks, my_rank;

static double value(ct_dtype t, int r, int step, int64_t i) {
  uint64_t h = (uint64_t)i * 37u + (uint64_t)(i / 41) + (uint64_t)r * 11u +
               (uint64_t)step * 5u + 3u;
  if (t == CT_BOOL) return (double)(h % 2);
  return (double)(h % (uint64_t)(120 / n_ranks + 1)); /* a sum over the ranks stays <= 120 */
}

static uint16_t half_bits(float f) { /* exact for the integers value() gives (and 0) */
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  if ((b & 0x7fffffffu) == 0) return (uint16_t)(b >> 16);
  uint32_t exp = ((b >> 23) & 0xffu) - 127u + 15u;
  return (uint16_t)(((b >> 16) & 0x8000u) | (exp << 10) | ((b >> 13) & 0x3ffu));
}

static float half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? (float)m / 16777216.0f : (float)(1024 + m) * ((float)(1u << e) / 33554432.0f);
  return (h & 0x8000u) ? -v : v;
}

static void set_elem(void *p, ct_dtype t, int64_t i, double v) {
  switch (t) {
  case CT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
  case CT_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
  case CT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case CT_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
  case CT_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
  case CT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
  case CT_FLOAT16: ((uint16_t *)p)[i] = half_bits((float)v); break;
  case CT_BFLOAT16: {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    ((uint16_t *)p)[i] = (uint16_t)(b >> 16);
    break;
  }
  case CT_FLOAT32: ((float *)p)[i] = (float)v; break;
  case CT_FLOAT64: ((double *)p)[i] = v; break;
  default: break;
  }
}

static double get_elem(const void *p, ct_dtype t, int64_t i) {
  switch (t) {
  case CT_BOOL: return ((const uint8_t *)p)[i];
  case CT_INT8: return ((const int8_t *)p)[i];
  case CT_UINT8: return ((const uint8_t *)p)[i];
  case CT_INT16: return ((const int16_t *)p)[i];
  case CT_INT32: return ((const int32_t *)p)[i];
  case CT_INT64: return (double)((const int64_t *)p)[i];
  case CT_FLOAT16: return half_value(((const uint16_t *)p)[i]);
  case CT_BFLOAT16: {
    uint32_t b = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
  }
  case CT_FLOAT32: return ((const float *)p)[i];
  case CT_FLOAT64: return ((const double *)p)[i];
  default: return 0;
  }
}

/* ---- Plans ---------------------------------------------------------------------------------- */

/* X's dims for collective k of dtype t: mostly small (1 KiB at most: it travels with the header
 * exchange) or large (past 1,200 bytes: MPI carries it), now and then 64 KiB and more (MPI's
 * halving algorithm for an allreduce), right at the 1 KiB edge, a scalar or empty. */
static ct_ddim gen_dims(uint64_t *s, int k, ct_dtype t) {
  int64_t es = (int64_t)ct_dtype_size(t), unit = k == C_SCATTER ? n_ranks : 1;
  bool needs_dim0 = k == C_GATHER || k == C_SCATTER;
  int64_t roll = pick(s, 0, 99);
  if (roll < 3) { /* empty */
    if (chance(s, 50)) return CT_DIMS(0);
    return chance(s, 50) ? CT_DIMS(0, pick(s, 1, 5)) : CT_DIMS(unit * pick(s, 1, 3), 0);
  }
  if (roll < 6 && !needs_dim0) return CT_DIMS(); /* a scalar */
  if (roll < 11) { /* 1 KiB exactly, or one element past it */
    int64_t n = 1024 / es + (chance(s, 50) ? 1 : 0);
    return CT_DIMS((n + unit - 1) / unit * unit);
  }
  bool large = roll >= 55, huge = roll >= 96;
  int64_t lo = huge ? 65536 / es : large ? 1200 / es + 1 : 1;
  int64_t hi = huge ? 81920 / es : large ? 16384 / es : 1024 / es;
  int64_t n = pick(s, lo, hi);
  if (chance(s, 50)) { /* rank 1 */
    int64_t m = large ? (n + unit - 1) / unit : n / unit;
    return CT_DIMS(unit * (m > 0 ? m : 1));
  }
  int64_t d0 = unit * pick(s, 1, 4);
  int64_t d1 = large ? (n + d0 - 1) / d0 : n / d0;
  return CT_DIMS(d0, d1 > 0 ? d1 : 1);
}

static ct_dtype gen_dtype(uint64_t *s, int k) {
  int64_t i = pick(s, 0, reduces(k) ? N_ARITH - 1 : N_ARITH);
  return i == N_ARITH ? CT_BOOL : arith[i];
}

static call gen_call(uint64_t *s, int step) {
  call c = {.kind = (int)pick(s, 0, N_COLLS - 1), .step = step};
  c.dtype = gen_dtype(s, c.kind);
  c.dims = gen_dims(s, c.kind, c.dtype);
  c.root = rooted(c.kind) ? (int)pick(s, 0, n_ranks - 1) : 0;
  c.in_place = chance(s, 50);
  return c;
}

/* Whether two calls send the same header (the collective, dtype, dims and root). */
static bool same_header(const call *a, const call *b) {
  return a->kind == b->kind && a->root == b->root && a->dtype == b->dtype &&
         ct_ddim_equal(a->dims, b->dims);
}

/* The same call on another dtype, other dims, or both (never the same header). */
static call altered(uint64_t *s, const call *c) {
  call a = *c;
  int what = (int)pick(s, 0, 2); /* 0 dtype, 1 dims, 2 both */
  for (int tries = 0; tries < 100 && same_header(&a, c); tries++) {
    if (what != 1) a.dtype = gen_dtype(s, c->kind);
    if (what != 0) a.dims = gen_dims(s, c->kind, a.dtype);
  }
  if (same_header(&a, c)) a.dims = CT_DIMS(c->kind == C_SCATTER ? n_ranks * 7 : 7, 3);
  return a;
}

static void make_plan(uint64_t seed, plan *p) {
  uint64_t s = seed;
  memset(p, 0, sizeof *p);
  p->len = (int)pick(&s, 2, MAX_STEPS);
  call common[MAX_STEPS];
  for (int i = 0; i < p->len; i++) {
    common[i] = gen_call(&s, i);
    /* Now and then the collective of the step before, on its dtype and dims or not: a skip or
     * a swap there meets the same collective (another root, dtype or dims, or the same header
     * on other values) instead of another one. */
    if (i > 0 && chance(&s, 25)) {
      call c = common[i - 1];
      if (chance(&s, 60)) {
        c.dtype = gen_dtype(&s, c.kind);
        c.dims = gen_dims(&s, c.kind, c.dtype);
      }
      c.root = rooted(c.kind) ? (int)pick(&s, 0, n_ranks - 1) : 0;
      c.in_place = chance(&s, 50);
      c.step = i;
      common[i] = c;
    }
  }
  p->dev = chance(&s, 45) ? (enum dev)pick(&s, DEV_SKIP, DEV_EXTRA) : DEV_NONE;
  p->deviant = (int)pick(&s, 0, n_ranks - 1);
  p->at = (int)pick(&s, 0, p->dev == DEV_SWAP ? p->len - 2 : p->dev == DEV_EXTRA ? p->len
                                                                                  : p->len - 1);
  call extra = gen_call(&s, EXTRA_STEP), alt = altered(&s, &common[p->at < p->len ? p->at : 0]);
  for (int r = 0; r < n_ranks; r++) {
    seq *q = &p->ranks[r];
    bool dev = r == p->deviant && p->dev != DEV_NONE;
    for (int i = 0; i < p->len; i++) {
      if (dev && p->dev == DEV_EXTRA && i == p->at) q->c[q->n++] = extra;
      if (dev && p->dev == DEV_SKIP && i == p->at) continue;
      call c = common[i];
      if (dev && p->dev == DEV_SWAP && i == p->at) c = common[i + 1];
      if (dev && p->dev == DEV_SWAP && i == p->at + 1) c = common[i - 1];
      if (dev && p->dev == DEV_ALTER && i == p->at) c = alt;
      q->c[q->n++] = c;
    }
    if (dev && p->dev == DEV_EXTRA && p->at == p->len) q->c[q->n++] = extra;
  }
}

static const char *call_str(const call *c, char *buf, size_t cap) {
  char dims[128];
  snprintf(buf, cap, "%s %s %s%s (step %d)", coll_type[c->kind], ct_dtype_name(c->dtype),
           ct_ddim_str(c->dims, dims, sizeof dims), c->in_place ? " in place" : "", c->step);
  if (rooted(c->kind)) {
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, " root %d", c->root);
  }
  return buf;
}

static void print_plan(uint64_t seed, int round, const plan *p) {
  printf("plan rank %d: seed %" PRIu64 " round %d: %d steps, deviation %s by rank %d at step %d\n",
         my_rank, seed, round, p->len, dev_name[p->dev], p->deviant, p->at);
  for (int r = 0; r < n_ranks; r++) {
    for (int i = 0; i < p->ranks[r].n; i++) {
      char b[200];
      printf("plan rank %d:   rank %d turn %d: %s\n", my_rank, r, i,
             call_str(&p->ranks[r].c[i], b, sizeof b));
    }
  }
}

/* ---- Predictions: what each turn must do on this rank --------------------------------------- */

enum want { W_OK, W_MISMATCH, W_OUT_OF_STEP, W_TIMEOUT, W_BROKEN };
static const char *const want_name[] = {"CT_OK", "a dtype/dims mismatch", "out of step",
                                        "a timeout", "broken at once"};

typedef struct {
  enum want w;
  ct_status status;
  int peer;         /* the first rank that disagrees (mismatch, out of step) */
  char missing[64]; /* "rank(s) 1, 2 did not arrive" (timeout) */
} expect;

/* Runs every rank's sequence turn by turn, the way the header exchange sees it: at each turn the
 * ranks that still have a call and a working communicator exchange headers; a rank whose
 * communicator broke fails at once and sends nothing, so the others wait for it in vain, like
 * for a rank that ran out of calls. */
static void predict(const plan *p, expect *out) {
  bool broken[MAX_RANKS] = {false};
  int turns = 0;
  for (int r = 0; r < n_ranks; r++) turns = p->ranks[r].n > turns ? p->ranks[r].n : turns;
  for (int t = 0; t < turns; t++) {
    bool part[MAX_RANKS], everyone = true;
    for (int r = 0; r < n_ranks; r++) {
      part[r] = t < p->ranks[r].n && !broken[r];
      everyone &= part[r];
    }
    expect e[MAX_RANKS];
    for (int r = 0; r < n_ranks; r++) {
      if (t >= p->ranks[r].n) continue;
      memset(&e[r], 0, sizeof e[r]);
      e[r].peer = -1;
      if (broken[r]) {
        e[r].w = W_BROKEN;
        e[r].status = CT_ERR_DEVICE;
      } else if (!everyone) {
        e[r].w = W_TIMEOUT;
        e[r].status = CT_ERR_DEVICE;
        size_t n = (size_t)snprintf(e[r].missing, sizeof e[r].missing, "rank(s) ");
        for (int q = 0, first = 1; q < n_ranks; q++) {
          if (part[q]) continue;
          n += (size_t)snprintf(e[r].missing + n, sizeof e[r].missing - n, "%s%d",
                                first ? "" : ", ", q);
          first = 0;
        }
        snprintf(e[r].missing + n, sizeof e[r].missing - n, " did not arrive");
      } else {
        const call *mine = &p->ranks[r].c[t];
        e[r].w = W_OK;
        e[r].status = CT_OK;
        for (int q = 0; q < n_ranks; q++) {
          const call *theirs = &p->ranks[q].c[t];
          if (q == r || same_header(mine, theirs)) continue;
          e[r].peer = q;
          if (mine->kind != theirs->kind || mine->root != theirs->root) {
            e[r].w = W_OUT_OF_STEP;
            e[r].status = CT_ERR_INVALID_ARGUMENT;
          } else {
            e[r].w = W_MISMATCH;
            e[r].status = mine->dtype != theirs->dtype ? CT_ERR_TYPE_MISMATCH : CT_ERR_SHAPE;
          }
          break;
        }
      }
    }
    for (int r = 0; r < n_ranks; r++) {
      if (t >= p->ranks[r].n) continue;
      if (e[r].w == W_OUT_OF_STEP || e[r].w == W_TIMEOUT) broken[r] = true;
      if (r == my_rank) out[t] = e[r];
    }
  }
}

/* Element i of the result on this rank when every rank runs its call of turn t alike. */
static double result_elem(const plan *p, int t, int64_t i) {
  const call *c = &p->ranks[my_rank].c[t];
  int64_t n = ct_ddim_numel(c->dims);
  double v = 0;
  switch (c->kind) {
  case C_BCAST: return value(c->dtype, c->root, p->ranks[c->root].c[t].step, i);
  case C_GATHER: {
    int r = (int)(i / n);
    return value(c->dtype, r, p->ranks[r].c[t].step, i % n);
  }
  case C_REDUCE:
    if (my_rank != c->root) return 0;
    break;
  case C_SCATTER: i += (int64_t)my_rank * (n / n_ranks); break;
  default: break;
  }
  for (int r = 0; r < n_ranks; r++) {
    double x = value(c->dtype, r, p->ranks[r].c[t].step, i);
    v = c->kind == C_MAX ? (r == 0 || x > v ? x : v) : v + x;
  }
  return v;
}

static ct_ddim result_dims(const call *c) {
  ct_ddim d = c->dims;
  if (c->kind == C_GATHER) d.d[0] *= n_ranks;
  if (c->kind == C_SCATTER) d.d[0] /= n_ranks;
  return d;
}

/* ---- Running and checking ------------------------------------------------------------------- */

static struct {
  int rounds, deviations, by_dev[N_DEVS];
  long calls, by_want[W_BROKEN + 1];
  double slowest, slowest_broken;
  int failures;
  long shifted;     /* calls that succeeded on another step's values of some rank (a skip or swap
                     * that met the same header) */
  long out_changed; /* failed calls that left Out changed (counted, not failed, when lenient) */
} st;

/* CORTEN_COMM_FUZZ_LENIENT_OUT=1: a failed call that leaves an out-of-place Out changed is
 * counted but not failed, so that the rest of the oracle can run while that is open. */
static bool lenient_out;

static uint64_t g_seed;
static int g_round, g_turn;
static const plan *g_plan;

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
  if (++st.failures > MAX_REPORTS) return;
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char b[200];
  printf("FAIL rank %d: seed %" PRIu64 " round %d turn %d (%s): %s\n", my_rank, g_seed, g_round,
         g_turn, call_str(&g_plan->ranks[my_rank].c[g_turn], b, sizeof b), what);
  if (st.failures == 1) print_plan(g_seed, g_round, g_plan);
  fflush(stdout);
}

/* A tensor's state before a call: dims, dtype and, when it holds memory, its bytes. */
typedef struct {
  bool present, memory;
  ct_ddim dims;
  ct_dtype dtype;
  unsigned char *bytes;
  size_t n;
} snap;

static void take(snap *sn, ct_scope *s, const char *name) {
  memset(sn, 0, sizeof *sn);
  ct_var *v = ct_scope_find_var(s, name);
  if (v == NULL || !ct_var_is(v, &ct_tensor_type)) return;
  const ct_tensor *t = ct_var_get_tensor(v);
  sn->present = true;
  sn->dims = ct_tensor_dims(t);
  sn->dtype = ct_tensor_dtype(t);
  const void *d = ct_tensor_has_memory(t) ? ct_tensor_data(t, sn->dtype) : NULL;
  if (d == NULL) return;
  sn->memory = true;
  sn->n = (size_t)ct_tensor_numel(t) * ct_dtype_size(sn->dtype);
  sn->bytes = malloc(sn->n ? sn->n : 1);
  if (sn->bytes != NULL) memcpy(sn->bytes, d, sn->n);
}

/* Whether name in s is as sn took it; why not into why. no_memory_ok: holding no memory is fine
 * too. */
static bool same_as(const snap *sn, ct_scope *s, const char *name, bool no_memory_ok, char *why,
                    size_t cap) {
  ct_var *v = ct_scope_find_var(s, name);
  const ct_tensor *t = v != NULL && ct_var_is(v, &ct_tensor_type) ? ct_var_get_tensor(v) : NULL;
  if (t == NULL || !ct_tensor_has_memory(t)) {
    if (no_memory_ok || !sn->memory) return true;
    snprintf(why, cap, "'%s' holds no memory now", name);
    return false;
  }
  char a[128], b[128];
  /* A variable the failed call created (or found empty) may now hold a tensor of unset dims
   * (op.h): nothing anyone can read, whatever block it keeps. */
  if (!sn->memory && ct_tensor_dims(t).rank < 0) return true;
  if (!sn->memory) {
    snprintf(why, cap, "'%s' held no memory but now holds %s %s", name,
             ct_dtype_name(ct_tensor_dtype(t)), ct_ddim_str(ct_tensor_dims(t), a, sizeof a));
    return false;
  }
  if (!ct_ddim_equal(ct_tensor_dims(t), sn->dims) || ct_tensor_dtype(t) != sn->dtype) {
    snprintf(why, cap, "'%s' was %s %s and is %s %s now", name, ct_dtype_name(sn->dtype),
             ct_ddim_str(sn->dims, a, sizeof a), ct_dtype_name(ct_tensor_dtype(t)),
             ct_ddim_str(ct_tensor_dims(t), b, sizeof b));
    return false;
  }
  const void *d = ct_tensor_data(t, sn->dtype);
  if (d == NULL || (sn->bytes != NULL && memcmp(d, sn->bytes, sn->n) != 0)) {
    snprintf(why, cap, "'%s' (%s %s) holds other values now", name, ct_dtype_name(sn->dtype),
             ct_ddim_str(sn->dims, a, sizeof a));
    return false;
  }
  return true;
}

/* Checks that variable name holds the result of turn t: dims, c's dtype, every element exact. */
static void check_result(ct_scope *s, const char *name, const call *c, ct_ddim dims, const plan *p,
                         int t) {
  const ct_tensor *x = ct_var_get_tensor(ct_scope_find_var(s, name));
  char a[128], b[128];
  if (x == NULL || !ct_ddim_equal(ct_tensor_dims(x), dims) || ct_tensor_dtype(x) != c->dtype) {
    failf("'%s' is %s %s, want %s %s", name, ct_dtype_name(ct_tensor_dtype(x)),
          ct_ddim_str(ct_tensor_dims(x), a, sizeof a), ct_dtype_name(c->dtype),
          ct_ddim_str(dims, b, sizeof b));
    return;
  }
  int64_t n = ct_ddim_numel(dims);
  const void *d = n > 0 ? ct_tensor_data(x, c->dtype) : NULL;
  if (n > 0 && d == NULL) {
    failf("'%s' holds no data: %s", name, ct_last_error());
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double want = result_elem(p, t, i);
    if (get_elem(d, c->dtype, i) != want) {
      failf("result '%s' element %lld is %g, want %g", name, (long long)i,
            get_elem(d, c->dtype, i), want);
      return;
    }
  }
}

static ct_op *make_op(const call *c) {
  ct_op *op = ct_op_new(coll_type[c->kind]);
  if (op == NULL || ct_op_set_input(op, "X", "x") != CT_OK ||
      ct_op_set_output(op, "Out", c->in_place ? "x" : "out") != CT_OK ||
      ct_op_set_attr_string(op, "comm", "comm") != CT_OK ||
      (rooted(c->kind) && ct_op_set_attr_int(op, "root", c->root) != CT_OK)) {
    ct_op_free(op);
    return NULL;
  }
  return op;
}

static bool has(const char *text, const char *part, const char *what) {
  if (strstr(text, part) != NULL) return true;
  failf("the message of %s lacks \"%s\": %s", what, part, text);
  return false;
}

/* Runs this rank's call of turn t and checks it against e. */
static void run_turn(ct_scope *s, ct_var *comm, const plan *p, int t, const expect *e) {
  const call *c = &p->ranks[my_rank].c[t];
  g_turn = t;
  int64_t n = ct_ddim_numel(c->dims);
  void *buf = malloc((size_t)(n > 0 ? n : 1) * 8);
  if (buf == NULL) {
    failf("out of host memory");
    return;
  }
  for (int64_t i = 0; i < n; i++) set_elem(buf, c->dtype, i, value(c->dtype, my_rank, c->step, i));
  ct_status put = ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "x")), buf, c->dims, c->dtype,
                                      ct_cpu());
  free(buf);
  ct_op *op = make_op(c);
  if (put != CT_OK || op == NULL) {
    failf("setting up the call: %s", ct_last_error());
    ct_op_free(op);
    return;
  }
  snap x0, out0;
  take(&x0, s, "x");
  take(&out0, s, "out");
  ct_clear_error();
  double t0 = MPI_Wtime();
  ct_status got = ct_op_run(op, s, ct_cpu());
  double took = MPI_Wtime() - t0;
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", ct_last_error());
  ct_op_free(op);
  st.calls++;
  st.by_want[e->w]++;
  if (took > st.slowest) st.slowest = took;
  if (e->w == W_BROKEN && took > st.slowest_broken) st.slowest_broken = took;
  bool broken = ct_comm_broken(comm);

  /* What holds whatever the prediction: no hang, a failure from the documented set, named. */
  if (took > LIMIT + MARGIN) {
    failf("the call took %.2f s, past the limit %g s + %g s", took, LIMIT, MARGIN);
  }
  if (got != CT_OK) {
    if (got != CT_ERR_INVALID_ARGUMENT && got != CT_ERR_TYPE_MISMATCH && got != CT_ERR_SHAPE &&
        got != CT_ERR_DEVICE) {
      failf("status %s (%d) is none of a collective's: %s", ct_status_str(got), (int)got, msg);
    }
    has(msg, coll_type[c->kind], "a failed call");
    has(msg, "communicator 'comm'", "a failed call");
  }

  /* What this turn must do. */
  if (got != e->status) {
    failf("returned %s (%s), want %s (%s): %s", ct_status_str(got), got == CT_OK ? "ok" : "failed",
          ct_status_str(e->status), want_name[e->w], got == CT_OK ? "" : msg);
  } else {
    char peer[32];
    snprintf(peer, sizeof peer, "but rank %d runs", e->peer);
    switch (e->w) {
    case W_OK: break;
    case W_MISMATCH:
      has(msg, peer, "a mismatch");
      if (strstr(msg, "now broken") != NULL) {
        failf("a mismatch said the communicator broke: %s", msg);
      }
      break;
    case W_OUT_OF_STEP:
      if (has(msg, peer, "an out-of-step call") && has(msg, "out of step", "an out-of-step call")) {
        has(msg, "now broken", "an out-of-step call");
      }
      break;
    case W_TIMEOUT:
      if (has(msg, e->missing, "a timeout")) has(msg, "now broken", "a timeout");
      break;
    case W_BROKEN:
      has(msg, "broken by an earlier failure", "a call on a broken communicator");
      if (took > LIMIT / 2) {
        failf("a call on a broken communicator took %.2f s (limit %g s): not at once", took, LIMIT);
      }
      break;
    }
  }
  bool want_broken = e->w == W_OUT_OF_STEP || e->w == W_TIMEOUT || e->w == W_BROKEN;
  if (broken != want_broken) {
    failf("after %s the communicator is %s", want_name[e->w], broken ? "broken" : "not broken");
  }

  /* What the call left in X and Out. */
  char why[512];
  if (got == CT_OK) {
    for (int r = 0; r < n_ranks; r++) {
      if (p->ranks[r].c[t].step != c->step) {
        st.shifted++;
        break;
      }
    }
    check_result(s, c->in_place ? "x" : "out", c, result_dims(c), p, t);
    if (!c->in_place && !same_as(&x0, s, "x", false, why, sizeof why)) {
      failf("input X changed: %s", why);
    }
  } else if (c->in_place) {
    if (!same_as(&x0, s, "x", false, why, sizeof why)) failf("a failed in-place call: %s", why);
  } else {
    if (!same_as(&x0, s, "x", false, why, sizeof why)) failf("a failed call changed X: %s", why);
    if (!same_as(&out0, s, "out", true, why, sizeof why)) {
      st.out_changed++;
      if (!lenient_out) {
        failf("a failed call left Out neither as it was nor without memory: %s", why);
      }
    }
  }
  free(x0.bytes);
  free(out0.bytes);
}

/* Waits for r until the deadline, yielding the core between polls. */
static bool wait_for(MPI_Request *r, double deadline) {
  for (;;) {
    int done = 0;
    if (MPI_Test(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (MPI_Wtime() > deadline) return false;
    struct timespec nap = {0, 200000};
    nanosleep(&nap, NULL);
  }
}

/* The largest of every rank's v, over the program's own communicator; false when the ranks do
 * not all come within SYNC_WAIT seconds. */
static bool sync_max(MPI_Comm world, int *v) {
  int in = *v;
  MPI_Request r = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(&in, v, 1, MPI_INT, MPI_MAX, world, &r) != MPI_SUCCESS) return false;
  return wait_for(&r, MPI_Wtime() + SYNC_WAIT);
}

/* One round; sets *broke when a communicator broke on this rank. */
static void run_round(uint64_t seed, int round, bool *broke) {
  plan p;
  uint64_t rs = seed ^ (0xD1B54A32D192ED03u * (uint64_t)(round + 1));
  make_plan(next(&rs), &p);
  g_seed = seed;
  g_round = round;
  g_plan = &p;
  g_turn = 0;
  st.rounds++;
  if (p.dev != DEV_NONE) {
    st.deviations++;
    st.by_dev[p.dev]++;
  }
  expect e[MAX_CALLS];
  predict(&p, e);
  ct_scope *s = ct_scope_new();
  ct_var *comm = s != NULL ? ct_scope_var(s, "comm") : NULL;
  if (comm == NULL || ct_comm_set_timeout(comm, LIMIT) != CT_OK ||
      ct_comm_init_mpi(comm) != CT_OK) {
    failf("making the communicator: %s", ct_last_error());
    ct_scope_free(s);
    return;
  }
  if (ct_comm_rank(comm) != my_rank || ct_comm_size(comm) != n_ranks ||
      ct_comm_timeout(comm) != LIMIT || ct_comm_broken(comm)) {
    failf("a fresh communicator: rank %d of %d, limit %g s, %s", ct_comm_rank(comm),
          ct_comm_size(comm), ct_comm_timeout(comm), ct_comm_broken(comm) ? "broken" : "working");
  }
  for (int t = 0; t < p.ranks[my_rank].n; t++) run_turn(s, comm, &p, t, &e[t]);
  if (ct_comm_broken(comm)) *broke = true;
  ct_scope_free(s);
}

int main(int argc, char **argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS ||
      provided < MPI_THREAD_SERIALIZED) {
    printf("FAIL rank ?: MPI_Init_thread gave no MPI_THREAD_SERIALIZED\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 32;
  int rounds = argc > 2 ? atoi(argv[2]) : 200, first = argc > 3 ? atoi(argv[3]) : 0;
  if (n_ranks < 2 || n_ranks > MAX_RANKS || rounds < 1 || first < 0) {
    printf("FAIL rank %d: usage: mpirun -n 2..%d comm_fuzz [SEED [ROUNDS [FIRST]]] (%d ranks)\n",
           my_rank, MAX_RANKS, n_ranks);
    return 2;
  }
  const char *lenient = getenv("CORTEN_COMM_FUZZ_LENIENT_OUT");
  lenient_out = lenient != NULL && strcmp(lenient, "1") == 0;
  MPI_Comm world; /* the program's own: the rounds' meetings never mix with corten's traffic */
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  double start = MPI_Wtime();
  bool broke = false, lost = false;
  for (int round = first; round < first + rounds; round++) {
    run_round(seed, round, &broke);
    int failed = st.failures > 0;
    if (!sync_max(world, &failed)) {
      lost = true;
      printf("FAIL rank %d: seed %" PRIu64 " round %d: the ranks did not meet within %g s after "
             "the round\n", my_rank, seed, round, SYNC_WAIT);
      break;
    }
    if (failed) break; /* a rank failed: every rank stops here */
  }
  double took = MPI_Wtime() - start;
  if (st.failures > 0 || lost) {
    printf("FAIL rank %d: %d failure(s) in %d rounds (seed %" PRIu64 ")\n", my_rank, st.failures,
           st.rounds, seed);
  } else {
    char note[96] = "";
    if (st.out_changed > 0) {
      snprintf(note, sizeof note, " (lenient: %ld failed calls left Out changed)", st.out_changed);
    }
    printf("PASS rank %d: %d rounds, %d deviations (skip %d, swap %d, alter %d, extra %d), "
           "%ld calls (ok %ld of which %ld on shifted steps, mismatch %ld, out of step %ld, "
           "timeout %ld, broken at once %ld), slowest %.2f s, slowest on a broken communicator "
           "%.3f s, limit %g s, %.1f s in all, seed %" PRIu64
           "%s\n", my_rank, st.rounds, st.deviations, st.by_dev[DEV_SKIP], st.by_dev[DEV_SWAP],
           st.by_dev[DEV_ALTER], st.by_dev[DEV_EXTRA], st.calls, st.by_want[W_OK], st.shifted,
           st.by_want[W_MISMATCH], st.by_want[W_OUT_OF_STEP], st.by_want[W_TIMEOUT],
           st.by_want[W_BROKEN], st.slowest, st.slowest_broken, LIMIT, took, seed, note);
  }
  fflush(stdout);
  /* MPI_Finalize only when no rank has a broken communicator (its requests may still be
   * pending); otherwise leave without it, as corten does (run_comm_fuzz.sh allows for that). */
  int any_broken = broke || lost;
  if (!lost && sync_max(world, &any_broken) && !any_broken) {
    MPI_Comm_free(&world);
    MPI_Finalize();
  }
  return st.failures > 0 || lost ? 1 : 0;
}
