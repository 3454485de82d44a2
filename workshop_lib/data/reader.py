"""Reading JSONL corpora: files, folders and globs; plain, gzip or zstd; streamed in line-aligned chunks.

Nothing here holds more than one chunk (a few tens of MB) of a file, so memory does not grow with the
corpus. Bad lines are found and named (file, line number, reason) by :func:`parse_chunk`.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
CHUNK_BYTES = 32 * 1024 * 1024


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
    data: bytes
    lines: int
    whole_file: bool  # the chunk is the entire file (the file itself can be handed to the engine)
    disk_bytes: int  # compressed bytes consumed so far in this file (for progress)


def _open(path: Path):
    raw = open(path, "rb")  # noqa: SIM115 - returned with the stream that wraps it
    if path.name.endswith(".gz"):
        return raw, io.BufferedReader(gzip.GzipFile(fileobj=raw, mode="rb"), buffer_size=1 << 20)
    if path.name.endswith((".zst", ".zstd")):
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_size=1 << 20)
        return raw, io.BufferedReader(reader, buffer_size=1 << 20)
    return raw, raw


def iter_chunks(path: Path, chunk_bytes: int | None = None) -> Iterator[Chunk]:
    """Yield ``path`` as line-aligned chunks of about ``chunk_bytes`` (default CHUNK_BYTES) uncompressed bytes."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    raw, stream = _open(path)
    line = 1
    first = True
    try:
        while True:
            try:
                data = stream.read(chunk_bytes)
                if data and not data.endswith(b"\n"):
                    data += stream.readline()
                more = stream.peek(1) if hasattr(stream, "peek") else b""
            except (OSError, EOFError) as exc:
                raise UsageError(f"{path}: cannot decompress ({exc}); check the file is whole") from None
            if not data:
                if first:  # an empty file: nothing to yield
                    return
                return
            n = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            yield Chunk(path, line, data, n, first and not more, raw.tell())
            line += n
            first = False
            if not more:
                return
    finally:
        stream.close()
        raw.close()


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
    pieces = chunk.data.split(b"\n")
    if chunk.data.endswith(b"\n"):
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


def looks_clean(chunk: Chunk) -> bool:
    """Cheap byte-level checks that every line is one object: each ends with '}' and none is blank."""
    data = chunk.data
    ends = data.count(b"}\n") + data.count(b"}\r\n")
    if not data.endswith(b"\n"):
        ends += data.rstrip(b"\r").endswith(b"}")
    return ends == chunk.lines


def file_size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
