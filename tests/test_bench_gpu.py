"""benchmarks/bench_gpu.py, which only a lent GPU runs for real, still works end to end.

Without CUDA it must skip (so `make bench` passes on CPU machines); ``--tiny`` runs its steps with a
2-layer model on the CPU, which is how a change that breaks the script is caught before a GPU session.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("megatron.core")


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_gpu", *args],
        cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_without_cuda_it_says_it_skipped():
    out = bench()
    assert out.returncode == 0 and "skipped" in out.stdout


@pytest.mark.slow
def test_tiny_run_writes_measurements_and_the_plan(tmp_path):
    out = bench("--tiny", "--only", "mbs1-flash", "--iters", "8", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    run = results["runs"]["mbs1-flash"]
    assert run["exit"] == 0 and run["flags"]["attention-backend"] == "flash"
    assert run["measured"]["iterations"] == 2 and run["measured"]["ms_per_iteration"] > 0
    assert run["plan"]["valid"] and run["plan"]["memory_per_gpu_bytes"]["total"] > 0
    assert "| mbs1-flash |" in (tmp_path / "results.md").read_text()
