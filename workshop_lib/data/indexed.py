"""Megatron's indexed dataset (``PREFIX.bin`` + ``PREFIX.idx``), read and written without megatron-core.

Megatron-LM trains from a pair of files that it memory-maps, so any sample is one seek away and
nothing is parsed at training time:

* ``.bin``: every token of every document, back to back, as one flat array of ``dtype``;
* ``.idx``: a small index, little-endian::

      magic    9 bytes  b"MMIDIDX\\x00\\x00"
      version  <Q       1
      dtype    <B       DType code (8 = uint16 when the vocabulary has < 65,500 tokens, else 4 = int32)
      S        <Q       number of sequences (one per non-empty document at document level)
      D        <Q       number of entries in the document index (documents + 1)
      lengths  S x int32   tokens per sequence
      pointers S x int64   byte offset of each sequence in .bin
      doc_idx  D x int64   sequence index where each document starts (0, then the running count)

This module writes exactly the bytes megatron-core's ``IndexedDatasetBuilder`` writes (tests prove it),
but streams: memory stays flat however large the corpus, and outputs appear atomically (temporary
names, renamed into place only when complete). Reading the header needs no megatron import, so
``workshop blend`` and ``inspect-data`` start instantly.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..fsutil import held_stop_signals, temp_path_for

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_BYTES = 34  # magic 9 + version 8 + dtype 1 + sequence count 8 + document count 8
# megatron.core.datasets.indexed_dataset.DType codes
DTYPE_CODES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.float64,
    7: np.float32,
    8: np.uint16,
}
CODE_OF = {np.dtype(v): k for k, v in DTYPE_CODES.items()}


def optimal_dtype(vocab_size: int | None) -> type[np.number]:
    """``DType.optimal_dtype``: uint16 below 65,500 tokens, else int32 (same threshold as Megatron)."""
    return np.uint16 if vocab_size is not None and vocab_size < 65500 else np.int32


def bin_path(prefix: str | os.PathLike[str]) -> Path:
    return Path(f"{prefix}.bin")


def idx_path(prefix: str | os.PathLike[str]) -> Path:
    return Path(f"{prefix}.idx")


def strip_suffix(prefix: str | os.PathLike[str]) -> str:
    """Accept ``X``, ``X.bin`` or ``X.idx`` and return the prefix ``X``."""
    s = str(prefix)
    return s[:-4] if s.endswith((".bin", ".idx")) else s


@dataclass(frozen=True)
class IndexHeader:
    """What the ``.idx`` says, read from its first 34 bytes (plus the arrays on demand)."""

    path: Path
    dtype: np.dtype
    sequence_count: int
    document_count: int  # number of documents (the index holds one more entry)

    @property
    def lengths_offset(self) -> int:
        return HEADER_BYTES

    @property
    def pointers_offset(self) -> int:
        return HEADER_BYTES + 4 * self.sequence_count

    @property
    def doc_idx_offset(self) -> int:
        return HEADER_BYTES + 12 * self.sequence_count


def check_json_keys(keys: list[str] | tuple[str, ...]) -> None:
    """Refuse keys that cannot be part of a file name (UsageError naming the key).

    Each key becomes part of its dataset's file name, ``{PREFIX}_{key}_document.bin``, so a key
    holding '/' would write outside the output directory ('x/../../../y'), and NUL cannot be in a
    path at all. Keys named here are only those used for files; the JSON itself may hold any key.
    """
    for key in keys:
        bad = None
        if key == "":
            bad = "is empty"
        elif "/" in key:
            bad = "holds '/'"
        elif "\0" in key:
            bad = "holds a NUL character"
        elif key in (".", ".."):
            bad = "is '.' or '..'"
        if bad:
            raise UsageError(
                f"--json-keys {key!r}: the key {bad}; keys become part of the output file names "
                "({PREFIX}_{key}_document.bin), so use a plain name such as text"
            )
    if len(set(keys)) != len(keys):
        raise UsageError(f"--json-keys {' '.join(keys)}: a key is repeated")


def read_header(prefix: str | os.PathLike[str]) -> IndexHeader:
    """Read and check an ``.idx`` header; a UsageError names the file and what is wrong."""
    path = idx_path(strip_suffix(prefix))
    if not path.is_file():
        raise UsageError(
            f"{path}: no such index; pass the prefix written by `workshop prep-data` "
            "(e.g. runs/workshop/data/techpulse_text_document)"
        )
    with open(path, "rb") as fh:
        head = fh.read(HEADER_BYTES)
    if len(head) < HEADER_BYTES or head[:9] != MAGIC:
        raise UsageError(f"{path}: not a Megatron indexed dataset (bad magic); re-run `workshop prep-data`")
    version, code, seqs, docs = struct.unpack("<QBQQ", head[9:])
    if version != VERSION:
        raise UsageError(f"{path}: index version {version}, but only version {VERSION} exists; {REDO}")
    if code not in DTYPE_CODES:
        raise UsageError(f"{path}: dtype code {code} is none of Megatron's (1-8); {REDO}")
    if docs < 1:
        raise UsageError(f"{path}: corrupt index: the document index has no entry (it starts with 0); {REDO}")
    size = path.stat().st_size
    if size != HEADER_BYTES + 12 * seqs + 8 * docs and size != HEADER_BYTES + 13 * seqs + 8 * docs:
        raise UsageError(
            f"{path}: truncated or corrupt index ({size} bytes for {seqs} sequences); "
            "re-run `workshop prep-data`"
        )
    return IndexHeader(path, np.dtype(DTYPE_CODES[code]), seqs, docs - 1)


REDO = "re-run `workshop prep-data` (or merge-data) to write it again"
VALIDATE_BLOCK = 1 << 22  # index entries checked at a time: memory stays flat on huge indexes


def validate_index(ds: IndexedDatasetReader, bin_bytes: int) -> int:
    """Check every number of an index against the others and the ``.bin`` size; returns the
    expected ``.bin`` size, or raises one UsageError line naming the file and what is wrong.

    A corrupt index otherwise passes ``inspect-data`` as healthy, crashes later with IndexError, or
    is merged into a bigger corrupt dataset that Megatron reads garbage from. Checked: lengths not
    negative; pointers start at 0, never go back, are whole items, and each sequence ends within
    the ``.bin``; the document index starts at 0, never goes back, and ends at the sequence count;
    the ``.bin`` holds exactly the tokens the lengths add up to. Work is in blocks of 4M entries.
    """
    h = ds.header
    path, item = h.path, h.dtype.itemsize
    total = 0
    prev = 0
    for start in range(0, h.sequence_count, VALIDATE_BLOCK):
        lengths = np.asarray(ds.lengths[start : start + VALIDATE_BLOCK], dtype=np.int64)
        pointers = np.asarray(ds.pointers[start : start + VALIDATE_BLOCK])
        if (lengths < 0).any():
            i = start + int(np.argmax(lengths < 0))
            raise UsageError(f"{path}: corrupt index: sequence {i} has length {int(ds.lengths[i])}; {REDO}")
        if start == 0 and pointers[0] != 0:
            raise UsageError(f"{path}: corrupt index: the first pointer is {int(pointers[0])}, not 0; {REDO}")
        steps = np.diff(pointers, prepend=prev)
        if (steps < 0).any() or (pointers % item).any():
            i = start + int(np.argmax((steps < 0) | (pointers % item != 0)))
            raise UsageError(
                f"{path}: corrupt index: pointer {i} is {int(ds.pointers[i])} (pointers must grow, in whole "
                f"{item}-byte tokens); {REDO}"
            )
        ends = pointers + lengths * item
        if (ends > bin_bytes).any():
            i = start + int(np.argmax(ends > bin_bytes))
            raise UsageError(
                f"{path}: corrupt index: sequence {i} ends at byte {int(ends[i - start])}, past the end of "
                f"the {bin_bytes:,}-byte .bin; {REDO}"
            )
        total += int(lengths.sum())
        prev = int(pointers[-1])
    docs = ds.document_indices
    if int(docs[0]) != 0 or int(docs[-1]) != h.sequence_count:
        raise UsageError(
            f"{path}: corrupt index: the document index runs from {int(docs[0])} to {int(docs[-1])}, "
            f"not from 0 to the {h.sequence_count:,} sequences; {REDO}"
        )
    prev = 0
    for start in range(0, len(docs), VALIDATE_BLOCK):
        block = np.asarray(docs[start : start + VALIDATE_BLOCK])
        steps = np.diff(block, prepend=prev)
        if (steps < 0).any():
            i = start + int(np.argmax(steps < 0))
            raise UsageError(
                f"{path}: corrupt index: the document index goes back at entry {i} ({int(docs[i - 1])} then "
                f"{int(docs[i])}); it never decreases; {REDO}"
            )
        prev = int(block[-1])
    expected = total * item
    if bin_bytes != expected:
        raise UsageError(
            f"{bin_path(ds.prefix)}: {bin_bytes:,} bytes but the index expects {expected:,}; "
            f"the pair does not match, {REDO}"
        )
    return expected


class IndexedDatasetReader:
    """A light, read-only view of ``PREFIX.bin/.idx`` (numpy memmaps; no megatron import)."""

    def __init__(self, prefix: str | os.PathLike[str]) -> None:
        self.prefix = strip_suffix(prefix)
        self.header = read_header(self.prefix)
        h = self.header
        self.lengths = (
            np.memmap(h.path, dtype=np.int32, mode="r", offset=h.lengths_offset, shape=(h.sequence_count,))
            if h.sequence_count
            else np.zeros(0, np.int32)
        )
        self.pointers = (
            np.memmap(h.path, dtype=np.int64, mode="r", offset=h.pointers_offset, shape=(h.sequence_count,))
            if h.sequence_count
            else np.zeros(0, np.int64)
        )
        self.document_indices = np.memmap(
            h.path, dtype=np.int64, mode="r", offset=h.doc_idx_offset, shape=(h.document_count + 1,)
        )
        bpath = bin_path(self.prefix)
        if not bpath.is_file():
            raise UsageError(f"{bpath}: missing (the .idx is there); re-run `workshop prep-data`")
        expected = validate_index(self, bpath.stat().st_size)
        self.tokens = np.memmap(bpath, dtype=h.dtype, mode="r") if expected else np.zeros(0, h.dtype)

    def __len__(self) -> int:
        return self.header.sequence_count

    def sequence(self, i: int) -> np.ndarray:
        start = int(self.pointers[i]) // self.header.dtype.itemsize
        return np.asarray(self.tokens[start : start + int(self.lengths[i])])

    def document(self, d: int) -> np.ndarray:
        """Tokens of document ``d`` (empty for an empty document)."""
        a, b = int(self.document_indices[d]), int(self.document_indices[d + 1])
        if a == b:
            return np.zeros(0, self.header.dtype)
        start = int(self.pointers[a]) // self.header.dtype.itemsize
        return np.asarray(self.tokens[start : start + int(self.lengths[a:b].sum())])


class IndexedDatasetWriter:
    """Stream documents into ``PREFIX.bin/.idx`` with IndexedDatasetBuilder's bytes, atomically.

    Tokens go straight to a temporary ``.bin``; per-sequence lengths and the document index go to
    small temporary side files, so memory does not grow with the corpus. ``finalize`` writes the
    ``.idx`` (``write_index``) and renames both into place (``commit``; the old ``.idx`` is removed
    first, so no moment exists where an index sits next to a ``.bin`` it does not describe), then
    drops the lock (``release``). ``abort`` removes everything this writer made.
    """

    def __init__(self, prefix: str | os.PathLike[str], dtype: type[np.number]) -> None:
        self.prefix = strip_suffix(prefix)
        self.dtype = np.dtype(dtype)
        self.final_bin, self.final_idx = bin_path(self.prefix), idx_path(self.prefix)
        self._lock = PrefixLock(self.prefix)  # before anything is written; swept stale temporaries
        try:
            self._open_temporaries()
        except BaseException:
            self._lock.release()
            raise
        self._tmp_idx: Path | None = None
        self._placed: list[Path] = []  # final paths commit has renamed into place
        self.sequences = 0
        self.documents = 0
        self.tokens = 0
        self._doc.write(np.zeros(1, np.int64).tobytes())

    def _open_temporaries(self) -> None:
        self._tmp_bin = temp_path_for(self.final_bin)
        self._tmp_len = temp_path_for(self.final_idx)
        self._tmp_doc = temp_path_for(self.final_idx)
        self._bin = open(self._tmp_bin, "wb")  # noqa: SIM115 - closed in finalize/abort
        self._len = open(self._tmp_len, "wb")  # noqa: SIM115
        self._doc = open(self._tmp_doc, "wb")  # noqa: SIM115

    def add_documents(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents given as one flat token array and each document's length (0 = empty)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(lengths) == 0:
            return
        if flat.dtype != self.dtype:
            flat = flat.astype(self.dtype)
        self._bin.write(np.ascontiguousarray(flat).data)  # the buffer itself, no copy
        nonempty = lengths > 0
        self._len.write(lengths[nonempty].astype(np.int32).tobytes())
        self._doc.write((self.sequences + np.cumsum(nonempty, dtype=np.int64)).tobytes())
        self.sequences += int(nonempty.sum())
        self.documents += len(lengths)
        self.tokens += int(lengths.sum())

    def add_index(self, prefix: str | os.PathLike[str]) -> None:
        """Append a whole dataset (``IndexedDatasetBuilder.add_index``), streaming its .bin."""
        other = IndexedDatasetReader(prefix)
        if other.header.dtype != self.dtype:
            raise UsageError(
                f"{other.header.path}: dtype {other.header.dtype} differs from {self.dtype}; "
                "all shards must use the same tokenizer"
            )
        for start in range(0, len(other.lengths), 1 << 22):
            self._len.write(np.asarray(other.lengths[start : start + (1 << 22)]).tobytes())
        docs = np.asarray(other.document_indices[1:])
        for start in range(0, len(docs), 1 << 22):
            self._doc.write((self.sequences + docs[start : start + (1 << 22)]).tobytes())
        with open(bin_path(other.prefix), "rb") as fh:
            while block := fh.read(1 << 24):
                self._bin.write(block)
        self.sequences += len(other)
        self.documents += other.header.document_count
        self.tokens += int(other.lengths.sum(dtype=np.int64))

    def finalize(self) -> tuple[Path, Path]:
        """Write the .idx, rename both files into place and drop the lock; returns (bin, idx)."""
        self.write_index()
        try:
            return self.commit()
        finally:
            self.release()

    def write_index(self) -> None:
        """Write and fsync the temporary ``.idx`` (the slow part; on error every temporary goes)."""
        tmp_idx = self._tmp_idx = temp_path_for(self.final_idx)
        try:
            self._bin.flush()
            os.fsync(self._bin.fileno())  # the side files are read back below, not kept
            for fh in (self._bin, self._len, self._doc):
                fh.close()
            with open(tmp_idx, "wb") as out:
                out.write(MAGIC + struct.pack("<QB", VERSION, CODE_OF[self.dtype]))
                out.write(struct.pack("<QQ", self.sequences, self.documents + 1))
                _copy_file(self._tmp_len, out)
                itemsize = self.dtype.itemsize
                offset = 0
                for block in _iter_array(self._tmp_len, np.int32):
                    ends = np.cumsum(block, dtype=np.int64) * itemsize
                    out.write((offset + np.concatenate(([0], ends[:-1]))).tobytes())
                    offset += int(ends[-1])
                _copy_file(self._tmp_doc, out)
                out.flush()
                os.fsync(out.fileno())
            mode = 0o666 & ~_umask()  # mkstemp made them 0600; give them ordinary permissions
            os.chmod(self._tmp_bin, mode)
            os.chmod(tmp_idx, mode)
        except BaseException:
            self.abort()
            raise
        finally:
            for p in (self._tmp_len, self._tmp_doc):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()

    def commit(self) -> tuple[Path, Path]:
        """Rename the written ``.bin`` and ``.idx`` into place; returns (bin, idx).

        Ctrl-C and SIGTERM are held over the renames, so a stop never leaves a new ``.bin`` without
        its ``.idx``; one that came meanwhile is raised once both are in place, and the pair is
        then removed like any failed commit: a commit that raises leaves nothing of this writer.
        The lock is kept until ``release``, so a caller committing several prefixes can still
        ``abort`` the pairs it placed without touching another run's.
        """
        try:
            with held_stop_signals():
                with contextlib.suppress(FileNotFoundError):
                    self.final_idx.unlink()
                os.replace(self._tmp_bin, self.final_bin)
                self._placed.append(self.final_bin)
                os.replace(self._tmp_idx, self.final_idx)
                self._placed.append(self.final_idx)
        except BaseException:
            self.abort()
            raise
        return self.final_bin, self.final_idx

    def abort(self) -> None:
        """Remove everything this writer made: its temporaries, and the pair if ``commit`` placed it.

        Nothing Megatron could load is left, and nothing half of a pair. Signals are held while
        the files go, so a second Ctrl-C cannot stop the clean-up half way.
        """
        with held_stop_signals():
            for fh in (self._bin, self._len, self._doc):
                with contextlib.suppress(Exception):
                    fh.close()
            for p in (self._tmp_bin, self._tmp_len, self._tmp_doc, self._tmp_idx, *self._placed):
                if p is not None:
                    with contextlib.suppress(FileNotFoundError):
                        p.unlink()
            self._placed.clear()
            self.release()

    def release(self) -> None:
        """Drop the prefix's lock, keeping whatever was committed (idempotent)."""
        self._lock.release()


class PrefixLock:
    """An exclusive ``fcntl.flock`` on ``.{name}.lock`` beside a dataset, held while it is written.

    Two runs writing the same prefix would each rename their own ``.bin`` and ``.idx`` into place,
    and could leave one run's ``.bin`` beside the other's ``.idx`` with both exiting 0. The second
    run is refused instead (one line naming the prefix and the holder's pid). The kernel drops the
    lock when its holder dies (kill -9 included), so whoever holds it knows that every
    ``.{name}.bin.tmp-*``/``.idx.tmp-*`` file beside the prefix belongs to a dead run and sweeps them.
    The lock file is removed on release; a run that locked a file just removed (its inode is no
    longer the path's) tries again. On a file system without flock the run goes on unlocked.
    """

    def __init__(self, prefix: str | os.PathLike[str]) -> None:
        import fcntl

        prefix = Path(prefix)
        self.path = prefix.parent / f".{prefix.name}.lock"
        self._fd: int | None = None
        for _ in range(20):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as exc:
                raise UsageError(
                    f"--output-prefix {prefix}: cannot write in {prefix.parent} ({exc.strerror}); "
                    "choose a folder you can write to"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                os.close(fd)
                raise UsageError(
                    f"{prefix}: another run (pid {holder}) is writing this dataset now; "
                    "wait for it to finish, or choose another --output-prefix"
                ) from None
            except OSError:  # no flock on this file system: go on without the lock
                os.close(fd)
                return
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # locked a file its holder had just removed: take the new one
        else:
            raise UsageError(f"--output-prefix {prefix}: could not lock {self.path}; try again")
        self._fd = fd
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        for name in (bin_path(prefix).name, idx_path(prefix).name):
            for stale in prefix.parent.glob(f".{glob_escape(name)}.tmp-*"):
                with contextlib.suppress(OSError):
                    stale.unlink()

    def release(self) -> None:
        """Remove the lock file, then drop the lock (see the class docstring for why that is safe)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self._fd)
            self._fd = None


def glob_escape(name: str) -> str:
    """``name`` with glob's special characters escaped (prefixes may hold '[')."""
    import glob

    return glob.escape(name)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _copy_file(src: Path, out) -> None:
    with open(src, "rb") as fh:
        while block := fh.read(1 << 24):
            out.write(block)


def _iter_array(path: Path, dtype: type[np.number], items: int = 1 << 22) -> Iterator[np.ndarray]:
    itemsize = np.dtype(dtype).itemsize
    with open(path, "rb") as fh:
        while block := fh.read(items * itemsize):
            yield np.frombuffer(block, dtype=dtype)
