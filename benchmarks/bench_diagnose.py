"""Diagnosis quality on real logs and speed on a large one: ``python -m benchmarks.bench_diagnose``.

Quality: every file of ``tests/fixtures/diagnose_corpus`` (real excerpts from public issue threads,
pull requests and documentation) is diagnosed; ``<label>__*.log`` must get ``<label>`` as the
primary root cause, ``healthy__*.log`` no error finding and no "unrecognised" lines,
``unknown__*.log`` ``primary: null`` with ``unrecognised`` lines. Precision and recall per label
are computed on the **held-out** quarter (``int(sha256(name), 16) % 4 == 0``, fixed before the
signatures were written) and, for reference, on the development split.
``--split dev|heldout|all --show`` prints each file's verdict.

Speed: a generated multi-rank log (NCCL INFO noise, warnings, iteration lines) of ``--megabytes``
(default 300) is diagnosed from disk; the baseline in the same run is a plain line count over the
same file, so lines/s can be compared on a busy machine. Writes ``benchmarks/results/diagnose.md``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workshop_lib.monitor.diagnose import verdict

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "diagnose_corpus"
RESULTS = Path(__file__).resolve().parent / "results" / "diagnose.md"
# The record of every first (out-of-sample) measurement; benchmarks/results/diagnose.md quotes its summary.
FIRST = RESULTS.with_name("diagnose_heldout_first.md")


FITTED = frozenset((CORPUS / "fitted.txt").read_text().split())
# Out-of-sample misses left unfixed on purpose (file <TAB> reason); they stay misses below.
UNFIXED = frozenset(
    line.split("\t", 1)[0] for line in (CORPUS / "unfixed.txt").read_text().splitlines() if line.strip()
)


def is_heldout(name: str) -> bool:
    """The split rule, decided before the signatures were written (see the corpus README).

    A file whose out-of-sample miss was fixed afterwards (``fitted.txt``) has had signatures fitted
    to it: it is development data from then on, whatever its hash.
    """
    return int(hashlib.sha256(name.encode()).hexdigest(), 16) % 4 == 0 and name not in FITTED


def corpus(split: str = "all") -> list[Path]:
    files = sorted(CORPUS.glob("*.log"))
    if split == "heldout":
        return [p for p in files if is_heldout(p.name)]
    if split == "dev":
        return [p for p in files if not is_heldout(p.name)]
    return files


def expected(path: Path) -> str:
    return path.name.split("__", 1)[0]


def judge(path: Path) -> tuple[str, str, bool]:
    """(expected, got, ok) for one corpus file; ``got`` is the primary label, 'healthy' or 'unknown'."""
    v = verdict(path)
    want = expected(path)
    got = v.primary or ("unknown" if v.unrecognised else "healthy")
    return want, got, got == want


def scores(rows: list[tuple[str, str, bool]]) -> dict[str, tuple[int, int, int]]:
    """Per label: (true positives, false positives, false negatives) of the primary label."""
    out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for want, got, _ in rows:
        if want == got:
            out[want][0] += 1
        else:
            out[want][2] += 1
            out[got][1] += 1
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def table(rows: list[tuple[str, str, bool]]) -> list[str]:
    lines = ["| label | files | named | precision | recall |", "|---|---:|---:|---:|---:|"]
    sc = scores(rows)
    files = collections.Counter(w for w, _, _ in rows)
    for label in sorted(set(files) | set(sc)):
        tp, fp, fn = sc.get(label, (0, 0, 0))
        prec = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
        rec = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
        lines.append(f"| {label} | {files.get(label, 0)} | {tp} | {prec} | {rec} |")
    return lines


NOISE = [
    "megatron-cpt-techpulse-worker-{n}:52:118 [{r}] NCCL INFO Channel 03/08 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA",
    "megatron-cpt-techpulse-worker-{n}:52:118 [{r}] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    "megatron-cpt-techpulse-worker-{n}:52:52 [{r}] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
    "[rank{r}]: /usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated.",
    "[default{r}]:  warnings.warn(",
    " [WARNING]  async_io requires the dev libaio .so object and headers but these were not found.",
    "    forward-backward ...............................: (1850.12, 1853.40)",
    "[W socket.cpp:767] [c10d] The IPv6 network addresses of (megatron-cpt-techpulse-master-0, 29500) cannot be retrieved (gai error: -2 - Name or service not known).",
    "[Rank {r}] (after 5 iterations) memory (MB) | allocated: 21544.1 | max allocated: 30122.4 | reserved: 32212.0",
]
LINE = (" [2025-11-21 {h:02d}:{m:02d}:{s:02d}] iteration {i:8d}/{n:8d} | consumed samples: {c:12d} | elapsed time per iteration (ms): 2003.1 | "
        "throughput per GPU (TFLOP/s/GPU): 131.2 | learning rate: 3.000000E-04 | global batch size:   256 | lm loss: {loss:.6E} | "
        "loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |")  # fmt: skip


def build_log(path: Path, megabytes: float) -> int:
    """A healthy noisy multi-rank log of about ``megabytes``; returns its line count."""
    target = int(megabytes * 1e6)
    size = n = i = 0
    with open(path, "w", encoding="utf-8") as fh:
        while size < target:
            i += 1
            chunk = [NOISE[(i + k) % len(NOISE)].format(n=k % 4, r=k % 8) for k in range(19)]
            chunk.append(LINE.format(h=(i // 3600) % 24, m=(i // 60) % 60, s=i % 60, i=i, n=10**7, c=i * 256,
                                     loss=2.0 + 8.0 / (1 + i / 100)))  # fmt: skip
            text = "\n".join(chunk) + "\n"
            fh.write(text)
            size += len(text)
            n += len(chunk)
    return n


def recorded_first_measurements(path: Path = FIRST, batches: int = 2) -> list[str]:
    """The summary table of the out-of-sample first measurements and the latest batches' tables.

    Those figures cannot be recomputed (the signatures have since been fitted to their misses), so
    they are quoted from the record rather than measured again.
    """
    lines = path.read_text().splitlines()

    def table_after(start: int) -> list[str]:
        i = next(k for k in range(start, len(lines)) if lines[k].startswith("|"))
        j = next((k for k in range(i, len(lines)) if not lines[k].startswith("|")), len(lines))
        return lines[i:j]

    out = table_after(next(k for k, x in enumerate(lines) if x.startswith("Summary of every out-of-sample")))
    for start in [k for k, x in enumerate(lines) if x.startswith("### ")][-batches:]:
        misses = [x for x in lines[start:] if x.startswith("Misses:")][:1]
        out += ["", "### " + lines[start].lstrip("# "), "", *table_after(start), "", *misses]
    return out


def _time_other_engine(tree: Path, log: Path) -> float:
    """Seconds another checkout's ``verdict`` takes on ``log``, timed inside a fresh interpreter."""
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); "
        "from workshop_lib.monitor.diagnose import verdict; "
        "t = time.perf_counter(); v = verdict(sys.argv[2]); print(time.perf_counter() - t); "
        "assert v.primary is None"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tree.resolve()), str(log)], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return float(out.stdout.split()[-1])


def _commit(tree: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or str(tree)


def count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "heldout", "all"), default=None, help="only list verdicts")
    ap.add_argument("--show", action="store_true", help="print every file's verdict, not only misses")
    ap.add_argument("--megabytes", type=float, default=300.0, help="size of the generated log")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/diagnose.md")
    ap.add_argument(
        "--before",
        type=Path,
        help="another checkout of this repository (a git worktree of an older commit): its engine is timed "
        "on the same log in the same command, in a fresh process, for a side-by-side ratio",
    )
    args = ap.parse_args(argv)

    if args.split:
        rows = []
        for p in corpus(args.split):
            row = judge(p)
            rows.append(row)
            if args.show or not row[2]:
                print(f"{'ok ' if row[2] else 'MISS'} {p.name}: got {row[1]}")
        print(f"{sum(r[2] for r in rows)}/{len(rows)} right")
        return 0

    held = [judge(p) for p in corpus("heldout")]
    dev = [judge(p) for p in corpus("dev")]
    out = [
        "# Diagnosis on real logs (`benchmarks/bench_diagnose.py`)",
        "",
        f"Corpus: {len(corpus())} unmodified excerpts from public issue threads, pull requests, committed run logs and documentation "
        "(`tests/fixtures/diagnose_corpus`, sources in `SOURCES.tsv`).",
        "",
        "## Out of sample: each file diagnosed once, before any signature was fitted to it",
        "",
        "These are the generalisation figures (quoted from `diagnose_heldout_first.md`, where each batch's "
        "files and misses are listed): the held-out quarter measured right after the signatures were first "
        "written, then fresh batches from issue threads not used before, each labelled and committed before "
        "the diagnoser ran on it.",
        "",
        *recorded_first_measurements(),
        "",
        "## Current state",
        "",
        f"Every miss above was fixed afterwards by its wording family (except {len(UNFIXED)} left unfixed on "
        "purpose, each listed with its reason in `unfixed.txt`: a signature for it would misname other "
        f"failures); the {len(FITTED)} files fitted are "
        "listed in `fitted.txt` and count as development data. The held-out table below is the held-out "
        "quarter less those files, so it only checks that no later change broke a file nothing was fitted to "
        "(it cannot show a miss the first measurement did not already show).",
        "",
    ]
    for name, rows in (("held-out quarter (less fitted files)", held), ("development split", dev)):
        fails = [r for r in rows if r[0] != "healthy"]
        healthy = [r for r in rows if r[0] == "healthy"]
        named = sum(r[2] for r in fails)
        alarms = sum(not r[2] for r in healthy)
        out.append(f"## {name}: {named}/{len(fails)} failures named as the primary cause, "
                   f"{alarms} false alarm(s) on {len(healthy)} healthy logs")  # fmt: skip
        out.append("")
        out.extend(table(rows))
        misses = [r for r in rows if not r[2]]
        if misses:
            out.append("")
            out.append("Misses: " + "; ".join(f"{w} -> {g}" for w, g, _ in misses))
        out.append("")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        n = build_log(path, args.megabytes)
        mb = path.stat().st_size / 1e6
        t = time.perf_counter()
        count_lines(path)
        base = time.perf_counter() - t
        t = time.perf_counter()
        v = verdict(path)
        secs = time.perf_counter() - t
        assert v.primary is None and not v.unrecognised, v.to_dict()
        before = _time_other_engine(args.before, path) if args.before else None
    out += [
        "## Speed",
        "",
        f"Generated healthy multi-rank log: {n:,} lines ({mb:.0f} MB), 1 iteration line per 20 (NCCL INFO, "
        "warnings, launcher prefixes); diagnosed from disk in one pass.",
        "",
        "| what | seconds | lines/s | MB/s |",
        "|---|---:|---:|---:|",
        f"| verdict (signatures, numerics, hang check, unknown-line scan) | {secs:.2f} | {n / secs:,.0f} | {mb / secs:.1f} |",
        f"| baseline: count the lines | {base:.2f} | {n / base:,.0f} | {mb / base:.1f} |",
        *(
            [
                f"| the engine of `{_commit(args.before)}` on the same log (a fresh process) | {before:.2f} | "
                f"{n / before:,.0f} | {mb / before:.1f} |",
                "",
                f"This engine is {before / secs:.2f}x as fast.",
            ]
            if before
            else []
        ),  # fmt: skip
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} during the run: "
        "the machine is shared, so these are lower bounds), "
        f"Python {platform.python_version()}. "
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
    ]
    text = "\n".join(out)
    print(text)
    if not args.no_write:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
