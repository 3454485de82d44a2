"""The trainer on CPU as the workshop notebook runs it: 2 processes, tiny GPT, 30 iterations.

``.venv/bin/python -m benchmarks.bench_train`` prepares the sample corpus with ``workshop prep-data``,
then times ``workshop train --nproc-per-node 2`` for data parallel 2 (also without the per-iteration
NaN check), tensor parallel 2 (with and without sequence parallelism) and pipeline parallel 2:
the whole run (process start to exit, the figure a notebook cell waits for), the start-up (to the
first iteration line), the steady time per iteration and tokens per second. The budget is the
notebook's: well under a minute for the whole run. Writes ``benchmarks/results/train_cpu.md``.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from workshop_lib.paths import SAMPLE_CORPUS, SAMPLE_TOKENIZER

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "train_cpu.md"
BUDGET_S = 60.0
ITERS, SEQ, GBS = 30, 128, 16


def _flags(data: str) -> list[str]:
    return (
        f"--num-layers 2 --hidden-size 128 --num-attention-heads 4 --seq-length {SEQ} "
        f"--max-position-embeddings {SEQ} --micro-batch-size 4 --global-batch-size {GBS} "
        f"--train-iters {ITERS} --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine --lr-warmup-iters 3 "
        f"--data-path {data} --split 98,2,0 --tokenizer-type HuggingFaceTokenizer "
        f"--tokenizer-model {SAMPLE_TOKENIZER} --log-interval 1 --eval-interval {ITERS} --eval-iters 2"
    ).split()


def _run(extra: list[str], data: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "workshop_lib.cli",
        "train",
        "--nproc-per-node",
        "2",
        "--",
        *_flags(data),
        *extra,
    ]
    start = time.perf_counter()
    first = None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO)
    times, losses = [], []
    for line in proc.stdout:
        m = re.search(
            r"iteration +(\d+)/.*elapsed time per iteration \(ms\): ([\d.]+).*lm loss: ([\d.E+-]+)", line
        )
        if m:
            first = first or time.perf_counter() - start
            times.append(float(m.group(2)))
            losses.append(float(m.group(3)))
    code = proc.wait()
    wall = time.perf_counter() - start
    if code != 0 or len(times) != ITERS:
        raise SystemExit(f"run failed (exit {code}, {len(times)} iterations): {' '.join(extra)}")
    steady = statistics.median(times[3:])
    return {
        "wall_s": wall,
        "startup_s": first,
        "ms_per_iter": steady,
        "tokens_per_s": GBS * SEQ / (steady / 1000.0),
        "loss_first": losses[0],
        "loss_last": losses[-1],
    }


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "sample"
        subprocess.run(
            [sys.executable, "-m", "workshop_lib.cli", "prep-data", "--input", str(SAMPLE_CORPUS),
             "--output-prefix", str(prefix), "--append-eod", "--json"],
            check=True, capture_output=True, cwd=REPO,
        )  # fmt: skip
        data = f"{prefix}_text_document"
        rows = {
            "DP=2": _run([], data),
            # the trainer's per-iteration NaN check (one all-reduce) off: its cost, in the same command
            "DP=2, no NaN check": _run(["--no-check-for-nan-in-loss-and-grad"], data),
            "TP=2": _run(["--tensor-model-parallel-size", "2"], data),
            "TP=2 + SP": _run(["--tensor-model-parallel-size", "2", "--sequence-parallel"], data),
            "PP=2": _run(["--pipeline-model-parallel-size", "2", "--global-batch-size", "16"], data),
        }
    header = "| config | whole run (s) | start-up (s) | ms / iteration | tokens / s | lm loss first -> last |"
    lines = [header, "|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['wall_s']:.1f} | {r['startup_s']:.1f} | {r['ms_per_iter']:.0f} | "
            f"{r['tokens_per_s']:.0f} | {r['loss_first']:.3f} -> {r['loss_last']:.3f} |"
        )
    table = "\n".join(lines)
    print(table)
    worst = max(r["wall_s"] for r in rows.values())
    verdict = f"slowest whole run {worst:.1f} s against the notebook's budget of {BUDGET_S:.0f} s"
    print(verdict)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        "# Trainer on CPU (the notebook's local run)\n\n"
        f"`workshop train --nproc-per-node 2`, gloo, 2 layers, hidden 128, 4 heads, seq {SEQ}, "
        f"global batch {GBS} (micro 4), {ITERS} iterations + one validation of 2 batches, sample corpus.\n"
        "Whole run = process start to exit (what a notebook cell waits for); start-up = to the first "
        "iteration line; ms / iteration = median after the first 3.\n\n"
        f"{table}\n\n{verdict}.\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
        f"Python {platform.python_version()}. Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. "
        "The CPU was shared with other work, so the figures are upper bounds.\n"
    )
    return 0 if worst < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
