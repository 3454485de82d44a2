"""The training run as notebook 03 shows it: a progress line, the run's own lines, no warning walls.

``Backend.logs`` streams every line of the run to a sink; ``workshop logs`` and the log file keep
them all. In the notebook, the same stream would bury Megatron's iteration lines under torch's and
megatron-core's deprecation notes, printed once per rank (``facts/library_warnings.py`` lists them
and says why each is harmless here). :class:`ReadableLog` is a sink that passes every line on except
those known warnings, each matched by its exact category, message and module (and the source line
Python prints under it), counts what it left out, and keeps a one-line progress summary from the
iteration lines. :func:`follow` wires it to a backend for the notebook: the progress line updates in
place above the stream, and the stream ends with one line naming how many warnings were left out
and where the full log is. A warning the table does not know is shown as printed.
"""

from __future__ import annotations

import linecache
import os
import stat
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..facts import library_warnings as known
from ..monitor.parse import parse_iteration_line

# A hidden warning's source line is expected within this many lines (two ranks interleave).
SOURCE_WINDOW = 6
MAX_SOURCE_BYTES = 8 << 20  # a module's source is far smaller; anything larger is not read


class ReadableLog:
    """A line sink: pass the run's lines to ``emit``, minus the known library warnings (counted).

    ``progress``, when given, receives :meth:`progress_line` whenever an iteration line arrives.
    """

    def __init__(
        self,
        emit: Callable[[str], None] = print,
        *,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.emit = emit
        self.progress = progress
        self.hidden: Counter[str] = Counter()  # message -> how many times it was left out
        self.shown = 0
        self.last: dict[str, Any] | None = None  # the latest iteration line, parsed
        self._started = time.monotonic()
        self._first_iteration_at: float | None = None
        self._expect: list[tuple[str | None, int]] = []  # (source text or None, lines left to see it)

    # ---- the sink -----------------------------------------------------------------------------
    def __call__(self, line: str) -> None:
        if self._is_expected_source(line):
            return
        m = known.WARNING_LINE.match(line)
        if m:
            entry = known.match_printed(m["category"], m["message"], m["file"])
            if entry is not None:
                self.hidden[entry.message] += 1
                self._expect.append((_source_line(m["file"], int(m["line"])), SOURCE_WINDOW))
                return
        if line.strip() in known.KNOWN_LOG_LINES:
            self.hidden[line.strip()] += 1
            return
        record = parse_iteration_line(line)
        if record is not None:
            self._iteration(record)
        self.shown += 1
        self.emit(line)

    def _is_expected_source(self, line: str) -> bool:
        """Whether ``line`` is the source line Python printed under a hidden warning (then consumed).

        Python prints it indented by two spaces; when the file is readable here its text must match
        exactly, otherwise (a log from another machine) the first indented line in the window does.
        """
        if not self._expect:
            return False
        hit = None
        if line.startswith("  "):
            text = line.strip()
            hit = next((i for i, (src, _) in enumerate(self._expect) if src is None or src == text), None)
        if hit is not None:
            del self._expect[hit]
        self._expect = [(src, left - 1) for src, left in self._expect if left > 1]
        return hit is not None

    def _iteration(self, record: dict[str, Any]) -> None:
        if self._first_iteration_at is None:
            self._first_iteration_at = time.monotonic()
        self.last = record
        if self.progress is not None:
            self.progress(self.progress_line())

    # ---- what the participant reads -----------------------------------------------------------
    def progress_line(self) -> str:
        """``iteration 12/30 (40%) | lm loss 5.91 | 0.68 s/iteration | about 12 s left``."""
        r = self.last
        if not r:
            return "training: waiting for the first iteration line..."
        it, total = r["iteration"], r["train_iters"]
        parts = [f"iteration {it}/{total} ({100 * it // max(1, total)}%)"]
        if isinstance(r.get("lm_loss"), float):
            parts.append(f"lm loss {r['lm_loss']:.3f}")
        ms = r.get("elapsed_ms")
        if isinstance(ms, float) and ms > 0:
            parts.append(f"{ms / 1000:.2f} s/iteration")
            if it < total:
                parts.append(f"about {(total - it) * ms / 1000:.0f} s left")
        if it >= total:
            parts.append(f"done in {time.monotonic() - self._started:.0f} s")
        return "training: " + " | ".join(parts)

    @property
    def hidden_count(self) -> int:
        return sum(self.hidden.values())

    def summary_line(self, log: str | Path | None) -> str | None:
        """``12 known library warnings hidden; full log in <log>`` (None when nothing was hidden)."""
        n = self.hidden_count
        if not n:
            return None
        where = f"full log in {log}" if log else "`workshop logs` prints the full log"
        return (
            f"{n} known library warning{'s' if n != 1 else ''} hidden ({len(self.hidden)} kinds, "
            f"see workshop_lib/facts/library_warnings.py); {where}"
        )


def _source_line(file: str, lineno: int) -> str | None:
    """The source line Python printed under a warning, read here when ``file`` is a regular file of
    sensible size (a log names the path; a FIFO or a huge file at that path is never read)."""
    try:
        st = os.stat(file)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
        return None
    return linecache.getline(file, lineno).strip() or None


def _display_progress() -> Callable[[str], None] | None:
    """A callable that rewrites one output line in place in a notebook, or None outside IPython."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - plain Python without IPython
        return None
    if get_ipython() is None:
        return None
    handle = display({"text/plain": ""}, raw=True, display_id=True)

    def update(text: str) -> None:
        handle.update({"text/plain": text}, raw=True)

    return update


def follow(
    launcher: Any,
    job: Any,
    *,
    timeout: float | None = None,
    emit: Callable[[str], None] = print,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Stream ``job``'s log through :class:`ReadableLog` until the run ends (or ``timeout`` seconds).

    ``launcher`` is a launch backend (``backends/base.py``). Returns its ``logs`` answer plus
    ``hidden_warnings`` (how many lines were left out of the view, all of them still in the log
    file). In a notebook the progress line updates in place.
    """
    progress = progress or _display_progress()
    view = ReadableLog(emit, progress=progress)
    if progress is not None:
        progress(view.progress_line())
    result = launcher.logs(job, follow=True, sink=view, timeout=timeout)
    if progress is not None and view.last is not None:
        progress(view.progress_line())
    summary = view.summary_line(result.get("out"))
    if summary:
        emit(summary)
    return {**result, "hidden_warnings": view.hidden_count}
