#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds corten's libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) and runs, for
# each target: every regression input in fuzz/regressions/<target> (each must pass), then
# fuzzing for SECONDS seconds from the seeds in fuzz/corpus/<target> (plus, for onnx_load, ONNX's
# conformance models under /usr/share/libonnx-testdata, and, for params_load, the
# team's real parameter files when CORTEN_PARAMS_DIR names their folder; they are read, never
# copied). Inputs the fuzzer finds go to <build>/fuzz/work/<target>; a crash is saved there as
# crash-*, printed, and fails the script: copy it into fuzz/regressions/<target> once fixed.
#
#   fuzz/run.sh [SECONDS] [TARGET...]     defaults: 60 s, every target
#   BUILD_DIR=build-fuzz JOBS=2 fuzz/run.sh 10 dlpack
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(params_load dlpack op_wiring api programs onnx_load)
build=${BUILD_DIR:-build-fuzz}
jobs=${JOBS:-$(nproc)}

cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCORTEN_SANITIZE=ON -DCORTEN_FUZZ=ON -DCORTEN_CUDA=OFF \
  -DCORTEN_TESTS=OFF -DCORTEN_BENCH=OFF -DCORTEN_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  work="$build/fuzz/work/$t"
  mkdir -p "$work"
  regress=(fuzz/regressions/"$t"/*)
  if [ -e "${regress[0]}" ]; then
    echo "== $t: ${#regress[@]} regression inputs"
    if ! "$bin" "${regress[@]}" >"$work.regress.log" 2>&1; then
      tail -n 30 "$work.regress.log"
      echo "FAIL: $t regression inputs (log: $work.regress.log)"
      status=1
      continue
    fi
  fi
  extra=()
  if [ "$t" = params_load ] && [ -n "${CORTEN_PARAMS_DIR:-}" ] && [ -d "$CORTEN_PARAMS_DIR" ]; then
    extra=("$CORTEN_PARAMS_DIR")
  fi
  # ONNX's conformance models (libonnx-testdata) seed the ONNX reader: read, never copied.
  onnx_data=${CORTEN_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
  if [ "$t" = onnx_load ] && [ -d "$onnx_data" ]; then
    extra=("$onnx_data")
  fi
  echo "== $t: fuzzing for $seconds s"
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work-" "$work" "fuzz/corpus/$t" "${extra[@]}" >"$work.log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work.log")
    echo "ok: $t, $execs executions in $seconds s"
  else
    tail -n 40 "$work.log"
    echo "FAIL: $t (log: $work.log; the input is $work-crash-* or similar)"
    status=1
  fi
done
exit $status
