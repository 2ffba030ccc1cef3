/* SPDX-License-Identifier: Apache-2.0 */
/* tests/comm_thread_level.c: a program that initialised MPI with less than the thread level
 * corten needs (MPI_THREAD_SERIALIZED) gets ct_comm_init_mpi refused, naming the level needed
 * and the one MPI provides, with the variable left empty; run under mpirun by ctest. Exits 0
 * when every check holds, 1 with "FAIL ..." otherwise. */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include <corten/corten.h>

static int check(void) {
  int provided = -1;
  MPI_Query_thread(&provided);
  if (provided != MPI_THREAD_SINGLE) {
    printf("FAIL: MPI provides level %d, not the MPI_THREAD_SINGLE asked for\n", provided);
    return 1;
  }
  ct_var *v = ct_var_new();
  if (v == NULL) return printf("FAIL: ct_var_new: %s\n", ct_last_error()), 1;
  ct_status s = ct_comm_init_mpi(v);
  const char *msg = ct_last_error();
  int bad = 0;
  if (s != CT_ERR_UNSUPPORTED) bad = printf("FAIL: status %d, not CT_ERR_UNSUPPORTED\n", s);
  const char *need[] = {"ct_comm_init_mpi", "MPI_THREAD_SERIALIZED", "MPI_THREAD_SINGLE"};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
    if (strstr(msg, need[i]) == NULL) bad = printf("FAIL: '%s' not in: %s\n", need[i], msg);
  }
  if (ct_var_type(v) != NULL) bad = printf("FAIL: the variable is not left empty\n");
  ct_var_free(v);
  return bad != 0;
}

int main(int argc, char **argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int bad = check();
  MPI_Finalize();
  return bad;
}
