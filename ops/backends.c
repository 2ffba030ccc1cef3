/* ops/backends.c: the registration table of the built-in ops, and the one file that names the
 * backends.
 *
 * The op types come from ops/defs/ (slots, attributes, infer-shape; no kernels); each backend
 * lists its kernels in tables (ops/cpu/cpu_kernels.h, ops/cuda/cuda_kernels.h). The kernels that
 * never touch element data (reshape shares memory, recurrent runs its step program at the op's
 * place) serve every backend. A new backend adds its tables here and nowhere else.
 *
 * Called once, by the registry, on first use. Out of memory leaves an op type unregistered
 * (ct_op_new then reports it missing) and its kernels are skipped; any other failure is a mistake
 * in corten's own tables, so it aborts. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/defs.h"
#ifdef CORTEN_HAVE_CUDA
#include "ops/cuda/cuda_kernels.h"
#endif

static const ct__def_table *const op_types[] = {
    &ct__elementwise_defs, &ct__matmul_defs, &ct__random_defs,
    &ct__reduce_defs,      &ct__shape_defs,  &ct__recurrent_defs,
};

static const ct__kernel_set any_place_sets[] = {
    {"reshape", CT__KERNELS([0] = ct__reshape_kernel)},
    {"recurrent", CT__KERNELS([0] = ct__recurrent_kernel)},
};
static const ct__kernel_table any_place = CT__TABLE(any_place_sets);

static const struct {
  ct_device_kind kind;
  const ct__kernel_table *table;
} kernel_tables[] = {
    {CT_DEVICE_CPU, &ct__cpu_elementwise},
    {CT_DEVICE_CPU, &ct__cpu_matmul},
    {CT_DEVICE_CPU, &ct__cpu_random},
    {CT_DEVICE_CPU, &ct__cpu_reduce},
    {CT_DEVICE_CPU, &ct__cpu_shape},
    {CT_DEVICE_CPU, &any_place},
#ifdef CORTEN_HAVE_CUDA
    {CT_DEVICE_CUDA, &ct__cuda_elementwise},
    {CT_DEVICE_CUDA, &ct__cuda_matmul},
    {CT_DEVICE_CUDA, &ct__cuda_random},
    {CT_DEVICE_CUDA, &ct__cuda_reduce},
    {CT_DEVICE_CUDA, &ct__cuda_shape},
    {CT_DEVICE_CUDA, &any_place},
#endif
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void register_types(const ct__def_table *t) {
  for (size_t i = 0; i < t->n; i++) {
    if (ct__op_register(&t->v[i]) == CT_OK || ct_last_status() == CT_ERR_OUT_OF_MEMORY) continue;
    fprintf(stderr, "corten: registering built-in op '%s' failed: %s\n", t->v[i].type,
            ct_last_error());
    abort();
  }
}

static void register_kernels(ct_device_kind kind, const ct__kernel_table *t) {
  for (size_t i = 0; i < t->n; i++) {
    const ct__kernel_set *k = &t->v[i];
    for (int d = 0; d < CT__N_DTYPES; d++) {
      if (k->by_dtype[d] == NULL) continue;
      if (ct__kernel_register(k->type, kind, (ct_dtype)d, k->by_dtype[d]) == CT_OK) continue;
      /* The op type itself was not registered for lack of memory. */
      if (ct_last_status() == CT_ERR_OUT_OF_MEMORY || ct_last_status() == CT_ERR_NOT_FOUND) break;
      fprintf(stderr, "corten: registering a %s kernel of '%s' failed: %s\n",
              kind == CT_DEVICE_CPU ? "CPU" : "CUDA", k->type, ct_last_error());
      abort();
    }
  }
}

void ct__register_builtin_ops(void) {
  for (size_t i = 0; i < COUNT(op_types); i++) register_types(op_types[i]);
  for (size_t i = 0; i < COUNT(kernel_tables); i++) {
    register_kernels(kernel_tables[i].kind, kernel_tables[i].table);
  }
}
