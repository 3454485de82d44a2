"""What notebook 04 calls: the monitor room's readers of a run, under one name.

Notebook 04 imports this module (plus ``widgets.live`` for the refreshing plot and ``convert.api``
for the before/after evaluation and the export). Everything here reads what a run left behind
(the log, checkpoints, ``nvidia-smi`` output, the job YAML's flags) and is the same code that
``workshop monitor parse | diagnose | plot | nccl | gpu`` and ``workshop checkpoints`` run. The
illustrations of cluster runs and failures are shipped example data (``data/examples/``), never
the test tree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..facts.failures import CONTRACT_LABELS
from ..handover import job_args
from ..paths import EXAMPLES_DIR, RunDir
from .checkpoints import format_table, human_bytes, human_seconds, scan_checkpoints
from .diagnose import diagnose_log, diagnose_text, verdict
from .gpu import gpu_report, gpu_stats, parse_nvidia_smi, plot_gpu
from .nccl import nccl_health
from .parse import parse_log
from .plot import plot_evaluation

__all__ = [
    "CONTRACT_LABELS",
    "RunDir",
    "diagnose_log",
    "diagnose_text",
    "example_gpu",
    "example_log",
    "format_table",
    "gpu_report",
    "gpu_stats",
    "human_bytes",
    "human_seconds",
    "nccl_health",
    "parse_log",
    "parse_nvidia_smi",
    "plot_evaluation",
    "plot_gpu",
    "resolve_run",
    "scan_checkpoints",
    "seq_length",
    "training_log",
    "verdict",
]


def resolve_run(run_dir: str | os.PathLike[str] | None = None) -> RunDir:
    """The run directory (``paths.RunDir.at``): the path given, or the default one."""
    return RunDir.at(run_dir)


def training_log(run_dir: str | os.PathLike[str] | RunDir | None = None, log_path: Any = None) -> Path:
    """The log to read: ``log_path`` when given, else the run's ``train/train.log`` (notebook 03's run,
    or what ``workshop logs`` saved for a cluster job)."""
    return Path(log_path) if log_path else RunDir.at(run_dir).train_log


def seq_length(run_dir: str | os.PathLike[str] | RunDir | None = None) -> int | None:
    """The sequence length of the run's job YAML (for tokens/s and MFU), or None without one."""
    value = job_args(RunDir.at(run_dir)).get("seq-length")
    try:
        return int(value) or None
    except (TypeError, ValueError):
        return None


def example_log(name: str) -> Path:
    """A shipped example log (``data/examples/logs/NAME``) for the notebook's illustrations."""
    return _example("logs", name)


def example_gpu(name: str) -> str:
    """The text of a shipped ``nvidia-smi`` sample (``data/examples/gpu/NAME``)."""
    return _example("gpu", name).read_text(encoding="utf-8")


def _example(kind: str, name: str) -> Path:
    path = EXAMPLES_DIR / kind / name
    if Path(name).name != name or not path.is_file():
        shipped = (
            sorted(p.name for p in (EXAMPLES_DIR / kind).glob("*")) if (EXAMPLES_DIR / kind).is_dir() else []
        )
        raise FileNotFoundError(f"{path}: no such example; shipped: {', '.join(shipped) or 'none'}")
    return path
