"""``<run>/data/dataset.json``: what notebook 01 hands the planner, the trainer and the launcher.

Keys (INTERFACES.md): ``data_path`` (absolute prefix without ``.bin``), ``tokenizer_type``,
``tokenizer_model`` (absolute path), ``vocab_size``, ``eod_token_id``, ``documents``, ``tokens``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UsageError
from ..fsutil import atomic_write_text
from ..paths import RunDir

KEYS = ("data_path", "tokenizer_type", "tokenizer_model", "vocab_size", "eod_token_id", "documents", "tokens")


def _info_path(target: str | os.PathLike[str] | RunDir) -> Path:
    if isinstance(target, RunDir):
        return target.dataset_info
    p = Path(target)
    return p if p.suffix == ".json" else RunDir(p).dataset_info


def write_dataset_info(
    target: str | os.PathLike[str] | RunDir,
    *,
    data_path: str | os.PathLike[str],
    tokenizer_type: str,
    tokenizer_model: str | os.PathLike[str],
    vocab_size: int,
    eod_token_id: int,
    documents: int,
    tokens: int,
) -> Path:
    """Write dataset.json atomically; ``target`` is a run directory or the .json path itself."""
    info = {
        "data_path": str(Path(data_path).resolve()),
        "tokenizer_type": tokenizer_type,
        "tokenizer_model": str(Path(tokenizer_model).resolve()),
        "vocab_size": int(vocab_size),
        "eod_token_id": int(eod_token_id),
        "documents": int(documents),
        "tokens": int(tokens),
    }
    return atomic_write_text(_info_path(target), json.dumps(info, indent=2) + "\n")


def dataset_info_from_summary(summary: dict, key: str = "text") -> dict:
    """The dataset.json fields for one key of a prep-data summary (``PrepResult.summary()``)."""
    k = summary["keys"][key]
    tok = summary["tokenizer"]
    return {
        "data_path": k["prefix"],
        "tokenizer_type": tok["type"],
        "tokenizer_model": tok["model"],
        "vocab_size": tok["vocab_size"],
        "eod_token_id": tok["eod_token_id"],
        "documents": k["documents"],
        "tokens": k["tokens"],
    }


def read_dataset_info(run_dir: str | os.PathLike[str] | RunDir) -> dict:
    """Read dataset.json from a run directory (or the file itself); UsageError if notebook 01 has not run."""
    path = _info_path(run_dir)
    if not path.is_file():
        raise UsageError(f"{path}: missing; run notebook 01 (or `workshop prep-data ...`) first")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); re-run notebook 01") from None
    missing = [k for k in KEYS if k not in info]
    if missing:
        raise UsageError(f"{path}: missing keys {', '.join(missing)}; re-run notebook 01")
    return info


# Optional keys written by the continued-pre-training step of notebook 01 (readers ignore them when
# absent): ``blend`` (the Megatron --data-path string: domain and replayed general text, weight first),
# ``replay`` ({"data_path", "weight"}) and ``heldout`` ({"domain": prefix, "general": prefix}).
CPT_KEYS = ("blend", "replay", "heldout")


def add_to_dataset_info(target: str | os.PathLike[str] | RunDir, **fields) -> Path:
    """Merge ``fields`` (of :data:`CPT_KEYS`) into an existing dataset.json, atomically."""
    unknown = sorted(set(fields) - set(CPT_KEYS))
    if unknown:
        raise ValueError(f"not dataset.json keys: {unknown}")
    info = read_dataset_info(target)
    info.update(fields)
    return atomic_write_text(_info_path(target), json.dumps(info, indent=2) + "\n")
