# SPDX-License-Identifier: Apache-2.0
# bench/bench_onnx.py: imported ONNX models, corten against onnxruntime in the same run.
"""For each model of tests/python/models_onnx.py (resnet18, resnet18_bn: the same with its
BatchNormalization nodes kept, mobilenet_v2, a 2-layer TransformerEncoder (and one with GELU
exported at opset 14: its layer norms written out as nine ops each), an LSTM classifier, one
head of attention over 1024 tokens (attention_long: the scores 4 MB an entry);
exported once into MODELS), each batch (1, 8) and thread count (1, 2): corten (corten.onnx.load,
graph passes on, the weights constants: packed once, as onnxruntime prepacks its initializers at
session creation) and onnxruntime (InferenceSession, CPU, default graph optimisation,
intra_op_num_threads set to the same count, inter_op 1) run the same input. Each side is warmed
up, then the two alternate in rounds of K runs, each round after SETTLE_S of untimed runs of its
own (so that the other side's pool threads, still spinning, do not share the cores with the
timed runs); a side's figure is the median over rounds of each round's median. The ratio is
corten's / onnxruntime's (below 1: corten faster), paired: the median over rounds of each
round's corten median over its onnxruntime median, the two taken a second apart, so that the
machine's drift (shared, its speed moving by a fifth within minutes) cancels; the spread is the
lowest and highest round's ratio. Load time: the median of 3 loads each.
Peak memory: each side loads and runs the model once in a fresh process, at each batch size;
the row is its peak resident set (VmHWM).

  build/tests/python-envs/onnx/bin/python bench/bench_onnx.py [--models DIR] [--rounds R]
      [--only NAME,...] [--threads 1,2] [--batches 1,8]

Run it from the repository root with CORTEN_LIB naming the library to measure (the README's
build: build/libcorten.so) unless the corten package is installed in that environment."""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import numpy as np  # noqa: E402

import corten  # noqa: E402


SETTLE_S = 0.2


def _settle(fn):
    """Runs fn untimed for SETTLE_S (at least twice)."""
    t_end, n = time.perf_counter() + SETTLE_S, 0
    while n < 2 or time.perf_counter() < t_end:
        fn()
        n += 1


def _median_ms(fn, k):
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _peak_mb(path, side, shape, batch):
    """Peak RSS (MB) of a fresh process that loads path with `side` and runs it once on a batch:
    its VmHWM (ru_maxrss would carry this process's peak over the fork and exec)."""
    code = ("import numpy as np\n"
            "x = np.zeros((%d,) + %r, np.float32)\n" % (batch, shape) +
            ("import corten\n"
             "m = corten.onnx.load(%r, constant_weights=True)\nm.run({'x': x})\n" % path
             if side == "corten" else
             "import onnxruntime as ort\n"
             "s = ort.InferenceSession(%r, providers=['CPUExecutionProvider'])\n"
             "s.run(None, {'x': x})\n" % path) +
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    return int(out.stdout.split()[-1]) / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=os.path.join("build", "tests", "onnx-models"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="resnet18,resnet18_bn,mobilenet_v2,transformer,"
                                       "transformer_gelu14,lstm,attention_long")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="1,8")
    a = ap.parse_args()
    os.environ["CORTEN_ONNX_MODELS"] = a.models
    import models_onnx  # noqa: E402  (exports a model the first time it is asked for)
    import onnxruntime as ort

    print("%-13s %5s %7s %11s %11s %7s %13s" % ("model", "batch", "threads", "corten ms",
                                                "ort ms", "ratio", "rounds' range"))
    for name in a.only.split(","):
        path, shape = models_onnx._exported(name)
        for threads in [int(t) for t in a.threads.split(",")]:
            corten.set_num_threads(threads)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            model = corten.onnx.load(path, constant_weights=True)
            for batch in [int(b) for b in a.batches.split(",")]:
                x = np.random.RandomState(0).randn(batch, *shape).astype(np.float32)
                run_c = lambda: model.run({"x": x})  # noqa: E731
                run_o = lambda: sess.run(None, {"x": x})  # noqa: E731
                big = name in ("resnet18", "resnet18_bn", "mobilenet_v2", "attention_long")
                k = (3 if batch > 1 else 10) if big else 200
                for _ in range(2):
                    run_c(), run_o()
                rc, ro = [], []
                for _ in range(a.rounds):
                    # Each side's round starts after untimed runs of its own for SETTLE_S:
                    # onnxruntime's pool threads spin for a while after a run (allow_spinning),
                    # and a round started at once shares the cores with them (measured:
                    # mobilenet_v2 at 2 threads, corten 11-13 ms right after onnxruntime's
                    # round, 7.2-7.8 ms after a pause or alone; onnxruntime's figure the same
                    # either way). Runs, not a sleep, so that the cores stay clocked up.
                    _settle(run_c)
                    rc.append(_median_ms(run_c, k))
                    _settle(run_o)
                    ro.append(_median_ms(run_o, k))
                c, o = statistics.median(rc), statistics.median(ro)
                ratios = [rc_i / ro_i for rc_i, ro_i in zip(rc, ro)]
                print("%-13s %5d %7d %11.3f %11.3f %7.2f %6.2f-%.2f"
                      % (name, batch, threads, c, o, statistics.median(ratios), min(ratios),
                         max(ratios)), flush=True)
        load_c = statistics.median(
            _median_ms(lambda: corten.onnx.load(path), 1) for _ in range(3))
        load_o = statistics.median(
            _median_ms(lambda: ort.InferenceSession(path, providers=["CPUExecutionProvider"]),
                       1) for _ in range(3))
        peaks = ", ".join("batch %d corten %.0f MB, ort %.0f MB"
                          % (b, _peak_mb(path, "corten", shape, b), _peak_mb(path, "ort", shape, b))
                          for b in [int(b) for b in a.batches.split(",")])
        print("%-13s load: corten %.1f ms, ort %.1f ms (ratio %.2f); peak RSS after one run: %s"
              % (name, load_c, load_o, load_c / load_o, peaks), flush=True)


if __name__ == "__main__":
    main()
