#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-check.sh DIR: corten's checks that need an NVIDIA GPU, in one run, for a machine
# lent for a few minutes. DIR holds a CUDA build's programs (bin/: the test_cuda* suites,
# test_profile, corten_bench) and the libraries they need beyond the machine's (lib/:
# libcorten.so.0, and jemalloc, subunit, OpenBLAS where the machine lacks them); run from the
# repository root. Each step's log goes under $LOGS (default /tmp/gpu-check); a summary is
# printed: every GPU suite, the Python GPU tests (the imported models at cuda:0 against the
# CPU; PyTorch's tensors through DLPack), the cuda rows of corten_bench,
# bench/bench_onnx_cuda.py (the imported CNNs against PyTorch) and the suites $SANITIZE names
# (three by default) under compute-sanitizer (memcheck, racecheck): most important first, each
# under its own time limit.
set -u
dir=${1:-.gpu}
logs=${LOGS:-/tmp/gpu-check}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$dir/lib:${LD_LIBRARY_PATH:-}" CK_DEFAULT_TIMEOUT=120
export CORTEN_LIB="$dir/lib/libcorten.so.0" PYTHONPATH="$(pwd)/python"
export CORTEN_ONNX_MODELS=/tmp/gpu-check-models PYTHONUNBUFFERED=1
# cuDNN: the toolkit's, or the one PyTorch's wheels bring (corten loads it by its soname).
dnn=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' \
      2>/dev/null)
[ -n "$dnn" ] && [ -d "$dnn" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dnn"
ls /usr/local/cuda/lib64/libcudnn.so* "$dnn"/libcudnn.so* 2>/dev/null | head -2
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
failed=0
# A suite: name, log, then the command. 77 is a suite's skip; anything else but 0 fails.
suite() {
  n=$1 log=$2
  shift 2
  timeout 150 "$@" >"$logs/$log.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  echo "$n: rc=$rc $(grep -E '^[0-9]+%:' "$logs/$log.log" | tail -1)"
  grep -E '^CUDA convolutions' "$logs/$log.log"
  grep -E ':[EF]:' "$logs/$log.log" | head -5
}
for t in "$dir"/bin/test_*; do
  suite "$(basename "$t")" "$(basename "$t")" "$t"
done
# The direct convolution kernels, where cuDNN would otherwise serve every case.
[ -x "$dir/bin/test_cuda_conv" ] &&
  suite "test_cuda_conv (CORTEN_CUDNN=0)" test_cuda_conv_direct \
    env CORTEN_CUDNN=0 "$dir/bin/test_cuda_conv"
timeout 300 python3 -m pytest -q tests/python/models_onnx_cuda.py tests/python/test_py_cuda.py \
  >"$logs/pytest_cuda.log" 2>&1
rc=$?
[ $rc -eq 0 ] || failed=1
echo "pytest GPU: rc=$rc"; tail -12 "$logs/pytest_cuda.log"
timeout 200 "$dir/bin/corten_bench" --quick --only cuda >"$logs/bench_cuda.log" 2>&1
echo "corten_bench --quick --only cuda: rc=$?"
grep -E '\|' "$logs/bench_cuda.log" | head -30
timeout 200 python3 bench/bench_onnx_cuda.py --rounds 5 >"$logs/bench_onnx_cuda.log" 2>&1
echo "bench_onnx_cuda: rc=$?"; tail -8 "$logs/bench_onnx_cuda.log"
for tool in memcheck racecheck; do
  for n in ${SANITIZE:-test_cuda_layers test_cuda_ops_reduce test_cuda_conv}; do
    [ -x "$dir/bin/$n" ] || continue
    CK_FORK=no timeout 120 compute-sanitizer --tool $tool "$dir/bin/$n" \
      >"$logs/${tool}_$n.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || failed=1
    echo "$tool $n: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/${tool}_$n.log" |
      tail -1)"
  done
done
# 1 when a suite, the Python tests or a sanitizer failed (the benches only report).
exit $failed
