/* SPDX-License-Identifier: Apache-2.0 */
/* ops/prep.c: running an op bound to the variables of a scope (ops/prep_bind.c binds it).
 * Shared by ct_op_run (bind, run once, unbind) and the executor (bind once, run many times). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"
#include "ops/kernel.h"
#include "memory/memory_impl.h"
#include "ops/profile_impl.h"

const char *ct_kernel_in_name(const ct_kernel_ctx *c, size_t slot, size_t i) {
  const ct__wiring *w = &c->op->in[slot];
  return i < w->n ? w->names[i] : "";
}

const char *ct_kernel_out_name(const ct_kernel_ctx *c, size_t slot, size_t i) {
  const ct__wiring *w = &c->op->out[slot];
  return i < w->n ? w->names[i] : "";
}

ct_status ct_kernel_fail(const ct_kernel_ctx *c, ct_status s, const char *fmt, ...) {
  char label[CT__OP_LABEL_CAP], text[400];
  va_list ap;
  va_start(ap, fmt);
  if (vsnprintf(text, sizeof text, fmt, ap) < 0) text[0] = '\0';
  va_end(ap);
  return ct__error(s, "%s: %s", ct__op_label(c->op, label, sizeof label), text);
}

/* The slot and index of variable k among the inputs (or outputs), for messages. */
static void locate(const ct__prep *p, bool output, uint32_t k, size_t *slot, size_t *i) {
  const ct__opdef *d = p->op->def;
  const uint32_t *pos = output ? p->ctx.out_pos : p->ctx.in_pos;
  size_t n = output ? d->n_out : d->n_in;
  for (size_t s = 0; s < n; s++) {
    if (k < pos[s + 1]) {
      *slot = s;
      *i = k - pos[s];
      return;
    }
  }
  *slot = *i = 0;
}

/* Whether memory at `have` can be read by a kernel running at `run`. */
static inline bool place_ok(ct_place have, ct_place run) {
  if (CT__LIKELY(have.kind == CT_DEVICE_CPU && run.kind == CT_DEVICE_CPU)) return true;
  if (have.kind == run.kind) return have.kind != CT_DEVICE_CUDA || have.device == run.device;
  /* Page-locked host memory is host memory to a CPU kernel, and the other way round. */
  return have.kind != CT_DEVICE_CUDA && run.kind != CT_DEVICE_CUDA;
}

CT__COLD static ct_status input_error(const ct__prep *p, uint32_t k, const ct_tensor *t) {
  char label[CT__OP_LABEL_CAP], a[CT__PLACE_STR_CAP], b[CT__PLACE_STR_CAP];
  size_t slot, i;
  locate(p, false, k, &slot, &i);
  const char *sname = p->op->def->in[slot].name, *vname = ct_kernel_in_name(&p->ctx, slot, i);
  ct__op_label(p->op, label, sizeof label);
  if (t == NULL) {
    ct_var *v = p->vars[k];
    if (ct_var_type(v) == NULL) {
      return ct__error(CT_ERR_UNINITIALIZED,
                       "%s: input %s variable '%s' holds nothing: write a tensor into it first",
                       label, sname, vname);
    }
    return ct__error(CT_ERR_TYPE_MISMATCH, "%s: input %s variable '%s' holds %s, not a tensor",
                     label, sname, vname, ct_var_type(v)->name);
  }
  if (t->block == NULL) {
    return ct__error(CT_ERR_UNINITIALIZED,
                     "%s: input %s variable '%s' holds a tensor without memory: run the op that "
                     "writes it first, or give it data",
                     label, sname, vname);
  }
  if (!place_ok(t->block->place, p->ctx.place)) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "%s: input %s variable '%s' is on %s but the op runs on %s: copy it there "
                     "with ct_tensor_copy",
                     label, sname, vname, ct_place_str(t->block->place, a, sizeof a),
                     ct_place_str(p->ctx.place, b, sizeof b));
  }
  char what[CT__OP_LABEL_CAP + 160];
  snprintf(what, sizeof what, "%s: input %s variable '%s'", label, sname, vname);
  return ct__tensor_check_data(t, what);
}

CT__COLD static ct_status output_error(const ct__prep *p, uint32_t k) {
  char label[CT__OP_LABEL_CAP];
  size_t slot, i;
  locate(p, true, k, &slot, &i);
  ct_var *v = p->vars[p->n_in_vars + k];
  const ct_type *held = ct_var_type(v);
  return ct__error(CT_ERR_TYPE_MISMATCH,
                   "%s: output %s variable '%s' holds %s, not a tensor: clear it or wire the op "
                   "to another variable",
                   ct__op_label(p->op, label, sizeof label), p->op->def->out[slot].name,
                   ct_kernel_out_name(&p->ctx, slot, i), held ? held->name : "nothing");
}

CT__COLD static ct_status no_kernel(const ct__prep *p, ct_dtype dtype) {
  char label[CT__OP_LABEL_CAP], place[CT__PLACE_STR_CAP], have[256];
  const ct__opdef *d = p->op->def;
  size_t pos = 0;
  have[0] = '\0';
  for (int k = 1; k < CT__N_KINDS; k++) {
    for (int t = 0; t < CT__N_DTYPES; t++) {
      if (atomic_load(&((ct__opdef *)d)->kernels[k][t]) == NULL || pos + 1 >= sizeof have) continue;
      const char *kn = k == CT_DEVICE_CPU ? "cpu" : k == CT_DEVICE_CUDA ? "cuda" : "cuda_host";
      int w = snprintf(have + pos, sizeof have - pos, "%s%s/%s", pos ? ", " : "",
                       t ? ct_dtype_name((ct_dtype)t) : "any", kn);
      if (w > 0) pos += (size_t)w;
    }
  }
  return ct__error(CT_ERR_UNSUPPORTED, "%s has no kernel for %s on %s (kernels: %s)",
                   ct__op_label(p->op, label, sizeof label), ct_dtype_name(dtype),
                   ct_place_str(p->ctx.place, place, sizeof place), pos ? have : "none");
}

static inline ct_kernel_fn find_kernel(const ct__opdef *d, ct_device_kind kind, ct_dtype dt) {
  ct__opdef *m = (ct__opdef *)d;
  ct_kernel_fn fn = atomic_load_explicit(&m->kernels[kind][dt], memory_order_acquire);
  if (fn == NULL) fn = atomic_load_explicit(&m->kernels[kind][0], memory_order_acquire);
  if (fn == NULL && kind == CT_DEVICE_CUDA_HOST) return find_kernel(d, CT_DEVICE_CPU, dt);
  return fn;
}

/* Whether blocks a and b cover common bytes (one place, overlapping addresses). */
static inline bool blocks_overlap(const ct__block *a, const ct__block *b) {
  if (a->place.kind != b->place.kind || a->place.device != b->place.device) return false;
  uintptr_t a0 = (uintptr_t)a->ptr, b0 = (uintptr_t)b->ptr;
  return a0 < b0 + b->nbytes && b0 < a0 + a->nbytes;
}

/* Whether output tensor o's memory is an input's: the same block (the same variable, or a view
 * of one), or, where a caller's buffer is involved, common bytes (two ct_tensor_wrap calls over
 * one buffer make two blocks over the same memory). */
static inline bool aliases_input(const ct__prep *p, const ct_tensor *o) {
  const ct__block *ob = o->block;
  if (ob == NULL) return false;
  for (uint32_t j = 0; j < p->n_in_vars; j++) {
    const ct_tensor *t = p->tensors[j];
    if (t == NULL || t->block == NULL) continue;
    if (t->block == ob) return true;
    if ((t->block->external || ob->external) && blocks_overlap(t->block, ob)) return true;
  }
  return false;
}

/* Whether an input of p holds a caller's buffer (then an output's memory may overlap it without
 * sharing its block). */
static inline bool inputs_external(const ct__prep *p) {
  for (uint32_t j = 0; j < p->n_in_vars; j++) {
    const ct_tensor *t = p->tensors[j];
    if (t != NULL && t->block != NULL && t->block->external) return true;
  }
  return false;
}

/* Whether output o is written into a block of its own (run_aliased): its memory is an input's,
 * or an op made a view of its block that another variable still holds (reshape's output and its
 * input: writing one in place would change the other behind its name). ext_in: whether an input
 * holds a caller's buffer. A block no longer shared forgets the view. */
static inline bool needs_own_block(const ct__prep *p, ct_tensor *o, bool ext_in) {
  ct__block *b = o->block;
  if (b == NULL) return false;
  if (!ct__block_unique(b)) {
    return atomic_load_explicit(&b->op_view, memory_order_relaxed) || aliases_input(p, o);
  }
  if (atomic_load_explicit(&b->op_view, memory_order_relaxed)) {
    atomic_store_explicit(&b->op_view, false, memory_order_relaxed);
  }
  return (b->external || ext_in) && aliases_input(p, o);
}

#define CT__ALIAS_STACK 8

/* Runs the kernel while an output shares memory with an input (an in-place op, or an output
 * that is a view of an input, as reshape leaves it): the inputs are read through views of their
 * blocks and each such output gets a block of its own, so no kernel reads what it overwrites.
 * An external output keeps its buffer: the result is computed aside and copied into it (or
 * CT_ERR_EXTERNAL_BUFFER when it does not fit). On failure every output gets its old memory and
 * dims back. */
/* A failed infer-shape or kernel leaves a last error that names the op, whatever the code did:
 * a message it recorded without the op's name (ct_tensor_resize's, say) gets the op's label in
 * front; a failure it returned without recording any gets a sentence of its own, rather than
 * the stale message of some earlier, unrelated failure. */
CT__COLD static ct_status name_failure(const ct__prep *p, ct_status s, uint64_t seen,
                                       const char *stage) {
  char label[CT__OP_LABEL_CAP];
  ct__op_label(p->op, label, sizeof label);
  if (ct__error_count() == seen || ct_last_status() != s) {
    char place[32];
    const char *out = p->n_out_vars > 0 ? ct_kernel_out_name(&p->ctx, 0, 0) : "";
    return ct__error(s,
                     "%s: its %s (%s, %s) failed with '%s' but recorded no message; output %s "
                     "variable '%s' is left as it was: report failures with ct_kernel_fail",
                     label, stage, ct_place_str(p->ctx.place, place, sizeof place),
                     ct_dtype_name(p->ctx.dtype), ct_status_str(s),
                     p->op->def->n_out > 0 ? p->op->def->out[0].name : "-", out);
  }
  const char *text = ct_last_error();
  size_t n = strlen(label);
  if (strncmp(text, label, n) == 0 && text[n] == ':') return s;
  char copy[400];
  snprintf(copy, sizeof copy, "%s", text);
  return ct__error(s, "%s: %s", label, copy);
}

/* Key entries k in [from, to): the tensors as they are now (extents of every rank, so that a
 * failure can give them back). */
CT__COLD static void key_take(ct__prep *p, uint32_t from, uint32_t to) {
  for (uint32_t k = from; k < to; k++) {
    const ct_tensor *t = p->tensors[k];
    ct__infer_key *e = &p->key[k];
    *e = (ct__infer_key){.numel = t->numel, .dtype = t->dtype, .rank = t->dims.rank};
    for (int i = 0; i < t->dims.rank; i++) p->key_d[k * CT_MAX_RANK + i] = t->dims.d[i];
  }
}

/* Whether the extents of tensor t (rank 2 or more) are those of key entry k. */
static bool key_same_extents(const ct__prep *p, uint32_t k, const ct_tensor *t) {
  const int64_t *d = p->key_d + (size_t)k * CT_MAX_RANK;
  for (int i = 0; i < t->dims.rank; i++) {
    if (d[i] != t->dims.d[i]) return false;
  }
  return true;
}

/* Whether tensor t (not NULL) still has the dtype and dims key entry k holds. Up to rank 1,
 * rank and numel say what the dims are (numel is the one extent of a rank-1 tensor;
 * ct__tensor_set_dims sets both together); above, the extents are compared. The object needs
 * no compare: a variable holds its tensor in place, so entry k describes the same object on
 * every run, and only its state can change (a cleared and refilled variable included). */
static inline bool key_same(const ct__prep *p, uint32_t k, const ct_tensor *t) {
  const ct__infer_key *e = &p->key[k];
  if (e->numel != t->numel || e->dtype != t->dtype || e->rank != t->dims.rank) {
    return false;
  }
  return e->rank <= 1 || key_same_extents(p, k, t);
}

/* Runs infer-shape (unless reuse: its last result still stands), then the kernel; a failure
 * names the op (name_failure). */
static inline ct_status run_stages(ct__prep *p, ct_kernel_fn fn, const uint64_t *errors,
                                   bool reuse) {
  const ct_infer_shape_fn infer = reuse ? NULL : p->op->def->infer_shape;
  uint64_t seen = *errors;
  ct_status s = CT_OK;
  if (infer != NULL) {
    s = infer(&p->ctx);
    if (CT__UNLIKELY(s != CT_OK)) return name_failure(p, s, seen, "infer-shape");
    if (p->keyed) key_take(p, p->n_in_vars, p->n_in_vars + p->n_out_vars);
  }
  s = fn(&p->ctx);
  if (CT__UNLIKELY(s != CT_OK)) return name_failure(p, s, seen, "kernel");
  return CT_OK;
}

CT__COLD static ct_status run_aliased(ct__prep *p, ct_kernel_fn fn, bool reuse) {
  uint32_t n_in = p->n_in_vars, n_out = p->n_out_vars;
  ct_tensor stack[2 * CT__ALIAS_STACK];
  ct_tensor *views = stack, *saved = stack + CT__ALIAS_STACK;
  if (n_in > CT__ALIAS_STACK || n_out > CT__ALIAS_STACK) {
    views = ct__calloc((size_t)n_in + n_out, sizeof *views);
    if (views == NULL) {
      char label[CT__OP_LABEL_CAP];
      return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory",
                       ct__op_label(p->op, label, sizeof label));
    }
    saved = views + n_in;
  }
  for (uint32_t k = 0; k < n_in; k++) {
    ct_tensor *t = p->tensors[k];
    if (t == NULL) continue;
    views[k] = *t;
    ct__block_retain(t->block);
    p->tensors[k] = &views[k];
  }
  bool ext_in = inputs_external(p);
  for (uint32_t k = 0; k < n_out; k++) {
    ct_tensor *t = p->tensors[n_in + k];
    saved[k].block = NULL;
    if (t == NULL || !needs_own_block(p, t, ext_in)) continue;
    saved[k] = *t; /* the output's reference moves here */
    t->block = NULL;
    t->offset = 0;
  }
  ct_status s = run_stages(p, fn, &ct__errors_recorded, reuse);
  for (uint32_t k = 0; k < n_out; k++) {
    if (saved[k].block == NULL) continue;
    ct_tensor *t = p->tensors[n_in + k];
    if (s == CT_OK && saved[k].block->external) {
      /* Into the caller's buffer, in place (the copy's rule for an external destination). */
      ct_tensor ext = saved[k];
      ct_status c = ct_tensor_copy(&ext, t, ext.block->place);
      if (c == CT_OK) saved[k] = ext;
      s = c;
      ct__block_release(t->block);
      *t = saved[k];
    } else if (s == CT_OK) {
      ct__block_release(saved[k].block);
    } else {
      ct__block_release(t->block);
      *t = saved[k];
    }
  }
  for (uint32_t k = 0; k < n_in; k++) {
    if (p->tensors[k] == NULL) continue;
    ct__block_release(views[k].block);
    p->tensors[k] = (ct_tensor *)ct_var_get_tensor(p->vars[k]);
  }
  if (views != stack) free(views);
  return s;
}

/* Gives each output the dims it had before the run (ct__prep_run saved their rank and extents;
 * the extents past the rank are zeros again). */
CT__COLD static void restore_dims(ct__prep *p) {
  uint32_t n_in = p->n_in_vars;
  for (uint32_t k = 0; k < p->n_out_vars; k++) {
    ct_tensor *t = p->tensors[n_in + k];
    if (t == NULL) continue;
    ct_ddim dims = {.rank = p->out_dims[k].rank, .d = {0}};
    for (int i = 0; i < dims.rank; i++) dims.d[i] = p->out_dims[k].d[i];
    ct__tensor_set_dims(t, dims, ct_ddim_numel(dims));
  }
}

ct_status ct__prep_run(ct__prep *p) { return ct__prep_run_counted(p, &ct__errors_recorded); }

/* Whether input tensor t can be read by a kernel at p's place: memory covering its dims and
 * dtype, on that place (input_error says which is missing). */
static inline bool input_usable(const ct__prep *p, const ct_tensor *t) {
  return ct__tensor_data_ok(t) && place_ok(t->block->place, p->ctx.place);
}

/* The tensor variable v holds, or NULL (without the fallback of ct_var_get_tensor, which would
 * record an error: the general path reports it). */
static inline ct_tensor *held_tensor(const ct_var *v) {
  const ct__var_head *h = (const ct__var_head *)(const void *)v;
  return h->type == &ct_tensor_type ? h->obj : NULL;
}

/* The steady state of a keyed prep whose key is valid: when every tensor is still what the key
 * holds, no output shares memory with an input, and a kernel is registered for the dtype of the
 * last run (the same dtype: the key covers what chose it), binds the tensors and returns that
 * kernel, having checked the inputs as the general path does. NULL otherwise, with nothing
 * recorded: the general path (run_general) then does the run and reports what is wrong. */
#if CT__GNU_ATTRIBUTES
__attribute__((always_inline))
#endif
static inline ct_kernel_fn reused_kernel(ct__prep *p) {
  uint32_t n_in = p->n_in_vars, n = n_in + p->n_out_vars;
  if (p->self_alias) return NULL;
  for (uint32_t k = 0; k < n_in; k++) {
    ct_tensor *t = held_tensor(p->vars[k]);
    if (t == NULL || !key_same(p, k, t) || !input_usable(p, t)) return NULL;
    p->tensors[k] = t;
    /* The kernel reads the data next: asked for now, the loads of all the tensors overlap
     * (an op on a few elements spends most of its time waiting on memory). */
    __builtin_prefetch(ct__tensor_ptr(t));
  }
  bool ext_in = false;
  for (uint32_t k = 0; k < n_in; k++) ext_in |= p->tensors[k]->block->external;
  for (uint32_t k = n_in; k < n; k++) {
    ct_tensor *t = held_tensor(p->vars[k]);
    if (t == NULL || !key_same(p, k, t)) return NULL;
    p->tensors[k] = t;
    if (t->block == NULL) continue;
    if (needs_own_block(p, t, ext_in)) return NULL;
    __builtin_prefetch(ct__tensor_ptr(t), 1);
  }
  return find_kernel(p->op->def, p->ctx.place.kind, p->ctx.dtype);
}

/* Gives the outputs the dims the key holds for them (they had them before a reused run). */
CT__COLD static void restore_key_dims(ct__prep *p) {
  for (uint32_t k = 0; k < p->n_out_vars; k++) {
    uint32_t j = p->n_in_vars + k;
    const ct__infer_key *e = &p->key[j];
    ct_ddim *dims = &p->out_dims[k];
    dims->rank = e->rank;
    for (int i = 0; i < e->rank; i++) dims->d[i] = p->key_d[j * CT_MAX_RANK + i];
  }
  restore_dims(p);
}

static ct_status run_general(ct__prep *p, const uint64_t *errors);

ct_status ct__prep_run_counted(ct__prep *p, const uint64_t *errors) {
  if (p->keyed && p->key_gen == p->op->gen) {
    ct_kernel_fn fn = reused_kernel(p);
    if (CT__LIKELY(fn != NULL)) {
      uint64_t seen = *errors;
      ct_status s = fn(&p->ctx);
      if (CT__LIKELY(s == CT_OK)) return CT_OK;
      s = name_failure(p, s, seen, "kernel");
      restore_key_dims(p);
      p->key_gen = 0;
      return s;
    }
  }
  return run_general(p, errors);
}

/* A run of any prep: checks, kernel choice, infer-shape unless its key holds, kernel. */
static ct_status run_general(ct__prep *p, const uint64_t *errors) {
  const ct__opdef *d = p->op->def;
  uint32_t n_in = p->n_in_vars, n = n_in + p->n_out_vars;
  bool aliased = p->self_alias;
  /* Whether infer-shape's last result stands: the same op generation, and (below) every tensor
   * as the key holds it. */
  bool reuse = p->keyed && p->key_gen == p->op->gen;
  bool ext_in = false;
  for (uint32_t k = 0; k < n_in; k++) {
    if (p->any_type[k]) {
      p->tensors[k] = NULL;
      continue;
    }
    ct_tensor *t = (ct_tensor *)ct_var_get_tensor(p->vars[k]);
    if (CT__UNLIKELY(t == NULL || !input_usable(p, t))) return input_error(p, k, t);
    p->tensors[k] = t;
    reuse = reuse && key_same(p, k, t);
    ext_in |= t->block->external;
  }
  for (uint32_t k = n_in; k < n; k++) {
    if (p->any_type[k]) {
      p->tensors[k] = NULL;
      continue;
    }
    ct_tensor *t = ct_var_tensor(p->vars[k]);
    if (CT__UNLIKELY(t == NULL)) return output_error(p, k - n_in);
    p->tensors[k] = t;
    reuse = reuse && key_same(p, k, t);
    /* A block held once is held by this tensor alone, so it is an input's only when this
     * variable is also an input's, which binding found (self_alias), or when a caller's buffer
     * is involved (needs_own_block compares addresses then). */
    aliased |= needs_own_block(p, t, ext_in);
  }
  ct_dtype dtype = CT_FLOAT32;
  if (d->dtype_attr >= 0) {
    ct_status s = ct__k_attr_dtype(&p->ctx, (size_t)d->dtype_attr, &dtype);
    if (CT__UNLIKELY(s != CT_OK)) return s;
  } else if (n_in > 0 && p->tensors[0] != NULL) {
    dtype = p->tensors[0]->dtype;
  }
  ct_kernel_fn fn = find_kernel(d, p->ctx.place.kind, dtype);
  if (CT__UNLIKELY(fn == NULL)) return no_kernel(p, dtype);
  p->ctx.dtype = dtype;
  /* A failing op leaves each output's dims as they were (ops.md): infer-shape resizes the
   * outputs before the kernel can fail, so their dims are remembered here and given back on
   * failure, whatever the kernel, on both paths. */
  for (uint32_t k = n_in; k < n; k++) {
    const ct_tensor *t = p->tensors[k];
    if (t == NULL) continue;
    ct_ddim *saved = &p->out_dims[k - n_in]; /* the rank and (at least) the extents it covers */
    if (CT__LIKELY(t->dims.rank <= 3)) {
      memcpy(saved, &t->dims, offsetof(ct_ddim, d) + 3 * sizeof(int64_t)); /* two moves */
    } else {
      *saved = t->dims;
    }
  }
  if (!reuse && p->keyed) {
    /* The inputs as infer-shape is about to read them: taken before the run, since an in-place
     * op changes its inputs; the outputs are taken after infer-shape (run_stages). The key is
     * not valid until the run succeeds. */
    p->key_gen = 0;
    key_take(p, 0, n_in);
  }
  ct_status s;
  if (CT__UNLIKELY(aliased)) {
    s = run_aliased(p, fn, reuse);
  } else {
    s = run_stages(p, fn, errors, reuse);
  }
  if (CT__UNLIKELY(s != CT_OK)) {
    p->key_gen = 0;
    restore_dims(p);
  } else if (!reuse && p->keyed) {
    p->key_gen = p->op->gen;
  }
  return s;
}

const char *ct__prep_namer(const void *arg, const void *tensor, const char **op) {
  const ct__prep *p = arg;
  *op = p->op->def->type;
  for (uint32_t k = 0; tensor != NULL && k < p->n_in_vars + p->n_out_vars; k++) {
    if (p->tensors[k] == tensor) return ct_var_name(p->vars[k]);
  }
  return NULL;
}

ct_status ct_op_run(const ct_op *op, ct_scope *scope, ct_place place) {
  ct__prep p;
  ct_status s = ct__prep_init(&p, op, scope, place, NULL, NULL);
  if (s != CT_OK) return s;
  p.keyed = false; /* one run: nothing to reuse, so nothing to record */
  bool observed = atomic_load_explicit(&ct__observed, memory_order_relaxed);
  if (CT__UNLIKELY(observed)) ct__memory_set_namer(ct__prep_namer, &p);
  if (CT__UNLIKELY(ct__prof_on()) && ct__prof_records()) {
    ct__prof_mark m;
    ct__prof_mark_now(&m, place);
    s = ct__prep_run(&p);
    ct__prof_op_end(&m, &p, s);
  } else {
    s = ct__prep_run(&p);
  }
  if (CT__UNLIKELY(observed)) ct__memory_set_namer(NULL, NULL);
  ct__prep_destroy(&p);
  return s;
}
