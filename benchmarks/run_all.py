"""Run every benchmark (``benchmarks/bench_*.py``) in turn: ``make bench``.

Each benchmark measures a ratio against a baseline taken in the same run (so the figure holds on a
busy or slow machine) and writes its table to ``benchmarks/results/``.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = []
    for path in sorted(here.glob("bench_*.py")):
        name = f"benchmarks.{path.stem}"
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        try:
            runpy.run_module(name, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (0, None):
                failed.append(name)
        except Exception as exc:  # noqa: BLE001 - report and go on to the next benchmark
            print(f"{name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed.append(name)
        print(f"== {name} took {time.perf_counter() - start:.1f} s\n", flush=True)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
