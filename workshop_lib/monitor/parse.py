"""Megatron-LM training logs to numbers: iteration and validation lines, one-shot or streaming.

The format comes from :mod:`workshop_lib.facts.megatron_log` (the same table the trainer writes
with). What this parser accepts, and why:

* every Megatron-LM version's iteration line: the older one (elapsed time only), the current one
  (``throughput per GPU``, a ``[YYYY-MM-DD HH:MM:SS]`` prefix), extra loss cells (MoE
  ``load_balancing_loss``, ``sop loss``, any ``... loss``) and Megatron-DeepSpeed's variant
  (``TFLOPs``, ``samples per second``...). Cells are read by label, never by position;
* anything in front of the line: launcher prefixes (``[rank0]:``, ``3:``, ``[default0]:``),
  pod names and cloud-log prefixes (kubectl ``--prefix``, CloudWatch timestamps), since the line is
  *searched* for ``iteration N/ M |``;
* logs of many ranks or pods: the same iteration seen again replaces the earlier one (Megatron
  prints on the last rank; concatenated pod logs and restarts repeat lines), counted in
  ``repeated_iterations``;
* validation and test lines (``validation loss at iteration N``, ``... at the end of training for
  test data``);
* Megatron's memory report (``[Rank N] (after K iterations) memory (MB) | allocated: ...``), one per
  rank that prints it, kept in ``ParsedLog.memory`` and summed up as the busiest rank's peak.

NaN policy: a NaN/Inf loss stays NaN/Inf in :meth:`ParsedLog.to_dataframe` and in
``ParsedLog.iterations``; the JSON of ``workshop monitor parse`` writes ``null`` for every
non-finite number (JSON has no NaN) and the summary counts them (``nonfinite_loss_iterations``), so
a ``null`` loss next to a count tells "diverged" apart from "not logged".

Streaming: :class:`LogFollower` reads only the bytes appended since its last poll, keeps a partial
last line until its newline arrives, and starts over when the file is truncated or replaced (log
rotation, a restarted pod). Parsing the same bytes incrementally or at once gives the same result.

Compressed logs: finished runs' logs are usually archived as ``train.log.gz`` (logrotate, S3
lifecycle) or ``.zst``; :func:`open_log` recognises gzip, zstd, bzip2 and xz by their magic bytes
(not the name) and decompresses while reading, so ``parse``, ``diagnose``, ``nccl`` and ``plot`` read
them as they are instead of finding zero iterations in binary noise.
"""

from __future__ import annotations

import bz2
import codecs
import gc
import gzip
import io
import json
import lzma
import math
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, TextIO

from ..errors import UsageError
from ..facts import megatron_log as fmt
from ..jsonsafe import json_safe

# docs/cli.md's keys of one iteration, in order (``workshop monitor parse --json``).
CONTRACT_KEYS: tuple[str, ...] = (
    "iteration",
    "train_iters",
    "consumed_samples",
    "elapsed_ms",
    "tflops_per_gpu",
    "learning_rate",
    "global_batch_size",
    "lm_loss",
    "loss_scale",
    "grad_norm",
    "skipped_iterations",
    "nan_iterations",
)
VALIDATION_KEYS: tuple[str, ...] = ("iteration", "lm_loss", "lm_loss_ppl")
_INT_KEYS = frozenset(
    {"iteration", "train_iters", "consumed_samples", "global_batch_size", "skipped_iterations",
     "nan_iterations", "consumed_tokens", "actual_seqlen"}
)  # fmt: skip

_LABEL_TO_KEY: dict[str, str] = {
    f.label: f.key for f in (*fmt.ITERATION_FIELDS_BEFORE_LOSSES, *fmt.ITERATION_FIELDS_AFTER_LOSSES)
}
_LABEL_TO_KEY.update(fmt.ITERATION_LABEL_ALIASES)
_LABEL_TO_KEY["lm loss"] = "lm_loss"

_ITER_RE = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
# "[Rank 3] (after 10 iterations) memory (MB)" and Megatron-DeepSpeed's "after 1 iterations memory (MB)"
_MEMORY_RE = re.compile(r"(?:\[Rank (\d+)\] )?\(?after (\d+) iterations\)? memory \(MB\)")
_MEMORY_LABELS = dict(fmt.MEMORY_CELLS)
_MEMORY_LINES_KEPT = 256  # distinct memory-report lines remembered (one per rank of a large job's node group)
_TS_RE = re.compile(r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
_EVAL_RE = re.compile(
    r"(validation|test) loss at (?:iteration (\d+)|the end of training for (\w+) data)(?: on (\w+) (?:set|data))?\s*\|(.*)"
)
# ``\b`` lets a match start only where a word starts, and the value is the stripped rest of the
# line: the old ``(\w+) \.{3,} (\S.*?)\s*$`` retried every start inside a long word and every
# end inside a long run of spaces, quadratic in the line (a 100 KB line took 66 s).
_ARG_RE = re.compile(r"\b(\w+) \.{3,} (?=\S)")
# A log line longer than this is skipped (and named in the summary): Megatron's lines are < 1 KB,
# and one endless line (a progress bar without newlines, binary junk) must not be held whole.
MAX_LOG_LINE_BYTES = 1 << 20
NAMED_LONG_LINES = 20  # over-long lines named in the summary (all are counted)
# Arguments Megatron prints at start-up that the summary uses.
_WANTED_ARGS = frozenset(
    {"seq_length", "micro_batch_size", "global_batch_size", "train_iters", "world_size",
     "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
     "data_parallel_size", "fp16", "bf16", "log_interval", "save_interval", "eval_interval",
     "num_layers", "hidden_size", "save", "load"}
)  # fmt: skip


def _number(text: str, integer: bool) -> float | int | None:
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        return None
    if integer and math.isfinite(value) and value == int(value):
        return int(value)
    return value


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


# raw label (spaces included) -> (key, is_int); memoised, since a log repeats the same dozen labels
_LABEL_CACHE: dict[str, tuple[str, bool] | None] = {}


def _label_key(raw: str) -> tuple[str, bool] | None:
    label = raw.strip()
    key = _LABEL_TO_KEY.get(label) or fmt.ITERATION_EXTRA_LABELS.get(label)
    out: tuple[str, bool] | None = None
    if key is None and label and len(label) <= 60:
        key = fmt.loss_key(label)
    if key is not None:
        out = (key, key in _INT_KEYS)
    if len(_LABEL_CACHE) < 10_000:
        _LABEL_CACHE[raw] = out
    return out


def _parse_cells(cells: str, record: dict[str, Any]) -> None:
    """Fill ``record`` from ``label: value | label: value | ...`` (split/partition: faster than a regex)."""
    cache = _LABEL_CACHE
    for cell in cells.split("|"):
        label, sep, value = cell.partition(":")
        if not sep:
            continue
        kv = cache[label] if label in cache else _label_key(label)
        if kv is None:
            continue
        key, integer = kv
        if integer:
            try:
                record[key] = int(value)
                continue
            except ValueError:
                pass
        try:
            record[key] = float(value)  # float() and int() accept the surrounding spaces
        except ValueError:
            record[key] = _number(value, integer)


def parse_iteration_line(line: str) -> dict[str, Any] | None:
    """One iteration line to a dict (contract keys present, ``None`` where absent), else ``None``."""
    m = _ITER_RE.search(line)
    if m is None:
        return None
    record: dict[str, Any] = dict.fromkeys(CONTRACT_KEYS)
    record["iteration"] = int(m.group(1))
    record["train_iters"] = int(m.group(2))
    ts = _TS_RE.search(line, 0, m.start())
    record["timestamp"] = ts.group(1) if ts else None
    _parse_cells(line[m.end() :], record)
    return record


def parse_eval_line(line: str) -> tuple[str, int | None, dict[str, Any]] | None:
    """A validation/test line to ``(split, iteration or None, {"lm_loss", "lm_loss_ppl", ...})``."""
    m = _EVAL_RE.search(line)
    if m is None:
        return None
    kind, iteration, end_split, on_split, cells = m.groups()
    split = "test" if "test" in (kind, end_split, on_split) else "validation"
    values: dict[str, Any] = {}
    for cell in cells.split("|"):
        label, sep, value = cell.partition(":")
        if not sep:
            continue
        label = label.strip()
        if label.endswith(" value"):
            values[fmt.loss_key(label[: -len(" value")])] = _number(value, False)
        elif label.endswith(" PPL"):
            values[fmt.loss_key(label[: -len(" PPL")]) + "_ppl"] = _number(value, False)
    return split, (int(iteration) if iteration else None), values


_FIELDS: tuple[str, ...] = (*CONTRACT_KEYS, "timestamp")
_FIELD_SET = frozenset(_FIELDS)


class Record(Mapping):
    """One iteration's values, read like a dict (``r["lm_loss"]``, ``r.get(k)``, ``dict(r)``).

    A log of a million iterations holds a million of these: slots instead of a dict's hash table
    (about half the memory), with the rare extra columns (MoE losses...) in a small dict.
    """

    __slots__ = (*_FIELDS, "_extra")

    def __init__(self, values: dict[str, Any]) -> None:
        g = values.get  # one assignment per slot: several times faster than a setattr loop
        self.iteration, self.train_iters, self.consumed_samples = (
            g("iteration"),
            g("train_iters"),
            g("consumed_samples"),
        )
        self.elapsed_ms, self.tflops_per_gpu, self.learning_rate = (
            g("elapsed_ms"),
            g("tflops_per_gpu"),
            g("learning_rate"),
        )
        self.global_batch_size, self.lm_loss, self.loss_scale = (
            g("global_batch_size"),
            g("lm_loss"),
            g("loss_scale"),
        )
        self.grad_norm, self.skipped_iterations, self.nan_iterations = (
            g("grad_norm"),
            g("skipped_iterations"),
            g("nan_iterations"),
        )
        self.timestamp = g("timestamp")
        self._extra = None
        if len(values) > len(_FIELDS) or not _FIELD_SET.issuperset(values):
            self._extra = {k: v for k, v in values.items() if k not in _FIELD_SET} or None

    def __getitem__(self, key: str) -> Any:
        if key in _FIELD_SET:
            return getattr(self, key)
        if self._extra is not None and key in self._extra:
            return self._extra[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in _FIELD_SET:
            return getattr(self, key)
        return self._extra.get(key, default) if self._extra is not None else default

    def __iter__(self) -> Iterator[str]:
        yield from _FIELDS
        if self._extra:
            yield from self._extra

    def __len__(self) -> int:
        return len(_FIELDS) + len(self._extra or ())

    def __repr__(self) -> str:
        return f"Record({dict(self)!r})"


@dataclass
class ParsedLog:
    """What a log says: iterations (one per iteration number), validation/test losses, start-up args."""

    records: list[dict[str, Any]] = field(default_factory=list)  # every column, sorted by iteration
    validation: list[dict[str, Any]] = field(default_factory=list)
    test: list[dict[str, Any]] = field(default_factory=list)
    args: dict[str, Any] = field(default_factory=dict)
    lines: int = 0
    repeated_iterations: int = 0
    gpu: str | None = None  # the --gpu key used for MFU
    seq_length: int | None = None  # overrides the log's seq_length
    source: str | None = None
    long_lines: list[dict[str, int]] = field(default_factory=list)  # the first NAMED_LONG_LINES skipped
    long_line_count: int = 0  # every line skipped for being over max_line_bytes
    memory: list[dict[str, Any]] = field(default_factory=list)  # memory reports, by rank then iteration

    @property
    def iterations(self) -> list[dict[str, Any]]:
        """docs/cli.md's view: one dict per iteration with exactly its keys."""
        return [{k: r.get(k) for k in CONTRACT_KEYS} for r in self.records]

    @property
    def extra_columns(self) -> list[str]:
        cols: dict[str, None] = {}
        for r in self.records:
            for k in r:
                if k not in CONTRACT_KEYS:
                    cols[k] = None
        return list(cols)

    def to_dataframe(self):
        """All iteration columns as a pandas DataFrame (NaN stays NaN; absent cells are NaN/None)."""
        import pandas as pd

        columns = list(CONTRACT_KEYS) + self.extra_columns
        df = pd.DataFrame(self.records, columns=columns)
        for col in columns:
            if col != "timestamp" and df[col].dtype == object:
                converted = pd.to_numeric(df[col], errors="coerce")
                if converted.notna().sum() == df[col].notna().sum():
                    df[col] = converted
        if "timestamp" in df and df["timestamp"].notna().any():
            df["timestamp"] = pd.to_datetime(df["timestamp"], errors="coerce")
        return df

    def validation_dataframe(self, split: str = "validation"):
        import pandas as pd

        rows = self.validation if split == "validation" else self.test
        return pd.DataFrame(
            rows, columns=list(VALIDATION_KEYS) + sorted({k for r in rows for k in r} - set(VALIDATION_KEYS))
        )

    @property
    def summary(self) -> dict[str, Any]:
        return summarize(self)

    def to_json_dict(self) -> dict[str, Any]:
        """docs/cli.md's ``workshop monitor parse --json`` object (non-finite numbers as null)."""
        extra = self.extra_columns
        out = {
            "iterations": self.iterations,
            "validation": [{k: v.get(k) for k in VALIDATION_KEYS} for v in self.validation],
            "test": [{k: v.get(k) for k in VALIDATION_KEYS} for v in self.test],
            "extra_columns": {c: [r.get(c) for r in self.records] for c in extra},
            "memory": self.memory,
            "summary": self.summary,
        }
        return json_safe(out)

    def write_json(self, out: TextIO) -> None:
        """Write :meth:`to_json_dict`'s object to ``out`` one iteration at a time.

        Building the whole object first cost ~4.5 KB per iteration (a dict per iteration, its
        NaN-free copy, then one string of it all): 6 GB for 1.4M iterations. Streamed, memory is
        the parsed records plus one line.
        """
        dumps = json.dumps
        keys = CONTRACT_KEYS

        def rows(records, fields) -> Iterator[str]:
            values = zip(*(column(records, k) for k in fields), strict=True) if records else ()
            for row in values:
                yield dumps(dict(zip(fields, _nulls(list(row)), strict=True)), allow_nan=False)

        def array(name: str, lines: Iterator[str], last: bool = False) -> None:
            out.write(f'  "{name}": [')
            sep = "\n    "
            for line in lines:
                out.write(sep + line)
                sep = ",\n    "
            out.write("\n  ]" + ("\n" if last else ",\n"))

        out.write("{\n")
        array("iterations", rows(self.records, keys))
        array("validation", rows(self.validation, VALIDATION_KEYS))
        array("test", rows(self.test, VALIDATION_KEYS))
        out.write('  "extra_columns": {')
        sep = "\n    "
        for c in self.extra_columns:
            out.write(f"{sep}{dumps(c)}: " + dumps(_nulls(column(self.records, c)), allow_nan=False))
            sep = ",\n    "
        out.write("\n  },\n")
        array("memory", (dumps(m, allow_nan=False) for m in self.memory))
        summary = dumps(json_safe(self.summary), indent=2, allow_nan=False).replace("\n", "\n  ")
        out.write(f'  "summary": {summary}\n}}\n')


def _nulls(values: list[Any]) -> list[Any]:
    """NaN/Inf as None (JSON has neither), in place."""
    for i, v in enumerate(values):
        cls = v.__class__
        if cls is not float and cls is not int and v is not None and hasattr(v, "item"):
            v = values[i] = v.item()  # numpy scalars (TensorBoard's values)
        if isinstance(v, float) and not math.isfinite(v):
            values[i] = None
    return values


class IncrementalParser:
    """Feed text as it arrives; holds a partial last line until its newline comes."""

    def __init__(
        self,
        *,
        gpu: str | None = None,
        seq_length: int | None = None,
        source: str | None = None,
        max_line_bytes: int = MAX_LOG_LINE_BYTES,
    ):
        self.max_line_bytes = max_line_bytes
        self._held: list[str] = []  # pieces of the unterminated last line (joined once, when it ends)
        self._held_len = 0
        self._skipping = False  # the unterminated line is already over-long: its pieces are dropped
        self._long: list[dict[str, int]] = []
        self._long_count = 0
        self._by_iter: dict[int, dict[str, Any]] = {}
        self._val: dict[int | None, dict[str, Any]] = {}
        self._test: dict[int | None, dict[str, Any]] = {}
        self._args: dict[str, Any] = {}
        self._args_done = False
        self._lines = 0
        self._repeated = 0
        self._last_iteration: int | None = None
        self._memory: dict[tuple[int | None, int], dict[str, Any]] = {}
        # the last memory lines read, by their text: a log that repeats each rank's report (a fork that
        # prints it every interval, concatenated pod logs) parses each distinct line once
        self._memory_lines: dict[str, tuple[tuple[int | None, int], dict[str, Any]]] = {}
        self.gpu = gpu
        self.seq_length = seq_length
        self.source = source

    def feed(self, text: str) -> int:
        """Parse the complete lines in ``text`` (plus what was held back); returns lines consumed.

        The unterminated last line is held as a list of pieces (re-joining it at every feed was
        quadratic in its length: a 2 GB line took minutes), and once it is longer than
        ``max_line_bytes`` its pieces are dropped: the line is skipped and named, never held.
        """
        if not text:
            return 0
        lines = text.split("\n")
        tail = lines.pop()
        if lines:
            lines[0] = self._take_held(lines[0])
            if max(map(len, lines)) > self.max_line_bytes:
                self._drop_long(lines)
            self._consume(lines)
        self._hold(tail)
        return len(lines)

    def close(self) -> None:
        """End of input: parse a last line that has no newline."""
        if self._held or self._skipping:
            lines = [self._take_held("")]
            if len(lines[0]) > self.max_line_bytes:
                self._drop_long(lines)
            self._consume(lines)

    def _hold(self, piece: str) -> None:
        if self._skipping:
            self._held_len += len(piece)
            return
        if piece:
            self._held.append(piece)
            self._held_len += len(piece)
        if self._held_len > self.max_line_bytes:
            self._held, self._skipping = [], True

    def _take_held(self, end: str) -> str:
        """The held line completed by ``end``; an over-long one comes back as a long dummy marker."""
        if self._skipping:
            n = self._held_len + len(end)
            self._held_len, self._skipping = 0, False
            return _LongLine(n)
        if not self._held:
            return end
        line = "".join(self._held) + end
        self._held, self._held_len = [], 0
        return line

    def _drop_long(self, lines: list[str]) -> None:
        """Blank out the over-long lines (so line numbers stay right), naming the first ones."""
        for i, line in enumerate(lines):
            if len(line) > self.max_line_bytes:
                self._long_count += 1
                if len(self._long) < NAMED_LONG_LINES:
                    n = line.length if isinstance(line, _LongLine) else len(line)
                    self._long.append({"line_number": self._lines + i + 1, "chars": n})
                lines[i] = ""

    def _consume(self, lines: list[str]) -> None:
        # The cyclic GC is paused while a batch is parsed: records hold no cycles, and with a
        # million of them alive every young collection's promotion made full collections
        # re-traverse them (nearly half the parse time on iteration-dense logs).
        paused = gc.isenabled()
        gc.disable()
        try:
            self._consume_lines(lines)
        finally:
            if paused:
                gc.enable()

    def _consume_lines(self, lines: list[str]) -> None:
        self._lines += len(lines)
        by_iter = self._by_iter
        args_done = self._args_done
        for line in lines:
            if "iteration" in line:
                if " loss at " in line:
                    self._eval(line)
                    continue
                if "memory (MB)" in line:
                    self._memory_report(line)
                    continue
                rec = parse_iteration_line(line)
                if rec is None:
                    continue
                it = rec["iteration"]
                if it in by_iter:
                    self._repeated += 1
                    del by_iter[it]
                by_iter[it] = Record(rec)
                self._last_iteration = it
                args_done = True
            elif not args_done and "...." in line:
                m = _ARG_RE.search(line)
                if m and m.group(1) in _WANTED_ARGS:
                    val = line[m.end() :].strip()
                    num = _number(val, True)
                    self._args[m.group(1)] = (
                        num if num is not None else {"True": True, "False": False, "None": None}.get(val, val)
                    )
            elif "end of training" in line and " loss at " in line:
                self._eval(line)
        self._args_done = args_done

    def _memory_report(self, line: str) -> None:
        """One rank's memory report: its cells by label, MiB to bytes; unknown cells are ignored."""
        seen = self._memory_lines.get(line)
        if seen is not None:  # the same text gives the same row; a later line for its key still wins
            key, row = seen
            self._memory[key] = row
            return
        m = _MEMORY_RE.search(line)
        if m is None:
            return
        row: dict[str, Any] = {"rank": int(m.group(1)) if m.group(1) else None, "iteration": int(m.group(2))}
        for cell in line[m.end() :].split("|"):
            label, sep, value = cell.partition(":")
            key = _MEMORY_LABELS.get(label.strip())
            mib = _number(value.strip(), False) if sep and key else None
            if key and isinstance(mib, float) and math.isfinite(mib) and mib >= 0:
                row[key] = round(mib * fmt.MEMORY_UNIT_BYTES)
        if len(row) > 2:
            key = (row["rank"], row["iteration"])
            self._memory[key] = row
            if len(self._memory_lines) >= _MEMORY_LINES_KEPT:
                self._memory_lines.clear()
            self._memory_lines[line] = (key, row)

    def _eval(self, line: str) -> None:
        parsed = parse_eval_line(line)
        if parsed is None:
            return
        split, iteration, values = parsed
        if iteration is None:
            iteration = self._last_iteration
        row = {"iteration": iteration, "lm_loss": values.pop("lm_loss", None),
               "lm_loss_ppl": values.pop("lm_loss_ppl", None), **values}  # fmt: skip
        target = self._test if split == "test" else self._val
        target.pop(iteration, None)
        target[iteration] = row

    def result(self) -> ParsedLog:
        """A snapshot of what has been parsed so far."""
        records = sorted(self._by_iter.values(), key=lambda r: r["iteration"])
        key = lambda r: (r["iteration"] is None, r["iteration"] or 0)  # noqa: E731
        return ParsedLog(
            records=records,
            validation=sorted(self._val.values(), key=key),
            test=sorted(self._test.values(), key=key),
            args=dict(self._args),
            lines=self._lines,
            repeated_iterations=self._repeated,
            gpu=self.gpu,
            seq_length=self.seq_length,
            source=self.source,
            long_lines=list(self._long),
            long_line_count=self._long_count,
            memory=sorted(
                self._memory.values(), key=lambda r: (r["rank"] is None, r["rank"] or 0, r["iteration"])
            ),
        )


class _LongLine(str):
    """Stands for a skipped over-long line: an empty string whose ``len`` is the line's length."""

    length: int

    def __new__(cls, length: int) -> _LongLine:
        obj = super().__new__(cls, "")
        obj.length = length
        return obj

    def __len__(self) -> int:
        return self.length


class LogFollower:
    """Follow a growing log file, reading only new bytes at each :meth:`poll`.

    Truncation (the file got shorter) or replacement (a new inode: rotation, a restarted pod's
    log) restarts parsing from the beginning of the new file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        gpu: str | None = None,
        seq_length: int | None = None,
        max_line_bytes: int = MAX_LOG_LINE_BYTES,
    ):
        self.path = Path(path)
        self._gpu = gpu
        self._seq_length = seq_length
        self._max_line = max_line_bytes
        self.resets = 0
        self.chunk_bytes = 4 << 20
        self._reset()

    def _reset(self) -> None:
        self.offset = 0
        self._inode: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.parser = IncrementalParser(
            gpu=self._gpu, seq_length=self._seq_length, source=str(self.path), max_line_bytes=self._max_line
        )

    def poll(self) -> ParsedLog:
        """Read what was appended since the last poll and return the updated :class:`ParsedLog`."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self.parser.result()
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.offset):
            self.resets += 1
            self._reset()
        self._inode = st.st_ino
        if st.st_size > self.offset:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                while data := fh.read(self.chunk_bytes):  # bounded memory on multi-GB logs
                    self.offset += len(data)
                    self.parser.feed(self._decoder.decode(data))
        return self.parser.result()

    def finish(self) -> ParsedLog:
        """Treat the current end of file as the end of the log (parse a last unterminated line)."""
        self.poll()
        self.parser.feed(self._decoder.decode(b"", final=True))
        self.parser.close()
        return self.parser.result()


def parse_text(text: str, *, gpu: str | None = None, seq_length: int | None = None) -> ParsedLog:
    parser = IncrementalParser(gpu=gpu, seq_length=seq_length)
    parser.feed(text)
    parser.close()
    return parser.result()


def check_log_path(path: str | os.PathLike[str]) -> Path:
    """The path, or a UsageError that says what to do.

    Only regular files: /dev/zero, a FIFO or a socket has no end to read to (a log read from one
    ran until memory was gone), so it is refused by name; save the stream to a file first.
    """
    p = Path(path)
    if not p.exists():
        raise UsageError(
            f"{p}: no such log file; pass the trainer's log (e.g. runs/workshop/train/train.log)"
        )
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; pass the log file inside it (e.g. {p}/train.log)")
    if not stat.S_ISREG(os.stat(p).st_mode):
        raise UsageError(
            f"{p}: not a regular file (a device, FIFO or socket); save the log to a file "
            "(e.g. kubectl logs POD > train.log) and pass that"
        )
    return p


def check_seq_length(seq_length: int | None) -> None:
    """``--seq-length`` must be a positive token count (tokens/s is divided by nothing else)."""
    if seq_length is not None and (isinstance(seq_length, bool) or seq_length < 1):
        raise UsageError(f"--seq-length {seq_length}: use a positive number of tokens (e.g. 2048)")


def check_max_line_bytes(n: int) -> None:
    if n < 1:
        raise UsageError(f"--max-line-bytes {n}: use a positive number (default {MAX_LOG_LINE_BYTES:,})")


# Magic bytes of the compressors logs are archived with (checked instead of the file name, which
# an archive step may or may not suffix).
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)


def log_compression(path: str | os.PathLike[str]) -> str | None:
    """``"gzip"``, ``"zstd"``, ``"bzip2"``, ``"xz"`` or None (plain text), from the first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    return next((name for magic, name in _MAGIC if head.startswith(magic)), None)


def _decompression_errors() -> tuple[type[BaseException], ...]:
    import zstandard

    return (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError)


def open_log(path: str | os.PathLike[str]) -> io.BufferedIOBase:
    """The log's bytes, decompressed on the fly when the file is gzip/zstd/bzip2/xz."""
    p = check_log_path(path)
    kind = log_compression(p)
    if kind == "gzip":
        return gzip.open(p, "rb")
    if kind == "bzip2":
        return bz2.open(p, "rb")
    if kind == "xz":
        return lzma.open(p, "rb")
    if kind == "zstd":
        # the frame reader prep-data uses too: it reads concatenated frames (zstd -c of chunks, pzstd), keeps one
        # call's output bounded, and raises EOFError when the file ends inside a frame; zstandard's
        # stream_reader ended quietly there, so a truncated log read as a healthy, shorter run.
        from ..zstdframes import ZstdFrames

        raw = open(p, "rb")  # noqa: SIM115 - closed with the reader
        return _ClosingReader(ZstdFrames(raw), raw)
    return open(p, "rb")


class _ClosingReader(io.BufferedReader):
    """A buffered reader that also closes the raw file under the decompressor."""

    def __init__(self, stream: io.RawIOBase, raw: io.IOBase) -> None:
        super().__init__(stream, buffer_size=1 << 20)
        self._file = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._file.close()


def read_log_lines(path: str | os.PathLike[str], max_line_bytes: int = MAX_LOG_LINE_BYTES) -> Iterator[str]:
    """The log's lines (decoded as UTF-8, bad bytes replaced), decompressing when needed.

    A line longer than ``max_line_bytes`` comes back cut to its first ``max_line_bytes`` (with its
    newline), the rest read past in bounded pieces: line numbers stay right and memory stays flat.
    A corrupt or truncated archive becomes a UsageError naming the file, not a traceback.
    """
    p = check_log_path(path)
    errors = _decompression_errors()
    try:
        with open_log(p) as fh:
            while raw := fh.readline(max_line_bytes + 1):
                if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                    raw = raw[:max_line_bytes] + b"\n"
                    while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                        pass
                yield raw.decode("utf-8", errors="replace")
    except errors as e:
        raise UsageError(
            f"{p}: cannot read this {log_compression(p) or 'log'} file ({e}); is the archive truncated?"
        ) from None


def parse_log(
    path: str | os.PathLike[str],
    *,
    gpu: str | None = None,
    seq_length: int | None = None,
    max_line_bytes: int = MAX_LOG_LINE_BYTES,
) -> ParsedLog:
    """Parse a whole log file (the one-shot twin of :class:`LogFollower`); compressed ones too."""
    p = check_log_path(path)
    check_seq_length(seq_length)
    check_max_line_bytes(max_line_bytes)
    if gpu is not None:
        from ..facts.hardware import gpu as lookup_gpu

        lookup_gpu(gpu)  # a UsageError naming --gpu for unknown keys
    if log_compression(p) is None:
        return LogFollower(p, gpu=gpu, seq_length=seq_length, max_line_bytes=max_line_bytes).finish()
    parser = IncrementalParser(gpu=gpu, seq_length=seq_length, source=str(p), max_line_bytes=max_line_bytes)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        with open_log(p) as fh:
            while data := fh.read(4 << 20):  # bounded memory, like LogFollower
                parser.feed(decoder.decode(data))
    except _decompression_errors() as e:
        raise UsageError(
            f"{p}: cannot read this {log_compression(p)} file ({e}); is the archive truncated?"
        ) from None
    parser.feed(decoder.decode(b"", final=True))
    parser.close()
    return parser.result()


# ------------------------------------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------------------------------------

SMOOTHING = 0.9  # exponential smoothing weight of the loss curve (TensorBoard's default slider value)


def smooth(values: list[float], weight: float = SMOOTHING) -> list[float]:
    """TensorBoard-style debiased exponential moving average; NaN/Inf points are carried over as NaN."""
    out: list[float] = []
    last = 0.0
    n = 0
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(math.nan)
            continue
        last = last * weight + (1 - weight) * v
        n += 1
        out.append(last / (1 - weight**n))
    return out


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if _finite(x)]
    return sum(xs) / len(xs) if xs else None


def _trend(iters: list[int], losses: list[float]) -> tuple[str | None, float | None]:
    pts = [(i, v) for i, v in zip(iters, losses, strict=True) if _finite(v)]
    if len(pts) < 4:
        return None, None
    pts = pts[len(pts) // 2 :]  # the recent half
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    if sxx == 0:
        return None, None
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    change = slope * (pts[-1][0] - pts[0][0])  # loss change across the window
    per_1k = slope * 1000
    if abs(change) < 0.01 * abs(my):
        return "flat", per_1k
    return ("decreasing" if slope < 0 else "increasing"), per_1k


def column(records: list[Mapping[str, Any]], key: str) -> list[Any]:
    """``[r.get(key) for r in records]``, at C speed for parsed :class:`Record` s (an attrgetter)."""
    if records and key in _FIELD_SET and type(records[0]) is Record:
        try:
            return list(map(attrgetter(key), records))
        except AttributeError:  # a list mixing records and dicts
            pass
    return [r.get(key) for r in records]


def _peak(reports: list[dict[str, Any]], key: str) -> int | None:
    return max((r[key] for r in reports if key in r), default=None)


def summarize(log: ParsedLog) -> dict[str, Any]:
    recs = log.records
    iters = column(recs, "iteration")
    losses = column(recs, "lm_loss")
    finite = [(i, v) for i, v in zip(iters, losses, strict=True) if _finite(v)]
    nonfinite = [
        i for i, v in zip(iters, losses, strict=True) if isinstance(v, float) and not math.isfinite(v)
    ]
    smoothed = smooth([v if v is not None else math.nan for v in losses])
    smoothed_last = next((v for v in reversed(smoothed) if math.isfinite(v)), None)
    trend, per_1k = _trend(iters, losses)
    first = 1 if len(recs) > 1 else 0  # the first logged interval includes warm-up
    elapsed = column(recs, "elapsed_ms")[first:]
    mean_elapsed = _mean(elapsed)
    mean_tflops = _mean(column(recs, "tflops_per_gpu")[first:])
    seq = log.seq_length or log.args.get("seq_length")
    tokens_per_s = None
    if isinstance(seq, int) and seq > 0:
        rates = [
            gb * seq / (ms / 1000.0)
            for gb, ms in zip(column(recs, "global_batch_size")[first:], elapsed, strict=True)
            if _finite(gb) and _finite(ms) and ms > 0
        ]
        tokens_per_s = sum(rates) / len(rates) if rates else None
    mfu = None
    if log.gpu and mean_tflops is not None:
        from ..facts.hardware import gpu as lookup_gpu

        mfu = mean_tflops / lookup_gpu(log.gpu).bf16_tflops
    train_iters = recs[-1]["train_iters"] if recs else log.args.get("train_iters")
    last_iter = recs[-1]["iteration"] if recs else None
    eta = None
    if recs and train_iters:
        recent = _mean(elapsed[-10:])
        if recent is not None:
            eta = max(0, train_iters - last_iter) * recent / 1000.0
    best = min(finite, key=lambda p: p[1]) if finite else None
    return {
        "iterations_logged": len(recs),
        "first_iteration": iters[0] if iters else None,
        "last_iteration": last_iter,
        "train_iters": train_iters,
        "progress": (last_iter / train_iters) if (recs and train_iters) else None,
        "last_loss": recs[-1].get("lm_loss") if recs else None,
        "last_finite_loss": finite[-1][1] if finite else None,
        "best_loss": best[1] if best else None,
        "best_loss_iteration": best[0] if best else None,
        "smoothed_loss": smoothed_last,
        "smoothing": SMOOTHING,
        "loss_trend": trend,
        "loss_slope_per_1k_iterations": per_1k,
        "mean_elapsed_ms": mean_elapsed,
        "mean_tflops_per_gpu": mean_tflops,
        "seq_length": seq if isinstance(seq, int) else None,
        "tokens_per_second": tokens_per_s,
        "gpu": log.gpu,
        "mfu": mfu,
        "skipped_iterations": sum(v or 0 for v in column(recs, "skipped_iterations")),
        "nan_iterations": sum(v or 0 for v in column(recs, "nan_iterations")),
        "nonfinite_loss_iterations": nonfinite,
        "eta_seconds": eta,
        "last_validation_loss": log.validation[-1]["lm_loss"] if log.validation else None,
        "last_test_loss": log.test[-1]["lm_loss"] if log.test else None,
        "last_timestamp": recs[-1].get("timestamp") if recs else None,
        # the busiest rank's allocator peaks (Megatron's memory report), to hold against `workshop plan`
        "peak_allocated_bytes": _peak(log.memory, "max_allocated_bytes"),
        "peak_reserved_bytes": _peak(log.memory, "max_reserved_bytes"),
        "repeated_iterations": log.repeated_iterations,
        "lines": log.lines,
        "long_lines_skipped": log.long_line_count,
        "long_lines": log.long_lines,
    }
