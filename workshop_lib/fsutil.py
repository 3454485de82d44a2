"""File-system helpers shared by every room: atomic writes and safe names.

Outputs must appear whole or not at all: an interrupted run (Ctrl-C, SIGKILL, a pod evicted)
must never leave a half-written ``.idx``, manifest or checkpoint marker that a later step loads.
Everything is written to a temporary name in the same directory and renamed into place, which
is atomic on POSIX file systems (including Lustre).
"""

from __future__ import annotations

import contextlib
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
        raise UsageError(
            f"{field}: {value!r} is not a valid Kubernetes name; use at most {max_len} lowercase "
            "letters, digits and '-', starting and ending with a letter or digit"
        )
    return value


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
