"""What notebooks 03 and 04 call: the base model into the run directory, the trained model out of it.

Both are the ``workshop import-hf`` / ``export-hf`` code paths with the run directory's locations
(``<run>/base``, ``<run>/train/checkpoints``, ``<run>/export/hf``), made safe to re-run: a notebook
executed twice replaces its earlier output whole, never mixes two. Between the two, notebook 04's
question, did continued pre-training help, is :func:`before_after` (``workshop evaluate`` of both
checkpoints, from ``train/evaluate.py``), so the continued-pre-training steps have one entry point.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..paths import SAMPLE_BASE_MODEL, RunDir


def _run(run_dir: str | Path | None) -> RunDir:
    return RunDir.at(run_dir)


def _replace(tmp: Path, final: Path) -> None:
    """Move a finished ``tmp`` folder to ``final``, dropping a previous ``final`` first.

    The two renames run with Ctrl-C held (the kernel's interrupt button is a SIGINT): stopped
    between them, the run would leave no ``final`` at all, only ``final.old``, and every later
    step that loads ``final`` (training from the base, evaluation) would fail.
    """
    from ..fsutil import held_stop_signals

    old = final.with_name(final.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    try:
        with held_stop_signals():
            if final.exists():
                final.rename(old)
            tmp.rename(final)
    finally:  # also when the held Ctrl-C is raised: the new model is in place, the old one goes
        shutil.rmtree(old, ignore_errors=True)


def import_base_model(
    run_dir: str | Path | None = None,
    hf_dir: str | Path | None = None,
    *,
    tensor_model_parallel_size: int = 1,
    pipeline_model_parallel_size: int = 1,
) -> dict[str, Any]:
    """``workshop import-hf --hf-dir HF --save <run>/base``: the model the training run starts from.

    ``hf_dir`` defaults to the workshop's tiny base model (``data/base_model``), a Llama-shaped model
    pre-trained on general text only. Returns import-hf's JSON object.
    """
    from .importer import import_hf

    run = _run(run_dir)
    tmp = run.base.with_name(run.base.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    run.root.mkdir(parents=True, exist_ok=True)
    result = import_hf(
        hf_dir or SAMPLE_BASE_MODEL, tmp, tp=tensor_model_parallel_size, pp=pipeline_model_parallel_size
    )
    _replace(tmp, run.base)
    return _relocated(result, tmp, run.base)


def export_trained(run_dir: str | Path | None = None, out: str | Path | None = None) -> dict[str, Any]:
    """``workshop export-hf --load <run>/train/checkpoints --hf-dir <run>/export/hf``: the trained model
    as a Hugging Face folder for SFT and evaluation. Returns export-hf's JSON object."""
    from .exporter import export_hf

    run = _run(run_dir)
    final = Path(out) if out else run.export_hf
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    result = export_hf(run.checkpoints, tmp)
    _replace(tmp, final)
    return _relocated(result, tmp, final)


def before_after(run_dir: str | Path | None = None, *, seq_length: int | None = None) -> dict[str, Any]:
    """The base model and the trained one scored on the held-out sets, written to
    ``<run>/monitor/evaluation.json`` (``train.evaluate.before_after``; see there for the fields)."""
    from ..train.evaluate import before_after as evaluate_both

    return evaluate_both(_run(run_dir), seq_length=seq_length)


def _relocated(obj: Any, old: Path, new: Path) -> Any:
    """The same JSON object with paths under ``old`` shown under ``new`` (where they now are)."""
    if isinstance(obj, dict):
        return {k: _relocated(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_relocated(v, old, new) for v in obj]
    if isinstance(obj, str) and obj.startswith(str(old)):
        return str(new) + obj[len(str(old)) :]
    return obj
