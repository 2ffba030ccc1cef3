/* SPDX-License-Identifier: Apache-2.0 */
/* The executor's optimize option on attention chains (ops/passes_attention.c,
 * docs/design/passes.md): matmul, [scale], [mask add], softmax, matmul runs as one attention op
 * whose result equals the unoptimized executor's bit for bit (scale modes, masks broadcast or
 * not and on either side of the add, sums over more than one block of k, long rows, float64,
 * broadcast K and V, NaN and infinities, several threads) and whose scores and probabilities
 * never get memory; chains are left alone where a link is kept or an op between rewrites an
 * input, and a run whose dims the op does not take falls back on the chain's ops. */
#include <math.h>
#include <string.h>

#include "passes_util.h"

typedef struct spec {
  ct_ddim q, k, v, scale, mask;
  bool tq, tk, tv;        /* transpose_x of the first matmul, transpose_y of both */
  const char *mode;       /* NULL (no scale), "mul", "rmul" or "div" */
  bool has_mask, mask_first;
  int64_t axis;           /* the softmax's (0: -1, unless axis0) */
  bool axis0;
  ct_dtype dt;
  bool special;           /* NaN and infinities in Q and the mask */
  bool scale_set;         /* the Scale's first element scale_value (else 0.125) */
  double scale_value;
  const int64_t *kt;      /* k made by transpose(kraw) with these n_kt axes (NULL: k given) */
  size_t n_kt;
  ct_ddim kraw;
  bool k_read_again;      /* an exp of k after the chain (k then has a second reader) */
} spec;

/* [k = transpose(kraw)], s = matmul(q, k), s2 = scale(s), s3 = s2 + m, pr = softmax(s3),
 * out = matmul(pr, v), [ek = exp(k)]. */
static ct_program *chain(const spec *sp) {
  ct_program *p = ct_program_new();
  if (sp->kt != NULL) {
    ct_op *t = op_x("transpose", "kraw", "k");
    ck_assert_int_eq(ct_op_set_attr_ints(t, "axis", sp->kt, sp->n_kt), CT_OK);
    ck_assert_int_eq(ct_program_append(p, t), CT_OK);
  }
  ct_op *mm = op_xy("matmul", "q", "k", "s");
  ck_assert_int_eq(ct_op_set_attr_bool(mm, "transpose_x", sp->tq), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_bool(mm, "transpose_y", sp->tk), CT_OK);
  ck_assert_int_eq(ct_program_append(p, mm), CT_OK);
  const char *cur = "s";
  if (sp->mode != NULL) {
    bool rmul = strcmp(sp->mode, "rmul") == 0;
    const char *type = strcmp(sp->mode, "div") == 0 ? "elementwise_div" : "elementwise_mul";
    ck_assert_int_eq(ct_program_append(p, rmul ? op_xy(type, "c", cur, "s2")
                                               : op_xy(type, cur, "c", "s2")),
                     CT_OK);
    cur = "s2";
  }
  if (sp->has_mask) {
    ct_op *add = sp->mask_first ? op_xy("elementwise_add", "m", cur, "s3")
                                : op_xy("elementwise_add", cur, "m", "s3");
    ck_assert_int_eq(ct_program_append(p, add), CT_OK);
    cur = "s3";
  }
  ct_op *sm = op_x("softmax", cur, "pr");
  int64_t axis = sp->axis != 0 || sp->axis0 ? sp->axis : -1;
  ck_assert_int_eq(ct_op_set_attr_int(sm, "axis", axis), CT_OK);
  ck_assert_int_eq(ct_program_append(p, sm), CT_OK);
  ct_op *mm2 = op_xy("matmul", "pr", "v", "out");
  ck_assert_int_eq(ct_op_set_attr_bool(mm2, "transpose_y", sp->tv), CT_OK);
  ck_assert_int_eq(ct_program_append(p, mm2), CT_OK);
  if (sp->k_read_again) ck_assert_int_eq(ct_program_append(p, op_x("exp", "k", "ek")), CT_OK);
  return p;
}

static ct_scope *scope_of(const spec *sp) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "q", sp->q, 1, sp->dt);
  if (sp->kt != NULL) {
    put_pattern(s, "kraw", sp->kraw, 2, sp->dt);
  } else {
    put_pattern(s, "k", sp->k, 2, sp->dt);
  }
  put_pattern(s, "v", sp->v, 3, sp->dt);
  if (sp->mode != NULL) {
    put_pattern(s, "c", sp->scale, 4, sp->dt);
    put_elem(s, "c", sp->dt, 0, sp->scale_set ? sp->scale_value : 0.125);
  }
  if (sp->has_mask) put_pattern(s, "m", sp->mask, 5, sp->dt);
  if (sp->special) {
    put_elem(s, "q", sp->dt, 3, NAN);
    put_elem(s, "q", sp->dt, 40, INFINITY);
    int64_t sk = sp->tk ? sp->k.d[sp->k.rank - 2] : sp->k.d[sp->k.rank - 1];
    for (int64_t j = 0; j < sk && sp->has_mask; j++) { /* a fully masked row: NaN */
      put_elem(s, "m", sp->dt, sk + j, -INFINITY);
    }
    if (sp->has_mask) put_elem(s, "m", sp->dt, 2, -INFINITY);
  }
  return s;
}

static ct_scope *make_scope(const void *sp) { return scope_of(sp); }

/* Optimized equals unoptimized bit for bit at 1 and 3 threads; fused (no memory for the scores
 * and the probabilities) when `fused`. */
static void check(const spec *sp, bool fused) {
  same_bits_fused(chain(sp), make_scope, sp, "out", sp->dt, "s", "pr", fused);
}

/* The TransformerEncoder's chain (4 heads of 16, 10 tokens, batch 2), no scale nor mask. */
START_TEST(heads_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(2, 4, 10, 16), .k = CT_DIMS(2, 4, 16, 10),
                .v = CT_DIMS(2, 4, 10, 16), .dt = CT_FLOAT32},
        true);
}
END_TEST

/* BERT's: the scores divided by a scalar, a [B, 1, 1, Sk] mask added. */
START_TEST(a_divided_and_masked_chain_fuses_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(2, 3, 9, 8), .k = CT_DIMS(2, 3, 8, 9), .v = CT_DIMS(2, 3, 9, 5),
                .mode = "div", .scale = CT_DIMS(1), .has_mask = true,
                .mask = CT_DIMS(2, 1, 1, 9), .dt = CT_FLOAT32},
        true);
}
END_TEST

/* Scale * scores with a rank-0 scale, the mask [Sq, Sk] added as m + scores; scores * scale. */
START_TEST(operands_on_either_side_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(3, 7, 6), .k = CT_DIMS(3, 6, 7), .v = CT_DIMS(3, 7, 4),
                .mode = "rmul", .scale = CT_DIMS(), .has_mask = true, .mask = CT_DIMS(7, 7),
                .mask_first = true, .dt = CT_FLOAT32},
        true);
  check(&(spec){.q = CT_DIMS(3, 7, 6), .k = CT_DIMS(3, 6, 7), .v = CT_DIMS(3, 7, 4),
                .mode = "mul", .scale = CT_DIMS(1, 1), .dt = CT_FLOAT32},
        true);
}
END_TEST

/* Rows of 300 (the softmax's long path, the second product summed over two blocks of k), Q K
 * summed over 272 (two blocks), K and V given transposed; 40 query rows: blocks of 16 rows. */
START_TEST(long_rows_and_deep_sums_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(1, 40, 272), .k = CT_DIMS(1, 300, 272), .v = CT_DIMS(1, 8, 300),
                .tk = true, .tv = true, .mode = "mul", .scale = CT_DIMS(1), .has_mask = true,
                .mask = CT_DIMS(300), .dt = CT_FLOAT32},
        true);
}
END_TEST

/* Rows of scores 4 KiB long (1024 floats, 512 doubles): a block's rows a cache line further
 * apart than their length (score_ld), the scale, the mask and the softmax on the padded rows;
 * 300 query rows (blocks of 64: five at one thread). V of 64 columns: the second
 * product unswapped, its kernels reading the probabilities where they lie (V of 8: swapped,
 * the probabilities packed as its B). */
START_TEST(rows_of_4_kib_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(1, 300, 16), .k = CT_DIMS(1, 1024, 16), .v = CT_DIMS(1, 1024, 8),
                .tk = true, .mode = "div", .scale = CT_DIMS(1), .has_mask = true,
                .mask = CT_DIMS(1024), .dt = CT_FLOAT32},
        true);
  check(&(spec){.q = CT_DIMS(1, 300, 64), .k = CT_DIMS(1, 1024, 64), .v = CT_DIMS(1, 1024, 64),
                .tk = true, .mode = "div", .scale = CT_DIMS(1), .dt = CT_FLOAT32},
        true);
  check(&(spec){.q = CT_DIMS(1, 40, 8), .k = CT_DIMS(1, 8, 512), .v = CT_DIMS(1, 512, 6),
                .mode = "mul", .scale = CT_DIMS(1), .dt = CT_FLOAT64},
        true);
}
END_TEST

/* Q given transposed ([B, d, Sq]: transpose_x), in both item forms: whole heads (batched GEMMs)
 * and a block of rows of one entry. */
START_TEST(a_transposed_q_fuses_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(3, 8, 7), .k = CT_DIMS(3, 8, 7), .v = CT_DIMS(3, 7, 4),
                .tq = true, .dt = CT_FLOAT32},
        true);
  check(&(spec){.q = CT_DIMS(1, 24, 40), .k = CT_DIMS(1, 24, 33), .v = CT_DIMS(1, 33, 5),
                .tq = true, .mode = "div", .scale = CT_DIMS(1), .dt = CT_FLOAT64},
        true);
}
END_TEST

/* K made by a transpose of its last two axes (PyTorch's k.transpose(-2, -1)), read by the first
 * matmul alone: the transpose joins the fused op (transpose_k flipped), so K's copy never gets
 * memory either; axes counted from the end too; a K given transposed and transposed back; square
 * heads. */
START_TEST(a_transposed_k_joins_the_fused_op) {
  static const int64_t swap4[] = {0, 1, 3, 2}, swap3[] = {0, -1, -2};
  const spec cases[] = {
      {.q = CT_DIMS(2, 3, 9, 8), .kraw = CT_DIMS(2, 3, 9, 8), .kt = swap4, .n_kt = 4,
       .v = CT_DIMS(2, 3, 9, 5), .mode = "div", .scale = CT_DIMS(1), .dt = CT_FLOAT32},
      {.q = CT_DIMS(1, 40, 24), .kraw = CT_DIMS(1, 70, 24), .kt = swap3, .n_kt = 3,
       .v = CT_DIMS(1, 70, 6), .dt = CT_FLOAT32},
      {.q = CT_DIMS(1, 40, 24), .kraw = CT_DIMS(1, 24, 70), .kt = swap3, .n_kt = 3, .tk = true,
       .v = CT_DIMS(1, 70, 6), .dt = CT_FLOAT64},
      /* square: K read untransposed would run, with other values */
      {.q = CT_DIMS(2, 16, 16), .kraw = CT_DIMS(2, 16, 16), .kt = swap3, .n_kt = 3,
       .v = CT_DIMS(2, 16, 4), .dt = CT_FLOAT32},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    same_bits_fused(chain(&cases[c]), make_scope, &cases[c], "out", cases[c].dt, "k", "pr", true);
  }
}
END_TEST

/* The profile (of the calling thread) of one run of an optimized executor over p and the scope
 * make(sp) makes, after `warm` runs; the caller frees it. */
static ct_profile *optimized_profile(const ct_program *p, ct_scope *(*make)(const void *),
                                     const spec *sp, int warm) {
  ct_scope *s = make(sp);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
  ck_assert_msg(e != NULL, "%s", ct_last_error());
  for (int k = 0; k < warm; k++) ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ct_profile *prof = ct_profile_start(CT_PROFILE_THREAD);
  ck_assert_ptr_nonnull(prof);
  ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(ct_profile_stop(prof), CT_OK);
  ct_executor_free(e);
  ct_scope_free(s);
  return prof;
}

/* The blocks of memory the attention op of an optimized executor over p and sp's scope took in
 * its second run (its profile event's allocs); -1 when no attention op ran. */
static int64_t attention_allocs(const ct_program *p, const spec *sp) {
  ct_profile *prof = optimized_profile(p, make_scope, sp, 1);
  int64_t allocs = -1;
  for (size_t i = 0; i < ct_profile_count(prof); i++) {
    ct_profile_event ev = profile_event(prof, i);
    if (strcmp(ev.type, "attention") == 0) allocs = ev.allocs;
  }
  ct_profile_free(prof);
  return allocs;
}

/* The fused op runs the transposed K itself: no block in a second run (Out kept from the first),
 * where a fallback on the chain's ops (which the memory checks of same_bits_fused cannot tell
 * from it: the fallback frees the intermediates it made) takes three (K, the scores, the
 * probabilities). */
START_TEST(a_transposed_k_runs_in_the_fused_op) {
  static const int64_t swap4[] = {0, 1, 3, 2};
  spec sp = {.q = CT_DIMS(2, 3, 9, 8), .kraw = CT_DIMS(2, 3, 9, 8), .kt = swap4, .n_kt = 4,
             .v = CT_DIMS(2, 3, 9, 5), .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  ck_assert_int_eq(attention_allocs(p, &sp), 0);
  ct_program_free(p);
}
END_TEST

/* Two chains, interleaved op by op: [both transposes], both first matmuls, both softmaxes, both
 * last matmuls; K and K2 made by transposes of kraw when `transposes`, else given as k and k2. */
static ct_program *interleaved(bool transposes) {
  static const int64_t swap3[] = {0, 2, 1};
  ct_program *p = ct_program_new();
  const char *const names[2][7] = {{"kraw", "k", "q", "s", "pr", "v", "out"},
                                   {"kraw", "k2", "q", "s2", "pr2", "v", "out2"}};
  for (int step = transposes ? 0 : 1; step < 4; step++) {
    for (int c = 0; c < 2; c++) {
      const char *const *nm = names[c];
      ct_op *op = step == 0   ? op_x("transpose", nm[0], nm[1])
                  : step == 1 ? op_xy("matmul", nm[2], nm[1], nm[3])
                  : step == 2 ? op_x("softmax", nm[3], nm[4])
                              : op_xy("matmul", nm[4], nm[5], nm[6]);
      if (step == 0) ck_assert_int_eq(ct_op_set_attr_ints(op, "axis", swap3, 3), CT_OK);
      ck_assert_int_eq(ct_program_append(p, op), CT_OK);
    }
  }
  return p;
}

/* scope_of's variables and k2 (a copy of k's pattern), for the chains without transposes. */
static ct_scope *scope_with_k2(const void *sp) {
  ct_scope *s = scope_of(sp);
  put_pattern(s, "k2", ((const spec *)sp)->k, 2, ((const spec *)sp)->dt);
  return s;
}

/* Interleaved chains, with transposes and without: the pass finds both (after a fusion it looks
 * again from the chain's first member's place, where the other chain's ops moved down), each
 * an attention op that runs without falling back (no block allocated in a second run), and
 * both results are the unoptimized ones, their intermediates never allocated. */
START_TEST(interleaved_chains_both_fuse) {
  static const int64_t swap3[] = {0, 2, 1};
  for (int t = 0; t < 2; t++) {
    const bool tr = t == 1;
    spec sp = {.q = CT_DIMS(2, 3, 4), .v = CT_DIMS(2, 5, 6), .dt = CT_FLOAT32};
    if (tr) {
      sp.kraw = CT_DIMS(2, 5, 4);
      sp.kt = swap3;
      sp.n_kt = 3;
    } else {
      sp.k = CT_DIMS(2, 4, 5);
    }
    ct_scope *(*make)(const void *) = tr ? make_scope : scope_with_k2;
    ct_program *p = interleaved(tr);
    ct_profile *prof = optimized_profile(p, make, &sp, 1);
    int attentions = 0, others = 0;
    for (size_t i = 0; i < ct_profile_count(prof); i++) {
      ct_profile_event ev = profile_event(prof, i);
      if (strcmp(ev.type, "executor_run") == 0) continue;
      if (strcmp(ev.type, "attention") == 0) {
        attentions++;
        ck_assert_int_eq(ev.allocs, 0); /* a fallback allocates the chain's intermediates */
      } else {
        others++;
      }
    }
    ck_assert_int_eq(attentions, 2);
    ck_assert_int_eq(others, 0);
    ct_profile_free(prof);
    ct_program_free(p);
    same_bits_fused(interleaved(tr), make, &sp, "out", sp.dt, tr ? "k" : "s", "pr", true);
    same_bits_fused(interleaved(tr), make, &sp, "out2", sp.dt, tr ? "k2" : "s2", "pr2", true);
  }
}
END_TEST

/* The transposed K read again after the chain, or a transpose of other axes: the transpose
 * stays (K gets memory), the rest of the chain fuses; the same bits. */
START_TEST(a_transposed_k_read_elsewhere_stays_a_transpose) {
  static const int64_t swap3[] = {0, 2, 1}, batch[] = {1, 0, 2};
  spec sp = {.q = CT_DIMS(2, 7, 6), .kraw = CT_DIMS(2, 7, 6), .kt = swap3, .n_kt = 3,
             .v = CT_DIMS(2, 7, 4), .dt = CT_FLOAT32, .k_read_again = true};
  same_bits_fused(chain(&sp), make_scope, &sp, "out", sp.dt, "k", NULL, false);
  same_bits_fused(chain(&sp), make_scope, &sp, "out", sp.dt, "pr", NULL, true);
  spec other = {.q = CT_DIMS(2, 7, 6), .kraw = CT_DIMS(6, 2, 7), .kt = batch, .n_kt = 3,
                .v = CT_DIMS(2, 7, 4), .dt = CT_FLOAT32};
  same_bits_fused(chain(&other), make_scope, &other, "out", other.dt, "k", NULL, false);
  same_bits_fused(chain(&other), make_scope, &other, "out", other.dt, "pr", NULL, true);
}
END_TEST

/* Rows of one entry in blocks (several at 3 threads: K and V packed once for them), the scale
 * applied as the first GEMM's alpha where that is the same arithmetic (a multiply; a division
 * by a power of two with a normal reciprocal) and as its own pass where not (a division by 3,
 * by 2^-130 whose reciprocal overflows, a zero): the same bits every time, subnormal scores
 * (2^100 and 1e-30 scales) and NaN and infinities included. */
START_TEST(a_scale_folded_into_the_product_gives_the_same_bits) {
  static const struct {
    const char *mode;
    double v;
  } scales[] = {{"div", 0.125}, {"div", 3.0},  {"div", 0x1p100}, {"div", 0x1p-130},
                {"mul", 0.3},   {"rmul", 1e-30}, {"mul", 0.0},   {"mul", -0x1p-3}};
  for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
    check(&(spec){.q = CT_DIMS(1, 40, 16), .k = CT_DIMS(1, 16, 40), .v = CT_DIMS(1, 40, 5),
                  .mode = scales[i].mode, .scale = CT_DIMS(1), .scale_set = true,
                  .scale_value = scales[i].v,
                  .has_mask = true, .mask = CT_DIMS(40, 40), .dt = CT_FLOAT32,
                  .special = true},
          true);
  }
  check(&(spec){.q = CT_DIMS(30, 16), .k = CT_DIMS(16, 30), .v = CT_DIMS(30, 5), .mode = "div",
                .scale = CT_DIMS(1), .scale_set = true, .scale_value = 0x1p-1000,
                .dt = CT_FLOAT64},
        true);
}
END_TEST

/* Entries whose 600 x 600 scores take six blocks each (a thread runs blocks of two entries, and
 * packs op(K) and op(V) again where its entry changes): one K and V for all entries, and one
 * each (K transposed), float32 and float64. */
START_TEST(entries_of_several_blocks_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(3, 600, 8), .k = CT_DIMS(8, 600), .v = CT_DIMS(600, 5),
                .mode = "div", .scale = CT_DIMS(1), .dt = CT_FLOAT32},
        true);
  check(&(spec){.q = CT_DIMS(2, 600, 8), .k = CT_DIMS(2, 600, 8), .v = CT_DIMS(2, 600, 5),
                .tk = true, .has_mask = true, .mask = CT_DIMS(600), .dt = CT_FLOAT64},
        true);
}
END_TEST

/* float64; one K and one V (rank 2) for the whole batch; NaN and infinities in Q and the mask,
 * a row masked whole (NaN, as softmax gives). */
START_TEST(float64_broadcasts_and_special_values_fuse_to_the_same_bits) {
  check(&(spec){.q = CT_DIMS(3, 7, 16), .k = CT_DIMS(16, 12), .v = CT_DIMS(12, 5),
                .has_mask = true, .mask = CT_DIMS(7, 12), .dt = CT_FLOAT64, .special = true},
        true);
  check(&(spec){.q = CT_DIMS(2, 40, 16), .k = CT_DIMS(2, 16, 40), .v = CT_DIMS(2, 40, 3),
                .has_mask = true, .mask = CT_DIMS(40, 40), .dt = CT_FLOAT32, .special = true},
        true);
}
END_TEST

/* A softmax over the first axis is not an attention's: left alone, the same bits. One over
 * the middle axis of [2, 4, 4] scores (axis 1, which the pass cannot tell from the last before
 * the run): fused, refused at every run, which then falls back on the chain's ops: the same
 * bits, and the scores' memory dropped after the fallback. */
START_TEST(a_softmax_over_another_axis_gives_the_same_bits) {
  check(&(spec){.q = CT_DIMS(2, 4, 8), .k = CT_DIMS(2, 8, 4), .v = CT_DIMS(2, 4, 3), .axis0 = true,
                .dt = CT_FLOAT32},
        false);
  check(&(spec){.q = CT_DIMS(2, 4, 8), .k = CT_DIMS(2, 8, 4), .v = CT_DIMS(2, 4, 3), .axis = 1,
                .dt = CT_FLOAT32},
        true);
}
END_TEST

/* The scores kept by the caller (keep): the chain stops there, nothing is fused. */
START_TEST(kept_scores_are_not_fused) {
  spec sp = {.q = CT_DIMS(2, 5, 8), .k = CT_DIMS(2, 8, 5), .v = CT_DIMS(2, 5, 3),
             .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  const char *keep[] = {"s"};
  ct_executor_options o = {.optimize = true, .keep = keep, .n_keep = 1};
  size_t n0, n1;
  bool mem0, mem1;
  void *plain = run_twice(p, make_scope, &sp, NULL, "out", sp.dt, "s", "pr", &n0, &mem0);
  void *opt = run_twice(p, make_scope, &sp, &o, "out", sp.dt, "s", "pr", &n1, &mem1);
  ck_assert_int_eq(memcmp(plain, opt, n0), 0);
  ck_assert(mem1);
  free(plain);
  free(opt);
  ct_program_free(p);
}
END_TEST

/* scope_of's variables and z, the mask's source. */
static ct_scope *scope_with_z(const void *sp) {
  ct_scope *s = scope_of(sp);
  put_pattern(s, "z", CT_DIMS(4, 4), 6, CT_FLOAT32);
  return s;
}

/* An op between the mask add and the last matmul rewrites the mask: the fused op would read the
 * new mask at the matmul's place, so the chain is left alone (same bits as unoptimized). */
START_TEST(a_mask_rewritten_before_the_last_matmul_is_not_fused) {
  spec sp = {.q = CT_DIMS(4, 6), .k = CT_DIMS(6, 4), .v = CT_DIMS(4, 2), .has_mask = true,
             .mask = CT_DIMS(4, 4), .dt = CT_FLOAT32};
  ct_program *p = ct_program_new();
  ck_assert_int_eq(ct_program_append(p, op_x("exp", "z", "m")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "q", "k", "s")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("elementwise_add", "s", "m", "s3")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("relu", "z", "m")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_x("softmax", "s3", "pr")), CT_OK);
  ck_assert_int_eq(ct_program_append(p, op_xy("matmul", "pr", "v", "out")), CT_OK);
  same_bits_fused(p, scope_with_z, &sp, "out", sp.dt, "pr", NULL, false);
}
END_TEST

/* A mask replaced after the executor was made by one that enlarges the scores ([4, 4] ->
 * [3, 4, 4]): attention refuses it, the run falls back on the chain's ops: CT_OK, the
 * unoptimized result's dims and bits, the thread's status as before the run, no scores kept. */
START_TEST(a_mask_that_enlarges_the_scores_falls_back) {
  spec sp = {.q = CT_DIMS(4, 6), .k = CT_DIMS(6, 4), .v = CT_DIMS(4, 2), .has_mask = true,
             .mask = CT_DIMS(4, 4), .dt = CT_FLOAT32};
  ct_program *p = chain(&sp);
  float outs[2][24];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = scope_of(&sp);
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    put_pattern(s, "m", CT_DIMS(3, 4, 4), 7, CT_FLOAT32);
    ct_clear_error();
    ck_assert_msg(ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    ck_assert_int_eq(ct_last_status(), CT_OK);
    const ct_tensor *t = ct_var_get_tensor(ct_scope_find_var(s, "out"));
    ck_assert(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3, 4, 2)));
    memcpy(outs[opt], ct_tensor_data(t, CT_FLOAT32), sizeof outs[opt]);
    ck_assert(has_memory(s, "pr") == (opt == 0));
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_int_eq(memcmp(outs[0], outs[1], sizeof outs[0]), 0);
  ct_program_free(p);
}
END_TEST

/* Q [4, 6] against K [5, 4] on the first run: the first matmul fails, so does the fused op, and
 * its fallback stops at that matmul: the same status and message as unoptimized (the members
 * after it never made their outputs, and freeing their memory records nothing). */
/* sp's chain fails with CT_ERR_SHAPE and the same message, optimized or not; the message holds
 * `what`. */
static void fails_as_unoptimized(const spec *sp, const char *what) {
  ct_program *p = chain(sp);
  char msgs[2][512];
  for (int opt = 0; opt < 2; opt++) {
    ct_scope *s = scope_of(sp);
    ct_executor_options o = {.optimize = opt == 1};
    ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &o);
    ck_assert_int_eq(ct_executor_run(e), CT_ERR_SHAPE);
    ck_assert_int_eq(ct_last_status(), CT_ERR_SHAPE);
    snprintf(msgs[opt], sizeof msgs[opt], "%s", ct_last_error());
    ct_executor_free(e);
    ct_scope_free(s);
  }
  ck_assert_str_eq(msgs[1], msgs[0]);
  HAS(msgs[0], what);
  ct_program_free(p);
}

START_TEST(a_failing_first_matmul_fails_as_unoptimized) {
  fails_as_unoptimized(&(spec){.q = CT_DIMS(4, 6), .k = CT_DIMS(5, 4), .v = CT_DIMS(4, 2),
                               .dt = CT_FLOAT32},
                       "inner dims 6 and 5 differ");
}
END_TEST

/* A transpose whose axes are fewer or more than K's dims fails, and so does the chain with the
 * transpose taken in: the fused op refuses a K of another rank (k_rank), and the fallback's
 * transpose reports it, as without the option. */
START_TEST(a_transpose_of_the_wrong_rank_fails_as_unoptimized) {
  static const int64_t two[] = {1, 0}, four[] = {0, 1, 3, 2};
  fails_as_unoptimized(&(spec){.q = CT_DIMS(2, 3, 4), .kraw = CT_DIMS(2, 5, 4), .kt = two,
                               .n_kt = 2, .v = CT_DIMS(2, 5, 6), .dt = CT_FLOAT32},
                       "rank 3");
  fails_as_unoptimized(&(spec){.q = CT_DIMS(2, 3, 4), .kraw = CT_DIMS(2, 5, 4), .kt = four,
                               .n_kt = 4, .v = CT_DIMS(2, 5, 6), .dt = CT_FLOAT32},
                       "rank 3");
}
END_TEST

/* The op run by hand with a Scale of two elements: CT_ERR_SHAPE naming Scale and the fix; Out
 * untouched. A scale mode without a Scale: CT_ERR_INVALID_ARGUMENT. */
START_TEST(the_op_refuses_what_it_does_not_run) {
  ct_scope *s = ct_scope_new();
  put_pattern(s, "q", CT_DIMS(3, 4), 1, CT_FLOAT32);
  put_pattern(s, "k", CT_DIMS(4, 3), 2, CT_FLOAT32);
  put_pattern(s, "v", CT_DIMS(3, 2), 3, CT_FLOAT32);
  put_pattern(s, "c", CT_DIMS(2), 4, CT_FLOAT32);
  ct_op *op = ct_op_new("attention");
  ck_assert_int_eq(ct_op_set_input(op, "Q", "q"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "K", "k"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "V", "v"), CT_OK);
  ck_assert_int_eq(ct_op_set_input(op, "Scale", "c"), CT_OK);
  ck_assert_int_eq(ct_op_set_output(op, "Out", "out"), CT_OK);
  ck_assert_int_eq(ct_op_set_attr_string(op, "scale_mode", "mul"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_SHAPE);
  HAS(ct_last_error(), "Scale holds other than one element");
  HAS(ct_last_error(), "optimize");
  ck_assert(!has_memory(s, "out"));
  put_pattern(s, "c", CT_DIMS(1), 4, CT_FLOAT32);
  ck_assert_msg(ct_op_run(op, s, ct_cpu()) == CT_OK, "%s", ct_last_error());
  ck_assert_int_eq(ct_op_set_attr_string(op, "scale_mode", "none"), CT_OK);
  ck_assert_int_eq(ct_op_run(op, s, ct_cpu()), CT_ERR_INVALID_ARGUMENT);
  HAS(ct_last_error(), "scale_mode \"none\" with a Scale");
  ct_op_free(op);
  ct_scope_free(s);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("passes_attention");
  CT_ADD_TEST(s, heads_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_divided_and_masked_chain_fuses_to_the_same_bits);
  CT_ADD_TEST(s, operands_on_either_side_fuse_to_the_same_bits);
  CT_ADD_TEST(s, long_rows_and_deep_sums_fuse_to_the_same_bits);
  CT_ADD_TEST(s, rows_of_4_kib_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_transposed_q_fuses_to_the_same_bits);
  CT_ADD_TEST(s, a_transposed_k_joins_the_fused_op);
  CT_ADD_TEST(s, a_transposed_k_read_elsewhere_stays_a_transpose);
  CT_ADD_TEST(s, a_transposed_k_runs_in_the_fused_op);
  CT_ADD_TEST(s, interleaved_chains_both_fuse);
  CT_ADD_TEST(s, float64_broadcasts_and_special_values_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_scale_folded_into_the_product_gives_the_same_bits);
  CT_ADD_TEST(s, entries_of_several_blocks_fuse_to_the_same_bits);
  CT_ADD_TEST(s, a_softmax_over_another_axis_gives_the_same_bits);
  CT_ADD_TEST(s, kept_scores_are_not_fused);
  CT_ADD_TEST(s, a_mask_rewritten_before_the_last_matmul_is_not_fused);
  CT_ADD_TEST(s, a_mask_that_enlarges_the_scores_falls_back);
  CT_ADD_TEST(s, a_failing_first_matmul_fails_as_unoptimized);
  CT_ADD_TEST(s, a_transpose_of_the_wrong_rank_fails_as_unoptimized);
  CT_ADD_TEST(s, the_op_refuses_what_it_does_not_run);
  return s;
}

CT_TEST_MAIN(make_suite)
