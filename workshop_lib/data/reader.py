"""Reading JSONL corpora: files, folders and globs; plain, gzip or zstd; streamed in line-aligned chunks.

Nothing here holds more than one chunk (a few tens of MB) of a file, so memory does not grow with the
corpus. Bad lines are found and named (file, line number, reason) by :func:`parse_chunk`.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import mmap
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import UsageError
from ..zstdframes import ZstdFrames

SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
CHUNK_BYTES = 32 * 1024 * 1024
# scan_lines works through a chunk in blocks this large: a block and its scratch arrays stay in the
# CPU cache, so scanning and staging a block read it from memory once instead of three times.
SCAN_BLOCK = 512 * 1024
# A line longer than this is skipped and named, never held: one corrupt or hostile line (a .zst
# of zeros decompresses to gigabytes without a newline) must not take the machine's memory.
MAX_LINE_BYTES = 64 * 1024 * 1024
# Bad lines kept by name (the rest are only counted): a corpus of millions of blank lines must
# not grow a report of millions of entries.
MAX_NAMED_BAD_LINES = 1000
SKIP_BLOCK = 1 << 20  # bytes read at a time while skipping an over-long line


def expand_inputs(inputs: list[str]) -> list[Path]:
    """Files named by ``inputs`` (files, folders searched recursively, globs), in a stable order."""
    files: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
            if not found:
                raise UsageError(f"--input {item}: folder holds no {', '.join(SUFFIXES)} files")
            files.extend(found)
        elif p.is_file() or (p.exists() and not glob.has_magic(item)):
            files.append(p)  # a device or FIFO is refused below, by name
        elif glob.has_magic(item):
            found = sorted(Path(f) for f in glob.glob(item, recursive=True) if Path(f).is_file())
            if not found:
                raise UsageError(f"--input {item}: the pattern matches no file")
            files.extend(found)
        else:
            raise UsageError(f"--input {item}: no such file, folder or glob match")
    seen: set[Path] = set()
    unique = [f for f in files if not (f.resolve() in seen or seen.add(f.resolve()))]
    for f in unique:
        check_regular_file(f, "--input")
        if f.name.endswith((".gz", ".zst", ".zstd")) and not f.name.endswith((".gz", ".zst")):
            raise UsageError(f"{f}: unsupported compression; use .jsonl, .jsonl.gz or .jsonl.zst")
    return unique


def check_regular_file(path: Path, flag: str) -> None:
    """Refuse what is not a regular file (a device such as /dev/zero, a FIFO, a socket).

    Such a "file" has no end or no size: reading it as a corpus or a log runs until memory is
    gone. One line naming the path and the fix instead.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
        raise UsageError(f"{flag} {path}: {kind}; save the data to a file and pass that file")


@dataclass
class Chunk:
    """Whole lines of one file: ``data`` (uncompressed bytes), the first line's number, how many lines."""

    file: Path
    first_line: int
    data: bytes | memoryview
    lines: int
    whole_file: bool  # the chunk is the entire file (the file itself can be handed to the engine)
    disk_bytes: int  # compressed bytes consumed so far in this file (for progress)
    clean: bool = False  # every line ends with '}' (see scan_lines)
    offset: int | None = None  # plain files: where the chunk starts, so its bytes can be read again
    nbytes: int = 0
    staged: str | None = None  # the file the chunk's bytes were copied into (iter_chunks' ``stage``)
    longest: int = 0  # bytes of the longest line (newline excluded)
    inner: np.ndarray | None = None  # starts of the lines with a '}' before their end (see scan_chunk)
    bad: BadLine | None = None  # a marker for one skipped over-long line (no data, ``lines`` = 1)

    def __post_init__(self) -> None:
        self.nbytes = self.nbytes or len(self.data)

    def release(self) -> None:
        """Drop the mapped bytes of a plain-file chunk (read again by ``content`` if ever needed)."""
        if self.offset is not None:
            self.data = b""

    def content(self) -> bytes:
        """The chunk's bytes (re-read from the file when released)."""
        if len(self.data) == self.nbytes:
            return bytes(self.data)
        with open(self.file, "rb") as fh:
            return os.pread(fh.fileno(), self.nbytes, self.offset)


def _open(path: Path):
    raw = open(path, "rb")  # noqa: SIM115 - returned with the stream that wraps it
    if path.name.endswith(".gz"):
        return raw, io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), buffer_size=1 << 20)
    if path.name.endswith((".zst", ".zstd")):
        return raw, io.BufferedReader(ZstdFrames(raw), buffer_size=1 << 20)
    return raw, raw


@dataclass
class Scan:
    """What one pass over a chunk learns (see :func:`scan_chunk`)."""

    lines: int = 0
    clean: bool = True  # every line ends with '}'
    longest: int = 0  # bytes of the longest line, newline excluded
    inner: np.ndarray | None = None  # where the lines with a '}' before their last byte start


def scan_lines(data: bytes | memoryview, sink: BinaryIO | None = None) -> tuple[int, bool]:
    """(number of lines, whether every line ends with '}' before its newline), vectorised.

    The second answer lets the fast path trust the engine's JSON reader: together with one result
    row per line it rules out blank lines and lines with anything after their object.
    See :func:`scan_chunk` for the whole answer.
    """
    s = scan_chunk(data, sink)
    return s.lines, s.clean


def scan_chunk(data: bytes | memoryview, sink: BinaryIO | None = None) -> Scan:
    """Lines, "every line ends with '}'", the longest line and "some '}' ends no line", vectorised.

    The data is scanned in cache-sized blocks (SCAN_BLOCK). With ``sink`` (a binary file), each block
    is also written to it right after it is scanned, while it is still in the cache: staging a chunk
    for the engine then costs no second pass over memory.

    ``inner``: a line holding two objects (``{..}{..}`` or ``{..} junk}``) has a '}' before its
    last byte. The engine reads the first object and ignores the rest, where the reference parser
    names the line as bad; a chunk with such a '}' has those lines checked (see prep's
    ``_single_objects``) so the output does not depend on the engine.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    view = memoryview(data)
    size = len(arr)
    out = Scan()
    prev_end = -1  # position of the previous newline
    inner: list[np.ndarray] = []
    for start in range(0, size, SCAN_BLOCK):
        stop = min(size, start + SCAN_BLOCK)
        block = arr[start:stop]
        ends = np.flatnonzero(block == 10)
        if len(ends):
            ends += start
        braces = np.flatnonzero(block == 125)
        if len(braces):
            inner_starts = _inner_brace_lines(arr, braces + start, ends, prev_end)
            if len(inner_starts):
                inner.append(inner_starts)
        if len(ends):
            out.lines += len(ends)
            out.clean = out.clean and _end_in_brace(arr, ends)
            gap = int(ends[0]) - prev_end - 1
            if len(ends) > 1:
                gap = max(gap, int(np.diff(ends).max()) - 1)
            out.longest = max(out.longest, gap)
            prev_end = int(ends[-1])
        if sink is not None:
            sink.write(view[start:stop])
    if size and arr[-1] != 10:  # a last line without its newline
        out.lines += 1
        out.clean = out.clean and _end_in_brace(arr, np.array([size]))
    if size:
        out.longest = max(out.longest, size - prev_end - 1 if arr[-1] != 10 else 0)
    if inner:
        out.inner = np.unique(np.concatenate(inner))
    return out


def _inner_brace_lines(arr: np.ndarray, braces: np.ndarray, ends: np.ndarray, prev_end: int) -> np.ndarray:
    """Starts of the lines in which a '}' (at ``braces``) is not the line's last byte ('}\r' counts
    as last). ``ends``: this block's newline positions; ``prev_end``: the newline before the block."""
    size = len(arr)
    after = np.full(len(braces), 10, np.uint8)
    within = braces + 1 < size
    after[within] = arr[braces[within] + 1]
    cr = np.flatnonzero(after == 13)
    if len(cr):
        two = braces[cr] + 2
        ok = (two >= size) | (arr[np.minimum(two, size - 1)] == 10)
        after[cr[ok]] = 10
    inner = braces[after != 10]
    if not len(inner):
        return inner
    k = np.searchsorted(ends, inner)
    starts = np.where(k > 0, ends[np.maximum(k - 1, 0)] + 1 if len(ends) else 0, prev_end + 1)
    return np.unique(starts)


def _end_in_brace(arr: np.ndarray, ends: np.ndarray) -> bool:
    """Whether the lines ending at ``ends`` (newline positions, ascending) end with '}' (or '}\\r')."""
    before = ends - 1
    if before[0] < 0:  # an empty first line
        return False
    last = arr[before]
    cr = last == 13  # CRLF line ends
    if cr.any():
        last[cr] = arr[np.maximum(before[cr] - 1, 0)]
    return bool((last == 125).all())


def _chunk_size(chunk_bytes: int, index: int) -> int:
    return max(1, min(chunk_bytes, (chunk_bytes // 8) << index))


Stage = Callable[[], BinaryIO]


def _too_long(path: Path, line: int, nbytes: int, limit: int, more: bool) -> Chunk:
    """The marker chunk of one skipped over-long line (no data; prep reports its ``bad``)."""
    size = f"over {nbytes:,}" if more else f"{nbytes:,}"
    bad = BadLine(
        str(path),
        line,
        f"line of {size} bytes is longer than --max-line-bytes {limit:,}; skipped "
        "(split the document, or raise --max-line-bytes if it is real)",
    )
    return Chunk(path, line, b"", 1, False, 0, bad=bad)


def iter_chunks(
    path: Path,
    chunk_bytes: int | None = None,
    stage: Stage | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Chunk]:
    """Yield ``path`` as line-aligned chunks of about ``chunk_bytes`` (default CHUNK_BYTES) uncompressed bytes.

    Chunks grow from an eighth of that (4, 8, 16, 32 MB by default), so the tokenizer starts at once
    and each chunk is read while the previous, half as large, one is tokenized.

    ``stage``, when given, is called for every chunk that is not the whole file and returns a binary
    file: the chunk's bytes are copied into it (from its start, block by block as they are scanned)
    and the chunk's ``staged`` names it, so an engine that reads files can read the chunk.

    A line longer than ``max_line_bytes`` is never held in memory: it is read past in 1 MB blocks
    and stands as a marker chunk (``bad`` set, no data), so memory stays at a chunk plus one
    line's limit whatever the file holds (a compression bomb of one endless line included).
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    if not path.name.endswith((".gz", ".zst", ".zstd")):
        yield from _iter_mapped(path, chunk_bytes, stage, max_line_bytes)
        return
    raw, stream = _open(path)
    line, first, index = 1, True, 0
    try:
        while True:
            skipped = None  # (bytes, more) of an over-long line that ends this chunk
            try:
                data = stream.read(_chunk_size(chunk_bytes, index))
                if data and not data.endswith(b"\n"):
                    cut = data.rfind(b"\n") + 1
                    room = max_line_bytes + 1 - (len(data) - cut)  # the line's rest, with its newline
                    tail = stream.readline(room) if room > 0 else b""
                    at_eof = not tail.endswith(b"\n") and not stream.peek(1)
                    line_bytes = len(data) - cut + len(tail) - tail.endswith(b"\n")
                    if line_bytes <= max_line_bytes and (tail.endswith(b"\n") or at_eof):
                        data += tail
                    else:
                        data, skipped = data[:cut], (line_bytes, False)
                        while not tail.endswith(b"\n") and (tail := stream.readline(SKIP_BLOCK)):
                            skipped = (skipped[0] + len(tail) - tail.endswith(b"\n"), False)
                more = bool(stream.peek(1))
            except (OSError, EOFError) as exc:
                raise UsageError(f"{path}: cannot decompress ({exc}); check the file is whole") from None
            if not data and skipped is None:
                return
            if data:
                whole = first and not more and skipped is None
                scan, staged = _scan(data, None if whole else stage)
                yield _chunk(path, line, data, scan, whole, raw.tell(), staged)
                line += scan.lines
            if skipped is not None:
                yield _too_long(path, line, skipped[0], max_line_bytes, False)
                line += 1
            first = False
            index += 1
            if not more:
                return
    finally:
        stream.close()
        raw.close()


def _chunk(path: Path, line: int, data, scan: Scan, whole: bool, disk: int, staged, offset=None) -> Chunk:
    return Chunk(path, line, data, scan.lines, whole, disk, scan.clean, offset=offset, staged=staged,
                 longest=scan.longest, inner=scan.inner)  # fmt: skip


def _scan(data: bytes | memoryview, stage: Stage | None) -> tuple[Scan, str | None]:
    """scan_chunk, copying the data into a file from ``stage`` when given: (scan, its name)."""
    if stage is None:
        return scan_chunk(data), None
    fh = stage()
    fh.seek(0)
    scan = scan_chunk(data, fh)
    fh.truncate()
    fh.flush()
    return scan, fh.name


def _find_newline(fd: int, start: int, stop: int) -> int:
    """Position of the first newline in ``[start, stop)`` of the file, or -1.

    Reads 64 KB first (a line end is usually near), then up to 1 MB at a time: never more.
    """
    pos, block = start, 1 << 16
    while pos < stop:
        data = os.pread(fd, min(block, stop - pos), pos)
        if not data:
            return -1
        nl = data.find(b"\n")
        if nl >= 0:
            return pos + nl
        pos += len(data)
        block = min(SKIP_BLOCK, block * 4)
    return -1


def _iter_mapped(
    path: Path, chunk_bytes: int, stage: Stage | None = None, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[Chunk]:
    """Plain files: each chunk is a read-only memory map of its byte range (no copy into Python).

    Every chunk has its own mapping, unmapped once the chunk is dropped, so resident memory stays
    at the chunks in flight however large the file is. A chunk ends at the first newline after its
    target size; when the line there is longer than ``max_line_bytes``, the chunk ends before that
    line, which is skipped (searched for its end 1 MB at a time, never mapped whole).
    """
    with open(path, "rb") as fh:
        fd = fh.fileno()
        size = os.fstat(fd).st_size
        pos, line, first, index = 0, 1, True, 0
        while pos < size:
            start = pos - pos % mmap.ALLOCATIONGRANULARITY
            target = pos + _chunk_size(chunk_bytes, index)
            skip = None  # (start, end) of an over-long line that follows this chunk
            end = size
            if target < size:
                with mmap.mmap(fd, target - start, access=mmap.ACCESS_READ, offset=start) as mm:
                    i = mm.rfind(b"\n", pos - start, target - start)
                line_start = start + i + 1 if i >= 0 else pos  # of the line that holds ``target``
                limit = line_start + max_line_bytes + 1  # its newline must come before this
                nl = _find_newline(fd, target, min(size, limit))
                if nl >= 0:
                    end = nl + 1
                elif size >= limit or target >= limit:
                    nl = _find_newline(fd, max(limit, target), size)
                    end, skip = line_start, (line_start, size if nl < 0 else nl)
            if end > pos:
                mm = mmap.mmap(fd, end - start, access=mmap.ACCESS_READ, offset=start)
                view = memoryview(mm)[pos - start : end - start]
                whole = first and end == size
                scan, staged = _scan(view, None if whole else stage)
                yield _chunk(path, line, view, scan, whole, end, staged, offset=pos)
                del view, mm
                line += scan.lines
            if skip is not None:
                yield _too_long(path, line, skip[1] - skip[0], max_line_bytes, False)
                line += 1
                end = min(size, skip[1] + 1)
            pos, first, index = end, False, index + 1


@dataclass
class BadLine:
    file: str
    line: int
    reason: str

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


def _type_name(value: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def parse_chunk(
    chunk: Chunk, keys: list[str], max_line_bytes: int = MAX_LINE_BYTES, max_named: int = MAX_NAMED_BAD_LINES
) -> tuple[dict[str, list[str]], list[BadLine], int]:
    """Strictly parse every line: the texts per key of the good lines, the first ``max_named`` bad
    lines and how many bad lines there are in all.

    Lines are walked one at a time (never split into a list), and only ``max_named`` bad lines are
    kept, so a chunk of millions of blank lines costs no more memory than the chunk itself.
    """
    texts: dict[str, list[str]] = {k: [] for k in keys}
    bad: list[BadLine] = []
    nbad = 0
    if chunk.bad is not None:
        return texts, [chunk.bad], 1
    name = str(chunk.file)
    loads = json.loads
    for offset, raw in enumerate(io.BytesIO(chunk.content())):
        lineno = chunk.first_line + offset
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if not raw.strip():  # no exception raised per blank line: millions of them stay cheap
            reason = "blank line, not JSON"
        elif len(raw) > max_line_bytes:
            reason = (
                f"line of {len(raw):,} bytes is longer than --max-line-bytes {max_line_bytes:,}; skipped "
                "(split the document, or raise --max-line-bytes if it is real)"
            )
        else:
            reason, values = _parse_line(raw, keys, loads)
        if reason is not None:
            nbad += 1
            if len(bad) < max_named:
                bad.append(BadLine(name, lineno, reason))
            continue
        for key, v in zip(keys, values, strict=True):
            texts[key].append(v)
    return texts, bad, nbad


def _parse_line(raw: bytes, keys: list[str], loads) -> tuple[str | None, list[str]]:
    """(why the line is bad, or None; the line's texts for ``keys``)."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 (byte {exc.start + 1} of the line)", []
    try:
        obj = loads(s)
    except ValueError as exc:
        return (
            "blank line, not JSON" if not s.strip() else f"not JSON ({exc.msg} at column {exc.colno})"
        ), []
    if not isinstance(obj, dict):
        return f"not a JSON object (it is {_type_name(obj)})", []
    values = []
    for key in keys:
        if key not in obj:
            return f"key {key!r} missing (keys: {', '.join(list(obj)[:5]) or 'none'}); pass --json-keys", []
        v = obj[key]
        if not isinstance(v, str):
            return f"key {key!r} is {_type_name(v)}, not a string", []
        if not v.isascii():
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return (
                    f"key {key!r} holds an unpaired surrogate escape (\\ud800-\\udfff), not valid Unicode",
                    [],
                )
        values.append(v)
    return None, values


def file_size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
