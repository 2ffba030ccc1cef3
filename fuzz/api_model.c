/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/api_model.c: the API fuzzer's model of its objects and the invariants it checks after
 * every command (api_model.h; fuzz_api.c runs the commands). */
#include "api_model.h"

#include <stdlib.h>

#include "common/alloc.h"
#include "fuzz_api.h"

const char *const names[4] = {"a", "b", "c", "d"};

/* ---- The allocator under the stats: counts what it has handed out ------------------------- */

size_t live_bytes, live_blocks;

void *count_alloc(void *ctx, size_t size, size_t align) {
  (void)ctx;
  if (size > ((size_t)1 << 20)) return NULL; /* the fuzzer's memory cap */
  void *p = aligned_alloc(align, size);
  if (p != NULL) live_bytes += size, live_blocks++;
  return p;
}

void count_free(void *ctx, void *p, size_t size) {
  (void)ctx;
  live_bytes -= size, live_blocks--;
  free(p);
}

/* ---- The model ------------------------------------------------------------------------------ */

api_state st;

int ex_deleted;                     /* corten's exports, deleted through dl_export_del */
void (*export_deleter)(DLManagedTensor *);

void on_release(void *ctx) {
  rec *r = ctx;
  FZ_CHECK(++r->calls == 1); /* exactly once */
}

rec *new_rec(void) { return st.n_recs < NREC ? &st.recs[st.n_recs++] : NULL; }

void dl_export_del(DLManagedTensor *m) {
  ex_deleted++;
  export_deleter(m);
}

void own_deleter(DLManagedTensor *m) {
  own_dl *o = m->manager_ctx;
  on_release(o->r);
  free(o);
}

/* ---- Arguments ------------------------------------------------------------------------------ */

ct_tensor *tensor_arg(fz_bytes *in) {
  uint8_t b = fz_u8(in);
  if (!(b & 4)) return st.t[b & 3];
  ct_scope *s = st.sc[((b >> 3) & 3) % NS];
  ct_var *v = ct_scope_find_local_var(s, names[b & 3]);
  if (v == NULL) v = ct_scope_var(s, names[b & 3]);
  if (v == NULL) return NULL; /* out of memory */
  if (ct_var_type(v) != NULL && !ct_var_is(v, &ct_tensor_type)) return NULL;
  return ct_var_tensor(v);
}

ct_ddim dims_arg(fz_bytes *in, int max_rank, int n_extents) {
  int64_t d[4];
  int rank = fz_u8(in) % (max_rank + 1);
  for (int i = 0; i < rank; i++) d[i] = fa_extents[fz_u8(in) % n_extents];
  return ct_ddim_make(d, rank);
}

/* ---- Invariants ----------------------------------------------------------------------------- */

/* The product of the extents, or -1 when it overflows or an extent is negative (0 wins). */
static int64_t product(ct_ddim d) {
  int64_t n = 1;
  int overflow = 0;
  for (int i = 0; i < d.rank; i++) {
    if (d.d[i] < 0) return -1;
    if (d.d[i] == 0) return 0;
    if (__builtin_mul_overflow(n, d.d[i], &n)) overflow = 1;
  }
  return overflow ? -1 : n;
}

static void check_tensor(const ct_tensor *t) {
  if (t == NULL) return;
  ct_ddim d = ct_tensor_dims(t);
  if (d.rank < 0) return; /* unset */
  for (int i = 0; i < d.rank; i++) FZ_CHECK(d.d[i] >= 0);
  FZ_CHECK(ct_tensor_numel(t) == product(d));
}

void check_stats(void) {
  ct_memory_stats m;
  FZ_CHECK(ct_memory_stats_get(ct_cpu(), &m) == CT_OK);
  /* reserved: what the counting allocator handed out, plus the threads' scratch buffers (the
   * GEMM's packing space, from the C library: common/alloc.h). */
  FZ_CHECK(m.reserved == live_bytes + ct__scratch_total());
  FZ_CHECK(m.allocs - m.frees == live_blocks);
  FZ_CHECK(m.allocated <= m.reserved);
}

void check_all(void) {
  check_stats();
  for (int i = 0; i < NT; i++) check_tensor(st.t[i]);
  for (int s = 0; s < NS; s++) {
    for (int i = 0; i < 4; i++) {
      ct_var *v = ct_scope_find_local_var(st.sc[s], names[i]);
      if (v != NULL && ct_var_is(v, &ct_tensor_type)) check_tensor(ct_var_tensor(v));
    }
  }
  for (int i = 0; i < st.n_recs; i++) FZ_CHECK(st.recs[i].calls <= 1);
}

snap take(const ct_tensor *t) {
  snap s = {ct_tensor_dims(t), ct_tensor_dtype(t), NULL, ct_tensor_has_memory(t),
            ct_tensor_is_external(t)};
  if (s.mem && s.dtype != CT_DTYPE_UNDEFINED) s.data = ct_tensor_data(t, s.dtype);
  ct_clear_error();
  return s;
}

/* may_drop: the call may let go of the memory (a copy's CT_ERR_OUT_OF_MEMORY). */
void same(const ct_tensor *t, const snap *a, bool may_drop) {
  snap b = take(t);
  FZ_CHECK(ct_ddim_equal(a->dims, b.dims) && a->dtype == b.dtype);
  if (may_drop && !b.mem) return;
  FZ_CHECK(a->mem == b.mem && a->ext == b.ext && a->data == b.data);
}

scope_snap take_scope(ct_scope *sc) {
  scope_snap r;
  for (int i = 0; i < 4; i++) {
    ct_var *v = ct_scope_find_local_var(sc, names[i]);
    r.is[i] = v != NULL && ct_var_is(v, &ct_tensor_type);
    if (r.is[i]) r.s[i] = take(ct_var_get_tensor(v));
  }
  ct_clear_error();
  return r;
}

/* An external output keeps its buffer; failed: every variable keeps its dims and dtype. */
void after_run(ct_scope *sc, const scope_snap *a, bool failed) {
  for (int i = 0; i < 4; i++) {
    if (!a->is[i]) continue;
    ct_var *v = ct_scope_find_local_var(sc, names[i]);
    if (v == NULL || !ct_var_is(v, &ct_tensor_type)) continue; /* erased */
    snap b = take(ct_var_get_tensor(v));
    /* Its data is compared only when it had some: dims its buffer cannot hold (a scalar over
     * an empty buffer) have none until an op resizes them to fit. */
    if (a->s[i].ext) FZ_CHECK(b.ext && (a->s[i].data == NULL || b.data == a->s[i].data));
    if (failed) FZ_CHECK(ct_ddim_equal(a->s[i].dims, b.dims) && a->s[i].dtype == b.dtype);
  }
}
