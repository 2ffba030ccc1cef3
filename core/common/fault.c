/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/fault.c: the counting hook of allocation fault injection (common/fault.h). */
#include "common/fault.h"

#ifdef CORTEN_FAULT_INJECTION
_Atomic int ct__fault_armed;
static _Atomic long seen;
static _Atomic long target = -1;
static _Atomic int fired;

int ct__fault_take(void) {
  long k = atomic_fetch_add_explicit(&seen, 1, memory_order_relaxed);
  if (k != atomic_load_explicit(&target, memory_order_relaxed)) return 0;
  atomic_store_explicit(&fired, 1, memory_order_relaxed);
  return 1;
}

void ct__fault_arm(long n) {
  atomic_store(&ct__fault_armed, 0);
  atomic_store(&seen, 0);
  atomic_store(&fired, 0);
  atomic_store(&target, n);
  atomic_store(&ct__fault_armed, n >= 0);
}

long ct__fault_seen(void) { return atomic_load(&seen); }

int ct__fault_fired(void) { return atomic_load(&fired); }
#else
typedef int ct__fault_unused; /* ISO C wants a translation unit to declare something */
#endif
