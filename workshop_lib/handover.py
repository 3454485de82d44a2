"""The hand-over files between the notebooks: what each holds, and its one reader and one writer.

The paths are :class:`~workshop_lib.paths.RunDir`'s; this module owns the contents, at the base of
the package (beside ``paths.py``) because the rooms that read a file never import each other: data
writes ``dataset.json`` and plan, launch, train and the journey read it; plan writes ``job.yaml``
and launch, monitor and the journey read it.

``<run>/data/dataset.json`` (notebook 01, ``workshop prep-data --dataset-info``), keys
:data:`KEYS`: ``data_path`` (the domain dataset's data path, ``..._text_document``, absolute),
``tokenizer_type``, ``tokenizer_model`` (absolute path), ``vocab_size``, ``eod_token_id``,
``documents``, ``tokens``; and :data:`CPT_KEYS`, added by notebook 01's continued-pre-training step:
``blend`` (a Megatron ``--data-path`` string, weight before data path), ``replay`` (``{"data_path",
"weight"}``) and ``heldout`` (``{"domain": data path, "general": data path}``). "Data path" and
"output prefix" mean what ``paths.py`` says.

``<run>/plan/job.yaml`` (notebook 02, the calculator's button): docs/cli.md's job YAML, read raw
by :func:`read_job_yaml` (through ``safeyaml``) and validated by ``launch/jobspec.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import UsageError
from .fsutil import atomic_write_text, ensure_parent_dir
from .paths import RunDir

KEYS = ("data_path", "tokenizer_type", "tokenizer_model", "vocab_size", "eod_token_id", "documents", "tokens")
# Optional keys written by the continued-pre-training step of notebook 01 (readers ignore them when
# absent): ``blend`` (the Megatron --data-path string: domain and replayed general text, weight first),
# ``replay`` ({"data_path", "weight"}) and ``heldout`` ({"domain": data path, "general": data path}).
CPT_KEYS = ("blend", "replay", "heldout")
MAX_INFO_BYTES = 1 << 20  # dataset.json is a few hundred bytes; more is not one


# ---- dataset.json ------------------------------------------------------------------------------
def dataset_info_path(target: str | os.PathLike[str] | RunDir) -> Path:
    """dataset.json of a run directory, or ``target`` itself when it names a ``.json`` file."""
    if isinstance(target, RunDir):
        return target.dataset_info
    p = Path(target)
    return p if p.suffix == ".json" else RunDir(p).dataset_info


def check_dataset_info_target(target: str | os.PathLike[str]) -> Path:
    """The dataset.json path ``--dataset-info`` names, or one UsageError line when it cannot be written.

    Checked before prep-data tokenizes, so a typo never leaves a dataset written next to a failure.
    """
    path = dataset_info_path(target)
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
    return atomic_write_text(dataset_info_path(target), json.dumps(info, indent=2) + "\n")


def read_dataset_info(run_dir: str | os.PathLike[str] | RunDir, required: tuple[str, ...] = KEYS) -> dict:
    """Read and check dataset.json (a run directory, or the file itself).

    Every reader of the hand-over file goes through here, so a corrupt one (cut short, hand-edited,
    another tool's JSON) is one UsageError line naming the file and the field, never a
    JSONDecodeError, KeyError or TypeError further on. ``required``: the keys the caller uses
    (all by default); every key present is checked for its type.
    """
    path = dataset_info_path(run_dir)
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


def read_dataset_info_if_any(
    run_dir: str | os.PathLike[str] | RunDir | None, required: tuple[str, ...] = ("data_path",)
) -> dict | None:
    """:func:`read_dataset_info`, or None when there is no run directory or notebook 01 has not
    written the file yet (the planner then uses a preset's vocabulary). A file that exists is
    checked as strictly as ever."""
    if run_dir is None or run_dir == "":
        return None
    if not dataset_info_path(run_dir).exists():
        return None
    return read_dataset_info(run_dir, required=required)


def add_to_dataset_info(target: str | os.PathLike[str] | RunDir, **fields: Any) -> Path:
    """Merge ``fields`` (of :data:`CPT_KEYS`) into an existing dataset.json, atomically."""
    unknown = sorted(set(fields) - set(CPT_KEYS))
    if unknown:
        raise ValueError(f"not dataset.json keys: {unknown}")
    info = read_dataset_info(target)
    info.update(fields)
    return atomic_write_text(dataset_info_path(target), json.dumps(info, indent=2) + "\n")


# ---- job.yaml ----------------------------------------------------------------------------------
def write_job_yaml(path: str | os.PathLike[str] | RunDir, job: Mapping[str, Any]) -> Path:
    """Write ``job`` as YAML atomically (``<run>/plan/job.yaml`` when given a :class:`RunDir`)."""
    import yaml

    target = path.job_yaml if isinstance(path, RunDir) else Path(path)
    text = yaml.safe_dump(dict(job), sort_keys=False, default_flow_style=False)
    return atomic_write_text(target, text)


def read_job_yaml(path: str | os.PathLike[str] | RunDir) -> Any:
    """A job YAML as parsed, through the kit's one bounded YAML reader (``safeyaml``); not yet
    validated: ``launch/jobspec.load`` does that, and names what is wrong with a file that is not
    a mapping (so an empty file comes back as None here)."""
    from . import safeyaml

    target = path.job_yaml if isinstance(path, RunDir) else Path(path)
    return safeyaml.load_file(
        target, "job file", missing="write one (see docs/cli.md, 'Launch') or run notebook 02 first"
    )


def job_args(run: RunDir) -> dict[str, Any]:
    """The training flags of ``<run>/plan/job.yaml`` (its ``args``), or ``{}`` when notebook 02 has
    not written one or it holds none: for readers that only look a flag up (monitor's sequence length)."""
    if not run.job_yaml.exists():
        return {}
    job = read_job_yaml(run)
    args = job.get("args") if isinstance(job, dict) else None
    return dict(args) if isinstance(args, dict) else {}
