"""Does a bandwidth-bound kernel's time depend on where its buffers lie in device memory?

Times one fused elementwise kernel (tanh GELU over an 8192 x 8192 float32 tensor, the shape of
KernelBench level1/88) with CUDA events and an L2 flush before every call, as the judge does, at
PLACEMENTS different places: before each, a padding allocation of a random size moves the input and
the output elsewhere. Prints the median per placement and the spread over them. Run it in several
processes to compare the spread inside one process with the spread between processes.

  python3 benchmarks/h200/placement_probe.py [PLACEMENTS] [SEED] [CANDIDATE.py]

FLUSH_MB (default 512) sizes the L2 flush. With CANDIDATE.py (a KernelBench ModelNew taking the one input; PYTHONPATH=worker and
MBLAST_BINARY set for candidates that build CUDA through mblast_cuda), its forward is timed instead.
"""

import importlib.util
import os
import random
import statistics
import sys
import time

import torch


HOST_US: list = []


def time_once(fn, flush: torch.Tensor) -> float:
    torch.cuda.synchronize()
    flush.fill_(1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    fn()
    HOST_US.append((time.perf_counter() - t0) * 1e6)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def kernel(path: str):
    """out= GELU, or the candidate's forward (which allocates its own output)."""
    if not path:
        return lambda x, out: torch.nn.functional.gelu(x, approximate="tanh", out=out)
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew().cuda()
    return lambda x, out: model(x)


def main() -> None:
    placements = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    flush = torch.empty(int(os.environ.get("FLUSH_MB", "512")) << 20, dtype=torch.uint8, device="cuda")
    call = kernel(sys.argv[3] if len(sys.argv) > 3 else "")
    keep = []
    medians = []
    for _ in range(placements):
        keep.append(torch.empty(rng.randrange(1, 4096) << 20 >> 2, dtype=torch.float32, device="cuda"))
        x = torch.rand(8192, 8192, device="cuda")
        out = torch.empty_like(x)
        fn = lambda: call(x, out)  # noqa: E731
        for _ in range(5):
            fn()
        times = [time_once(fn, flush) for _ in range(60)]
        medians.append(statistics.median(times))
        keep.append((x, out))
        print(f"x at {x.data_ptr() % (1 << 40):#x} out at {out.data_ptr() % (1 << 40):#x}: "
              f"median {medians[-1]:.4f} ms, p10 {sorted(times)[6]:.4f}, p90 {sorted(times)[54]:.4f}")
    print(f"host time of a call: median {statistics.median(HOST_US):.1f} us")
    lo, hi = min(medians), max(medians)
    print(f"placements {placements}: {lo:.4f}-{hi:.4f} ms, spread {100 * (hi - lo) / statistics.median(medians):.1f} %")


if __name__ == "__main__":
    main()
