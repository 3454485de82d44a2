"""Read a training log (or ``kubectl describe``/events output) and name what went wrong.

The signatures live in one table, :mod:`workshop_lib.facts.failures`; this module only applies it:

* every line is checked against the benign list first (NCCL's 'Failed to find ncclCollNetPlugin'
  and friends are never findings), then against the signatures, first match wins;
* a finding carries the first matching line (1-based ``line_number``, the ``line`` itself) and
  ``count``, the number of lines with that label: repeated lines (eight ranks printing the same
  watchdog timeout) are one finding;
* a signature with ``unless`` is dropped when the log also shows the healthy counterpart (e.g. a
  "plugin not found" probe for one library name while aws-ofi-nccl did load and EFA is in use);
* ``nan_loss`` and ``skipped_iterations`` are also read from the parsed iteration lines:
  skipped iterations within the first :data:`~workshop_lib.facts.failures.SKIP_GRACE_ITERATIONS`
  iterations are fp16 loss-scale warm-up and raise nothing; later ones are a warning.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from ..facts.failures import BENIGN_PATTERNS, FAILURES, FAILURES_BY_LABEL, SKIP_GRACE_ITERATIONS
from .parse import _ITER_RE, check_log_path, parse_iteration_line, read_log_lines

MAX_LINE_CHARS = 400


@dataclass
class Finding:
    label: str
    line_number: int
    line: str
    explanation: str
    fix: str
    severity: str = "error"
    count: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


_BENIGN = re.compile("|".join(f"(?:{p})" for p in BENIGN_PATTERNS))
_SIGS = [(sig, re.compile("|".join(f"(?:{p})" for p in sig.patterns))) for sig in FAILURES if sig.patterns]
_UNLESS = {sig.label: re.compile("|".join(f"(?:{p})" for p in sig.unless)) for sig in FAILURES if sig.unless}
# A cheap first pass: only lines with one of these go through the signature regexes.
_ANY = re.compile("|".join(f"(?:{p})" for sig in FAILURES for p in sig.patterns))


def _clip(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


def diagnose_lines(lines: Iterable[str]) -> list[Finding]:
    """Findings for a sequence of log lines, in order of first occurrence."""
    found: dict[str, Finding] = {}
    healthy_seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        for label, rx in _UNLESS.items():
            if label not in healthy_seen and rx.search(line):
                healthy_seen.add(label)
        iter_match = "iteration" in line and _ITER_RE.search(line)
        if iter_match:
            _iteration_findings(line, number, found)
            continue
        if not _ANY.search(line) or _BENIGN.search(line):
            continue
        for sig, rx in _SIGS:
            if rx.search(line):
                _add(found, sig.label, number, line)
                break
    return [f for f in found.values() if f.label not in healthy_seen]


def _add(found: dict[str, Finding], label: str, number: int, line: str) -> None:
    if label in found:
        found[label].count += 1
        return
    sig = FAILURES_BY_LABEL[label]
    found[label] = Finding(label, number, _clip(line), sig.explanation, sig.fix, sig.severity)


def _iteration_findings(line: str, number: int, found: dict[str, Finding]) -> None:
    rec = parse_iteration_line(line)
    if rec is None:
        return
    loss = rec.get("lm_loss")
    nan_loss = isinstance(loss, float) and not math.isfinite(loss)
    if nan_loss or (rec.get("nan_iterations") or 0) > 0:
        _add(found, "nan_loss", number, line)
    if (rec.get("skipped_iterations") or 0) > 0 and rec["iteration"] > SKIP_GRACE_ITERATIONS:
        _add(found, "skipped_iterations", number, line)


def diagnose_text(text: str) -> list[Finding]:
    return diagnose_lines(text.splitlines())


def diagnose_log(path: str | os.PathLike[str]) -> list[Finding]:
    """Findings for a log file (``workshop monitor diagnose LOG``)."""
    return diagnose_lines(read_log_lines(check_log_path(path)))  # .gz/.zst archives too
