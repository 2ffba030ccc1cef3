/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/fuzz_api.c: the stateful API fuzzer. The input is a list of commands (fuzz_api.h) over a
 * handful of objects: three scopes (0, its kid 1, another root 2) with variables "a".."d", four
 * standalone tensors, four external buffers, four DLPack export slots, six ops, three programs,
 * and executors made, run and freed within one command. Allocation faults can be injected into
 * any command (FA_FAULT). A small model kept here is checked after every command
 * (docs/design/reliability.md, "The API fuzzer"):
 * - the host memory stats agree with the allocator under them: reserved equals the bytes it
 *   handed out and still has, allocated is at most that, and everything is back to 0 at the end;
 * - every release callback and DLPack deleter runs at most once, and exactly once by the end;
 * - a failed tensor call leaves its destination's dims, dtype, data pointer and externality (a
 *   copy may drop the memory); a failed ct_scope_var leaves the variable count; a failed op run
 *   leaves the dims of every variable of its scope;
 * - an external variable stays external over the same buffer across any op run;
 * - dims are well formed: no negative extent, numel the product of the extents; validity and
 *   numel do not depend on the order of the extents;
 * - a new variable starts empty; an op never holds its own program; scopes of any depth free.
 * A broken invariant aborts with the line that failed. The objects, the model and the checks are
 * in api_model.c. */
#include "api_model.h"
#include "common/alloc.h"
#include "common/fault.h"
#include "fuzz_api.h"

#ifndef CORTEN_FAULT_INJECTION
#define ct__fault_arm(n) ((void)(n)) /* a build without the hook: FA_FAULT does nothing */
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ct_dtype dtypes[FA_N_DTYPES] = {CT_FLOAT32, CT_INT32, CT_FLOAT64, CT_UINT8};

/* ---- Ops and programs: who owns what ------------------------------------------------------- */

static void kill_op(int i);

static void kill_prog(int k) {
  st.prog[k].p = NULL;
  for (int i = 0; i < NO; i++) {
    if (st.op[i].op != NULL && st.op[i].owner == k) kill_op(i);
  }
}

static void kill_op(int i) {
  int h = st.op[i].holds;
  st.op[i].op = NULL;
  if (h >= 0 && st.prog[h].p != NULL && st.prog[h].owner == i) kill_prog(h);
}

/* Whether op i holds itself: its owning program is held by an op whose program ... is op i's
 * (an ownership cycle, which ct_op_free would recurse around forever). */
static bool cyclic(int i) {
  int o = i;
  for (int depth = 0; depth <= NO + NP; depth++) {
    int k = st.op[o].owner;
    if (k < 0 || st.prog[k].p == NULL) return false;
    o = st.prog[k].owner;
    if (o < 0) return false;
    if (o == i) return true;
  }
  return true;
}

static void op_new(fz_bytes *in) {
  static const char *const types[FA_N_TYPES] = {"relu", "tanh", "scale", "reshape",
                                                "elementwise_add", "elementwise_div", "matmul",
                                                "mean", "recurrent"};
  int i = fz_u8(in) % NO;
  int type = fz_u8(in) % FA_N_TYPES;
  const char *x = names[fz_u8(in) & 3], *y = names[fz_u8(in) & 3], *out = names[fz_u8(in) & 3];
  ct_ddim shape = dims_arg(in, 3, FA_N_EXTENTS);
  if (st.op[i].op != NULL) {
    if (st.op[i].owner >= 0) return; /* a program's: kept in the model */
    ct_op_free(st.op[i].op);
    kill_op(i);
  }
  ct_op *op = ct_op_new(types[type]);
  if (op == NULL) return;
  st.op[i] = (m_op){op, -1, -1};
  if (type == FA_RECURRENT) return;
  (void)ct_op_set_input(op, "X", x);
  if (type == FA_ADD || type == FA_DIV || type == FA_MATMUL) (void)ct_op_set_input(op, "Y", y);
  (void)ct_op_set_output(op, "Out", out);
  if (type == FA_RESHAPE) (void)ct_op_set_attr_ints(op, "shape", shape.d, (size_t)shape.rank);
}

static void set_program(int i, int k) {
  if (st.op[i].op == NULL || st.prog[k].p == NULL) return;
  int old = st.op[i].holds;
  ct_status s = ct_op_set_attr_program(st.op[i].op, "step_program", st.prog[k].p);
  if (s == CT_OK) {
    if (old >= 0 && old != k && st.prog[old].p != NULL && st.prog[old].owner == i) kill_prog(old);
    st.op[i].holds = k;
    st.prog[k].owner = i;
    FZ_CHECK(!cyclic(i)); /* an op cannot hold its own program */
  } else if (s != CT_ERR_INVALID_ARGUMENT) {
    kill_prog(k); /* taken and freed */
  }
}

static void append(int k, int i) {
  if (st.op[i].op == NULL || st.prog[k].p == NULL) return;
  ct_status s = ct_program_append(st.prog[k].p, st.op[i].op);
  if (s == CT_OK) {
    st.op[i].owner = k;
    FZ_CHECK(!cyclic(i)); /* an op cannot hold its own program */
  } else if (s != CT_ERR_INVALID_ARGUMENT) {
    kill_op(i); /* taken and freed */
  }
}

static void run_op(int i, ct_scope *sc) {
  if (st.op[i].op == NULL) return;
  scope_snap a = take_scope(sc);
  ct_status s = ct_op_run(st.op[i].op, sc, ct_cpu());
  FZ_CHECK(s == CT_OK || s == ct_last_status());
  after_run(sc, &a, s != CT_OK);
}

static void exec(int k, ct_scope *sc, uint8_t flags) {
  if (st.prog[k].p == NULL) return;
  ct_executor_options o = {.free_intermediates = flags & 1};
  ct_executor *e = ct_executor_new_with(st.prog[k].p, sc, ct_cpu(), &o);
  if (e == NULL) return;
  scope_snap a = take_scope(sc);
  ct_status s = ct_executor_run(e);
  FZ_CHECK(s == CT_OK || s == ct_last_status());
  after_run(sc, &a, false);
  if (flags & 4) { /* erase a variable the executor may use (misuse, but memory-safe) */
    const char *n = names[(flags >> 3) & 3];
    (void)ct_scope_erase_vars(sc, &n, 1);
  }
  if (flags & 2) (void)ct_executor_run(e);
  ct_executor_free(e);
}

/* ---- Tensors and DLPack --------------------------------------------------------------------- */

static void tensor_call(fz_bytes *in, int op) {
  ct_tensor *t = tensor_arg(in);
  ct_tensor *src = op == FA_COPY || op == FA_SHARE || op == FA_SLICE || op == FA_FLATTEN
                       ? tensor_arg(in)
                       : NULL;
  if (t == NULL) return;
  snap a = take(t);
  ct_status s = CT_OK;
  bool may_drop = false;
  switch (op) {
    case FA_RESIZE: {
      ct_ddim d = dims_arg(in, 4, FA_N_EXTENTS), r = d;
      for (int i = 0; i < d.rank; i++) r.d[i] = d.d[d.rank - 1 - i];
      FZ_CHECK(ct_ddim_numel(d) == ct_ddim_numel(r)); /* whatever the order */
      ct_tensor *probe = ct_tensor_new();
      ct_status sr = probe ? ct_tensor_resize(probe, r) : CT_ERR_OUT_OF_MEMORY;
      ct_tensor_free(probe);
      s = ct_tensor_resize(t, d); /* resize allocates nothing: the fault, if any, was probe's */
      if (sr != CT_ERR_OUT_OF_MEMORY) FZ_CHECK((sr == CT_OK) == (s == CT_OK));
      break;
    }
    case FA_MUTABLE:
      s = ct_tensor_mutable_data(t, dtypes[fz_u8(in) % FA_N_DTYPES], ct_cpu()) ? CT_OK
                                                                                 : ct_last_status();
      may_drop = true;
      break;
    case FA_SET_VALUE: {
      static const uint8_t src_bytes[8 * 64];
      ct_dtype dt = dtypes[fz_u8(in) % FA_N_DTYPES];
      s = ct_tensor_set_value(t, src_bytes, dims_arg(in, 2, FA_SMALL_EXTENTS), dt, ct_cpu());
      may_drop = true;
      break;
    }
    case FA_COPY:
      if (src == NULL) return;
      s = ct_tensor_copy(t, src, ct_cpu());
      may_drop = true;
      break;
    case FA_SHARE: s = src ? ct_tensor_share(t, src) : CT_OK; break;
    case FA_SLICE: {
      int64_t b = fa_extents[fz_u8(in) % FA_N_EXTENTS], e = fa_extents[fz_u8(in) % FA_N_EXTENTS];
      s = src ? ct_tensor_slice(t, src, b, e) : CT_OK;
      break;
    }
    case FA_FLATTEN: s = src ? ct_tensor_flatten_to_2d(t, src, fz_u8(in) % 5) : CT_OK; break;
    default: break;
  }
  if (s != CT_OK) {
    FZ_CHECK(s == ct_last_status());
    same(t, &a, may_drop && s == CT_ERR_OUT_OF_MEMORY);
  }
}

static void wrap(fz_bytes *in, bool dlpack) {
  ct_tensor *t = tensor_arg(in);
  int b = fz_u8(in) % NT;
  int dti = fz_u8(in) % FA_N_DTYPES;
  ct_dtype dt = dtypes[dti];
  ct_ddim d = dims_arg(in, 3, FA_SMALL_EXTENTS);
  rec *r = new_rec();
  if (t == NULL || r == NULL) return;
  int64_t n = ct_ddim_numel(d);
  if (n < 0 || (size_t)n * ct_dtype_size(dt) > sizeof st.buf[b]) return;
  snap a = take(t);
  ct_status s;
  if (!dlpack) {
    s = ct_tensor_wrap(t, st.buf[b], d, dt, ct_cpu(), on_release, r);
  } else {
    own_dl *o = calloc(1, sizeof *o);
    FZ_CHECK(o != NULL);
    static const DLDataType codes[FA_N_DTYPES] = {{kDLFloat, 32, 1}, {kDLInt, 32, 1},
                                                  {kDLFloat, 64, 1}, {kDLUInt, 8, 1}};
    for (int i = 0; i < d.rank; i++) o->shape[i] = d.d[i];
    o->r = r;
    o->m.dl_tensor = (DLTensor){.data = st.buf[b], .device = {kDLCPU, 0}, .ndim = d.rank,
                                .dtype = codes[dti], .shape = o->shape};
    o->m.manager_ctx = o;
    o->m.deleter = own_deleter;
    s = ct_tensor_from_dlpack(t, &o->m);
    if (s != CT_OK) free(o); /* still ours: the deleter must not have run */
  }
  if (s == CT_OK) {
    st.accepted++;
    FZ_CHECK(ct_tensor_is_external(t));
  } else {
    FZ_CHECK(r->calls == 0);
    st.n_recs--; /* refused: the record is not counted */
    same(t, &a, false);
  }
}

static void export_call(fz_bytes *in, int op) {
  ct_tensor *t = op == FA_EXPORT_DROP ? NULL : tensor_arg(in);
  int k = fz_u8(in) % NX;
  if (op == FA_EXPORT_DROP) {
    if (st.ex[k] != NULL) st.ex[k]->deleter(st.ex[k]);
    st.ex[k] = NULL;
    return;
  }
  if (t == NULL) return;
  if (op == FA_EXPORT) {
    if (st.ex[k] != NULL) return;
    DLManagedTensor *m = NULL;
    if (ct_tensor_to_dlpack(t, &m) != CT_OK) return;
    export_deleter = m->deleter;
    m->deleter = dl_export_del;
    st.ex[k] = m;
    st.accepted++;
    return;
  }
  if (st.ex[k] == NULL) return;
  snap a = take(t);
  if (ct_tensor_from_dlpack(t, st.ex[k]) == CT_OK) {
    st.ex[k] = NULL; /* corten's now */
  } else {
    same(t, &a, false);
  }
}

/* ---- The run -------------------------------------------------------------------------------- */

static void command(fz_bytes *in, int op) {
  switch (op) {
    case FA_RESIZE: case FA_MUTABLE: case FA_SET_VALUE: case FA_COPY: case FA_SHARE:
    case FA_SLICE: case FA_FLATTEN: tensor_call(in, op); break;
    case FA_WRAP: wrap(in, false); break;
    case FA_IMPORT_OWN: wrap(in, true); break;
    case FA_EXPORT: case FA_EXPORT_DROP: case FA_IMPORT: export_call(in, op); break;
    case FA_TENSOR_NEW: {
      int i = fz_u8(in) % NT;
      ct_tensor *t = ct_tensor_new();
      if (t != NULL) {
        ct_tensor_free(st.t[i]);
        st.t[i] = t;
      }
      break;
    }
    case FA_SCOPE_VAR: case FA_ERASE: {
      ct_scope *sc = st.sc[fz_u8(in) % NS];
      const char *n = names[fz_u8(in) & 3];
      if (op == FA_ERASE) {
        (void)ct_scope_erase_vars(sc, &n, 1);
        break;
      }
      size_t count = ct_scope_var_count(sc);
      bool had = ct_scope_find_local_var(sc, n) != NULL;
      ct_var *v = ct_scope_var(sc, n);
      if (v == NULL) FZ_CHECK(ct_scope_var_count(sc) == count);
      if (v != NULL && !had) FZ_CHECK(ct_var_type(v) == NULL); /* a new variable is empty */
      break;
    }
    case FA_KID_RESET: {
      ct_scope_free(st.sc[1]);
      st.sc[1] = ct_scope_new_kid(st.sc[0]);
      if (st.sc[1] == NULL) st.sc[1] = ct_scope_new_kid(st.sc[0]); /* a fault fails only one */
      FZ_CHECK(st.sc[1] != NULL);
      break;
    }
    case FA_CHAIN: {
      uint8_t depth = fz_u8(in);
      long n = depth == 255 ? 100000 : 10L * (depth % 8); /* deep chains are slow */
      ct_scope *k = st.sc[2];
      for (long i = 0; i < n && k != NULL; i++) k = ct_scope_new_kid(k);
      ct_scope_drop_kids(st.sc[2]);
      break;
    }
    case FA_OP_NEW: op_new(in); break;
    case FA_OP_RUN: {
      int i = fz_u8(in) % NO;
      run_op(i, st.sc[fz_u8(in) % NS]);
      break;
    }
    case FA_OP_FREE: {
      int i = fz_u8(in) % NO;
      if (st.op[i].op != NULL && st.op[i].owner < 0) {
        ct_op_free(st.op[i].op);
        kill_op(i);
      }
      break;
    }
    case FA_PROG_NEW: {
      int k = fz_u8(in) % NP;
      if (st.prog[k].p != NULL && st.prog[k].owner >= 0) break; /* an op's: kept */
      ct_program *p = ct_program_new();
      if (p == NULL) break;
      ct_program_free(st.prog[k].p);
      if (st.prog[k].p != NULL) kill_prog(k);
      st.prog[k] = (m_prog){p, -1};
      break;
    }
    case FA_APPEND: {
      int k = fz_u8(in) % NP;
      append(k, fz_u8(in) % NO);
      break;
    }
    case FA_SET_PROGRAM: {
      int i = fz_u8(in) % NO;
      set_program(i, fz_u8(in) % NP);
      break;
    }
    case FA_EXEC: {
      int k = fz_u8(in) % NP;
      ct_scope *sc = st.sc[fz_u8(in) % NS];
      exec(k, sc, fz_u8(in));
      break;
    }
    default: break;
  }
}

static void teardown(void) {
  for (int i = 0; i < NO; i++) {
    if (st.op[i].op != NULL && st.op[i].owner < 0) {
      ct_op_free(st.op[i].op);
      kill_op(i);
    }
  }
  for (int k = 0; k < NP; k++) {
    if (st.prog[k].p != NULL && st.prog[k].owner < 0) {
      ct_program_free(st.prog[k].p);
      kill_prog(k);
    }
  }
  for (int i = 0; i < NO; i++) FZ_CHECK(st.op[i].op == NULL); /* no ownership cycle */
  for (int k = 0; k < NP; k++) FZ_CHECK(st.prog[k].p == NULL);
  for (int k = 0; k < NX; k++) {
    if (st.ex[k] != NULL) st.ex[k]->deleter(st.ex[k]);
  }
  for (int i = 0; i < NT; i++) ct_tensor_free(st.t[i]);
  ct_scope_free(st.sc[0]);
  ct_scope_free(st.sc[2]);
  int calls = ex_deleted;
  for (int i = 0; i < st.n_recs; i++) calls += st.recs[i].calls;
  FZ_CHECK(calls == st.accepted); /* every release and deleter ran exactly once */
  check_stats();
  FZ_CHECK(live_bytes == 0 && live_blocks == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    ct_allocator a = {count_alloc, count_free, NULL};
    FZ_CHECK(ct_set_allocator(ct_cpu(), &a) == CT_OK);
    ready = 1;
  }
  memset(&st, 0, sizeof st);
  ex_deleted = 0;
  for (int i = 0; i < NO; i++) st.op[i] = (m_op){NULL, -1, -1};
  for (int k = 0; k < NP; k++) st.prog[k].owner = -1;
  st.sc[0] = ct_scope_new();
  st.sc[2] = ct_scope_new();
  st.sc[1] = st.sc[0] ? ct_scope_new_kid(st.sc[0]) : NULL;
  for (int i = 0; i < NT; i++) st.t[i] = ct_tensor_new();
  FZ_CHECK(st.sc[0] && st.sc[1] && st.sc[2] && st.t[0] && st.t[1] && st.t[2] && st.t[3]);
  fz_bytes in = {data, size};
  long fault = -1;
  for (int steps = 0; in.n > 0 && steps < 64; steps++) {
    int op = fz_u8(&in) % FA_N_OPS;
    if (op == FA_FAULT) {
      fault = fz_u8(&in) % 16;
      continue;
    }
    if (fault >= 0) ct__fault_arm(fault);
    command(&in, op);
    ct__fault_arm(-1);
    fault = -1;
    check_all();
  }
  teardown();
  return 0;
}
