"""The one YAML reader for every file the kit reads (job files, kubeconfigs, manifests read back).

``yaml.safe_load`` alone is safe against code execution but not against exhaustion: a 1.9 KB
"billion laughs" file (nested aliases) expands to gigabytes and runs for a minute before a
``MemoryError``; a 100k-deep ``[[[...]]]`` ends in ``RecursionError``; ``/dev/zero`` or a FIFO given
as a file is read until memory runs out. The kit's files are small, flat and alias-free, so the
bounds cost nothing legitimate:

* only regular files are read (opened non-blocking, so a FIFO never blocks), at most
  :data:`MAX_BYTES`;
* aliases (``*name``) are refused: every value is written out where it is used;
* nesting deeper than :data:`MAX_DEPTH` is refused.

The event stream is scanned first (linear in the file's size: aliases are not expanded there),
then the text is loaded with the C loader when libyaml is present. Every problem is one
:class:`~workshop_lib.errors.UsageError` naming the file and line; values in messages go through
:func:`clip`, so a message never repeats a huge (or secret-bearing) value whole.
"""

from __future__ import annotations

import contextlib
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from .errors import UsageError

MAX_BYTES = 1024 * 1024  # a job file is about 1 KB; a kubeconfig with many clusters a few tens
MAX_DEPTH = 100  # a rendered PyTorchJob nests about 12 levels
CLIP = 80


def clip(value: Any, limit: int = CLIP) -> str:
    """``repr(value)`` cut to ``limit`` characters (with the total length), for error messages.

    ``repr`` of a big nested value is computed lazily only up to what is shown: containers are
    summarised by type and size rather than rendered whole.
    """
    if isinstance(value, dict | list | tuple | set):
        return f"<{type(value).__name__} of {len(value)} item(s)>"
    text = repr(value) if not isinstance(value, str) else repr(value[: limit + 1])
    if len(text) <= limit:
        return text
    size = f"{len(value)} characters" if isinstance(value, str) else f"{len(text)} characters"
    return f"{text[: limit - 1]}... ({size})"


def has_control(text: str) -> bool:
    """Whether ``text`` holds a control character (newline, tab, NUL, ESC, DEL, U+2028 ...)."""
    return any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in text)


def shown(path: str | os.PathLike[str]) -> str:
    """A path as it can appear in a one-line message: as is, or ``ascii()`` when it holds control characters."""
    text = str(path)
    return ascii(text) if has_control(text) else text


def read_text(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int = MAX_BYTES,
    flag: str = "",
    missing: str = "check the path",
) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes``; UsageError otherwise.

    ``what`` says what the file is ("job file", "kubeconfig") and ``flag`` the option that named it,
    for the message. A FIFO, a device (``/dev/zero``) or a directory is refused before any read.
    """
    p = Path(path)
    name = f"{flag} {shown(p)}" if flag else shown(p)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise UsageError(f"{name}: no such {what}; {missing}") from None
    except IsADirectoryError:
        raise UsageError(f"{name}: is a directory, not a {what}; pass a file") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot open the {what} ({exc.strerror or type(exc).__name__})") from None
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, fd)
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{name}: is a directory, not a {what}; pass a file")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{name}: is not a regular file (a device, FIFO or socket); pass a {what}")
        if st.st_size > max_bytes:
            raise UsageError(
                f"{name}: {st.st_size} bytes; a {what} is at most {max_bytes} bytes (is it the right file?)"
            )
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 65536))
            except OSError as exc:
                raise UsageError(f"{name}: cannot read the {what} ({exc.strerror})") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    if len(data) > max_bytes:  # it grew while being read
        raise UsageError(f"{name}: more than {max_bytes} bytes; a {what} is at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UsageError(f"{name}:{line}: not UTF-8 text; save the {what} as UTF-8") from None


def _loader() -> type:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _too_deep(where: str, max_depth: int) -> UsageError:
    """The one refusal of a file nested deeper than ``max_depth`` (``where`` is "name:line")."""
    return UsageError(f"{where}: nested more than {max_depth} levels deep; this is not a file the kit writes")


def _scan(text: str, name: str, max_depth: int) -> None:
    """Walk the event stream once: refuse aliases and nesting deeper than ``max_depth``."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1 if event.start_mark else 0
            raise UsageError(
                f"{name}:{line}: YAML aliases (*{str(event.anchor)[:40]}) are not accepted; "
                "write the value out where it is used"
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise _too_deep(f"{name}:{line}", max_depth)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def loads(text: str, source: str, *, max_depth: int = MAX_DEPTH, all_documents: bool = False) -> Any:
    """Parse YAML ``text`` (named ``source`` in messages) within the bounds; UsageError on any problem.

    ``all_documents`` returns the list of every document (a manifest with ``---`` separators).
    """
    import yaml

    name = shown(source)
    try:
        _scan(text, name, max_depth)
        if all_documents:
            return list(yaml.load_all(text, Loader=_loader()))  # noqa: S506 - a SafeLoader
        return yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = str(getattr(exc, "problem", None) or "invalid YAML")
        if "maximum nesting depth" in problem:
            # libyaml >= 0.2.6 (PyYAML 6.0.4's wheels) stops at 1000 levels while scanning ahead,
            # before _scan has counted MAX_DEPTH events: the same refusal, in the kit's words
            raise _too_deep(f"{name}{line}", max_depth) from None
        raise UsageError(f"{name}{line}: {problem[:120]}; fix the YAML syntax there") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # an int of 10^5 digits, a date out of range
        raise UsageError(f"{name}: a value cannot be read ({type(exc).__name__}); fix the file") from None


def load_file(
    path: str | os.PathLike[str],
    what: str = "YAML file",
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    flag: str = "",
    all_documents: bool = False,
    missing: str = "check the path",
) -> Any:
    """Read and parse one YAML file within every bound (see the module's docstring)."""
    text = read_text(path, what, max_bytes=max_bytes, flag=flag, missing=missing)
    return loads(text, str(path), max_depth=max_depth, all_documents=all_documents)
