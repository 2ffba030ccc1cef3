#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs tests/comm_fuzz.c under mpirun and counts the ranks that passed.
# Usage: run_comm_fuzz.sh MPIEXEC N COMM_FUZZ_BINARY [SEED [ROUNDS [FIRST]]]
# SEED defaults to $CORTEN_COMM_FUZZ_SEED, else the program's own. mpirun runs with
# --enable-recovery: a rank that broke a communicator leaves without MPI_Finalize, which
# OpenMPI's mpirun otherwise answers by killing the job. Every rank must print a PASS line and
# none a FAIL line; mpirun's exit code is not looked at.
set -u
mpiexec=$1 n=$2 bin=$3
shift 3
[ $# -eq 0 ] && [ -n "${CORTEN_COMM_FUZZ_SEED:-}" ] && set -- "$CORTEN_COMM_FUZZ_SEED"
out=$(timeout 240 "$mpiexec" --oversubscribe --enable-recovery -n "$n" "$bin" "$@" 2>&1)
echo "$out"
got=$(echo "$out" | grep -c '^PASS rank')
if [ "$got" -ne "$n" ] || echo "$out" | grep -q '^FAIL'; then
  echo "run_comm_fuzz: $got of $n ranks passed"
  exit 1
fi
echo "run_comm_fuzz: all $n ranks passed"
