"""``<run>/data/dataset.json``: what notebook 01 hands the planner, the trainer and the launcher.

Keys (docs/architecture.md): ``data_path`` (absolute prefix without ``.bin``), ``tokenizer_type``,
``tokenizer_model`` (absolute path), ``vocab_size``, ``eod_token_id``, ``documents``, ``tokens``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UsageError
from ..fsutil import atomic_write_text, ensure_parent_dir
from ..paths import RunDir

KEYS = ("data_path", "tokenizer_type", "tokenizer_model", "vocab_size", "eod_token_id", "documents", "tokens")


def _info_path(target: str | os.PathLike[str] | RunDir) -> Path:
    if isinstance(target, RunDir):
        return target.dataset_info
    p = Path(target)
    return p if p.suffix == ".json" else RunDir(p).dataset_info


def check_dataset_info_target(target: str | os.PathLike[str]) -> Path:
    """The dataset.json path ``--dataset-info`` names, or one UsageError line when it cannot be written.

    Checked before prep-data tokenizes, so a typo never leaves a dataset written next to a failure.
    """
    path = _info_path(target)
    if path.is_dir():
        raise UsageError(f"--dataset-info {target}: {path} is a directory; name a .json file or a run folder")
    ensure_parent_dir(path, "--dataset-info", shown=target)
    return path


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


MAX_INFO_BYTES = 1 << 20  # dataset.json is a few hundred bytes; more is not one


def read_dataset_info(run_dir: str | os.PathLike[str] | RunDir, required: tuple[str, ...] = KEYS) -> dict:
    """Read and check dataset.json (a run directory, or the file itself).

    Every reader of the hand-over file goes through here, so a corrupt one (cut short, hand-edited,
    another tool's JSON) is one UsageError line naming the file and the field, never a
    JSONDecodeError, KeyError or TypeError further on. ``required``: the keys the caller uses
    (all by default); every key present is checked for its type.
    """
    path = _info_path(run_dir)
    if not path.is_file():
        raise UsageError(f"{path}: missing; run notebook 01 (or `workshop prep-data ...`) first")
    fix = "re-run notebook 01 (or `workshop prep-data ... --dataset-info`)"
    with open(path, "rb") as fh:
        raw = fh.read(MAX_INFO_BYTES + 1)
    if len(raw) > MAX_INFO_BYTES:
        raise UsageError(f"{path}: over {MAX_INFO_BYTES:,} bytes, not a dataset.json; {fix}")
    try:
        info = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise UsageError(f"{path}: not valid JSON ({exc}); {fix}") from None
    if not isinstance(info, dict):
        raise UsageError(f"{path}: holds {type(info).__name__}, not a JSON object; {fix}")
    missing = [k for k in required if k not in info]
    if missing:
        raise UsageError(f"{path}: missing keys {', '.join(missing)}; {fix}")
    for key in ("data_path", "tokenizer_type", "tokenizer_model"):
        if key in info and (not isinstance(info[key], str) or not info[key]):
            raise UsageError(f"{path}: {key} is {info[key]!r}, not a non-empty string; {fix}")
    for key, low in (("vocab_size", 1), ("eod_token_id", 0), ("documents", 0), ("tokens", 0)):
        v = info.get(key, low)
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise UsageError(f"{path}: {key} is {v!r}, not a whole number >= {low}; {fix}")
    if "blend" in info and (not isinstance(info["blend"], str) or not info["blend"].strip()):
        raise UsageError(f"{path}: blend is {info['blend']!r}, not a --data-path string; {fix}")
    held = info.get("heldout", {})
    if not isinstance(held, dict) or not all(isinstance(v, str) and v for v in held.values()):
        raise UsageError(f"{path}: heldout is {held!r}, not {{set: prefix}}; {fix}")
    if "vocab_size" in info and info.get("eod_token_id", 0) >= info["vocab_size"]:
        raise UsageError(
            f"{path}: eod_token_id {info['eod_token_id']} is outside the vocabulary ({info['vocab_size']}); {fix}"
        )
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
