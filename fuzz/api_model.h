/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz/api_model.h: the API fuzzer's (fuzz_api.c) objects, the model it keeps of them and the
 * invariants it checks after every command (api_model.c); the header comment of fuzz_api.c says
 * what they are. */
#ifndef CORTEN_FUZZ_API_MODEL_H
#define CORTEN_FUZZ_API_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <corten/corten.h>
#include <corten/dlpack.h>

#include "fuzz_util.h"

#define NT 4          /* standalone tensors */
#define NS 3          /* scopes: 0, its kid 1, another root 2 */
#define NO 6          /* op slots */
#define NP 3          /* program slots */
#define NX 4          /* DLPack export slots */
#define NREC 64       /* buffer hand-overs recorded */
#define BUF_FLOATS 64 /* an external buffer's floats */

extern const char *const names[4]; /* the scopes' variables, "a".."d" */

/* ---- The allocator under the stats: counts what it has handed out ------------------------- */
extern size_t live_bytes, live_blocks;
void *count_alloc(void *ctx, size_t size, size_t align);
void count_free(void *ctx, void *p, size_t size);

/* ---- The model ------------------------------------------------------------------------------ */
typedef struct rec { int calls; } rec; /* one hand-over of a buffer: its release calls */

/* owner: the program slot owning an op / the op slot owning a program, -1: the fuzzer; holds:
 * the program slot an op's step_program holds, -1: none. */
typedef struct m_op { ct_op *op; int owner, holds; } m_op;
typedef struct m_prog { ct_program *p; int owner; } m_prog;

typedef struct api_state {
  ct_scope *sc[NS];
  ct_tensor *t[NT];
  float buf[NT][BUF_FLOATS];
  DLManagedTensor *ex[NX];
  m_op op[NO];
  m_prog prog[NP];
  rec recs[NREC];
  int n_recs, accepted;
} api_state;
extern api_state st;

extern int ex_deleted;                           /* corten's exports deleted through
                                                    dl_export_del */
extern void (*export_deleter)(DLManagedTensor *); /* their own deleter */

/* A release callback: counts its calls, which must be one. */
void on_release(void *ctx);
/* A new hand-over record, NULL when all are taken. */
rec *new_rec(void);
/* The deleter put on corten's exports: counts, then runs theirs. */
void dl_export_del(DLManagedTensor *m);

/* A DLPack tensor of the fuzzer's own over one of its buffers (FA_IMPORT_OWN). */
typedef struct own_dl {
  DLManagedTensor m;
  int64_t shape[4];
  rec *r;
} own_dl;
void own_deleter(DLManagedTensor *m);

/* ---- Arguments ------------------------------------------------------------------------------ */
/* A tensor argument (fuzz_api.h): NULL when its variable holds another type or is out of
 * memory. */
ct_tensor *tensor_arg(fz_bytes *in);
/* A rank byte (modulo max_rank + 1), then that many extent bytes (fa_extents, modulo
 * n_extents). */
ct_ddim dims_arg(fz_bytes *in, int max_rank, int n_extents);

/* ---- Invariants ----------------------------------------------------------------------------- */
void check_stats(void);
void check_all(void);

/* What a failed call must leave of a tensor. */
typedef struct snap {
  ct_ddim dims;
  ct_dtype dtype;
  const void *data;
  bool mem, ext;
} snap;
snap take(const ct_tensor *t);
/* may_drop: the call may let go of the memory (a copy's CT_ERR_OUT_OF_MEMORY). */
void same(const ct_tensor *t, const snap *a, bool may_drop);

/* The variables of a scope around an op run. */
typedef struct scope_snap {
  bool is[4];
  snap s[4];
} scope_snap;
scope_snap take_scope(ct_scope *sc);
/* An external output keeps its buffer; failed: every variable keeps its dims and dtype. */
void after_run(ct_scope *sc, const scope_snap *a, bool failed);

#endif /* CORTEN_FUZZ_API_MODEL_H */
