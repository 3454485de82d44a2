"""File-system helpers shared by every room: atomic writes and safe names.

Outputs must appear whole or not at all: an interrupted run (Ctrl-C, SIGKILL, a pod evicted)
must never leave a half-written ``.idx``, manifest or checkpoint marker that a later step loads.
Everything is written to a temporary name in the same directory and renamed into place, which
is atomic on POSIX file systems (including Lustre).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import UsageError

_TMP_TAG = ".tmp-"


def temp_path_for(final: str | os.PathLike[str]) -> Path:
    """A unique temporary path next to ``final`` (same directory, so rename is atomic)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}{_TMP_TAG}", dir=final.parent)
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def atomic_path(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path; on success fsync and rename it to ``final``, on error remove it."""
    final = Path(final)
    tmp = temp_path_for(final)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


_STOP_SIGNALS = ("SIGINT", "SIGTERM")
_held_depth = 0
_held_pending: list[int] = []


@contextlib.contextmanager
def held_stop_signals() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM over a few milliseconds that must not be cut in half.

    Renaming a ``.bin`` and its ``.idx`` into place, or removing a run's outputs after it was
    stopped, is short but two steps: a KeyboardInterrupt between them leaves half a pair, or half
    a clean-up. Inside this block a stop signal is only recorded; on leaving it the old handlers
    come back and the first recorded signal is raised again, so it acts (KeyboardInterrupt, the
    kubelet's SIGTERM handler) right after the block, never inside it. Blocks nest: the signal
    waits for the outermost. Only the main thread can set handlers; elsewhere this does nothing.
    """
    import signal
    import threading

    global _held_depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _held_depth:  # inside an outer block: it holds, and raises what came
        _held_depth += 1
        try:
            yield
        finally:
            _held_depth -= 1
        return

    def record(signum: int, frame: object) -> None:  # noqa: ARG001
        _held_pending.append(signum)

    previous = {}
    for name in _STOP_SIGNALS:
        sig = getattr(signal, name)
        previous[sig] = signal.signal(sig, record)
    _held_depth = 1
    try:
        yield
    finally:
        _held_depth = 0
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if _held_pending:
            first = _held_pending[0]
            _held_pending.clear()
            signal.raise_signal(first)


def atomic_write_text(final: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``final`` atomically and return the final path."""
    with atomic_path(final) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(final)


def atomic_write_bytes(final: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``final`` atomically and return the final path."""
    with atomic_path(final) as tmp:
        tmp.write_bytes(data)
    return Path(final)


# RFC 1123 label: what Kubernetes accepts for names of jobs, namespaces, PVCs and labels.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_k8s_name(value: str, field: str, max_len: int = 63) -> str:
    """Return ``value`` if it is a valid Kubernetes name, else raise a UsageError naming ``field``."""
    if not isinstance(value, str) or not value or len(value) > max_len or not _DNS_LABEL.match(value):
        from .safeyaml import clip

        raise UsageError(
            f"{field}: {clip(value)} is not a valid Kubernetes name; use at most {max_len} lowercase "
            "letters, digits and '-', starting and ending with a letter or digit"
        )
    return value


# What an unusable output path looks like: the user's input to fix (exit 2), unlike a full or
# failing disk (ENOSPC, EIO: a fault, exit 1).
_BAD_PATH_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.ENAMETOOLONG,
        errno.EINVAL,
        errno.ELOOP,
    }
)


def output_error(path: str | os.PathLike[str], flag: str, exc: OSError) -> Exception:
    """The one-line error for an output path that cannot be written: UsageError naming ``flag``
    when the path is the problem, WorkshopError (exit 1) when the disk is."""
    from .errors import WorkshopError

    why = exc.strerror or type(exc).__name__
    if exc.errno in _BAD_PATH_ERRNOS or isinstance(
        exc, (PermissionError, NotADirectoryError, IsADirectoryError)
    ):
        return UsageError(f"{flag} {path}: cannot write there ({why}); give a path in a writable directory")
    return WorkshopError(f"{flag} {path}: writing failed ({why})")


def write_output(path: str | os.PathLike[str], text: str, flag: str) -> Path:
    """Write a user-named output file atomically; an unusable path is one line naming ``flag``."""
    try:
        if Path(path).is_dir():
            raise UsageError(
                f"{flag} {path}: is a directory; give a file name, e.g. {Path(path) / 'job.yaml'}"
            )
        return atomic_write_text(path, text)
    except OSError as exc:
        raise output_error(path, flag, exc) from None


def ensure_parent_dir(
    path: str | os.PathLike[str], flag: str, shown: str | os.PathLike[str] | None = None
) -> Path:
    """Create the folder ``path`` will be written in and check this user may write there, before any
    work is done; an unusable folder is one UsageError naming ``flag`` (and ``shown``, what the user
    typed, when it differs from ``path``)."""
    parent = Path(path).parent
    what = shown if shown is not None else path
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{flag} {what}: cannot create the folder {parent} ({exc.strerror}); choose a writable path"
        ) from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {what}: the folder {parent} is not writable; choose a writable path")
    return parent


def ensure_output_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """Create the output directory ``path`` and prove it writable (a probe file), before any work."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        if not p.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory")
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise output_error(path, flag, exc) from None
    return p


def open_fresh(final: str | os.PathLike[str], mode: str = "w", **kwargs) -> IO:
    """Open a new, empty regular file at ``final`` for streaming, whatever was there.

    The file is created under a temporary name and renamed into place before anything is
    written, so a symbolic (or hard) link planted at ``final`` is replaced, never followed: its
    target is not truncated or overwritten. Unlike :func:`atomic_path` the file is visible while
    it is written (a log that ``tail -f`` and ``workshop logs`` read as it grows).
    """
    final = Path(final)
    if final.is_dir() and not final.is_symlink():
        raise IsADirectoryError(f"{final} is a directory")
    tmp = temp_path_for(final)
    try:
        fh = open(tmp, mode, **kwargs)  # noqa: SIM115 - the caller closes it
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return fh
