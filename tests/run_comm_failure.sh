#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs tests/comm_failure.c under mpirun and counts the ranks that saw what they should.
# Usage: run_comm_failure.sh MPIEXEC N late|killed|noinit|late_small COMM_FAILURE_BINARY
# mpirun runs with --enable-recovery: by default OpenMPI's mpirun kills the whole job when a
# rank dies or leaves without MPI_Finalize (no hang either, but nothing left to test), and a
# rank whose communicator broke leaves without it. Every rank but a killed one must print a
# PASS line; mpirun's exit code is not looked at.
set -u
mpiexec=$1 n=$2 mode=$3 bin=$4
flags="--oversubscribe --enable-recovery"
want=$n
[ "$mode" = killed ] && want=$((n - 1))
out=$(timeout 120 "$mpiexec" $flags -n "$n" "$bin" "$mode" 2>&1)
echo "$out"
got=$(echo "$out" | grep -c '^PASS')
if [ "$got" -ne "$want" ] || echo "$out" | grep -q '^FAIL'; then
  echo "run_comm_failure: $got of the $want ranks that should pass did ($mode, $n ranks)"
  exit 1
fi
echo "run_comm_failure: all $want ranks passed ($mode, $n ranks)"
