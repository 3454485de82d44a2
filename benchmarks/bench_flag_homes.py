"""Where Megatron's flags are described: choice tuples and tensor-parallel spellings, and the timings
the flag table must not slow down (issue 13, part 1).

    python benchmarks/bench_flag_homes.py [--before /path/to/older/checkout] [--repeats 5]

For each tree (this checkout, and ``--before`` when given):

* choice tuples: for every choice flag of ``facts/megatron_flags.py`` (this checkout's table), the
  tuple/list/set literals in ``workshop_lib`` that hold all its choices (perhaps with ``"none"``);
* tensor parallel: the distinct spellings of its size (``tensor-model-parallel-size``, ``tp``,
  ``TP``...) as identifiers or flag names in ``workshop_lib``, and in how many files;
* timings, median of ``--repeats`` runs, the trees interleaved so both see the same machine load:
  ``workshop plan --model techpulse-7b --gpu a100-40gb --gpus-per-node 8 --nodes 2 --search``,
  ``workshop --help`` and ``python -m workshop_lib.train --help``, each a fresh process.

Prints a Markdown report (benchmarks/results/one_home.md, section "flags").
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workshop_lib.facts import megatron_flags as mf  # noqa: E402

TP_SPELLINGS = {
    "tensor-model-parallel-size",
    "tensor_model_parallel_size",
    "tensor-parallel-size",
    "tensor_parallel_size",
    "tensor_model_parallel",
    "tp_size",
    "tp",
    "TP",
}
COMMANDS = {
    "plan --search": ["-m", "workshop_lib.cli", "plan", "--model", "techpulse-7b", "--gpu", "a100-40gb",
                      "--gpus-per-node", "8", "--nodes", "2", "--search"],
    "workshop --help": ["-m", "workshop_lib.cli", "--help"],
    "train --help": ["-m", "workshop_lib.train", "--help"],
}  # fmt: skip


def choice_sites(tree: Path) -> dict[str, list[str]]:
    """Flag -> ``file:line`` of every literal that writes all its choices."""
    out: dict[str, list[str]] = {f.name: [] for f in mf.FLAGS if len(f.choices) >= 2}
    for path in sorted((tree / "workshop_lib").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2):
                continue
            consts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(consts) != len(node.elts) or not all(v is None or isinstance(v, str) for v in consts):
                continue
            values = {v for v in consts if v is not None}
            for row in mf.FLAGS:
                choices = set(row.choices)
                if len(choices) >= 2 and choices <= values <= choices | {"none"}:
                    out[row.name].append(f"{path.relative_to(tree)}:{node.lineno}")
    return out


def tp_spellings(tree: Path) -> tuple[Counter, set[str]]:
    """(occurrences per spelling, files) of tensor parallel size in the package's Python files."""
    counts: Counter = Counter()
    files: set[str] = set()
    for path in sorted((tree / "workshop_lib").rglob("*.py")):
        for token in re.findall(r"[A-Za-z0-9_-]+", path.read_text(encoding="utf-8")):
            word = token.lstrip("-")
            if word in TP_SPELLINGS:
                counts[word] += 1
                files.add(str(path.relative_to(tree)))
    return counts, files


def timings(trees: dict[str, Path], repeats: int, pycache: Path | None) -> dict[str, dict[str, float]]:
    """Median seconds per tree and command; with ``pycache``, bytecode is cached there (a warm-up run
    first), as an installed package's would be; without it, as this environment runs (no cache)."""
    out: dict[str, dict[str, list[float]]] = {name: {c: [] for c in COMMANDS} for name in trees}
    for rep in range(-1 if pycache else 0, repeats):
        for cmd, argv in COMMANDS.items():
            for name, tree in trees.items():  # interleaved: the same load for both trees
                env = {**os.environ, "PYTHONPATH": str(tree)}
                if pycache:
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                    env["PYTHONPYCACHEPREFIX"] = str(pycache / name)
                t0 = time.perf_counter()
                subprocess.run([sys.executable, *argv], cwd=tree, env=env, capture_output=True, check=True)
                if rep >= 0:
                    out[name][cmd].append(time.perf_counter() - t0)
    return {name: {c: statistics.median(v) for c, v in cmds.items()} for name, cmds in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="an older checkout to compare with")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--pycache", type=Path, help="cache bytecode under this folder (default: as the environment says)"
    )
    ns = ap.parse_args()
    trees = {"before": ns.before, "after": ROOT} if ns.before else {"after": ROOT}
    sites = {name: choice_sites(tree) for name, tree in trees.items()}
    spell = {name: tp_spellings(tree) for name, tree in trees.items()}
    times = timings(trees, ns.repeats, ns.pycache)
    names = list(trees)
    print("## flags\n")
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; `{' vs '.join(names)}`.\n")
    print("### Places each choice tuple is written (literals in workshop_lib holding all its choices)\n")
    print("| flag | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for flag in sites[names[-1]]:
        cells = [f"{len(sites[n][flag])} ({', '.join(sites[n][flag])})" for n in names]
        print(f"| --{flag} | " + " | ".join(cells) + " |")
    print("\n### Tensor-parallel size: distinct spellings (occurrences) and files\n")
    for n in names:
        counts, files = spell[n]
        shown = ", ".join(f"`{k}` {v}" for k, v in counts.most_common())
        print(f"- {n}: {len(counts)} spellings in {len(files)} files: {shown}")
    cache = f"bytecode cached under {ns.pycache}" if ns.pycache else "bytecode as the environment says"
    cache += f", PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    print(f"\n### Timings, median of {ns.repeats} fresh processes (seconds; {cache})\n")
    print("| command | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for cmd in COMMANDS:
        print(f"| `{cmd}` | " + " | ".join(f"{times[n][cmd]:.3f}" for n in names) + " |")


if __name__ == "__main__":
    main()
