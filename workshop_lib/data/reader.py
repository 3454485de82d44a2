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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import UsageError

SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
CHUNK_BYTES = 32 * 1024 * 1024
# scan_lines works through a chunk in blocks this large: a block and its scratch arrays stay in the
# CPU cache, so scanning and staging a block read it from memory once instead of three times.
SCAN_BLOCK = 512 * 1024


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
        elif p.is_file():
            files.append(p)
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
        if f.name.endswith((".gz", ".zst", ".zstd")) and not f.name.endswith((".gz", ".zst")):
            raise UsageError(f"{f}: unsupported compression; use .jsonl, .jsonl.gz or .jsonl.zst")
    return unique


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
        return raw, io.BufferedReader(_ZstdFrames(raw), buffer_size=1 << 20)
    return raw, raw


ZSTD_READ = 1 << 20  # compressed bytes read from the file at a time
ZSTD_FEED = 128 * 1024  # compressed bytes decompressed per call: bounds the output held at once


class _ZstdFrames(io.RawIOBase):
    """A .zst file's frames, decompressed one after another, that notices a file cut short.

    zstandard's ``stream_reader`` (and ``read_to_iter``) end quietly when the input stops inside a
    frame, so a truncated file would lose its tail with no sign (or only one "not JSON" cut line).
    A ``decompressobj`` says when its frame has ended (``eof``); at the end of the file a frame that
    did not end raises EOFError, and a corrupt frame raises OSError, both of which :func:`iter_chunks`
    turns into one "cannot decompress" line. Work is per 128 KB of compressed input, never per line.
    """

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        self._raw = raw
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._error = zstandard.ZstdError
        self._d = self._new()
        self._in_frame = False  # input went into a frame whose end has not been seen yet
        self._in = memoryview(b"")
        self._out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out:
            if not self._in:
                self._in = memoryview(self._raw.read(ZSTD_READ))
                if not self._in:
                    if self._in_frame:
                        raise EOFError("the file ends inside a zstd frame: it was cut short")
                    return 0
            piece, self._in = self._in[:ZSTD_FEED], self._in[ZSTD_FEED:]
            self._out = memoryview(self._feed(piece))
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _feed(self, data) -> bytes:
        """Decompress ``data``, starting a new frame after each one that ends (concatenated frames)."""
        out = []
        while data:
            try:
                out.append(self._d.decompress(data))
            except self._error as exc:
                raise OSError(f"zstd: {exc}") from None
            if self._d.eof:
                data, self._d, self._in_frame = self._d.unused_data, self._new(), False
            else:
                data, self._in_frame = b"", True
        return out[0] if len(out) == 1 else b"".join(out)


def scan_lines(data: bytes | memoryview, sink: BinaryIO | None = None) -> tuple[int, bool]:
    """(number of lines, whether every line ends with '}' before its newline), vectorised.

    The second answer lets the fast path trust the engine's JSON reader: together with one result
    row per line it rules out blank lines and lines with anything after their object.

    The data is scanned in cache-sized blocks (SCAN_BLOCK). With ``sink`` (a binary file), each block
    is also written to it right after it is scanned, while it is still in the cache: staging a chunk
    for the engine then costs no second pass over memory.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    view = memoryview(data)
    size = len(arr)
    lines, clean = 0, True
    for start in range(0, size, SCAN_BLOCK):
        stop = min(size, start + SCAN_BLOCK)
        ends = np.flatnonzero(arr[start:stop] == 10)
        if len(ends):
            lines += len(ends)
            clean = clean and _end_in_brace(arr, ends + start)
        if sink is not None:
            sink.write(view[start:stop])
    if size and arr[-1] != 10:  # a last line without its newline
        lines += 1
        clean = clean and _end_in_brace(arr, np.array([size]))
    return lines, clean


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


def iter_chunks(path: Path, chunk_bytes: int | None = None, stage: Stage | None = None) -> Iterator[Chunk]:
    """Yield ``path`` as line-aligned chunks of about ``chunk_bytes`` (default CHUNK_BYTES) uncompressed bytes.

    Chunks grow from an eighth of that (4, 8, 16, 32 MB by default), so the tokenizer starts at once
    and each chunk is read while the previous, half as large, one is tokenized.

    ``stage``, when given, is called for every chunk that is not the whole file and returns a binary
    file: the chunk's bytes are copied into it (from its start, block by block as they are scanned)
    and the chunk's ``staged`` names it, so an engine that reads files can read the chunk.
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    if not path.name.endswith((".gz", ".zst", ".zstd")):
        yield from _iter_mapped(path, chunk_bytes, stage)
        return
    raw, stream = _open(path)
    line, first, index = 1, True, 0
    try:
        while True:
            try:
                data = stream.read(_chunk_size(chunk_bytes, index))
                if data and not data.endswith(b"\n"):
                    data += stream.readline()
                more = bool(stream.peek(1)) if hasattr(stream, "peek") else False
            except (OSError, EOFError) as exc:
                raise UsageError(f"{path}: cannot decompress ({exc}); check the file is whole") from None
            if not data:
                return
            whole = first and not more
            n, clean, staged = _scan(data, None if whole else stage)
            yield Chunk(path, line, data, n, whole, raw.tell(), clean, staged=staged)
            line += n
            first = False
            index += 1
            if not more:
                return
    finally:
        stream.close()
        raw.close()


def _scan(data: bytes | memoryview, stage: Stage | None) -> tuple[int, bool, str | None]:
    """scan_lines, copying the data into a file from ``stage`` when given: (lines, clean, its name)."""
    if stage is None:
        return (*scan_lines(data), None)
    fh = stage()
    fh.seek(0)
    n, clean = scan_lines(data, fh)
    fh.truncate()
    fh.flush()
    return n, clean, fh.name


def _iter_mapped(path: Path, chunk_bytes: int, stage: Stage | None = None) -> Iterator[Chunk]:
    """Plain files: each chunk is a read-only memory map of its byte range (no copy into Python).

    Every chunk has its own mapping, unmapped once the chunk is dropped, so resident memory stays
    at the chunks in flight however large the file is.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        pos, line, first, index = 0, 1, True, 0
        while pos < size:
            start = pos - pos % mmap.ALLOCATIONGRANULARITY
            want = _chunk_size(chunk_bytes, index)
            target, margin = pos + want, 1 << 20
            while True:
                mapped_end = size if target >= size else min(size, target + margin)
                mm = mmap.mmap(fh.fileno(), mapped_end - start, access=mmap.ACCESS_READ, offset=start)
                if target >= size:
                    end = size
                    break
                nl = mm.find(b"\n", target - start)
                if nl >= 0:
                    end = start + nl + 1
                    break
                if mapped_end == size:
                    end = size
                    break
                mm.close()
                margin *= 4
            view = memoryview(mm)[pos - start : end - start]
            whole = first and end == size
            n, clean, staged = _scan(view, None if whole else stage)
            yield Chunk(path, line, view, n, whole, end, clean, offset=pos, staged=staged)
            del view, mm
            line += n
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


def parse_chunk(chunk: Chunk, keys: list[str]) -> tuple[dict[str, list[str]], list[BadLine]]:
    """Strictly parse every line: the texts per key of the good lines, and every bad line."""
    texts: dict[str, list[str]] = {k: [] for k in keys}
    bad: list[BadLine] = []
    data = chunk.content()
    pieces = data.split(b"\n")
    if data.endswith(b"\n"):
        pieces.pop()
    name = str(chunk.file)
    loads = json.loads
    for offset, raw in enumerate(pieces):
        lineno = chunk.first_line + offset
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append(BadLine(name, lineno, f"invalid UTF-8 (byte {exc.start + 1} of the line)"))
            continue
        try:
            obj = loads(s)
        except ValueError as exc:
            reason = (
                "blank line, not JSON" if not s.strip() else f"not JSON ({exc.msg} at column {exc.colno})"
            )
            bad.append(BadLine(name, lineno, reason))
            continue
        if not isinstance(obj, dict):
            bad.append(BadLine(name, lineno, f"not a JSON object (it is {_type_name(obj)})"))
            continue
        values = []
        for key in keys:
            if key not in obj:
                values = f"key {key!r} missing (keys: {', '.join(list(obj)[:5]) or 'none'}); pass --json-keys"
                break
            v = obj[key]
            if not isinstance(v, str):
                values = f"key {key!r} is {_type_name(v)}, not a string"
                break
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    values = (
                        f"key {key!r} holds an unpaired surrogate escape (\\ud800-\\udfff), not valid Unicode"
                    )
                    break
            values.append(v)
        if isinstance(values, str):
            bad.append(BadLine(name, lineno, values))
            continue
        for key, v in zip(keys, values, strict=True):
            texts[key].append(v)
    return texts, bad


def file_size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
