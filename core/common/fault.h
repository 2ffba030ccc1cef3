/* SPDX-License-Identifier: Apache-2.0 */
/* core/common/fault.h: allocation fault injection. In a build with CORTEN_FAULT_INJECTION (on
 * by default with CORTEN_SANITIZE and CORTEN_FUZZ) every allocation corten makes asks ct__fault
 * first, and the one chosen by ct__fault_arm fails as if memory had run out. Without the option
 * ct__fault is a constant 0 and the functions below are not built.
 *
 * Not public: the fault suite (tests/test_alloc_faults.c) and the API fuzzer link the static
 * library and call these directly. The count is process-wide (allocations on worker threads
 * count too). */
#ifndef CORTEN_CORE_FAULT_H
#define CORTEN_CORE_FAULT_H

#ifdef CORTEN_FAULT_INJECTION
#include <stdatomic.h>

extern _Atomic int ct__fault_armed;

/* Counts one allocation while armed; 1 when it is the one to fail. */
int ct__fault_take(void);

static inline int ct__fault(void) {
  return atomic_load_explicit(&ct__fault_armed, memory_order_relaxed) && ct__fault_take();
}

/* Fails the allocation n from now (0: the next one), once; later ones succeed. n < 0 disarms. */
void ct__fault_arm(long n);

/* Allocations counted since the last ct__fault_arm, and whether the chosen one failed. */
long ct__fault_seen(void);
int ct__fault_fired(void);
#else
static inline int ct__fault(void) { return 0; }
#endif

#endif /* CORTEN_CORE_FAULT_H */
