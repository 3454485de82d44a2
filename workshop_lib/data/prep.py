"""``workshop prep-data``: JSONL corpora to Megatron indexed datasets, fast, streaming and atomic.

For each input chunk (whole lines, ~32 MB) and each JSON key:

1. fast path: the chunk (a larger file's chunk is staged into a scratch file, so memory stays flat;
   the copy is made during the line scan, while each block is in the CPU cache)
   goes to gigatoken, which reads the JSON and tokenizes it in Rust on all worker threads; two cheap
   checks (one result row per line, every line ends with ``}``) confirm that every line was a good
   document, since gigatoken silently drops lines it cannot use. Known limit: a line holding a good
   object followed by a second object (``{..} {..}``) is read as its first object on this path;
2. otherwise (a bad line somewhere in the chunk, or a tokenizer gigatoken does not run) the chunk is
   parsed strictly in Python (``json.loads`` per line), every bad line is named, and the good texts
   are encoded in one batch;
3. EOD is appended to each non-empty document with numpy (no per-document Python), and the tokens are
   streamed into :class:`IndexedDatasetWriter` (the bytes of megatron-core's IndexedDatasetBuilder).

Two chunks are in the engine at once and a reader thread stages the next ones; results are written
strictly in input order, so the output does not depend on ``workers`` or on timing.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import UsageError
from ..fsutil import ensure_parent_dir, held_stop_signals
from ..paths import data_path_for
from .indexed import IndexedDatasetWriter, check_json_keys, optimal_dtype
from .reader import (
    MAX_LINE_BYTES,
    MAX_NAMED_BAD_LINES,
    BadLine,
    Chunk,
    expand_inputs,
    file_size,
    iter_chunks,
    parse_chunk,
)
from .shard import shard_files, shard_warnings
from .tokenizer import TokenizerAdapter

MAX_PRINTED_BAD_LINES = 20
ENCODE_IN_FLIGHT = 2  # chunks the engine encodes at the same time
# Staged chunks waiting for the engine: cheap (a staged chunk's mapping is already released), and a
# deeper queue lets the reader bank chunks while the engine is busy instead of stalling it later.
PREFETCH_DEPTH = 4


def append_eod(
    flat: np.ndarray, lengths: np.ndarray, eod: int, dtype: type[np.number] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Append ``eod`` to every non-empty document (empty ones stay empty, as upstream), casting to ``dtype``."""
    nonempty = lengths > 0
    new_lengths = lengths + nonempty
    out = np.empty(int(new_lengths.sum()), dtype=dtype or flat.dtype)
    eod_at = np.cumsum(new_lengths)[nonempty] - 1
    keep = np.ones(len(out), dtype=bool)
    keep[eod_at] = False
    out[keep] = flat
    out[eod_at] = eod
    return out, new_lengths


@dataclass
class PrepResult:
    documents: int = 0
    tokens: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)  # the first MAX_NAMED_BAD_LINES, by name
    skipped: int = 0  # every bad line, named or only counted
    outputs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    input_bytes: int = 0
    per_key: dict[str, dict] = field(default_factory=dict)
    engine: str = ""
    tokenizer: dict = field(default_factory=dict)
    fast_chunks: int = 0
    slow_chunks: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        """docs/cli.md's JSON object (plus a few extra keys)."""
        secs = max(self.seconds, 1e-9)
        return {
            "documents": self.documents,
            "tokens": self.tokens,
            "skipped": self.skipped,
            "bad_lines": [b.as_dict() for b in self.bad_lines],
            "bad_lines_not_named": self.skipped - len(self.bad_lines),
            "outputs": self.outputs,
            "seconds": round(self.seconds, 4),
            "documents_per_second": round(self.documents / secs, 1),
            "megabytes_per_second": round(self.input_bytes / 1e6 / secs, 3),
            "tokenizer": self.tokenizer,
            "input_bytes": self.input_bytes,
            "engine": self.engine,
            "keys": self.per_key,
            "warnings": self.warnings,
        }


STAGE_SLOTS = (
    8  # > chunks staged but not yet encoded: PREFETCH_DEPTH (4) + ENCODE_IN_FLIGHT (2) + one being staged
)


def _staged_chunks(
    files: list[Path], use_files: bool, stage_dir: Path, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[Chunk, str | None]]:
    """Chunks of every file; with ``use_files``, each also as a path the engine can read.

    A chunk of a larger file is copied into one of a few staging files that are rewritten in place
    (their page-cache pages are reused, which is much cheaper than writing new files). The copy is
    made by the reader's line scan, block by block while each block is in the CPU cache.
    """
    staged = 0
    slots: list[BinaryIO] = []

    def next_slot() -> BinaryIO:
        nonlocal staged
        slot = staged % STAGE_SLOTS
        staged += 1
        if slot == len(slots):
            slots.append(open(stage_dir / f"chunk{slot}.jsonl", "w+b"))  # noqa: SIM115 - closed below
        return slots[slot]

    try:
        for f in files:
            for chunk in iter_chunks(
                f, stage=next_slot if use_files else None, max_line_bytes=max_line_bytes
            ):
                path = None
                if use_files and chunk.bad is None:
                    path = str(f) if chunk.whole_file else chunk.staged
                    if chunk.staged:
                        chunk.release()  # unmap: resident memory stays at the chunks being encoded
                yield chunk, path
    finally:
        for fh in slots:
            fh.close()


def _prefetch(it: Iterator, depth: int = 2) -> Iterator:
    """Run ``it`` in a thread, ``depth`` items ahead (reading/decompressing overlaps tokenizing)."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def worker() -> None:
        try:
            for item in it:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(done)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            q.put(exc)

    t = threading.Thread(target=worker, daemon=True, name="prep-data-reader")
    t.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                q.get_nowait()
        t.join(timeout=5)


def prep_data(
    inputs: list[str],
    output_prefix: str | Path,
    tokenizer: TokenizerAdapter,
    *,
    json_keys: list[str] | None = None,
    append_eod_token: bool = False,
    on_bad_line: str = "skip",
    progress: bool = True,
    note: Callable[[str], None] | None = None,
    num_shards: int = 1,
    shard_index: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> PrepResult:
    """Tokenize ``inputs`` into ``{output_prefix}_{key}_document.bin/.idx``; returns the summary.

    Raises UsageError (nothing written) on bad inputs, or on the first bad line with ``on_bad_line="fail"``.
    """
    keys = list(json_keys or ["text"])
    check_json_keys(keys)
    if on_bad_line not in ("skip", "fail"):
        raise UsageError(f"--on-bad-line {on_bad_line!r}: use skip or fail")
    note = note or (lambda msg: print(msg, file=sys.stderr, flush=True))
    files = expand_inputs(inputs)
    warnings: list[str] = []
    if num_shards != 1 or shard_index != 0:
        all_files = len(files)
        files = shard_files(files, num_shards, shard_index)
        warnings += shard_warnings(all_files, len(files), num_shards, shard_index)
    out_dir = check_output_prefix(output_prefix)
    dtype = optimal_dtype(tokenizer.vocab_size)
    result = PrepResult(
        engine=tokenizer.engine,
        warnings=warnings,
        tokenizer={
            "type": tokenizer.type,
            "vocab_size": tokenizer.vocab_size,
            "model": tokenizer.model,
            "eod_token_id": tokenizer.eod,
            "dtype": np.dtype(dtype).name,
        },
    )
    for w in warnings:
        note(f"prep-data: warning: {w}")
    if tokenizer.engine != "gigatoken":
        note(
            f"prep-data: fast engine not used ({tokenizer.note or 'not available'}); "
            f"tokenizing with the {tokenizer.engine} library's batch API (slower)"
        )

    bar = _progress_bar(sum(file_size(f) for f in files), progress)
    writers: dict[str, IndexedDatasetWriter] = {}
    stage_dir, stage_lock = _make_stage_dir(out_dir)
    tidied = False

    def tidy() -> None:
        """Close the bar, drop the prefix locks, remove the staging folder: once, never half."""
        nonlocal tidied
        with held_stop_signals():
            if tidied:
                return
            if bar is not None:
                bar.close()
            for w in writers.values():
                w.release()
            shutil.rmtree(stage_dir, ignore_errors=True)
            os.close(stage_lock)
            tidied = True

    start = time.perf_counter()
    try:
        for k in keys:  # each takes its prefix's lock (a second run on the prefix is refused)
            writers[k] = IndexedDatasetWriter(data_path_for(output_prefix, k), dtype)
        done_disk = 0
        last_file = None
        # Two chunks are encoded at once (the engine releases the GIL), so one call's ramp-up and
        # tail overlap the other's work; results are handled strictly in input order.
        pool = ThreadPoolExecutor(max_workers=ENCODE_IN_FLIGHT, thread_name_prefix="prep-data-encode")
        pending: deque = deque()
        try:
            chunks = _prefetch(
                _staged_chunks(files, tokenizer.fast_files, stage_dir, max_line_bytes), PREFETCH_DEPTH
            )
            while True:
                item = next(chunks, None)
                if item is not None:
                    pending.append(
                        (
                            item[0],
                            pool.submit(_encode_chunk, tokenizer, item[0], item[1], keys, max_line_bytes),
                        )
                    )
                if not pending or (item is not None and len(pending) < ENCODE_IN_FLIGHT):
                    if item is None:
                        break
                    continue
                chunk, future = pending.popleft()
                encoded, bad, nbad = future.result()
                if nbad and on_bad_line == "fail":
                    raise UsageError(
                        f"{bad[0]}; fix the line or pass --on-bad-line skip (nothing was written)"
                    )
                for b in bad or ():
                    if result.skipped < MAX_PRINTED_BAD_LINES:
                        _write(bar, f"prep-data: skipped {b}")
                    if len(result.bad_lines) < MAX_NAMED_BAD_LINES:
                        result.bad_lines.append(b)
                    result.skipped += 1
                result.skipped += nbad - len(bad or ())
                if bad is None:
                    result.fast_chunks += 1
                else:
                    result.slow_chunks += 1
                for k in keys:
                    flat, lengths = encoded[k]
                    if append_eod_token:
                        flat, lengths = append_eod(flat, lengths, tokenizer.eod, dtype)
                    writers[k].add_documents(flat, lengths)
                result.documents += len(encoded[keys[0]][1])
                result.input_bytes += chunk.nbytes
                if bar is not None:
                    if chunk.file != last_file:
                        last_file, done_disk = chunk.file, bar.n
                    bar.update(max(0, done_disk + chunk.disk_bytes - bar.n))
                    elapsed = max(time.perf_counter() - start, 1e-9)
                    bar.set_postfix_str(f"{result.documents / elapsed:,.0f} docs/s", refresh=False)
                del chunk, future, encoded
        finally:
            for _, f in pending:
                f.cancel()
            pool.shutdown(wait=True, cancel_futures=True)
        if result.skipped > MAX_PRINTED_BAD_LINES:
            more = result.skipped - MAX_PRINTED_BAD_LINES
            _write(
                bar,
                f"prep-data: ... and {more:,} more bad lines (the first {MAX_NAMED_BAD_LINES:,} "
                "in --json bad_lines, every one counted in skipped)",
            )
        for k in keys:  # the slow part of finishing, still interruptible
            writers[k].write_index()
        with held_stop_signals():  # every key's pair, or (a stop came) none: see the except below
            for k in keys:
                b, i = writers[k].commit()
                result.outputs += [str(b), str(i)]
                result.per_key[k] = {
                    "prefix": data_path_for(output_prefix, k),
                    "tokens": writers[k].tokens,
                    "sequences": writers[k].sequences,
                    "documents": writers[k].documents,
                }
                result.tokens += writers[k].tokens
        result.seconds = time.perf_counter() - start
        empty = _empty_warning(result, len(files))
        if empty:
            result.warnings.append(empty)
            note(f"prep-data: warning: {empty}")
        # Cleaned up inside the try: a stop that comes now still removes the outputs (below), so
        # "interrupted" never leaves a dataset behind.
        tidy()
    except BaseException:
        # Stopped or failed, even after the commit: the run reports so, and leaves nothing of its
        # own (each writer still holds its prefix's lock, so the pairs it removes are its own).
        with held_stop_signals():
            for w in writers.values():
                w.abort()
            tidy()
        raise
    return result


STAGE_PREFIX = ".prep-stage-"
STAGE_OWNER = "owner.lock"
# A staging folder without an owner lock (left by an older version, or killed between creating
# it and locking it) is swept once it is this old.
UNLOCKED_STAGE_AGE_S = 3600.0


def check_output_prefix(output_prefix: str | Path) -> Path:
    """The prefix's folder (created), or one UsageError line naming ``--output-prefix``.

    Megatron's ``--data-path`` is a space-separated list of prefixes (and weights), so a prefix
    holding whitespace can be written but never read back as one dataset; refused here, before any
    work. A folder that cannot be created or written is named here too, instead of an OSError
    after the corpus was tokenized.
    """
    text = str(output_prefix)
    if not text or text.endswith(("/", os.sep)):
        raise UsageError(f"--output-prefix {text!r}: name a file prefix, e.g. runs/data/corpus")
    if any(c.isspace() for c in text):
        raise UsageError(
            f"--output-prefix {text!r}: holds whitespace, but Megatron's --data-path is split on "
            "spaces, so training could not name this dataset; use a prefix without spaces"
        )
    return ensure_parent_dir(text, "--output-prefix")


def _make_stage_dir(out_dir: Path) -> tuple[Path, int]:
    """A fresh staging folder, locked by this process, after sweeping those of dead runs.

    A run killed with SIGKILL cannot clean up, and its staged chunks (up to 8 x 32 MB) would stay
    forever. Each folder holds an ``owner.lock`` that its run keeps flock'ed: the kernel releases
    it when the run dies, so a folder whose lock can be taken belongs to nobody and is removed.
    """
    import fcntl

    for old in out_dir.glob(f"{STAGE_PREFIX}*"):
        if old.is_symlink() or not old.is_dir():
            continue
        try:
            fd = os.open(old / STAGE_OWNER, os.O_RDWR)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > UNLOCKED_STAGE_AGE_S:
                    shutil.rmtree(old, ignore_errors=True)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its run is alive (or no flock here): leave it
            os.close(fd)
            continue
        shutil.rmtree(old, ignore_errors=True)
        os.close(fd)
    stage_dir = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=out_dir))
    fd = os.open(stage_dir / STAGE_OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return stage_dir, fd


def _empty_warning(result: PrepResult, files: int) -> str | None:
    """Why an empty dataset was written, or None when it holds tokens.

    Not an error (exit 0): one shard of a sharded run may rightly get no file, and merge-data takes
    empty shards. But an empty dataset alone only fails later, in blend or in training (Megatron
    hangs building a split with no tokens), so the run says so on stderr and in --json "warnings".
    """
    if result.documents == 0:
        where = "no input files" if files == 0 else f"{files} input file(s) held no good line"
        return f"wrote an empty dataset: 0 documents ({where}); blend and training need tokens"
    if result.tokens == 0:
        return (
            f"wrote {result.documents:,} documents but 0 tokens (every text is empty); "
            "blend and training need tokens"
        )
    return None


def _encode_chunk(
    tok: TokenizerAdapter,
    chunk: Chunk,
    path: str | None,
    keys: list[str],
    max_line_bytes: int = MAX_LINE_BYTES,
):
    """Encode one chunk: ``(encoded, None, 0)`` on the fast path, ``(encoded, bad_lines, count)`` on
    the strict path, where ``encoded`` maps each key to (flat ids, per-document lengths) of the good
    lines and ``bad_lines`` names the first of ``count`` bad lines."""
    if chunk.bad is not None:  # one over-long line, skipped by the reader
        return {k: (np.zeros(0, np.int64), np.zeros(0, np.int64)) for k in keys}, [chunk.bad], 1
    if path and chunk.clean and chunk.longest <= max_line_bytes and _single_objects(chunk):
        out = {}
        for k in keys:
            flat, lengths = tok.encode_jsonl(path, k)
            if len(lengths) != chunk.lines:
                break
            out[k] = (flat, lengths)
        else:
            return out, None, 0
    texts, bad, nbad = parse_chunk(chunk, keys, max_line_bytes)
    return {k: tok.encode(texts[k]) for k in keys}, bad, nbad


def _single_objects(chunk: Chunk) -> bool:
    """Whether each line of a clean chunk holds one JSON object and nothing after it.

    The engine reads a line's first object and ignores what follows (``{..}{..}``, ``{..} x}``),
    where the reference parser names the line as bad; so that the output never depends on the
    engine, every line with a '}' before its last byte (the scan says whether there is one) is
    checked with ``json.loads``; any failure sends the chunk down the strict path, which names it.
    Prose corpora rarely have such lines; nested objects (``"meta": {..}``) cost a C-speed parse.
    """
    if chunk.inner is None:
        return True
    import json

    if chunk.offset is None:  # a decompressed chunk: its bytes are in memory
        data = bytes(chunk.data)
        lines = (data[int(s) : (data.find(b"\n", int(s)) + 1 or len(data) + 1) - 1] for s in chunk.inner)
        return _all_parse(lines, json.loads)
    with open(chunk.file, "rb") as fh:  # a plain file's chunk may be released: read just those lines
        fd = fh.fileno()
        lines = (_read_line(fd, chunk.offset, int(s), chunk.nbytes) for s in chunk.inner)
        return _all_parse(lines, json.loads)


def _all_parse(lines, loads) -> bool:
    for line in lines:
        try:
            loads(line)
        except ValueError:
            return False
    return True


def _read_line(fd: int, base: int, start: int, limit: int) -> bytes:
    """The line at ``start`` of a chunk at file offset ``base`` (``limit``: the chunk's size)."""
    parts = []
    pos = start
    while pos < limit:
        block = os.pread(fd, min(1 << 16, limit - pos), base + pos)
        if not block:
            break
        nl = block.find(b"\n")
        if nl >= 0:
            parts.append(block[:nl])
            break
        parts.append(block)
        pos += len(block)
    return b"".join(parts)


def _progress_bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1000,
        desc="prep-data",
        file=sys.stderr,
        mininterval=0.5,
        dynamic_ncols=True,
        leave=True,
    )


def _write(bar, msg: str) -> None:
    if bar is not None:
        bar.write(msg, file=sys.stderr)
    else:
        print(msg, file=sys.stderr, flush=True)
