"""Read a training log (or ``kubectl describe``/events output) and give one verdict: what went wrong.

The signatures live in one table, :mod:`workshop_lib.facts.failures`; this module applies it in a
single streaming pass (a multi-gigabyte log is never held in memory):

* every line is checked against the benign list first (NCCL's 'Failed to find ncclCollNetPlugin'
  and friends are never findings), then against the signatures, first match wins;
* a finding carries its first line (1-based ``line_number``, the ``line``), ``count`` (lines with
  that label: eight ranks printing the same watchdog timeout are one finding) and a few
  ``evidence`` lines, the first of each rank first;
* a signature with ``unless`` is dropped when the log also shows the healthy counterpart (a
  "plugin not found" probe while aws-ofi-nccl did load; a FailedScheduling event of a pod that
  was scheduled later);
* numerics come from the iteration lines of every known format: a NaN/Inf loss (any loss
  column), a NaN grad norm, ``number of nan iterations`` > 0, a loss column that disappears
  (Megatron drops a NaN loss from the line instead of printing it), an fp16 loss scale that
  collapses; skipped iterations within the first
  :data:`~workshop_lib.facts.failures.SKIP_GRACE_ITERATIONS` are fp16 warm-up, later ones warn
  when they keep coming (several reports, a share of the steps), not for the scaler's occasional
  probe of a larger scale; skips report after report at one scale warn from the start (a fixed
  scale that every step overflows, :data:`~workshop_lib.facts.failures.SKIP_STUCK_REPORTS`);
* a run that stops logging is a ``training_hang`` when the log has timestamps: no iteration for
  far longer than the usual interval while the log (or the clock, ``now``) moved on.

:func:`verdict` orders the findings so that ``findings[0]`` is the primary root cause: the
earliest *cause* (OOM, a bad flag, a dead GPU) before any *context* (no EFA plugin, TCP sockets)
before any *symptom* (collective timeouts, peers gone), errors before warnings. An NCCL timeout
after an OOM on another rank is an OOM. When no error signature matches but the log shows
error-like lines, the verdict says so (``primary`` is ``None``) and lists the first error-like
lines of each rank in ``unrecognised``: an unknown failure is never silent. A warning the program
itself later takes back (:data:`~workshop_lib.facts.failures.RETRACTED_WARNINGS`: XLA's "may be
stuck", then "Thread is unstuck!") leaves that list when its retraction comes. A context a run
survives does not outrank such lines either (a missing plugin does not explain a rank's own
error); it is listed beside them. DeepSpeed's launcher killing the ranks with no error from any
of them is a silent death, named ``host_oom_killed`` with that reasoning.
"""

from __future__ import annotations

import calendar
import math
import os
import re
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from re import _constants as _re_constants  # type: ignore[attr-defined]
from re import _parser as _re_parser  # type: ignore[attr-defined]

import ahocorasick

from ..facts import failures as F
from .parse import _ITER_RE, check_log_path, parse_iteration_line, read_log_lines

MAX_LINE_CHARS = 400  # a quoted line is clipped to this in the verdict
# Only this much of a line is read: every signature sits near the start of its line, and a
# pathological multi-megabyte line (a dumped tensor, a progress bar without newlines) must not
# make the regexes crawl.
MAX_SCAN_CHARS = 65_536


@dataclass
class Finding:
    label: str
    line_number: int
    line: str
    explanation: str
    fix: str
    severity: str = "error"
    count: int = 1
    role: str = "cause"
    # up to EVIDENCE_LINES lines ({"line_number", "line"}) that show it, one per rank first
    evidence: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Verdict:
    """The answer for one log: the primary root cause, the ordered findings, unknown error lines."""

    primary: str | None
    findings: list[Finding]
    unrecognised: list[dict]  # [{"line_number", "line"}] when no signature explains the failure
    lines: int = 0
    # exception lines no signature knows that came before a *symptom* primary (F.EARLIER_EXCEPTION_PATTERN)
    earlier: list[dict] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when the log shows an error (known or not); warnings alone are not a failure."""
        return any(f.severity == "error" for f in self.findings) or bool(self.unrecognised)

    def to_dict(self) -> dict:
        """The ``workshop monitor diagnose --json`` object (contract: primary, findings, unrecognised;
        ``earlier`` only when a symptom's verdict has exception lines that came before it)."""
        out = {
            "primary": self.primary,
            "findings": [f.to_dict() for f in self.findings],
            "unrecognised": list(self.unrecognised),
        }
        if self.earlier:
            out["earlier"] = list(self.earlier)
        return out

    def one_line(self) -> str:
        """One line for a failed run's last line: label, the causal line, the fix."""
        if self.primary is not None:
            f = self.findings[0]
            head = f"diagnosis: {f.label} at line {f.line_number}: {_short(f.line, 160)}"
            if self.earlier:  # a symptom: what came before it is the likelier cause
                e = self.earlier[0]
                head += f" -- came first, line {e['line_number']}: {_short(e['line'], 120)}"
            return f"{head} -- fix: {_first_sentence(f.fix)}"
        if self.unrecognised:
            u = self.unrecognised[0]
            return (f"diagnosis: no known signature; the failure looks like line {u['line_number']}: "
                    f"{_short(u['line'], 160)}")  # fmt: skip
        return "diagnosis: no known failure signature"

    def render(self) -> str:
        """The human report of ``workshop monitor diagnose``: the verdict, its evidence, the rest."""
        out: list[str] = []
        if self.primary is not None:
            f = self.findings[0]
            times = f" (x{f.count})" if f.count > 1 else ""
            out.append(f"primary cause: {f.label}{times} [{f.severity}]")
            out.append(f"    why: {f.explanation}")
            out.append(f"    fix: {f.fix}")
            out.append("    evidence:")
            out.extend(f"      line {e['line_number']}: {e['line'].strip()}" for e in f.evidence)
            if self.earlier:
                out.append("    came first (this is a symptom; its cause is likely here):")
                out.extend(f"      line {e['line_number']}: {e['line'].strip()}" for e in self.earlier)
            rest = self.findings[1:]
        else:
            rest = self.findings
            if self.unrecognised:
                out.append("no known signature; these lines look like the failure:")
                out.extend(f"  line {u['line_number']}: {u['line'].strip()}" for u in self.unrecognised)
            elif not rest:
                out.append("no known failure signatures found")
        if rest:
            out.append("also found:" if self.primary is not None or self.unrecognised else "findings:")
            for f in rest:
                times = f" (x{f.count})" if f.count > 1 else ""
                out.append(f"  [{f.severity}] {f.label}{times} at line {f.line_number}: {f.line.strip()}")
                out.append(f"      fix: {f.fix}")
        return "\n".join(out)


def _short(line: str, n: int) -> str:
    line = line.strip()
    return line if len(line) <= n else line[: n - 3] + "..."


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + ("." if dot else "")


def _clip(line: str) -> str:
    # Trailing blanks go first: a pasted line padded to a terminal's width would otherwise be
    # clipped inside its padding and show only the spaces before the "...".
    line = line.rstrip()
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


def _alt(patterns: Iterable[str], flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


_BENIGN = _alt(F.BENIGN_PATTERNS)
_SIGS = [(sig, _alt(sig.patterns)) for sig in F.FAILURES if sig.patterns]
_UNLESS = {sig.label: _alt(sig.unless) for sig in F.FAILURES if sig.unless}
_UNLESS_ANY = _alt(p for sig in F.FAILURES for p in sig.unless)
_SOLO = _alt(F.SOLO_RANK_PATTERNS)
_SHARED = _alt(F.SHARED_RANK_PATTERNS)
_NOT_ERROR_LIKE = _alt(F.NOT_ERROR_LIKE_PATTERNS)
_OVERFLOW = re.compile(F.LOSS_SCALE_REDUCED_PATTERN)
_FAIRSEQ_SCALE = re.compile(F.FAIRSEQ_LOSS_SCALE_PATTERN)
_NONFINITE_STEP = re.compile(F.NONFINITE_STEP_PATTERN)
_HANDLED_TRACEBACK = re.compile(F.HANDLED_TRACEBACK_PATTERN)
_EXPLAINED_BY = {label: re.compile(p) for label, p in F.EXPLAINED_BY.items()}
_EARLIER = re.compile(F.EARLIER_EXCEPTION_PATTERN)
_MPI_HOST = re.compile(F.MPI_TAGGED_HOST_PATTERN)
_LOCK_WAIT = re.compile(F.TRITON_LOCK_ATTEMPT_PATTERN)
_LOCK_GOT = re.compile(F.TRITON_LOCK_ACQUIRED_PATTERN)
_STALL = _alt(F.STALL_REPORT_PATTERNS)
_RETRY_REPORT = _alt(F.RETRY_REPORT_PATTERNS)
_RETRY_RECOVERED = _alt(F.RETRY_RECOVERED_PATTERNS)
_RETRY_REPORT_AFTER = _alt(F.RETRY_REPORT_AFTER_PATTERNS)
_RETRACTED = [(re.compile(warning), re.compile(retraction)) for warning, retraction in F.RETRACTED_WARNINGS]
_RETRACT_TARGETS = frozenset(("retract", i) for i in range(len(_RETRACTED)))
_STACK_DUMP = _alt(F.STACK_DUMP_PATTERNS)
# Terminal colour and cursor codes: a notebook's traceback prints "\x1b[0;31mTypeError\x1b[0m: ...",
# whose words no pattern would find between the escapes; the .ipynb file stores the same escape in
# JSON's spelling ("\u001b[0;31mAttributeError\u001b[0m: ..."), which is read the same way.
_ESC = "\x1b["
_JSON_ESC = "\\u001b["
_ANSI = re.compile(r"(?:\x1b|\\u001b)\[[0-9;?]*[A-Za-z]")
_PROGRESS = re.compile(F.PROGRESS_LINE_PATTERN)
_VALIDATION = re.compile(F.VALIDATION_LINE_PATTERN)
_SUCCEEDED = _alt(F.RUN_SUCCEEDED_PATTERNS)
_LOOP_ENDED = _alt(F.TRAINING_LOOP_ENDED_PATTERNS)
_LAUNCHER_KILL = re.compile(F.LAUNCHER_KILL_PATTERN)
_PY_SPY_FRAME = re.compile(F.PY_SPY_FRAME_PATTERN)
_TRACEBACK_FRAME = re.compile(F.TRACEBACK_FRAME_PATTERN)
_PREFIXED_INDENT = re.compile(F.RANK_TAGS_PATTERN + r"\s{2}")  # a frame's source or caret line, tags and all
_RAISE_SOURCE = re.compile(F.RAISE_SOURCE_PATTERN)
_CARETS = re.compile(F.RANK_TAGS_PATTERN + r"\s*[\^~]+\s*$")  # Python 3.11+'s marks under a source line
_ONE_NODE = re.compile(F.SINGLE_NODE_PATTERN)
_MANY_NODES = re.compile(F.MULTI_NODE_PATTERN)
_TABLE_HOST = re.compile(F.NCCL_TESTS_RANK_PATTERN)
_ROLE_RANK = {role: i for i, role in enumerate(F.ROLE_ORDER)}
_NAN = _alt(F.FAILURES_BY_LABEL["nan_loss"].patterns)
# Every nan_loss pattern needs one of these words (or a trainer's fp16 give-up line); _NAN itself
# costs ~40 us on a long iteration line, where the words cost ~1 us. Megatron prints "number of nan
# iterations:   0" on every line, so that phrase is looked at on its own. A pattern added to
# nan_loss needs its word here: tests/test_diagnose_corpus.py fails otherwise.
_NAN_WORDS = (
    "nan", "NaN", "NAN", "inf", "Inf", "INF",
    "Current loss scale already at minimum", "Minimum loss scale reached", "iterations in a row due to",
    "DIVERGED", "diverged", "finite", "rad scale is small", "grad_scale is too small",
)  # fmt: skip
_NAN_ITERATIONS = "number of nan iterations"
_NAN_ITERATIONS_NONZERO = re.compile(F.NAN_ITERATIONS_PATTERN)
_GRAD_NORM_CELL = re.compile(F.NONFINITE_GRAD_NORM_PATTERN)
_FINITE_GRAD_NORM = re.compile(F.FINITE_GRAD_NORM_PATTERN)
_FINITE_LOSS = re.compile(F.FINITE_LOSS_PATTERN)


def _coloured(text: str) -> bool:
    """The text holds a colour or cursor code, in either spelling (the cheap test before _ANSI)."""
    return _ESC in text or _JSON_ESC in text


def _may_hold_nan(line: str) -> bool:
    """False only where ``_NAN`` cannot match (a cheap test first; tests/test_diagnose_corpus.py)."""
    if _NAN_ITERATIONS in line:
        if _NAN_ITERATIONS_NONZERO.search(line):
            return True
        line = line.replace(_NAN_ITERATIONS, "")
    return any(word in line for word in _NAN_WORDS)


def _holds_nan(line: str) -> bool:
    """A nan_loss pattern matches the line (the cheap word test first)."""
    return _may_hold_nan(line) and _NAN.search(line) is not None


_WEAK = [(label, re.compile(line), re.compile(other)) for label, line, other in F.CORROBORATED_SIGNS]

# --- literal gates: the speed of a pass ---------------------------------------------------------
# Python's re tries every branch of an alternation at every position of a line: ~150 signature
# patterns cost ~100 us per line. Each pattern, though, needs some literal text (a "gate": "NCCL
# WARN", "OutOfMemoryError", ...), and an Aho-Corasick automaton finds every gate in one pass, in C,
# over a whole block of lines at once. So a pattern runs only on the lines that contain its gate (a
# pattern without a usable gate runs on every line). One pass matters: the table has about 200
# gates, and a str.find per gate went over each block 200 times (60 % of a pass over a large log,
# benchmarks/results/diagnose.md).


def _required_literals(pattern: str) -> set[str] | None:
    """Literals one of which every match of ``pattern`` contains (the most selective found), else None."""
    return _seq_literals(list(_re_parser.parse(pattern)))


def _seq_literals(items: list) -> set[str] | None:
    candidates: list[set[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            candidates.append({"".join(run)})
            run.clear()

    for op, av in items:
        if op is _re_constants.LITERAL:
            run.append(chr(av))
            continue
        flush()
        sub: set[str] | None = None
        if op is _re_constants.SUBPATTERN:
            sub = _seq_literals(list(av[-1]))
        elif op is _re_constants.BRANCH:
            branches = [_seq_literals(list(b)) for b in av[1]]
            if all(branches):
                sub = set().union(*branches)  # type: ignore[arg-type]
        elif op in (_re_constants.MAX_REPEAT, _re_constants.MIN_REPEAT) and av[0] >= 1:
            sub = _seq_literals(list(av[2]))
        if sub:
            candidates.append(sub)
    flush()
    if not candidates:
        return None
    best = max(candidates, key=lambda c: (min(len(x) for x in c), -len(c)))
    return best if min(len(x) for x in best) >= 3 else None


# The handled-traceback check's cheap pre-test, derived from its pattern so the two cannot drift
_HANDLED_LITERALS = tuple(_required_literals(F.HANDLED_TRACEBACK_PATTERN) or ("",))  # "": every line


# Targets of a gate: ("sig", index into _SIGS patterns) or one of the named checks below.
_GATES: dict[str, set[tuple[str, int]]] = {}
_UNGATED: set[tuple[str, int]] = set()


def _gate(patterns: Iterable[str], target: tuple[str, int]) -> None:
    for p in patterns:
        lits = _required_literals(p)
        if lits is None:
            _UNGATED.add(target)
        else:
            for lit in lits:
                _GATES.setdefault(lit, set()).add(target)


for _i, (_sig, _) in enumerate(_SIGS):
    _gate(_sig.patterns, ("sig", _i))
_ERROR_LIKES = [re.compile(p) for p in F.ERROR_LIKE_PATTERNS]
for _i, _p in enumerate(F.ERROR_LIKE_PATTERNS):
    _gate((_p,), ("error_like", _i))
# ("unless", 1): the healthy counterparts of signatures; ("unless", 0): what the ranks and nodes are
_gate((p for sig in F.FAILURES for p in sig.unless), ("unless", 1))
_gate((*F.SOLO_RANK_PATTERNS, *F.SHARED_RANK_PATTERNS), ("unless", 0))
_gate((F.SINGLE_NODE_PATTERN, F.MULTI_NODE_PATTERN), ("unless", 0))
for _literal in F.HOP_LINE_LITERALS:  # their " via " hops (F.INTRA_NODE_HOPS, F.INTER_NODE_HOP)
    _GATES.setdefault(_literal, set()).add(("unless", 0))
# nccl-tests' device table: its own literals ("Rank", "Pid", "device") are too common to gate on
_GATES.setdefault("  Rank ", set()).add(("unless", 0))
for _tag in ("]<stdout>:", "]<stderr>:"):  # mpirun's rank tags (F.MPI_TAGGED_HOST_PATTERN)
    _GATES.setdefault(_tag, set()).add(("unless", 0))
for _i, (_, _line_rx, _other_rx) in enumerate(F.CORROBORATED_SIGNS):
    _gate((_line_rx, _other_rx), ("weak", _i))  # each pair its own gates: a line tests only its pairs
_gate(
    (
        F.LOSS_SCALE_REDUCED_PATTERN,
        F.FAIRSEQ_LOSS_SCALE_PATTERN,
        F.HANDLED_TRACEBACK_PATTERN,
        F.TRITON_LOCK_ATTEMPT_PATTERN,
        F.TRITON_LOCK_ACQUIRED_PATTERN,
    ),
    ("misc", 0),
)
_gate(F.STALL_REPORT_PATTERNS, ("stall", 0))
_gate((F.NONFINITE_STEP_PATTERN,), ("nonfinite", 0))
_gate((*F.RETRY_REPORT_PATTERNS, *F.RETRY_RECOVERED_PATTERNS, *F.RETRY_REPORT_AFTER_PATTERNS), ("retry", 0))
for _i, (_, _retraction) in enumerate(F.RETRACTED_WARNINGS):
    _gate((_retraction,), ("retract", _i))
_gate(F.RUN_SUCCEEDED_PATTERNS, ("success", 0))
_gate(F.TRAINING_LOOP_ENDED_PATTERNS, ("loop_ended", 0))
_GATES.setdefault("iteration ", set()).add(("iter", 0))  # _ITER_RE: "iteration" then spaces
_gate(F.BENIGN_PATTERNS, ("benign", 0))
# Fewer gates, fewer scans: a gate that contains another adds nothing (its lines are found by the
# shorter one), and gates that start alike ("NET/OFI Selected", "NET/OFI Couldn't") share their
# common start. Gates stay >= GATE_MIN_CHARS long: "WARN" alone would catch every "[WARNING]" line.
GATE_MIN_CHARS = 7


def _merge_gates(gates: dict[str, set[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    out = dict(gates)
    for g in sorted(out, key=len):
        if g in out and len(g) >= GATE_MIN_CHARS:
            for h in [h for h in out if h != g and g in h]:
                out[g] |= out.pop(h)
    merged: dict[str, set[tuple[str, int]]] = {}
    keys = sorted(out)
    group: list[str] = []

    def close() -> None:
        common = os.path.commonprefix(group) if len(group) > 1 else ""
        if len(common) >= GATE_MIN_CHARS:
            merged.setdefault(common, set()).update(*(out[k] for k in group))
        else:
            for k in group:
                merged.setdefault(k, set()).update(out[k])

    for k in keys:
        if group and len(os.path.commonprefix([group[0], k])) < GATE_MIN_CHARS:
            close()
            group = []
        group.append(k)
    if group:
        close()
    return merged


_GATES = _merge_gates(_GATES)
_GATE_LIST = sorted(_GATES.items())
assert not any("\n" in gate for gate, _ in _GATE_LIST)  # a gate is found within one line
_GATE_TARGETS = [targets for _, targets in _GATE_LIST]


def _automaton() -> ahocorasick.Automaton:
    """Every gate in one automaton; a match's value is the gate's index in ``_GATE_LIST``."""
    auto = ahocorasick.Automaton()
    for i, (gate, _) in enumerate(_GATE_LIST):
        auto.add_word(gate, i)
    auto.make_automaton()
    return auto


_AUTOMATON = _automaton()
BLOCK_LINES = 20_000


def _block_targets(lines: list[str], text: str) -> dict[int, frozenset[tuple[str, int]]]:
    """For a block of lines (``text``: the same lines joined by newlines): line index -> the gated
    checks that may match it."""
    starts: list[int] = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    gates_of: dict[int, list[int]] = {}  # line index -> the gates found in it, in order
    for end, gate in _AUTOMATON.iter(text):
        k = bisect_right(starts, end) - 1  # the line holding the gate's last character
        found = gates_of.get(k)
        if found is None:
            gates_of[k] = [gate]
        else:
            found.append(gate)
    # Lines of one kind (a rank's NCCL INFO line, an iteration line) find the same gates: their
    # union of checks is made once per block.
    unions: dict[tuple[int, ...], frozenset[tuple[str, int]]] = {}
    hits: dict[int, frozenset[tuple[str, int]]] = {}
    for k, found in gates_of.items():
        key = tuple(found)
        targets = unions.get(key)
        if targets is None:
            targets = unions[key] = frozenset().union(*(_GATE_TARGETS[g] for g in key), _UNGATED)
        hits[k] = targets
    if _UNGATED:
        for k in range(len(lines)):
            hits.setdefault(k, frozenset(_UNGATED))
    return hits


# Where the rank of a line is written, by launcher: torchrun ([rank3]:, [default3]:), mpirun
# ([1,3]<stdout>:), srun/pdsh ("3: ", "host: "), Ray ((head, rank=0, pid=..)), NCCL (host:pid:tid [3]).
_RANK_RES = [
    re.compile(r"^\s*\[(?:rank|RANK|default|Rank)\s*(\d+)\]"),
    re.compile(r"^\s*\[1,(\d+)\]<std"),
    re.compile(r"\brank=(\d+)"),
    re.compile(r"^\s*\[(?:rank|RANK) ?(\d+)\]"),
    re.compile(r"^(\S+?):\d+:\d+ \[(\d+)\]"),
    re.compile(r"^\s*(\d{1,4}):\s"),
    re.compile(r"^\s*\[pod/([^\]/]+)"),
    re.compile(r"^\s*\[((?:master|worker|launcher)-\d+)\]"),  # `workshop logs --all` on screen
]

# Timestamps, in the first characters of a line: ISO dates (Megatron's [YYYY-MM-DD HH:MM:SS],
# CloudWatch, Python logging) and glog's I/W/E/F MMDD HH:MM:SS (c10d, torchrun; no year).
_TS_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
_TS_GLOG = re.compile(r"\b[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.")


def _rank_of(line: str) -> str:
    for rx in _RANK_RES:
        m = rx.search(line[:120])
        if m:
            return ":".join(m.groups())
    return ""


def line_timestamp(line: str, year: int = 2000) -> float | None:
    """Seconds (POSIX, read as UTC) of the timestamp at the start of ``line``, or ``None``.

    glog's stamps (``E1121 10:00:00.1``) carry no year: ``year`` fills it in.
    """
    head = line[:90]
    m = _TS_ISO.search(head)
    if m:
        y, mo, d, h, mi, s = map(int, m.groups())
    else:
        m = _TS_GLOG.search(head)
        if not m:
            return None
        mo, d, h, mi, s = map(int, m.groups())
        y = year
    try:
        return float(calendar.timegm(datetime(y, mo, d, h, mi, s).timetuple()))  # read as UTC
    except ValueError:
        return None


class _Scan:
    """The state of one pass over a log; :meth:`feed` one line at a time, then :meth:`result`."""

    def __init__(self, now: float | None = None) -> None:
        self.found: dict[str, Finding] = {}
        self.ranks_seen: dict[str, set[str]] = {}
        self.healthy_seen: set[str] = set()
        # NCCL communicators of one process only (F.SOLO_RANK_PATTERNS), unless one has several
        self.solo_ranks = False
        self.shared_ranks = False
        # how many nodes the ranks run on (F.SINGLE_NODE_PATTERN): NCCL's count, nccl-tests' hosts
        self.one_node = False
        self.many_nodes = False
        # NCCL's channel hops: within a node (P2P, shared memory), and through the network
        self.intra_node_hops = False
        self.inter_node_hops = False
        self.table_hosts: set[str] = set()
        # the ranks and hosts of mpirun's tagged NCCL lines (F.MPI_TAGGED_HOST_PATTERN)
        self.mpi_ranks: set[str] = set()
        self.mpi_hosts: set[str] = set()
        self.unrecognised: list[dict] = []
        self.unrecognised_per_rank: dict[str, int] = {}
        self.number = 0
        self.now = now
        # the year for glog timestamps (which have none): the log's own ISO dates, else the clock's
        self.year = datetime.fromtimestamp(now, tz=timezone.utc).year if now is not None else 2000
        # numerics
        self.loss_keys: set[str] = set()
        self.max_loss_scale = 0.0
        self.last_iteration = 0  # of the last iteration line seen (DeepSpeed's overflow lines carry none)
        self.first_iteration: int | None = None  # of the first iteration line seen
        # skipped steps after the fp16 warm-up: the reports (first ones kept), and the steps they skip
        self.late_skip_lines: list[tuple[int, str]] = []
        self.late_skip_reports = 0
        self.late_skipped = 0
        # iteration lines in a row that skipped steps at one loss scale, at most F.SKIP_STUCK_REPORTS:
        # the first run that reaches it is kept as the evidence
        self.stuck_scale: float | None = None
        self.stuck_run: list[tuple[int, str]] = []
        # steps a trainer threw away itself for a NaN gradient norm or loss (F.NONFINITE_STEP_PATTERN)
        self.nonfinite_lines: list[tuple[int, str]] = []
        self.nonfinite_steps = 0
        self.last_step_line = 0  # its line number, timestamped or not
        # timestamps of iteration lines (line number, seconds, iteration) for the hang check
        self.iter_times: list[tuple[int, float, int]] = []
        self.last_iter_line: tuple[int, str] | None = None
        self.tail: deque[tuple[int, str]] = deque(maxlen=F.HANG_TAIL_LINES)
        self.locks: dict[str, tuple[int, str, str]] = {}  # lock id -> (line number, line, lock file)
        # a trainer's stall reports: the first line, and the checks counted by their timestamps
        self.stall_first: tuple[int, str] | None = None
        self.stall_checks = 0
        self.stall_last_time: float | None = None
        # the line of the run's own success report (F.RUN_SUCCEEDED_PATTERNS)
        self.succeeded: int | None = None
        self.loop_ended = False  # F.TRAINING_LOOP_ENDED_PATTERNS seen
        self.first_retry: int | None = None  # the first report of a failed attempt that is retried
        self.recovered: int | None = None  # the last sign that an attempt got its workers
        self.report_after: int | None = None  # the last report that follows its failed attempt's lines
        self.retried_through: int | None = None  # ... the last one an attempt after it recovered from
        # F.CORROBORATED_SIGNS: pair index -> its first weak line, and the pairs whose other line came
        # (per pair, not per label: one pair's corroboration says nothing of another's weak line)
        self.weak: dict[int, tuple[int, str]] = {}
        # nan_loss: the last NaN in a validation report, and whether any NaN came from elsewhere
        self.validation_nan: int | None = None
        self.nan_outside_validation = False
        # nan_loss added from steps whose only non-finite number was the gradient norm (their count
        # and the last), and a later step whose norm and losses were finite (F.NONFINITE_GRAD_NORM_PATTERN)
        self.grad_only_nans = 0
        self.grad_only_last: int | None = None
        # rank -> the lines of tracebacks reported as handled whose exception line has not come yet
        self.handled_traceback: dict[str, list[int]] = {}
        self.corroborated: set[int] = set()
        # DeepSpeed's launcher killing the ranks (its first line), and whether any other error-like
        # line was seen: a kill with nothing else is a rank that died silently (F.LAUNCHER_KILL_PATTERN)
        self.launcher_kill: tuple[int, str] | None = None
        self.other_error_like = False
        # warnings that a later line may take back (F.RETRACTED_WARNINGS), not yet taken back: only
        # those left at the end count as other error-like lines
        self.retractable: set[int] = set()

    # --- one line ----------------------------------------------------------------------------
    def feed(self, line: str) -> None:
        """One line (every check runs on it); :meth:`feed_block` is the fast way for many lines."""
        self.number += 1
        if _coloured(line):
            line = _ANSI.sub("", line)
        self.tail.append((self.number, line))
        self._line(line, self.number, None)

    def feed_block(self, lines: list[str]) -> None:
        """Many lines at once: gates are looked for in C, and only lines with a gate cost Python time."""
        base = self.number
        text = "\n".join(lines)
        # colour codes (notebooks, Ray, rich): read the words, not the escapes
        if _coloured(text):
            lines = [_ANSI.sub("", line) if _coloured(line) else line for line in lines]
            text = "\n".join(lines)
        hits = _block_targets(lines, text)
        for k in sorted(hits):
            self._line(lines[k], base + k + 1, hits[k])
        self.number = base + len(lines)
        first = max(0, len(lines) - F.HANG_TAIL_LINES)
        self.tail.extend((base + k + 1, lines[k]) for k in range(first, len(lines)))

    def _line(self, line: str, number: int, targets: frozenset[tuple[str, int]] | None) -> None:
        """The checks of one line; ``targets`` are those its gates allow (``None``: all of them)."""
        everything = targets is None
        if (everything or ("iter", 0) in targets) and _ITER_RE.search(line):
            self._iteration(line, number)
            self._unless(line, targets)
            return
        self._unless(line, targets)
        if everything or ("misc", 0) in targets:
            if "lock" in line:
                self._lock(line, number)
            if "educing" in line:  # "reducing to 8" / "Reducing dynamic loss scale from 8.0 to 4.0"
                m = _OVERFLOW.search(line)
                if m and float(m.group(1)) < F.LOSS_SCALE_COLLAPSE:
                    self._add("nan_loss", number, line)
                    return
                if m and self.last_iteration > F.SKIP_GRACE_ITERATIONS:
                    # DeepSpeed skipping a step long after fp16's warm-up (Megatron-DeepSpeed's own
                    # iteration line may still say "number of skipped iterations: 0")
                    self._late_skip(number, line, 1)
                    return
            elif "loss scale to: " in line:
                m = _FAIRSEQ_SCALE.search(line)
                if m and float(m.group(1)) < F.FAIRSEQ_LOSS_SCALE_COLLAPSE:
                    self._add("nan_loss", number, line)
                    return
            if any(lit in line for lit in _HANDLED_LITERALS) and _HANDLED_TRACEBACK.search(line):
                self._handled_starts(_rank_of(line), number).append(number)
                return
        if (everything or ("nonfinite", 0) in targets) and _NONFINITE_STEP.search(line):
            self.nonfinite_steps += 1
            if len(self.nonfinite_lines) < F.EVIDENCE_LINES:
                self.nonfinite_lines.append((number, line))
        if (everything or ("stall", 0) in targets) and _STALL.search(line):
            self._stall(line, number)
        if everything or ("retry", 0) in targets:
            if _RETRY_REPORT.search(line):
                if self.first_retry is None:
                    self.first_retry = number
                return
            if _RETRY_RECOVERED.search(line):
                self.recovered = number
                self.retried_through = self.report_after
            elif _RETRY_REPORT_AFTER.search(line):
                self.report_after = number
                return
        if self.succeeded is None and (everything or ("success", 0) in targets) and _SUCCEEDED.search(line):
            self.succeeded = number
        if not self.loop_ended and (everything or ("loop_ended", 0) in targets) and _LOOP_ENDED.search(line):
            self.loop_ended = True
        weak = range(len(_WEAK)) if everything else [i for kind, i in targets if kind == "weak"]
        if weak:
            self._weak(line, number, weak)
        if everything or not _RETRACT_TARGETS.isdisjoint(targets):  # (a set test: most lines have none)
            for i, (_, retraction) in enumerate(_RETRACTED):
                if retraction.search(line):  # the program took its warning back: no longer a failure
                    self._retract(i)
        if (everything or ("benign", 0) in targets) and _BENIGN.search(line):
            return  # part of every healthy start: never a finding, never an unknown error
        sigs = range(len(_SIGS)) if everything else sorted(i for kind, i in targets if kind == "sig")
        for i in sigs:
            sig, rx = _SIGS[i]
            if rx.search(line):
                if sig.label == "nan_loss":
                    self._add_nan(number, line)
                else:
                    self._add(sig.label, number, line)
                return
        likes = range(len(_ERROR_LIKES)) if everything else [i for kind, i in targets if kind == "error_like"]
        if likes:
            self._error_like(line, number, likes)

    def _unless(self, line: str, targets: frozenset[tuple[str, int]] | None) -> None:
        """What a line says of the ranks and nodes, and which signatures' healthy counterpart it is."""
        if targets is None or ("unless", 0) in targets:
            self._topology(line)
        if (targets is None or ("unless", 1) in targets) and _UNLESS_ANY.search(line):
            for label, rx in _UNLESS.items():
                if rx.search(line):
                    self.healthy_seen.add(label)

    def _topology(self, line: str) -> None:
        if "nranks " in line or any(literal in line for literal in F.HOP_LINE_LITERALS):
            if _SHARED.search(line):
                self.shared_ranks = True
            elif _SOLO.search(line):
                self.solo_ranks = True
            if " via " in line:
                if F.INTER_NODE_HOP in line:
                    self.inter_node_hops = True
                elif not self.intra_node_hops and any(hop in line for hop in F.INTRA_NODE_HOPS):
                    self.intra_node_hops = True
        if "nNodes " in line:
            if _MANY_NODES.search(line):
                self.many_nodes = True
            elif _ONE_NODE.search(line):
                self.one_node = True
        elif "  Rank " in line and (m := _TABLE_HOST.search(line)):
            self.table_hosts.add(m.group(1))
        if "]<std" in line and (m := _MPI_HOST.search(line)):
            self.mpi_ranks.add(m.group(1))
            self.mpi_hosts.add(m.group(2))
            if F.INTER_NODE_HOP in line:  # older NCCLs' "Ring 01 : 3 -> 10 [send] via NET/..."
                self.inter_node_hops = True

    def _handled_starts(self, rank: str, number: int) -> list[int]:
        """The rank's handled-traceback starts still open at line ``number`` (older ones expire:
        their exception line never came within F.HANDLED_TRACEBACK_LINES)."""
        starts = self.handled_traceback.setdefault(rank, [])
        while starts and number - starts[0] > F.HANDLED_TRACEBACK_LINES:
            starts.pop(0)
        return starts

    def _retract(self, i: int) -> None:
        """Drop the listed lines retraction ``i`` took back, and give their ranks those places again (a
        rank's later error lines must still be listed: F.UNRECOGNISED_PER_RANK counts what is shown);
        the warnings taken back no longer make a launcher's kill look explained (``_silent_kill``)."""
        self.retractable.discard(i)
        warning = _RETRACTED[i][0]
        kept = []
        for u in self.unrecognised:
            if warning.search(u["line"]):
                self.unrecognised_per_rank[_rank_of(u["line"])] -= 1
            else:
                kept.append(u)
        self.unrecognised = kept

    def _error_like(self, line: str, number: int, likes: Iterable[int]) -> None:
        if len(self.unrecognised) >= F.UNRECOGNISED_MAX:
            self.other_error_like = True  # more than a launcher's kills, surely
            return
        if not any(_ERROR_LIKES[i].search(line) for i in likes):
            return
        if _BENIGN.search(line) or _NOT_ERROR_LIKE.search(line):
            return
        rank = _rank_of(line)
        starts = self._handled_starts(rank, number)
        if starts:
            starts.pop(0)
            return  # the exception that ends a traceback reported as handled
        if "Killing subprocess" in line and _LAUNCHER_KILL.search(line):
            if self.launcher_kill is None:
                self.launcher_kill = (number, line)
        else:
            held = next((i for i, (w, _) in enumerate(_RETRACTED) if w.search(line)), None)
            if held is None:
                self.other_error_like = True
            else:
                self.retractable.add(held)
        n = self.unrecognised_per_rank.get(rank, 0)
        if n < F.UNRECOGNISED_PER_RANK:
            self.unrecognised_per_rank[rank] = n + 1
            self.unrecognised.append({"line_number": number, "line": _clip(line)})

    def _add(self, label: str, number: int, line: str) -> None:
        f = self.found.get(label)
        rank = _rank_of(line)
        if f is None:
            sig = F.FAILURES_BY_LABEL[label]
            f = Finding(label, number, _clip(line), sig.explanation, sig.fix, sig.severity, 0, sig.role)
            self.found[label] = f
            self.ranks_seen[label] = set()
        f.count += 1
        seen = self.ranks_seen[label]
        if len(f.evidence) < F.EVIDENCE_LINES and (rank not in seen or len(seen) >= F.EVIDENCE_LINES):
            f.evidence.append({"line_number": number, "line": _clip(line)})
        seen.add(rank)
        if label == "nan_loss":
            if _VALIDATION.search(line):
                self.validation_nan = number
            else:
                self.nan_outside_validation = True

    def _stall(self, line: str, number: int) -> None:
        if self.stall_first is None:
            self.stall_first = (number, line)
        t = line_timestamp(line, self.year)
        if t is not None and (
            self.stall_last_time is None or t - self.stall_last_time >= F.STALL_REPORT_GAP_SECONDS
        ):
            self.stall_checks += 1
            self.stall_last_time = t

    def _weak(self, line: str, number: int, pairs: Iterable[int]) -> None:
        for i in pairs:
            _, rx, other = _WEAK[i]
            if rx.search(line):
                self.weak.setdefault(i, (number, line))
            elif other.search(line):
                self.corroborated.add(i)

    def _iteration(self, line: str, number: int) -> None:
        rec = parse_iteration_line(line)
        if rec is None:
            return
        if self.first_iteration is None:
            self.first_iteration = rec["iteration"]
        self.last_iteration = rec["iteration"]
        self.last_step_line = number
        # Megatron's own [YYYY-MM-DD HH:MM:SS], else a logger's or collector's stamp at the start
        stamp = rec.get("timestamp")
        t = line_timestamp(stamp) if stamp else line_timestamp(line, self.year)
        if t is not None:
            if stamp:
                self.year = int(stamp[:4])
            self.iter_times.append((number, t, rec["iteration"]))
            self.last_iter_line = (number, line)
        losses = {k: v for k, v in rec.items() if k.endswith("loss") and isinstance(v, float)}
        bad = [v for v in losses.values() if not math.isfinite(v)]
        grad = rec.get("grad_norm")
        scale = rec.get("loss_scale")
        skipped = rec.get("skipped_iterations") or 0
        # Megatron prints a loss only when its average is > 0, so a NaN loss drops out of the line:
        # a loss seen before is gone, or a line of Megatron's full form (loss-scale and skipped-
        # iterations columns) has none at all, with no skipped iteration (fp16 warm-up) to explain it
        lossless = not losses and scale is not None and rec.get("skipped_iterations") is not None
        vanished = (bool(self.loss_keys - losses.keys()) or lossless) and not skipped
        self.loss_keys = set(losses)
        collapsed = (isinstance(scale, float) and math.isfinite(scale) and self.max_loss_scale > 1
                     and scale < F.LOSS_SCALE_COLLAPSE and skipped > 0)  # fmt: skip
        if isinstance(scale, float) and math.isfinite(scale):
            self.max_loss_scale = max(self.max_loss_scale, scale)
        nan_grad = isinstance(grad, float) and not math.isfinite(grad)
        other = bool(bad or (rec.get("nan_iterations") or 0) > 0 or vanished or collapsed)
        if other:
            self._add("nan_loss", number, line)
        elif nan_grad or _holds_nan(line):
            self._add_nan(number, line)  # _NAN: cells without a colon ("lm loss NAN"), other forks
        if skipped > 0 and rec["iteration"] > F.SKIP_GRACE_ITERATIONS:
            self._late_skip(number, line, skipped)
        self._stuck_scale(number, line, scale if skipped > 0 else None)

    def _stuck_scale(self, number: int, line: str, scale: float | None) -> None:
        """Steps skipped report after report at one loss scale: no dynamic scaler's warm-up does that."""
        if len(self.stuck_run) == F.SKIP_STUCK_REPORTS:
            return  # found (the run stays bounded however long the log)
        if not (isinstance(scale, float) and F.LOSS_SCALE_COLLAPSE <= scale < math.inf):
            self.stuck_scale, self.stuck_run = None, []
            return
        if scale != self.stuck_scale:
            self.stuck_scale, self.stuck_run = scale, []
        self.stuck_run.append((number, line))

    def _late_skip(self, number: int, line: str, steps: int) -> None:
        self.late_skip_reports += 1
        self.late_skipped += steps
        if len(self.late_skip_lines) < F.EVIDENCE_LINES:
            self.late_skip_lines.append((number, line))

    def _skipping(self) -> None:
        """Steps skipped after the warm-up, in several reports and more than the scaler's own probing,
        or report after report at a scale that never comes down (a fixed --loss-scale)."""
        start = max(self.first_iteration or 0, F.SKIP_GRACE_ITERATIONS)
        steps = max(self.last_iteration - start, 1)
        late = (
            self.late_skip_reports >= F.SKIP_LATE_REPORTS and self.late_skipped >= F.SKIP_LATE_SHARE * steps
        )
        # the late skips, where there are enough, are the evidence: a skip within the warm-up that
        # began a stuck run looks like the scaler's normal probing to a reader
        stuck = len(self.stuck_run) == F.SKIP_STUCK_REPORTS
        for number, line in self.late_skip_lines if late else self.stuck_run if stuck else ():
            self._add("skipped_iterations", number, line)  # (each adds one to the count)
        if late:
            self.found["skipped_iterations"].count = self.late_skip_reports

    def _nonfinite(self) -> None:
        """Steps the trainer threw away for a NaN, more of them than a CTC run's odd bad utterance."""
        if self.nonfinite_steps < F.NONFINITE_STEP_REPORTS:
            return
        for number, line in self.nonfinite_lines:
            self._add("nan_loss", number, line)
        self.found["nan_loss"].count += self.nonfinite_steps - len(self.nonfinite_lines)  # the rest

    def _lock(self, line: str, number: int) -> None:
        m = _LOCK_WAIT.search(line)
        if m:
            self.locks.setdefault(m.group(1), (number, line, m.group(2)))
            return
        m = _LOCK_GOT.search(line)
        if m:
            self.locks.pop(m.group(1), None)

    # --- end of log ----------------------------------------------------------------------------
    def _tail_time(self) -> tuple[int, str, float] | None:
        for number, line in reversed(self.tail):
            t = line_timestamp(line, self.year)
            if t is not None:
                return number, line, t
        return None

    def _clock(self) -> float | None:
        if self.now is not None:
            return self.now
        tail = self._tail_time()
        return tail[2] if tail else None

    def _hang(self) -> None:
        """``training_hang``: the iteration lines stop while the log's clock (or ``now``) goes on."""
        times = self.iter_times
        end = self._clock()
        if len(times) < 3 or end is None:
            return
        gaps = sorted(b[1] - a[1] for a, b in zip(times, times[1:], strict=False) if b[1] >= a[1])
        if not gaps:
            return
        median = gaps[len(gaps) // 2]
        number, last, iteration = times[-1]
        quiet = end - last
        if quiet <= max(F.HANG_INTERVAL_FACTOR * median, F.HANG_MIN_SECONDS):
            return
        assert self.last_iter_line is not None  # set with the last entry of iter_times
        self._add("training_hang", number, self.last_iter_line[1])
        f = self.found["training_hang"]
        f.explanation = (f"No iteration logged for {quiet:.0f} s after iteration {iteration} (before that, one "
                         f"every {median:.0f} s). {f.explanation}")  # fmt: skip
        tail = self._tail_time()
        if self.now is None and tail and tail[0] != number:
            f.evidence.append({"line_number": tail[0], "line": _clip(tail[1])})

    def _stalled(self) -> None:
        """``training_hang`` from the trainer's own stall reports: repeated at separate checks, or
        one that came after training had been stepping; either way with no step after it."""
        first = self.stall_first
        if first is None or "training_hang" in self.found:
            return
        if self.last_step_line > first[0]:
            return  # a step came after the first report: the wait ended
        if self.stall_checks >= F.STALL_REPORTS_FOR_HANG:
            why = f"at {self.stall_checks} checks, with no step logged after the first"
        elif self._stepping_until(first[0]):
            why = "after training had been stepping, with no step logged after it"
        else:
            return  # one report at the start: a rank still loading
        self._add("training_hang", first[0], first[1])
        f = self.found["training_hang"]
        f.explanation = f"The trainer reported ranks waiting on a collective {why}. {f.explanation}"

    def _stepping_until(self, number: int) -> bool:
        """Step lines (any trainer's: F.PROGRESS_LINE_PATTERN) before line ``number``, none after,
        among the last lines of the log."""
        before = 0 < self.last_step_line < number
        for n, line in self.tail:
            if _PROGRESS.search(line):
                if n > number:
                    return False
                before = True
        return before

    def _stack_dump(self) -> None:
        """``training_hang``: the log ends in a stack dump of live processes, with no step after it.

        Called only when the log shows no error: a dump after a crash is the crash's own traceback.
        """
        frames: list[tuple[int, str]] = []
        for number, line in self.tail:
            if number <= self.last_step_line:
                frames = []
                continue
            if _STACK_DUMP.search(line):
                first = (number, line)
                break
            if _PY_SPY_FRAME.search(line):
                frames.append((number, line))
                if len(frames) >= F.STACK_DUMP_FRAMES:
                    first = frames[0]
                    break
        else:
            return
        self._add("training_hang", *first)
        f = self.found["training_hang"]
        f.explanation = ("The log ends in a stack dump of live processes (py-spy, gdb or faulthandler) "
                         "with no error before it and no step after it: a dump taken of a run that "
                         f"stopped; its innermost frames show what each process waits for. {f.explanation}")  # fmt: skip

    def _cut_traceback(self) -> None:
        """A log that ends inside a traceback: its last source line is listed as an unknown failure.

        Called only when nothing else was found: the exception line that would have named the
        failure is missing (F.TRACEBACK_FRAME_PATTERN), but a crash it was.
        """
        last = [(n, line) for n, line in self.tail if line.strip()][-F.CUT_TRACEBACK_LINES :]
        frames = [k for k, (_, line) in enumerate(last) if _TRACEBACK_FRAME.search(line)]
        if not frames or last[frames[-1]][0] <= self.last_step_line:
            return
        after = last[frames[-1] + 1 :]
        if all(_PREFIXED_INDENT.match(line) for _, line in after):  # source and caret lines only
            number, line = next((u for u in after if not _CARETS.match(u[1])), last[frames[-1]])
            message = self._raised_message()
            if message is not None and message[0] < number:
                self.unrecognised.append({"line_number": message[0], "line": _clip(message[1])})
            self.unrecognised.append({"line_number": number, "line": _clip(line)})

    def _raised_message(self) -> tuple[int, str] | None:
        """The first message line in the tail right after a frame whose source line raises, when its
        exception's name was lost (F.RAISE_SOURCE_PATTERN): a line neither indented nor a frame."""
        tail = list(self.tail)
        for k in range(1, len(tail) - 1):
            if not _RAISE_SOURCE.match(tail[k][1]) or not _TRACEBACK_FRAME.search(tail[k - 1][1]):
                continue
            number, line = tail[k + 1]
            if not line.strip() or _PREFIXED_INDENT.match(line) or _TRACEBACK_FRAME.search(line):
                continue
            if not any(words in line for words in F.TRACEBACK_HEADINGS):
                return number, line
        return None

    @staticmethod
    def _grad_only_nan(line: str) -> bool:
        """The line's only NaN/Inf is its gradient norm, next to a finite loss."""
        if not _FINITE_LOSS.search(line):
            return False
        rest = _GRAD_NORM_CELL.sub("", line)  # the line without its gradient-norm cell
        return rest != line and not _holds_nan(rest)

    def _add_nan(self, number: int, line: str) -> None:
        """nan_loss, noting a step whose only non-finite number is its gradient norm."""
        self._add("nan_loss", number, line)
        if self._grad_only_nan(line):
            self.grad_only_nans += 1
            self.grad_only_last = number

    def _skipped_overflow_nan(self) -> None:
        """A NaN/Inf gradient norm on steps with a finite loss, and a later step whose norm and loss are
        finite: fp16's scaler skipped the overflowed steps (F.NONFINITE_GRAD_NORM_PATTERN), no nan_loss."""
        f = self.found.get("nan_loss")
        if f is None or not self.grad_only_nans or f.count != self.grad_only_nans:
            return
        last = self.grad_only_last
        assert last is not None  # set with the first such step
        if any(
            n > last and _FINITE_GRAD_NORM.search(line) and _FINITE_LOSS.search(line)
            and not _holds_nan(line)
            for n, line in self.tail
        ):  # fmt: skip
            del self.found["nan_loss"]

    def _validation_only_nan(self) -> None:
        """A NaN loss only in validation reports, and training steps with a finite loss after the
        last of them (F.VALIDATION_LINE_PATTERN): not a diverging run, an unknown failure."""
        f = self.found.get("nan_loss")
        last = self.validation_nan
        if f is None or last is None or self.nan_outside_validation:
            return
        if not any(
            n > last and _PROGRESS.search(line) and not _VALIDATION.search(line) for n, line in self.tail
        ):
            return
        del self.found["nan_loss"]
        room = F.UNRECOGNISED_MAX - len(self.unrecognised)
        self.unrecognised.extend(f.evidence[: max(room, 0)])

    def _stuck_locks(self) -> None:
        """``triton_cache_hang``: a Triton cache lock asked for and never acquired.

        Either the clock says so (still waiting TRITON_LOCK_WAIT_SECONDS later), or a finished log
        (no ``now``: not a live tail) ends with several processes all waiting on one lock, with
        nothing else printed after the first of them.
        """
        end = self._clock()
        waiting: dict[str, list[tuple[int, str]]] = {}
        for number, line, path in sorted(self.locks.values()):
            t = line_timestamp(line, self.year)
            if end is not None and t is not None and end - t >= F.TRITON_LOCK_WAIT_SECONDS:
                self._add("triton_cache_hang", number, line)
            else:
                waiting.setdefault(path, []).append((number, line))
        if self.now is not None or "triton_cache_hang" in self.found or not self.tail:
            return
        for path, waits in waiting.items():
            first = waits[0][0]
            if len(waits) < F.TRITON_LOCK_CONTENDERS or self.tail[0][0] > first:
                continue
            if all(
                not line.strip() or _LOCK_WAIT.search(line) for number, line in self.tail if number > first
            ):
                for number, line in waits:
                    self._add("triton_cache_hang", number, line)
                f = self.found["triton_cache_hang"]
                f.explanation = f"{len(waits)} processes were waiting for {_clip(path)} when the log ended. {f.explanation}"
                return

    def _found_error(self) -> bool:
        """Whether a finding of error severity was made so far (warnings alone leave room for more)."""
        return any(f.severity == "error" for f in self.found.values())

    def _silent_kill(self) -> None:
        """DeepSpeed's launcher killed the ranks, and nothing else in the log says why: a silent death."""
        if (
            self.launcher_kill is None
            or self.other_error_like
            or self.retractable
            or self.succeeded is not None
            or self._found_error()
        ):
            return
        number, line = self.launcher_kill
        self._add("host_oom_killed", number, line)
        f = self.found["host_oom_killed"]
        f.explanation = F.SILENT_KILL_EXPLANATION + f.explanation

    def _unwrap_tail(self) -> None:
        """Signatures split over two lines by wrapping, near the end where a failure is printed.

        Only matches that span the join count (a line matching alone was judged in the pass); the
        finding quotes the first of the two lines, as printed. Lines read from a file keep their
        newline, which must not sit inside the join.
        """
        tail = [(number, line.rstrip("\r\n")) for number, line in self.tail]
        for (number, a), (_, b) in zip(tail, tail[1:], strict=False):
            if len(a) < F.UNWRAP_MIN_CHARS:
                continue
            for joined in (a + b, a + " " + b):
                hit = next(
                    (
                        sig.label
                        for sig, rx in _SIGS
                        if sig.severity == "error"
                        and (m := rx.search(joined)) is not None
                        and m.start() < len(a) < m.end()
                    ),
                    None,
                )
                if hit is not None:
                    self._add(hit, number, a)
                    break

    def result(self) -> Verdict:
        self._hang()
        self._stalled()
        self._stuck_locks()
        if not self._found_error():
            self._unwrap_tail()
        named: set[str] = set()
        for i, (number, line) in self.weak.items():  # in the order of their lines, as _weak saw them
            if i in self.corroborated and _WEAK[i][0] not in named:
                named.add(_WEAK[i][0])
                self._add(_WEAK[i][0], number, line)
        self._skipped_overflow_nan()
        self._validation_only_nan()
        self._skipping()
        self._nonfinite()
        self._silent_kill()
        if not self._found_error() and not self.unrecognised:
            self._stack_dump()
        if not self.found and not self.unrecognised:
            self._cut_traceback()
        hosts = len(self.table_hosts)  # nccl-tests' table, when the log has one, names every rank's host
        hops_one_node = self.intra_node_hops and not self.inter_node_hops
        # (an excerpt of a multi-node job may hold one node's tagged lines: a hop through the network cancels it)
        mpi_one_host = len(self.mpi_ranks) > 1 and len(self.mpi_hosts) == 1 and not self.inter_node_hops
        one_node = not self.many_nodes and (
            hosts == 1 or (hosts == 0 and (self.one_node or hops_one_node or mpi_one_host))
        )
        if one_node or (self.solo_ranks and not self.shared_ranks):  # no traffic leaves the node
            self.healthy_seen.update(F.LOCAL_ONLY_LABELS)
        if self.loop_ended or self.succeeded is not None:
            self.healthy_seen.update(F.GIVE_WAY_TO_ENDED_TRAINING)
        findings = [f for f in self.found.values() if f.label not in self.healthy_seen]
        if self.first_retry is not None and self.recovered is not None:  # a retried attempt's failure
            first, last = self.first_retry, self.recovered
            self.unrecognised = [u for u in self.unrecognised if not first < u["line_number"] < last]
        if self.retried_through is not None:  # lines before a report that a later attempt outlived
            self.unrecognised = [u for u in self.unrecognised if u["line_number"] > self.retried_through]
        if self.succeeded is not None:  # the run said it succeeded: teardown symptoms and noise
            findings = [f for f in findings if f.role != "symptom" or f.line_number < self.succeeded]
            self.unrecognised = []
        for f in findings:  # lines a finding explains are not an unknown failure beside it
            if (rx := _EXPLAINED_BY.get(f.label)) is not None:
                self.unrecognised = [u for u in self.unrecognised if not rx.search(u["line"])]
        findings.sort(key=lambda f: (f.severity != "error", _ROLE_RANK.get(f.role, 0), f.line_number))
        primary: str | None = None
        # a context a run survives (no net plugin, sockets) does not outrank error lines it does not
        # explain: the failure is those lines', and the context is listed beside them
        if findings and (
            (findings[0].severity == "error" and findings[0].label not in F.SURVIVABLE_CONTEXTS)
            or not self.unrecognised
        ):
            primary = findings[0].label
        # error-like lines matter only when no known signature explains the failure, or, when the
        # label is a symptom, as the exceptions that came before it
        unrecognised = [] if primary is not None else self.unrecognised
        earlier: list[dict] = []
        if primary is not None and findings[0].role == "symptom":
            first = findings[0].line_number
            earlier = [
                u for u in self.unrecognised if u["line_number"] < first and _EARLIER.search(u["line"])
            ]
        return Verdict(primary, findings, unrecognised, self.number, earlier[: F.EARLIER_MAX])


def _lines_of(source: str | os.PathLike[str] | Iterable[str]) -> Iterator[str]:
    if isinstance(source, str) and "\n" not in source and len(source) < 4096 and os.path.isfile(source):
        source = Path(source)  # a path passed as a str: one line of log text never names a file
    if isinstance(source, os.PathLike):
        yield from read_log_lines(check_log_path(source))  # .gz/.zst archives too
    elif isinstance(source, str):
        # lines end at "\n" only, as a file's do (read_log_lines) and as grep -n and the parser
        # count them: str.splitlines() would also break at the "\r" of every progress-bar redraw,
        # and the same log would get other line numbers as text than as a file
        lines = source.split("\n")
        if lines[-1] == "":
            lines.pop()
        yield from lines
    else:
        yield from source


def verdict(
    source: str | os.PathLike[str] | Iterable[str], *, now: datetime | float | None = None
) -> Verdict:
    """The verdict for a log: ``source`` is its text (a ``str``), a path (``pathlib.Path``, or a
    one-line ``str`` naming an existing file) or an iterable of lines.

    ``now`` (a datetime or POSIX seconds) lets a live caller (``workshop logs --follow``,
    ``workshop status``) ask whether a run that stopped logging hangs; without it the log's own
    last timestamp is the clock. ``verdict(...).one_line()`` is the one-line form.
    """
    if isinstance(now, datetime):  # a naive datetime is read as UTC, like the log's timestamps
        now = now.timestamp() if now.tzinfo is not None else float(calendar.timegm(now.timetuple()))
    scan = _Scan(now)
    block: list[str] = []
    for line in _lines_of(source):
        block.append(line if len(line) <= MAX_SCAN_CHARS else line[:MAX_SCAN_CHARS])
        if len(block) >= BLOCK_LINES:
            scan.feed_block(block)
            block = []
    scan.feed_block(block)
    return scan.result()


def diagnose_lines(lines: Iterable[str]) -> list[Finding]:
    """Findings for a sequence of log lines, the primary root cause first."""
    return verdict(lines).findings


def diagnose_text(text: str) -> list[Finding]:
    return verdict(text).findings


def diagnose_log(path: str | os.PathLike[str]) -> list[Finding]:
    """Findings for a log file (``workshop monitor diagnose LOG``), the primary root cause first."""
    return verdict(Path(path)).findings
