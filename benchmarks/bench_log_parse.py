"""Log parsing speed on a noisy Megatron log: ``python -m benchmarks.bench_log_parse``.

The log is built like a real ``NCCL_DEBUG=INFO`` multi-rank run: per iteration line, ~19 lines of
noise (NCCL INFO, Python warnings, timers, launcher prefixes). The target is >= 500k lines/s for
``workshop_lib.monitor.parse.parse_log``. The baseline, measured in the same run, is the naive
parser (every line searched with regexes, cells read with a regex, no substring pre-filter), so the ratio holds
on a busy machine too. Writes ``benchmarks/results/log_parse.md``.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

from workshop_lib.monitor.parse import parse_log

TARGET_LINES_PER_S = 500_000
NOISE = [
    "megatron-cpt-techpulse-master-0:52:118 [{r}] NCCL INFO Channel 03/08 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA",
    "megatron-cpt-techpulse-master-0:52:118 [{r}] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    "[rank{r}]: /usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated.",
    "[default{r}]:  warnings.warn(",
    "(min, max) time across ranks (ms):",
    "    forward-backward ...............................: (1850.12, 1853.40)",
    "    optimizer ......................................: (120.33, 121.02)",
    "[pod/megatron-cpt-techpulse-worker-0/pytorch] megatron-cpt-techpulse-worker-0:61:125 [{r}] NCCL INFO comm 0x55d1c2a0 rank {r} nranks 16 - Init COMPLETE",
    "[Rank {r}] (after 5 iterations) memory (MB) | allocated: 21544.1 | max allocated: 30122.4 | reserved: 32212.0",
    "W1121 10:00:01.000000 1 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1",
]
LINE = (" [2025-11-21 10:{m:02d}:{s:02d}] iteration {i:8d}/{n:8d} | consumed samples: {c:12d} | elapsed time per iteration (ms): 2003.1 | "
        "throughput per GPU (TFLOP/s/GPU): 131.2 | learning rate: 3.000000E-04 | global batch size:   256 | lm loss: {loss:.6E} | "
        "loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |")  # fmt: skip


def build_log(path: Path, iterations: int = 50_000, noise_per_iteration: int = 19) -> int:
    lines = []
    for i in range(1, iterations + 1):
        for k in range(noise_per_iteration):
            lines.append(NOISE[(i + k) % len(NOISE)].format(r=k % 8))
        lines.append(
            LINE.format(
                m=(i // 60) % 60, s=i % 60, i=i, n=iterations, c=i * 256, loss=2.0 + 8.0 / (1 + i / 100)
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def naive_parse(path: Path) -> int:
    """What one writes first: regexes on every line, no pre-filter, a regex for the cells."""
    head = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
    cells = re.compile(r"\s*([^:|]+?)\s*:\s*([^|]*?)\s*\|")
    n = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = head.search(line)
            if m:
                {k: float(v) for k, v in cells.findall(line, m.end())}
                n += 1
    return n


def best_of(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "noisy.log"
        n_lines = build_log(path)
        size = path.stat().st_size
        log = parse_log(path)
        assert len(log.records) == 50_000, len(log.records)
        t_fast = best_of(lambda: parse_log(path))
        t_naive = best_of(lambda: naive_parse(path))
    rate = n_lines / t_fast
    rate_naive = n_lines / t_naive
    ok = rate >= TARGET_LINES_PER_S
    rows = [
        ("parse_log (substring pre-filter, split cells)", t_fast, rate, size / t_fast / 1e6),
        ("baseline: naive regexes on every line", t_naive, rate_naive, size / t_naive / 1e6),
    ]
    table = ["| parser | seconds | lines/s | MB/s |", "|---|---:|---:|---:|"]
    table += [f"| {name} | {t:.3f} | {r:,.0f} | {mb:.1f} |" for name, t, r, mb in rows]
    print("\n".join(table))
    print(
        f"speed-up over baseline: {t_naive / t_fast:.2f}x; target {TARGET_LINES_PER_S:,} lines/s: {'met' if ok else 'MISSED'}"
    )
    out = Path(__file__).resolve().parent / "results" / "log_parse.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# Log parsing speed (`benchmarks/bench_log_parse.py`)\n\n"
        f"Noisy log: {n_lines:,} lines ({size / 1e6:.1f} MB), 1 iteration line per 20 "
        "(the rest NCCL INFO, Python warnings, timers, launcher prefixes); best of 3.\n\n"
        + "\n".join(table)
        + f"\n\nSpeed-up over the baseline: {t_naive / t_fast:.2f}x. Target >= {TARGET_LINES_PER_S:,} lines/s: "
        f"**{'met' if ok else 'missed'}**.\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.platform()}. Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.\n"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
