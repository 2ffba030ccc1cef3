/* SPDX-License-Identifier: Apache-2.0 */
/* tests/onnx_peak.c MODEL: loads an ONNX model and prints, as "key value" lines, the process's
 * resident memory before the load (rss_before_kib), its high-water mark after (hwm_after_kib)
 * and the bytes the model's tensors hold (tensor_bytes). tests/python/models_onnx.py compares
 * the peak the load added with the model's weight bytes (Linux: /proc/self/status). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') v = atol(line + n + 1);
  }
  if (f != NULL) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: onnx_peak MODEL\n");
    return 2;
  }
  ct_scope *s = ct_scope_new();
  ct_memory_stats st;
  ct_memory_stats_get(ct_cpu(), &st); /* the allocator set up before the baseline */
  long before = status_kib("VmRSS");
  ct_onnx_model *m = s ? ct_onnx_load(argv[1], s) : NULL;
  if (m == NULL) {
    fprintf(stderr, "onnx_peak: %s\n", ct_last_error());
    return 1;
  }
  long hwm = status_kib("VmHWM");
  ct_memory_stats_get(ct_cpu(), &st);
  printf("rss_before_kib %ld\nhwm_after_kib %ld\ntensor_bytes %zu\n", before, hwm, st.allocated);
  ct_onnx_free(m);
  ct_scope_free(s);
  return 0;
}
