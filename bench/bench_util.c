/* SPDX-License-Identifier: Apache-2.0 */
/* bench/bench_util.c: see bench_util.h. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <corten/corten.h>

#include "bench_torch.h"
#include "bench_util.h"

void bench_set_threads(int n) {
  ct_set_num_threads(n);
  openblas_set_num_threads(n);
#ifdef CORTEN_BENCH_TORCH
  tb_set_threads(n);
#endif
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median_ns(void (*fn)(void *arg, size_t iters), void *arg, size_t iters, int reps) {
  if (reps < 1) reps = 1;
  double *t = malloc((size_t)reps * sizeof *t);
  if (t == NULL) return NAN;
  fn(arg, iters); /* warm-up: caches, branch predictors, allocator pools */
  for (int r = 0; r < reps; r++) {
    double t0 = now_ns();
    fn(arg, iters);
    t[r] = (now_ns() - t0) / (double)iters;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double m = t[reps / 2];
  free(t);
  return m;
}

void bench_median_multi_ns(int n, void (*const *fns)(void *arg, size_t iters), void *const *args,
                           size_t iters, int reps, double *out) {
  if (reps < 1) reps = 1;
  double *t = malloc((size_t)n * (size_t)reps * sizeof *t);
  for (int i = 0; i < n; i++) out[i] = fns[i] == NULL ? BENCH_NOT_INSTALLED : NAN;
  if (t == NULL) return;
  for (int i = 0; i < n; i++) {
    if (fns[i] != NULL) fns[i](args[i], iters); /* warm-up */
  }
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < n; i++) {
      if (fns[i] == NULL) continue;
      double t0 = now_ns();
      fns[i](args[i], iters);
      t[i * reps + r] = (now_ns() - t0) / (double)iters;
    }
  }
  for (int i = 0; i < n; i++) {
    if (fns[i] == NULL) continue;
    qsort(t + i * reps, (size_t)reps, sizeof *t, cmp_double);
    out[i] = t[i * reps + reps / 2];
  }
  free(t);
}

/* ---- The result table ----------------------------------------------------------------------- */

#define MAX_ROWS 128

typedef struct row {
  char name[96], baseline[96], unit[24], note[64];
  double corten, base;
  int skipped;
} row;

static row rows[MAX_ROWS];
static int n_rows;

static row *new_row(const char *name) {
  if (n_rows == MAX_ROWS) {
    fprintf(stderr, "bench: more than %d rows\n", MAX_ROWS);
    exit(2);
  }
  row *r = &rows[n_rows++];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  return r;
}

static void print_row(const row *r) {
  if (r->skipped) {
    printf("%-44s %s\n", r->name, r->note);
    return;
  }
  char c[32], b[32], q[16];
  if (isfinite(r->corten)) {
    snprintf(c, sizeof c, "%.4g", r->corten);
  } else {
    snprintf(c, sizeof c, "NO FIGURE");
  }
  if (r->base > 0 && isfinite(r->base)) {
    snprintf(b, sizeof b, "%.4g", r->base);
  } else if (r->base == BENCH_NOT_INSTALLED) {
    snprintf(b, sizeof b, "baseline not installed");
  } else {
    snprintf(b, sizeof b, "NO FIGURE");
  }
  if (isfinite(r->corten) && r->base > 0 && isfinite(r->base)) {
    snprintf(q, sizeof q, "%.2f", r->corten / r->base);
  } else {
    snprintf(q, sizeof q, "n/a");
  }
  printf("%-44s %10s | %-34s %10s | %6s | %s\n", r->name, c, r->baseline, b, q, r->unit);
  fflush(stdout);
}

void bench_record(const char *name, double corten, const char *baseline, double baseline_value,
                  const char *unit) {
  row *r = new_row(name);
  snprintf(r->baseline, sizeof r->baseline, "%s", baseline);
  snprintf(r->unit, sizeof r->unit, "%s", unit);
  r->corten = corten;
  r->base = baseline_value;
  print_row(r);
}

void bench_row(const char *name, double corten_ns, const char *baseline, double baseline_ns) {
  bench_record(name, corten_ns, baseline, baseline_ns, "ns/op");
}

void bench_skip(const char *name, const char *reason) {
  row *r = new_row(name);
  r->skipped = 1;
  snprintf(r->note, sizeof r->note, "%s", reason);
  print_row(r);
}

/* Writes s as a JSON string. The names are ours (ASCII, no control characters); quotes and
 * backslashes are escaped all the same. */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double v) {
  if (isfinite(v)) {
    fprintf(f, "%.6g", v);
  } else {
    fputs("null", f);
  }
}

int bench_finish(const char *json_path, const bench_cfg *cfg) {
  int missing = 0;
  for (int i = 0; i < n_rows; i++) {
    if (!rows[i].skipped && !isfinite(rows[i].corten)) missing++;
  }
  printf("\n%d rows, %d without a corten figure. ratio = corten / baseline (for times and "
         "memory, below 1 is better for corten).\n",
         n_rows, missing);
  if (json_path == NULL) return missing;
  FILE *f = fopen(json_path, "w");
  if (f == NULL) {
    perror(json_path);
    return missing + 1;
  }
  fprintf(f, "{\n  \"mode\": \"%s\",\n  \"reps\": %d,\n  \"rows\": [\n", cfg->quick ? "quick" : "full",
          cfg->reps);
  for (int i = 0; i < n_rows; i++) {
    const row *r = &rows[i];
    fputs("    {\"name\": ", f);
    json_str(f, r->name);
    if (r->skipped) {
      fputs(", \"skipped\": ", f);
      json_str(f, r->note);
    } else {
      int have_base = r->base > 0 && isfinite(r->base);
      fputs(", \"corten\": ", f);
      json_num(f, r->corten);
      fputs(", \"baseline_name\": ", f);
      json_str(f, r->baseline);
      fputs(", \"baseline\": ", f);
      if (have_base) {
        json_num(f, r->base);
      } else if (r->base == BENCH_NOT_INSTALLED) {
        json_str(f, "baseline not installed");
      } else {
        fputs("null", f);
      }
      fputs(", \"ratio\": ", f);
      json_num(f, have_base ? r->corten / r->base : NAN);
      fputs(", \"unit\": ", f);
      json_str(f, r->unit);
    }
    fprintf(f, "}%s\n", i + 1 < n_rows ? "," : "");
  }
  fputs("  ]\n}\n", f);
  if (fclose(f) != 0) {
    perror(json_path);
    return missing + 1;
  }
  printf("wrote %s\n", json_path);
  return missing;
}

int bench_append(ct_program *p, const char *type, const char *const *pairs) {
  ct_op *op = ct_op_new(type);
  if (op == NULL) return -1;
  for (int i = 0; pairs[i] != NULL; i += 2) {
    bool out = pairs[i][0] == '>';
    ct_status st = out ? ct_op_set_output(op, pairs[i] + 1, pairs[i + 1])
                       : ct_op_set_input(op, pairs[i], pairs[i + 1]);
    if (st != CT_OK) {
      ct_op_free(op);
      return -1;
    }
  }
  return ct_program_append(p, op) == CT_OK ? 0 : -1;
}

float *bench_put_pattern(ct_scope *s, const char *name, ct_ddim dims, float scale) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  float *d = NULL;
  if (t != NULL && ct_tensor_resize(t, dims) == CT_OK) {
    d = ct_tensor_mutable_data(t, CT_FLOAT32, ct_cpu());
  }
  if (d == NULL) {
    fprintf(stderr, "corten_bench: putting %s: %s\n", name, ct_last_error());
    exit(1);
  }
  for (int64_t i = 0; i < ct_tensor_numel(t); i++) d[i] = scale * (float)((i * 37 % 101) - 50);
  return d;
}
