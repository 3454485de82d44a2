"""Megatron checkpoint directories: what is there, is it whole, how big, and keep-last-N clean-up.

Megatron's ``--save DIR`` holds one ``iter_NNNNNNN/`` per save and a tracker file,
``latest_checkpointed_iteration.txt`` (the iteration number, or ``release``), written after a save
completes: it is what ``--load`` resumes from. Two layouts inside an iteration directory:

* legacy (``--ckpt-format torch``): ``mp_rank_TT/`` or ``mp_rank_TT_PPP/`` per tensor/pipeline rank,
  each with ``model_optim_rng.pt`` (and ``distrib_optim.pt`` with the distributed optimizer). Whole
  when every (TP, PP) pair up to the largest seen has a non-empty ``model_optim_rng.pt``;
* distributed (``torch_dist``, the default since Megatron-Core 0.8): ``metadata.json`` (names the
  backend), PyTorch DCP's ``.metadata``, ``common.pt`` and shards ``__<rank>_<n>.distcp``. Whole when
  the three files exist and the shard ranks run 0..N-1 without gaps.

A save takes at least ``size / bandwidth`` of the shared file system; :mod:`workshop_lib.facts.storage`
has the FSx for Lustre and Azure Managed Lustre tiers.
Clean-up keeps the newest ``keep_last`` iterations and never deletes the one the tracker points to nor
the newest complete one (the only thing left to resume from when the newer saves are partial); it is
a dry run unless ``delete=True``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..facts.storage import DEFAULT_STORAGE, storage_tier
from ..paths import CHECKPOINT_TRACKER

TRACKER = CHECKPOINT_TRACKER
_ITER_DIR = re.compile(r"^iter_(\d{7,})$")
_MP_RANK = re.compile(r"^mp_rank_(\d{2})(?:_(\d{3}))?$")
_DISTCP = re.compile(r"^__(\d+)_(\d+)\.distcp$")


@dataclass
class CheckpointInfo:
    iteration: int
    path: str
    layout: str  # "torch_dist" | "legacy" | "unknown"
    complete: bool
    problems: list[str] = field(default_factory=list)
    size_bytes: int = 0
    files: int = 0
    modified: float = 0.0  # newest mtime inside, epoch seconds
    age_seconds: float = 0.0
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    shards: int | None = None
    is_latest: bool = False


def _walk(path: Path) -> tuple[int, int, float]:
    size = files = 0
    newest = path.stat().st_mtime
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                st = os.lstat(os.path.join(root, n))  # a link's own size: never followed
            except FileNotFoundError:  # removed while we look (a save or clean-up in progress)
                continue
            size += st.st_size
            files += 1
            newest = max(newest, st.st_mtime)
    return size, files, newest


def inspect_iteration(path: Path, iteration: int, now: float | None = None) -> CheckpointInfo:
    names = {p.name: p for p in path.iterdir()}
    size, files, newest = _walk(path)
    info = CheckpointInfo(iteration, str(path), "unknown", False, size_bytes=size, files=files, modified=newest,
                          age_seconds=max(0.0, (now or time.time()) - newest))  # fmt: skip
    shards = [m for n in names if (m := _DISTCP.match(n))]
    mp = [(m, names[n]) for n in names if (m := _MP_RANK.match(n)) and names[n].is_dir()]
    if shards or ".metadata" in names or "metadata.json" in names:
        info.layout = "torch_dist"
        if "metadata.json" in names:
            try:
                meta = json.loads(names["metadata.json"].read_text())
                backend = meta.get("sharded_backend")
                if backend and backend not in ("torch_dist", "zarr", "torch_dcp"):
                    info.problems.append(f"metadata.json names an unknown backend {backend!r}")
            except (OSError, ValueError):
                info.problems.append("metadata.json is not valid JSON")
        for needed in ("metadata.json", ".metadata", "common.pt"):
            if needed not in names:
                info.problems.append(f"{needed} missing")
        ranks = sorted({int(m.group(1)) for m in shards})
        info.shards = len(shards)
        if not ranks:
            info.problems.append("no __*.distcp shard files")
        elif ranks != list(range(len(ranks))):
            missing = sorted(set(range(ranks[-1] + 1)) - set(ranks))
            info.problems.append(f"shards of rank(s) {missing} missing")
        for m in shards:
            if names[m.group(0)].stat().st_size == 0:
                info.problems.append(f"{m.group(0)} is empty")
                break
    elif mp:
        info.layout = "legacy"
        pairs = {(int(m.group(1)), int(m.group(2) or 0)) for m, _ in mp}
        tp = max(t for t, _ in pairs) + 1
        pp = max(p for _, p in pairs) + 1
        info.tensor_parallel_size, info.pipeline_parallel_size = tp, pp
        missing = [(t, p) for t in range(tp) for p in range(pp) if (t, p) not in pairs]
        if missing:
            info.problems.append(f"rank directories missing for (tp, pp) {missing}")
        for m, d in mp:
            f = d / "model_optim_rng.pt"
            if not f.is_file():
                info.problems.append(f"{m.group(0)}/model_optim_rng.pt missing")
            elif f.stat().st_size == 0:
                info.problems.append(f"{m.group(0)}/model_optim_rng.pt is empty")
    else:
        info.problems.append("neither mp_rank_* directories nor torch_dist files (.metadata, *.distcp)")
    info.complete = not info.problems
    return info


def read_tracker(directory: Path) -> tuple[int | str | None, str | None]:
    """The tracker's content: an iteration, ``"release"``, or None; plus a problem if unreadable."""
    f = directory / TRACKER
    if not f.is_file():
        return None, None
    with open(f, "rb") as fh:  # a few bytes; a huge or binary tracker is a problem, not a crash
        raw = fh.read(64)
    text = raw.decode("utf-8", errors="replace").strip()
    if text == "release":
        return "release", None
    try:
        return int(text), None
    except ValueError:
        return None, f"{TRACKER} holds {text[:40]!r}, not an iteration number"


def scan_checkpoints(
    directory: str | os.PathLike[str],
    *,
    keep_last: int | None = None,
    delete: bool = False,
    storage: str = DEFAULT_STORAGE,
    storage_capacity_tib: float | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The ``workshop checkpoints DIR --json`` object (and the clean-up, when asked)."""
    d = Path(directory)
    if not d.exists():
        raise UsageError(
            f"{d}: no such checkpoint directory; pass Megatron's --save directory (e.g. runs/workshop/train/checkpoints)"
        )
    if not d.is_dir():
        raise UsageError(f"{d}: not a directory; pass Megatron's --save directory")
    if keep_last is not None and keep_last < 1:
        raise UsageError(
            f"--keep-last: {keep_last} must be at least 1 (the newest checkpoint is always kept)"
        )
    tier = storage_tier(storage)
    now = time.time() if now is None else now
    infos = []
    links = []
    for p in d.iterdir():
        m = _ITER_DIR.match(p.name)
        if m and p.is_symlink():
            links.append(p.name)  # never followed: not counted, and never deleted through
        elif m and p.is_dir():
            infos.append(inspect_iteration(p, int(m.group(1)), now))
    infos.sort(key=lambda i: i.iteration)
    tracker, tracker_problem = read_tracker(d)
    problems = [tracker_problem] if tracker_problem else []
    for name in sorted(links):
        problems.append(
            f"{name} is a symbolic link: skipped (not inspected, never deleted); "
            "a checkpoint directory holds real iter_* folders"
        )
    by_iter = {i.iteration: i for i in infos}
    if isinstance(tracker, int):
        if tracker in by_iter:
            by_iter[tracker].is_latest = True
            if not by_iter[tracker].complete:
                # --load resumes from exactly this iteration, so a broken one fails the restart even
                # when an older whole checkpoint sits next to it.
                problems.append(
                    f"{TRACKER} points to iteration {tracker}, but iter_{tracker:07d}/ is incomplete "
                    f"({'; '.join(by_iter[tracker].problems)}): --load will fail; point it at a "
                    "complete iteration"
                )
        else:
            problems.append(
                f"{TRACKER} points to iteration {tracker}, but iter_{tracker:07d}/ does not exist"
            )
    elif tracker is None and infos:
        problems.append(f"no {TRACKER}: --load will not find these checkpoints (was a save interrupted?)")
    for i in infos:
        if isinstance(tracker, int) and i.iteration > tracker:
            i.problems.append("newer than the tracker: a save in progress or one that did not finish")
            i.complete = False
    complete = [i for i in infos if i.complete]
    latest_complete = complete[-1].iteration if complete else None
    ref = by_iter.get(tracker) if isinstance(tracker, int) else (complete[-1] if complete else None)
    save_bytes = ref.size_bytes if ref else 0
    out: dict[str, Any] = {
        "directory": str(d),
        "latest": tracker,
        "latest_complete": latest_complete,
        "iterations": [i.iteration for i in infos],
        "checkpoints": [asdict(i) for i in infos],
        "total_bytes": sum(i.size_bytes for i in infos),
        "problems": problems,
        "storage": {
            "key": tier.key,
            "service": tier.service,
            "tier": tier.tier,
            "capacity_tib": storage_capacity_tib or tier.default_capacity_tib,
            "bandwidth_bytes_per_s": tier.bandwidth_bytes_per_s(storage_capacity_tib),
        },
        "checkpoint_bytes": save_bytes,
        "save_seconds_estimate": tier.seconds_to_write(save_bytes, storage_capacity_tib)
        if save_bytes
        else None,
    }
    if keep_last is not None:
        keep = {i.iteration for i in infos[-keep_last:]}
        if isinstance(tracker, int):
            keep.add(tracker)
        if latest_complete is not None:
            # The newest N by number may all be partial saves; deleting the last whole one would leave
            # nothing to resume from, so it survives any --keep-last.
            keep.add(latest_complete)
        doomed = [i for i in infos if i.iteration not in keep]
        deleted = []
        if delete:
            for i in doomed:
                # Re-checked just before removal: a folder replaced by a link since the scan is
                # skipped (rmtree refuses links, and would have stopped half way).
                if Path(i.path).is_symlink():
                    problems.append(f"{Path(i.path).name} became a symbolic link: not deleted")
                    continue
                shutil.rmtree(i.path)
                deleted.append(i.path)
        out["cleanup"] = {
            "keep_last": keep_last,
            "dry_run": not delete,
            "delete": [i.path for i in doomed],
            "deleted": deleted,
            "freed_bytes": sum(i.size_bytes for i in doomed),
        }
    return out


def format_table(report: dict[str, Any]) -> str:
    """A plain-text table of the checkpoints, for the terminal and the notebook."""
    rows = [f"{'iteration':>10}  {'layout':<10} {'complete':<8} {'size':>10} {'age':>9}  latest  problems"]
    for c in report["checkpoints"]:
        rows.append(
            f"{c['iteration']:>10}  {c['layout']:<10} {'yes' if c['complete'] else 'NO':<8} "
            f"{human_bytes(c['size_bytes']):>10} {human_seconds(c['age_seconds']):>9}  "
            f"{'*' if c['is_latest'] else ' ':^6}  {'; '.join(c['problems'])}"
        )
    return "\n".join(rows)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 0.01:
        return "<0.01s"
    if s < 10:
        return f"{s:.2g}s"
    if s < 120:
        return f"{s:.0f}s"
    if s < 7200:
        return f"{s / 60:.0f}m"
    if s < 172800:
        return f"{s / 3600:.1f}h"
    return f"{s / 86400:.1f}d"
