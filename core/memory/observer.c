/* SPDX-License-Identifier: Apache-2.0 */
/* core/memory/observer.c: allocation observers (ct_memory_set_observer, corten/memory.h).
 *
 * Off, a block allocation or free pays one relaxed load of ct__observed. On, ct__observe asks
 * the calling thread's namer (set by ops/ while an op runs) which variable holds the tensor the
 * block is for, and calls the observer. */
#include <corten/memory.h>

#include "memory/memory_impl.h"

_Atomic bool ct__observed;
static ct_memory_observer _Atomic observer_fn;
static void *_Atomic observer_arg;

static _Thread_local ct__alloc_namer namer;
static _Thread_local const void *namer_arg;

void ct_memory_set_observer(ct_memory_observer fn, void *arg) {
  atomic_store_explicit(&ct__observed, false, memory_order_seq_cst);
  atomic_store_explicit(&observer_fn, fn, memory_order_seq_cst);
  atomic_store_explicit(&observer_arg, arg, memory_order_seq_cst);
  atomic_store_explicit(&ct__observed, fn != NULL, memory_order_seq_cst);
}

void ct__memory_set_namer(ct__alloc_namer fn, const void *arg) {
  namer = fn;
  namer_arg = arg;
}

void ct__observe(ct__block *b, bool alloc, const void *tensor) {
  ct_memory_observer fn = atomic_load_explicit(&observer_fn, memory_order_acquire);
  void *arg = atomic_load_explicit(&observer_arg, memory_order_acquire);
  if (fn == NULL) return;
  ct_memory_event e = {.alloc = alloc, .place = b->place, .bytes = b->nbytes};
  if (namer != NULL) e.var = namer(namer_arg, alloc ? tensor : NULL, &e.op);
  fn(arg, &e);
}
