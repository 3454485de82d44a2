"""Whether a checkpoint folder is ours to load: loading one runs pickle.

megatron-core's ``dist_checkpointing`` (through torch's distributed checkpoint reader) unpickles
``iter_*/.metadata`` and ``common.pt``, and unpickling runs code chosen by whoever wrote the file.
So a checkpoint is loaded only when its files could only have been written by us: owned by this
user and writable by no one else (not world-writable; group-writable only for the owner's own
private group, as a ``umask 002`` leaves files on many Linux systems). Anything else is refused
with one line that names the file and the way to accept it knowingly
(``--trust-checkpoint`` on ``workshop train``, ``WORKSHOP_TRUST_CHECKPOINT=1`` for the trainer
itself, e.g. in a pod reading a shared volume written by another uid).

Standard library only.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path

from ..errors import UsageError
from ..paths import CHECKPOINT_TRACKER

TRUST_ENV = "WORKSHOP_TRUST_CHECKPOINT"
TRACKER = CHECKPOINT_TRACKER


def trusted_by_env() -> bool:
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def _private_group(gid: int, uid: int) -> bool:
    """A group only the owner is in: the user-private group of ``uid`` with no other members."""
    try:
        group = grp.getgrgid(gid)
        user = pwd.getpwuid(uid)
    except KeyError:
        return False
    return user.pw_gid == gid and group.gr_name == user.pw_name and not (set(group.gr_mem) - {user.pw_name})


def why_untrusted(path: Path, uid: int | None = None) -> str | None:
    """The reason ``path`` may have been written by someone else, or None when it is ours alone."""
    uid = os.getuid() if uid is None else uid
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "is a dangling or looping symbolic link"
        reason = why_untrusted(target, uid)
        return f"is a symbolic link to {target}, which {reason}" if reason else None
    if st.st_uid != uid:
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = str(st.st_uid)
        return f"is owned by another user ({owner}, not uid {uid})"
    if st.st_mode & stat.S_IWOTH:
        return "is world-writable"
    if st.st_mode & stat.S_IWGRP and not _private_group(st.st_gid, uid):
        return "is group-writable"
    return None


def check_checkpoint_trusted(load: str | os.PathLike[str], flag: str = "--load") -> None:
    """Raise a UsageError when a file that loading ``load`` would unpickle might not be ours.

    Checks the folder, its tracker, the iteration folder the tracker names and every file in that
    folder (``.metadata``, ``common.pt``, the ``.distcp`` shards). A folder without a tracker is
    fine: nothing is loaded from it.
    """
    if trusted_by_env():
        return
    root = Path(load)
    tracker = root / TRACKER
    candidates: list[Path] = [root, tracker]
    if tracker.is_file():
        text = tracker.read_text(errors="replace").strip()
        if text.isdigit():
            it = root / f"iter_{int(text):07d}"
            candidates.append(it)
            if it.is_dir():
                candidates += sorted(it.iterdir())
        elif text == "release":
            candidates.append(root / "release")
    for path in candidates:
        reason = why_untrusted(path)
        if reason:
            raise UsageError(
                f"{flag} {load}: {path} {reason}; loading a checkpoint unpickles it, which runs code "
                f"its writer chose. Fix the ownership/permissions (chmod go-w), or, if you trust "
                f"whoever wrote it, pass --trust-checkpoint to workshop train (or set {TRUST_ENV}=1)"
            )
