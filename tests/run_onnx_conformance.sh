#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/run_onnx_conformance.sh CORTEN DATA MIN_NODE_PCT: ONNX's backend conformance tests (the
# folders Debian's libonnx-testdata installs under DATA) through `corten onnx-test --round-trip`:
# the node tests must pass at least MIN_NODE_PCT percent, and no test of any folder may be wrong
# (a value out of tolerance, a failure other than CT_ERR_UNSUPPORTED, or an export that does not
# load back to the same bits); the node tests again at 1 and 3 threads (the passes' equality at
# several thread counts; the first run uses one per core). Skipped (77) without the data.
set -u
corten=$1 data=$2 min=$3
if [ ! -d "$data/node" ]; then
  echo "SKIPPED: no ONNX test data at $data (Debian: apt-get install libonnx-testdata)"
  exit 77
fi
status=0
"$corten" onnx-test --round-trip --min-pass "$min" "$data/node" || status=1
for t in 1 3; do
  echo "== node, $t thread(s)"
  out=$("$corten" onnx-test --threads "$t" --min-pass "$min" "$data/node") || status=1
  printf '%s\n' "$out" | grep -E '^(WRONG|bad data|total|FAIL)' # the table is the first run's
done
for d in pytorch-converted pytorch-operator simple; do
  [ -d "$data/$d" ] || continue
  echo "== $d"
  "$corten" onnx-test --round-trip "$data/$d" || status=1
done
exit $status
