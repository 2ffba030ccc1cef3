/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_gemm.c: corten's GEMM (ops/cpu/gemm.h), through its internal entry points (hence the
 * static library). Every element of C must be the sum gemm.h describes, bit for bit: over k in
 * blocks of CT__GEMM_KC, each block summed in order from 0 with one fused multiply-add a step
 * (plain multiply and add in the portable kernel), C = alpha block0 (+ beta C), then
 * C = alpha block + C for each later block. The suite computes that sum element by element in
 * plain C and compares it with every kernel this CPU runs, every transpose, edge shapes and
 * thread counts. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#include <math.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/alloc.h"
#include "harness.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_ukr.h"
#include "ops/cpu/parallel.h"
#ifdef CORTEN_FAULT_INJECTION
#include "common/fault.h"
#endif

static const char *const kernels[] = {"avx512", "avx2", "portable"};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])

/* A product under test: op(A) m x k, op(B) k x n, leading dims 3 past the widths (the padding
 * holds NaN, which a read of it would spread), C with 2 columns of padding holding a sentinel. */
typedef struct prod {
  int64_t m, n, k;
  bool ta, tb;
  double alpha, beta;
  bool in_place; /* b_in_place and a_in_place: B's slivers and A's rows read where they are */
  unsigned packed; /* PACK_A, PACK_B: that operand packed beforehand (ct__gemm_pack); with
                      PACK_WRONG, given with another width than ct__gemm_packed_elems said */
} prod;

enum { PACK_A = 1, PACK_B = 2, PACK_WRONG = 4 };

#define PAD_C 2
#define SENTINEL (-12345.0)

/* A value of a test matrix: small, varied, not exact in binary (so the order of sums shows). */
static double val(int which, int64_t i) { return sin((double)(i * 7 + which * 13 + 1)) * 0.75; }

#define REF(T, SFX, FMA)                                                                          \
  /* Element (i, j) as gemm.h defines it. */                                                      \
  static T ref_##SFX(const prod *p, const T *a, int64_t lda, const T *b, int64_t ldb, T c0,     \
                     bool fused) {                                                                \
    T c = 0;                                                                                      \
    for (int64_t p0 = 0; p0 < p->k; p0 += CT__GEMM_KC) {                                          \
      T acc = 0;                                                                                  \
      for (int64_t q = p0; q < p->k && q < p0 + CT__GEMM_KC; q++) {                               \
        T x = p->ta ? a[q * lda] : a[q], y = p->tb ? b[q] : b[q * ldb];                           \
        acc = fused ? FMA(x, y, acc) : acc + x * y;                                               \
      }                                                                                           \
      T o = (T)p->alpha * acc;                                                                    \
      if (p0 == 0) {                                                                              \
        c = p->beta != 0 ? o + (T)p->beta * c0 : o;                                               \
      } else {                                                                                    \
        c = o + c;                                                                                \
      }                                                                                           \
    }                                                                                             \
    return c;                                                                                     \
  }
REF(float, f32, fmaf)
REF(double, f64, fma)

/* Runs p in dtype T with the kernel in use, checks every element of C against the reference
 * (and the padding of C untouched); returns C (the caller frees it). */
#define CHECK(T, SFX)                                                                             \
  static T *check_##SFX(const prod *p, bool fused) {                                              \
    int64_t ar = p->ta ? p->k : p->m, ac = p->ta ? p->m : p->k;                                   \
    int64_t br = p->tb ? p->n : p->k, bc = p->tb ? p->k : p->n;                                   \
    int64_t lda = ac + 3, ldb = bc + 3, ldc = p->n + PAD_C;                                       \
    T *a = malloc(sizeof(T) * (size_t)(ar * lda + 1));                                            \
    T *b = malloc(sizeof(T) * (size_t)(br * ldb + 1));                                            \
    T *c = malloc(sizeof(T) * (size_t)(p->m * ldc + 1));                                          \
    T *c0 = malloc(sizeof(T) * (size_t)(p->m * ldc + 1));                                         \
    for (int64_t i = 0; i < ar * lda; i++) a[i] = i % lda < ac ? (T)val(0, i) : (T)NAN;           \
    for (int64_t i = 0; i < br * ldb; i++) b[i] = i % ldb < bc ? (T)val(1, i) : (T)NAN;           \
    for (int64_t i = 0; i < p->m * ldc; i++) {                                                    \
      c[i] = c0[i] = i % ldc < p->n ? (p->beta != 0 ? (T)val(2, i) : (T)NAN) : (T)SENTINEL;       \
    }                                                                                             \
    ct__gemm g = {.ta = p->ta, .tb = p->tb, .m = p->m, .n = p->n, .k = p->k, .alpha = p->alpha, \
                  .beta = p->beta, .a = a, .lda = lda, .b = b, .ldb = ldb, .c = c, .ldc = ldc,  \
                  .b_in_place = p->in_place, .a_in_place = p->in_place};                          \
    T *packed[2] = {NULL, NULL}, *kept[2] = {NULL, NULL};                                         \
    for (int w = 0; w < 2; w++) {                                                                 \
      if (!(p->packed & (w == 0 ? PACK_A : PACK_B))) continue;                                    \
      int width;                                                                                  \
      int64_t elems = ct__gemm_packed_elems(&g, w, sizeof(T), &width);                            \
      packed[w] = aligned_alloc(64, ((size_t)elems * sizeof(T) + 63) / 64 * 64 + 64);             \
      ct__gemm_pack_##SFX(&g, w, packed[w]);                                                      \
      T *src = w == 0 ? a : b;                                                                    \
      size_t n_src = (size_t)(w == 0 ? ar * lda : br * ldb);                                      \
      kept[w] = malloc(sizeof(T) * n_src + 1);                                                    \
      memcpy(kept[w], src, sizeof(T) * n_src);                                                    \
      /* Read from the packing alone: the operand itself poisoned (unless the width is off). */   \
      if (!(p->packed & PACK_WRONG)) {                                                            \
        for (size_t q = 0; q < n_src; q++) src[q] = (T)NAN;                                       \
      }                                                                                           \
      if (w == 0) {                                                                               \
        g.a_packed = packed[w];                                                                   \
        g.a_packed_w = width + (p->packed & PACK_WRONG ? 1 : 0);                                  \
      } else {                                                                                    \
        g.b_packed = packed[w];                                                                   \
        g.b_packed_w = width + (p->packed & PACK_WRONG ? 1 : 0);                                  \
      }                                                                                           \
    }                                                                                             \
    ck_assert_int_eq(ct__gemm_##SFX(&g), CT_OK);                                                  \
    for (int w = 0; w < 2; w++) {                                                                 \
      if (kept[w] == NULL) continue;                                                              \
      memcpy(w == 0 ? a : b, kept[w], sizeof(T) * (size_t)(w == 0 ? ar * lda : br * ldb));        \
      free(kept[w]);                                                                              \
      free(packed[w]);                                                                            \
    }                                                                                             \
    for (int64_t i = 0; i < p->m; i++) {                                                          \
      for (int64_t j = 0; j < ldc; j++) {                                                         \
        T got = c[i * ldc + j], want;                                                             \
        if (j >= p->n) {                                                                          \
          want = (T)SENTINEL;                                                                     \
        } else if (p->k == 0) {                                                                   \
          want = p->beta != 0 ? (T)p->beta * c0[i * ldc + j] : 0;                                 \
        } else {                                                                                  \
          want = ref_##SFX(p, p->ta ? a + i : a + i * lda, lda, p->tb ? b + j * ldb : b + j, ldb, \
                           c0[i * ldc + j], fused);                                               \
        }                                                                                         \
        ck_assert_msg(got == want,                                                                \
                      "%s %lldx%lldx%lld ta %d tb %d alpha %g beta %g: C[%lld][%lld] = %.17g, " \
                      "expected %.17g",                                                           \
                      ct__gemm_kernel_name(sizeof(T)), (long long)p->m, (long long)p->n,         \
                      (long long)p->k, p->ta, p->tb, p->alpha, p->beta, (long long)i,             \
                      (long long)j, (double)got, (double)want);                                   \
      }                                                                                           \
    }                                                                                             \
    free(a);                                                                                      \
    free(b);                                                                                      \
    free(c0);                                                                                     \
    return c;                                                                                     \
  }
CHECK(float, f32)
CHECK(double, f64)

/* Shapes: single elements, a row, a column, k past one block (several blocks, a short last
 * one), edges in both dims for every kernel's tile, C wider than tall and taller than wide, more
 * columns than one packed panel holds (4096 floats, 2048 doubles; as C or, swapped, as C^T) and
 * more rows than one packed block of A (252 float rows, 120 double rows; [300,64] stays
 * unswapped with the 32-wide AVX-512 tile, so B read in place meets several blocks of A); one
 * row across many slivers (the 4-sliver row kernel, B in place or packed, k in three blocks,
 * more columns than a panel); two slivers of rows and k of at most 32 (B read in place
 * unasked). */
static const int64_t shapes[][3] = {{1, 1, 1},    {1, 77, 300},  {77, 1, 300}, {13, 37, 513},
                                    {40, 3, 5},   {3, 40, 5},    {25, 70, 256}, {70, 25, 257},
                                    {12, 32, 1},  {100, 9, 31},  {3, 5000, 10}, {4200, 2, 7},
                                    {260, 40, 70}, {300, 64, 20}, {1, 300, 513},
                                    {1, 4200, 7},  {20, 300, 32}, {16, 1000, 9}};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* Every shape, transpose, dtype and a few alpha and beta with the kernel named, if it runs here
 * (the kernel is chosen back to the widest after); B packed, and B read in place and A's rows
 * read where they lie where the call asks (b_in_place, a_in_place: the same sums; the AVX-512
 * float32 kernels read A in place when it is not transposed, or, swapped, when B is; A's
 * padding columns hold NaN, which a read past a row's k values would spread). */
static void check_kernel(const char *name) {
  if (!ct__gemm_use_kernel(name)) {
    printf("gemm: this CPU does not run the %s kernel; its checks skipped\n", name);
    return;
  }
  bool fused = strcmp(name, "portable") != 0;
  static const double ab[][2] = {{1, 0}, {-0.5, 0.25}, {2, 1}};
  for (size_t s = 0; s < N_SHAPES; s++) {
    for (int t = 0; t < 4; t++) {
      for (size_t v = 0; v < 3; v++) {
        for (int in_place = 0; in_place < 2; in_place++) {
          prod p = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1, ab[v][0], ab[v][1],
                    in_place, 0};
          free(check_f32(&p, fused));
          free(check_f64(&p, fused));
        }
      }
    }
  }
  ct__gemm_use_kernel(NULL);
}

START_TEST(the_avx512_kernel_gives_the_defined_sums) { check_kernel("avx512"); }
END_TEST

START_TEST(the_avx2_kernel_gives_the_defined_sums) { check_kernel("avx2"); }
END_TEST

START_TEST(the_portable_kernel_gives_the_defined_sums) { check_kernel("portable"); }
END_TEST

START_TEST(the_widest_kernel_this_cpu_runs_is_the_default) {
  const char *name = ct__gemm_kernel_name(4);
  ck_assert_str_eq(name, ct__gemm_kernel_name(8));
  /* No kernel wider than the default runs here. */
  for (size_t i = 0; i < N_KERNELS && strcmp(kernels[i], name) != 0; i++) {
    ck_assert_msg(!ct__gemm_use_kernel(kernels[i]), "%s runs but %s is the default", kernels[i],
                  name);
  }
  ck_assert(!ct__gemm_use_kernel("sse9"));
  ck_assert_str_eq(ct__gemm_kernel_name(4), name);
  ck_assert(ct__gemm_use_kernel("portable"));
  ck_assert_str_eq(ct__gemm_kernel_name(4), "portable");
  ck_assert(ct__gemm_use_kernel(NULL));
  ck_assert_str_eq(ct__gemm_kernel_name(4), name);
}
END_TEST

/* The same product at 1, 2, 3 and 7 threads: the same bits (and each the defined sums). */
START_TEST(the_result_is_the_same_at_every_thread_count) {
  static const prod p64 = {300, 290, 600, true, false, -0.5, 0.25, false, 0};
  bool fused64 = strcmp(ct__gemm_kernel_name(8), "portable") != 0;
  ct_set_num_threads(1);
  double *first64 = check_f64(&p64, fused64);
  ct_set_num_threads(3);
  double *c64 = check_f64(&p64, fused64);
  ck_assert_int_eq(memcmp(c64, first64, sizeof(double) * (size_t)(p64.m * (p64.n + PAD_C))), 0);
  free(c64);
  free(first64);
  static const prod ps[] = {{300, 300, 300, false, false, 1, 0, false, 0},
                            {1000, 37, 333, false, true, 1, 0, false, 0},
                            {37, 1000, 333, true, false, 1, 1, false, 0},
                            {5, 4000, 70, false, false, 1, 0, false, 0},
                            {40, 3000, 20, false, false, 1, 0, true, 0}};
  static const int threads[] = {1, 2, 3, 7};
  bool fused = strcmp(ct__gemm_kernel_name(4), "portable") != 0;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    ct_set_num_threads(1);
    float *first = check_f32(&ps[i], fused);
    for (size_t t = 1; t < sizeof threads / sizeof threads[0]; t++) {
      ct_set_num_threads(threads[t]);
      float *c = check_f32(&ps[i], fused);
      ck_assert_int_eq(memcmp(c, first, sizeof(float) * (size_t)(ps[i].m * (ps[i].n + PAD_C))), 0);
      free(c);
    }
    free(first);
  }
  ct_set_num_threads(0);
}
END_TEST

/* Operands packed beforehand (ct__gemm_pack, as for a layer's constant weights): A, B or both,
 * swapped plans or not, several blocks of k and of rows, at 1, 2 and 3 threads (where both are
 * packed, more items than threads, shared out as the threads finish): the defined sums,
 * read from the packing alone (the operands themselves are NaN during the call). Given with a
 * width the plan does not use, the packing is ignored and the operands read: the same sums. */
START_TEST(operands_packed_beforehand_give_the_defined_sums) {
  static const int64_t pshapes[][3] = {{1, 1, 1},   {13, 37, 513}, {70, 25, 257}, {40, 3, 5},
                                       {3, 40, 5},  {300, 64, 20}, {260, 49, 300}, {49, 260, 70},
                                       {3, 5000, 10}};
  static const unsigned modes[] = {PACK_A, PACK_B, PACK_A | PACK_B, PACK_A | PACK_WRONG,
                                   PACK_B | PACK_WRONG};
  bool fused32 = strcmp(ct__gemm_kernel_name(4), "portable") != 0;
  bool fused64 = strcmp(ct__gemm_kernel_name(8), "portable") != 0;
  for (int threads = 1; threads <= 3; threads++) {
    ct_set_num_threads(threads);
    for (size_t s = 0; s < sizeof pshapes / sizeof pshapes[0]; s++) {
      for (size_t md = 0; md < sizeof modes / sizeof modes[0]; md++) {
        for (int t = 0; t < 4; t++) {
          /* t 2 (A as stored, B transposed) also asks for both operands in place: an A
           * given packed at another width is then read where it lies */
          prod p = {pshapes[s][0], pshapes[s][1], pshapes[s][2], t & 1, (t >> 1) & 1, 1,
                    t == 3 ? 0.5 : 0, t == 2, modes[md]};
          free(check_f32(&p, fused32));
          free(check_f64(&p, fused64));
        }
      }
    }
  }
  ct_set_num_threads(0);
}
END_TEST

/* Where an item packs neither operand (both packed beforehand), the plan splits C into more
 * items than threads, which a thread done early takes from a slower one; where each item packs
 * its own rows of A or columns of B, one item a thread (more would pack them more often). */
START_TEST(items_beyond_the_threads_only_where_they_pack_nothing) {
  ct_set_num_threads(2);
  ct__gemm g = {.m = 260, .n = 490, .k = 300, .alpha = 1};
  int64_t pieces, items = ct__gemm_plan_items_f32(&g, &pieces);
  ck_assert_int_eq(pieces, 2);
  ck_assert_int_eq(items, 2);
  static const float dummy[1];
  int wa, wb;
  ct__gemm_packed_elems(&g, 0, sizeof(float), &wa);
  ct__gemm_packed_elems(&g, 1, sizeof(float), &wb);
  g.a_packed = dummy;
  g.a_packed_w = wa;
  items = ct__gemm_plan_items_f32(&g, &pieces); /* B still packed by each item */
  ck_assert_int_eq(pieces, 2);
  ck_assert_int_eq(items, 2);
  g.b_packed = dummy;
  g.b_packed_w = wb;
  items = ct__gemm_plan_items_f32(&g, &pieces);
  ck_assert_int_eq(pieces, 2);
  ck_assert_int_eq(items, 8);
  ct_set_num_threads(1);
  items = ct__gemm_plan_items_f32(&g, &pieces);
  ck_assert_int_eq(pieces, 1);
  ck_assert_int_eq(items, 1);
  ct_set_num_threads(0);
}
END_TEST

/* ct__gemm_batched gives each product the bytes of its own ct__gemm call: tiny products (the
 * kernel set's small product where it has one: up to 64 x 16, k up to KC, rows not a multiple
 * of four), small ones (one plan and buffer, split into runs across threads), swapped ones,
 * transposes, and products big enough to take the call each; at 1, 2 and 3 threads. */
START_TEST(a_batch_of_products_gives_each_ones_bits) {
  static const int64_t bshapes[][4] = {/* m, n, k, count */
                                       {10, 10, 16, 32}, {10, 16, 10, 7}, {3, 40, 5, 5},
                                       {40, 3, 5, 9},    {1, 300, 20, 3}, {200, 150, 30, 3},
                                       {61, 16, 200, 3}, {7, 17, 9, 4}};
  for (int threads = 1; threads <= 3; threads++) {
    ct_set_num_threads(threads);
    for (size_t s = 0; s < sizeof bshapes / sizeof bshapes[0]; s++) {
      for (int t = 0; t < 4; t++) {
        const int64_t m = bshapes[s][0], n = bshapes[s][1], k = bshapes[s][2];
        const int64_t count = bshapes[s][3];
        const bool ta = t & 1, tb = t >> 1;
        const int64_t sa = m * k + 3, sb = k * n + 5, sc = m * n + 1;
        float *a = malloc(sizeof(float) * (size_t)(sa * count));
        float *b = malloc(sizeof(float) * (size_t)(sb * count));
        float *c1 = calloc((size_t)(sc * count), sizeof(float));
        float *c2 = calloc((size_t)(sc * count), sizeof(float));
        for (int64_t i = 0; i < sa * count; i++) a[i] = (float)val(0, i);
        for (int64_t i = 0; i < sb * count; i++) b[i] = (float)val(1, i);
        ct__gemm g = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = 1, .a = a,
                      .lda = ta ? m : k, .b = b, .ldb = tb ? k : n, .c = c1, .ldc = n};
        ck_assert_int_eq(ct__gemm_batched_f32(&g, count, sa, sb, sc), CT_OK);
        for (int64_t e = 0; e < count; e++) {
          ct__gemm ge = g;
          ge.a = a + e * sa;
          ge.b = b + e * sb;
          ge.c = c2 + e * sc;
          ck_assert_int_eq(ct__gemm_f32(&ge), CT_OK);
        }
        ck_assert_msg(memcmp(c1, c2, sizeof(float) * (size_t)(sc * count)) == 0,
                      "%lldx%lldx%lld x%lld ta %d tb %d at %d threads", (long long)m,
                      (long long)n, (long long)k, (long long)count, ta, tb, threads);
        free(a);
        free(b);
        free(c1);
        free(c2);
      }
    }
  }
  ct_set_num_threads(0);
}
END_TEST

/* A job holding the pool (its pieces wait for `release`): a GEMM called meanwhile from another
 * thread runs every block of its split on that thread, one after the other. */
static atomic_int release, holding;

static void hold_piece(void *ctx, int64_t b, int64_t e) {
  (void)ctx, (void)b, (void)e;
  atomic_fetch_add(&holding, 1);
  while (!atomic_load(&release)) sched_yield();
}

static void *hold_pool(void *arg) {
  (void)arg;
  ct__parallel_for(2, 1, hold_piece, NULL);
  return NULL;
}

START_TEST(a_gemm_beside_a_busy_pool_runs_its_blocks_on_its_own_thread) {
  ct_set_num_threads(2);
  atomic_store(&release, 0);
  atomic_store(&holding, 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, hold_pool, NULL), 0);
  while (atomic_load(&holding) == 0) sched_yield(); /* the pool is taken */
  static const prod p = {400, 300, 200, false, true, 1, 0, false, 0};
  bool fused = strcmp(ct__gemm_kernel_name(4), "portable") != 0;
  free(check_f32(&p, fused));
  atomic_store(&release, 1);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ct_set_num_threads(0);
}
END_TEST

START_TEST(beta_zero_ignores_nan_in_c_and_alpha_zero_reads_no_operand) {
  float a[4] = {NAN, NAN, NAN, NAN}, b[4] = {1, 2, 3, 4}, c[4] = {NAN, INFINITY, 1, 2};
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 2, 2, 2, 0, a, 2, b, 2, 0, c, 2), CT_OK);
  for (int i = 0; i < 4; i++) ck_assert_msg(c[i] == 0 && !signbit(c[i]), "c[%d] = %g", i, c[i]);
  float d[4] = {1, 2, 3, 4};
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 2, 2, 2, 0, a, 2, b, 2, 0.5, d, 2), CT_OK);
  ck_assert(d[0] == 0.5f && d[1] == 1 && d[2] == 1.5f && d[3] == 2);
  float x[4] = {1, 2, 3, 4}, e[4] = {NAN, NAN, NAN, NAN};
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 2, 2, 2, 1, x, 2, b, 2, 0, e, 2), CT_OK);
  ck_assert(e[0] == 7 && e[1] == 10 && e[2] == 15 && e[3] == 22);
}
END_TEST

START_TEST(empty_products_leave_c_alone_or_scale_it) {
  float a[1] = {1}, b[1] = {1}, c[2] = {3, 4};
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 0, 2, 1, 1, a, 1, b, 2, 0, c, 2), CT_OK);
  ck_assert(c[0] == 3 && c[1] == 4);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 1, 2, 0, 1, a, 1, b, 2, 2, c, 2), CT_OK);
  ck_assert(c[0] == 6 && c[1] == 8);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, 1, 2, 0, 1, a, 1, b, 2, 0, c, 2), CT_OK);
  ck_assert(c[0] == 0 && c[1] == 0);
}
END_TEST

/* ---- The packing buffer: kept, counted in the host's reserved, given back ------------------- */

static size_t host_reserved(void) {
  ct_memory_stats st;
  ck_assert_int_eq(ct_memory_stats_get(ct_cpu(), &st), CT_OK);
  return st.reserved;
}

/* The calling thread's buffer: allocated by the first GEMM, whole pages, counted in reserved;
 * the same GEMM again takes nothing more; ct_memory_empty_cache frees it; the next GEMM makes a
 * new one and gives the same bytes. The operands are malloc'd: reserved moves only with the
 * buffer. */
START_TEST(the_packing_buffer_is_kept_counted_in_reserved_and_given_back) {
  enum { M = 64, N = 80, K = 300 };
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
  float *c = malloc(sizeof(float) * M * N), *c2 = malloc(sizeof(float) * M * N);
  ck_assert(a != NULL && b != NULL && c != NULL && c2 != NULL);
  for (int64_t i = 0; i < M * K; i++) a[i] = (float)val(0, i);
  for (int64_t i = 0; i < K * N; i++) b[i] = (float)val(1, i);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(ct__scratch_held(), 0);
  size_t r0 = host_reserved();
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, M, N, K, 1, a, K, b, N, 0, c, N), CT_OK);
  size_t held = ct__scratch_held();
  ck_assert_uint_gt(held, 0);
  ck_assert_uint_eq(held % 4096, 0);
  ck_assert_uint_eq(host_reserved(), r0 + held);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, M, N, K, 1, a, K, b, N, 0, c2, N), CT_OK);
  ck_assert_uint_eq(ct__scratch_held(), held);
  ck_assert_uint_eq(host_reserved(), r0 + held);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(ct__scratch_held(), 0);
  ck_assert_uint_eq(host_reserved(), r0);
  memset(c2, 0, sizeof(float) * M * N);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, M, N, K, 1, a, K, b, N, 0, c2, N), CT_OK);
  ck_assert_uint_eq(ct__scratch_held(), held);
  ck_assert_int_eq(memcmp(c, c2, sizeof(float) * M * N), 0);
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  free(a);
  free(b);
  free(c);
  free(c2);
}
END_TEST

static pthread_barrier_t step;

/* Takes a 1 MiB buffer and holds it over main's first ct_memory_empty_cache, gives it back
 * before the second, then takes a page and exits with it. */
static void *taker(void *arg) {
  (void)arg;
  ck_assert_ptr_nonnull(ct__scratch_take((size_t)1 << 20));
  ck_assert_ptr_null(ct__scratch_take(64)); /* taken already: a nested take is refused */
  pthread_barrier_wait(&step); /* 1: taken */
  pthread_barrier_wait(&step); /* 2: main emptied the cache */
  ct__scratch_give_back();
  pthread_barrier_wait(&step); /* 3: given back */
  pthread_barrier_wait(&step); /* 4: main emptied the cache */
  ck_assert_uint_eq(ct__scratch_held(), 0);
  ck_assert_ptr_nonnull(ct__scratch_take(4096));
  ct__scratch_give_back();
  return NULL;
}

/* ct_memory_empty_cache frees another thread's buffer when that thread is not using it, keeps
 * it while it is; a thread's exit frees its buffer. */
START_TEST(empty_cache_frees_other_threads_idle_buffers_and_keeps_taken_ones) {
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  size_t r0 = host_reserved();
  ck_assert_int_eq(pthread_barrier_init(&step, NULL, 2), 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, taker, NULL), 0);
  pthread_barrier_wait(&step); /* 1 */
  ck_assert_uint_eq(host_reserved(), r0 + ((size_t)1 << 20));
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(host_reserved(), r0 + ((size_t)1 << 20)); /* in use: kept */
  pthread_barrier_wait(&step); /* 2 */
  pthread_barrier_wait(&step); /* 3 */
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  ck_assert_uint_eq(host_reserved(), r0);
  pthread_barrier_wait(&step); /* 4 */
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_uint_eq(host_reserved(), r0); /* the page it took again went with the thread */
  ck_assert_int_eq(pthread_barrier_destroy(&step), 0);
}
END_TEST

/* Takes a 1 MiB buffer, gives it back, and waits (twice) at the barrier before exiting. */
static void *hold_idle(void *arg) {
  (void)arg;
  ck_assert_ptr_nonnull(ct__scratch_take((size_t)1 << 20));
  ct__scratch_give_back();
  pthread_barrier_wait(&step);
  pthread_barrier_wait(&step);
  return NULL;
}

static void *take_page(void *arg) {
  (void)arg;
  if (ct__scratch_take(4096) == NULL) return (void *)1;
  ct__scratch_give_back();
  return NULL;
}

/* A fork child keeps the records of threads that are gone in it (their stacks, and so their
 * records, free for the child's new threads): it forgets them and their bytes. A thread the
 * child starts takes a buffer, and emptying the cache returns with reserved back where the
 * parent started (a cycle in the list made that hang). */
START_TEST(a_fork_child_forgets_the_buffers_of_threads_it_does_not_have) {
  ck_assert_int_eq(ct_memory_empty_cache(ct_cpu()), CT_OK);
  size_t r0 = host_reserved();
  ck_assert_int_eq(pthread_barrier_init(&step, NULL, 2), 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, hold_idle, NULL), 0);
  pthread_barrier_wait(&step); /* t holds an idle 1 MiB buffer */
  ck_assert_uint_eq(host_reserved(), r0 + ((size_t)1 << 20));
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    alarm(20); /* a hang ends the child with SIGALRM */
    pthread_t c;
    void *bad = (void *)1;
    if (pthread_create(&c, NULL, take_page, NULL) != 0 || pthread_join(c, &bad) != 0) _exit(2);
    if (bad != NULL) _exit(3);
    if (ct_memory_empty_cache(ct_cpu()) != CT_OK) _exit(4);
    _exit(host_reserved() == r0 ? 0 : 5);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %s %d",
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  pthread_barrier_wait(&step);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_uint_eq(host_reserved(), r0);
  ck_assert_int_eq(pthread_barrier_destroy(&step), 0);
}
END_TEST

#ifdef CORTEN_FAULT_INJECTION
/* On a fresh thread (no packing buffer yet), the buffer's allocation fails: out of memory with
 * the sizes named, C unchanged; the next call succeeds. */
static void *gemm_oom(void *arg) {
  (void)arg;
  enum { M = 40, N = 50, K = 30 };
  static float a[M * K], b[K * N], c[M * N];
  for (int i = 0; i < M * K; i++) a[i] = 1;
  for (int i = 0; i < K * N; i++) b[i] = 2;
  for (int i = 0; i < M * N; i++) c[i] = -1;
  ct__fault_arm(0);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, M, N, K, 1, a, K, b, N, 0, c, N),
                   CT_ERR_OUT_OF_MEMORY);
  ck_assert(ct__fault_fired());
  ct__fault_arm(-1);
  ck_assert_ptr_nonnull(strstr(ct_last_error(), "packing buffer of a 40 x 30 x 50 GEMM"));
  for (int i = 0; i < M * N; i++) ck_assert(c[i] == -1);
  ck_assert_int_eq(CT__GEMM(ct__gemm_f32, false, false, M, N, K, 1, a, K, b, N, 0, c, N), CT_OK);
  for (int i = 0; i < M * N; i++) ck_assert(c[i] == 2 * K);
  return NULL;
}

START_TEST(out_of_memory_for_the_buffers_changes_nothing) {
  ct_set_num_threads(1);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, gemm_oom, NULL), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ct_set_num_threads(0);
}
END_TEST
#endif

static Suite *make_suite(void) {
  Suite *s = suite_create("gemm");
  CT_ADD_TEST(s, the_avx512_kernel_gives_the_defined_sums);
  CT_ADD_TEST(s, the_avx2_kernel_gives_the_defined_sums);
  CT_ADD_TEST(s, the_portable_kernel_gives_the_defined_sums);
  CT_ADD_TEST(s, the_widest_kernel_this_cpu_runs_is_the_default);
  CT_ADD_TEST(s, the_result_is_the_same_at_every_thread_count);
  CT_ADD_TEST(s, operands_packed_beforehand_give_the_defined_sums);
  CT_ADD_TEST(s, items_beyond_the_threads_only_where_they_pack_nothing);
  CT_ADD_TEST(s, a_batch_of_products_gives_each_ones_bits);
  CT_ADD_TEST(s, a_gemm_beside_a_busy_pool_runs_its_blocks_on_its_own_thread);
  CT_ADD_TEST(s, beta_zero_ignores_nan_in_c_and_alpha_zero_reads_no_operand);
  CT_ADD_TEST(s, empty_products_leave_c_alone_or_scale_it);
  CT_ADD_TEST(s, the_packing_buffer_is_kept_counted_in_reserved_and_given_back);
  CT_ADD_TEST(s, empty_cache_frees_other_threads_idle_buffers_and_keeps_taken_ones);
  CT_ADD_TEST(s, a_fork_child_forgets_the_buffers_of_threads_it_does_not_have);
#ifdef CORTEN_FAULT_INJECTION
  CT_ADD_TEST(s, out_of_memory_for_the_buffers_changes_nothing);
#endif
  return s;
}

CT_TEST_MAIN(make_suite)
