"""Does a bandwidth-bound kernel's time depend on where its input lies in device memory?

    python3 address_sensitivity.py [--mib 256] [--offsets-mib 0,1,2,...] [--runs 30]

Plain processes timing the same compiled file read anywhere from 0.13 to 0.25 ms on the H200
(level1/88's GELU, 256 MiB in and out), while eager stayed within 1 %. This process compiles that
GELU once and times it, and eager's, on input views placed at different offsets of one large
buffer (same values, same shape; the output's place is left to the allocator), L2 flushed before
each call, medians of CUDA-event times. Prints one line per offset.
"""

from __future__ import annotations

import argparse
import math
import statistics

import torch


def gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def median_ms(fn, x: torch.Tensor, flush: torch.Tensor, runs: int) -> float:
    times = []
    for _ in range(runs):
        flush.fill_(0x5A)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        del y
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--offsets-mib", default="0,1,2,3,4,6,8,12,16,24,32,48,64,96,128")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    n = (args.mib << 20) // 4
    offsets = [int(o) for o in args.offsets_mib.split(",")]
    big = torch.randn(n + (max(offsets) << 18), device="cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    compiled = torch.compile(gelu)
    with torch.no_grad():
        for _ in range(3):
            compiled(big[:n])
        print("offset_mib compiled_ms eager_ms", flush=True)
        for off in offsets:
            x = big[(off << 18):(off << 18) + n]
            print(off, f"{median_ms(compiled, x, flush, args.runs):.4f}", f"{median_ms(gelu, x, flush, args.runs):.4f}",
                  flush=True)


if __name__ == "__main__":
    main()
