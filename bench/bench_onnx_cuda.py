# SPDX-License-Identifier: Apache-2.0
# bench/bench_onnx_cuda.py: imported CNNs on the GPU, corten against PyTorch on the same device.
"""resnet18 and mobilenet_v2 (tests/python/models_onnx.py's exports, random weights, batch
statistics measured) imported into corten, their weights copied to cuda:0, run by an executor
at cuda:0 on a device input at batch 64, against the same torchvision module in PyTorch (eval
mode, float32, on the same device and input), in two forms: TF32 off (every product in float32,
as corten's kernels compute) and PyTorch's defaults. Each side is warmed up; then the sides
alternate in rounds of K runs, each run synchronised; a side's figure is the median over rounds
of each round's mean. Ratio: corten's time over PyTorch's (below 1: corten faster). Peak device
memory of each side (weights included): PyTorch's max_memory_allocated and corten's
memory_stats("cuda:0") peak, each side's own allocations only (corten's peak is the process's:
for the second model, the larger of the two). Then corten's profile of one run (corten.profile:
host and device time per op type).

  python3 bench/bench_onnx_cuda.py [--models DIR] [--rounds R] [--batch N]

Needs a GPU, a corten built for CUDA (CORTEN_LIB) and a PyTorch built for CUDA."""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import corten  # noqa: E402


def corten_side(path, x):
    m = corten.onnx.load(path).to("cuda:0")
    xt = corten.from_dlpack(x)

    def run():
        m.run({"x": xt})
        torch.cuda.synchronize()  # the whole device: corten's stream too
    return run, m


def torch_side(net, x):
    def run():
        with torch.no_grad():
            net(x)
        torch.cuda.synchronize()
    return run


def timed(run, k):
    t = time.perf_counter()
    for _ in range(k):
        run()
    return (time.perf_counter() - t) / k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=os.environ.get("CORTEN_ONNX_MODELS", "onnx-models"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--k", type=int, default=5)
    a = ap.parse_args()
    os.environ["CORTEN_ONNX_MODELS"] = a.models
    import models_onnx  # the exports (and the modules) of the parity tests
    print("device: %s, torch %s, CUDA %s" % (torch.cuda.get_device_name(0), torch.__version__,
                                             torch.version.cuda))
    for name in ["resnet18", "mobilenet_v2"]:
        path, shape = models_onnx._exported(name)
        net, _ = models_onnx._make(name)
        net = net.eval().cuda()
        x = torch.from_numpy(np.random.RandomState(1).randn(a.batch, *shape).astype(np.float32))
        x = x.cuda().contiguous()
        c_run, m = corten_side(path, x)
        t_run = torch_side(net, x)
        rows = {}
        for label, tf32 in (("TF32 off", False), ("defaults", True)):
            torch.backends.cudnn.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            for _ in range(3):
                c_run()
                t_run()
            c, t = [], []
            for _ in range(a.rounds):
                c.append(timed(c_run, a.k))
                t.append(timed(t_run, a.k))
            rows[label] = (statistics.median(c), statistics.median(t))
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = True
        for label, (c, t) in rows.items():
            print("%-13s batch %d cuda: corten %8.3f ms, PyTorch (%s) %8.3f ms, ratio %.2f"
                  % (name, a.batch, c * 1e3, label, t * 1e3, c / t))
        with corten.profile() as prof:  # where corten's run goes, by the device's events
            c_run()
        print("%s, one corten run at batch %d, by op type:\n%s" % (name, a.batch, prof.table()))
        print("%-13s peak device memory: corten %.1f MB, PyTorch %.1f MB"
              % (name, corten.memory_stats("cuda:0")["peak"] / 1e6,
                 torch.cuda.max_memory_allocated() / 1e6))
        del m, net, c_run, t_run
        torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
