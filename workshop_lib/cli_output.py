"""How every ``workshop`` subcommand writes its results (docs/cli.md, "Conventions").

Each room's ``cli.py`` imports these at the top; they live here, at the base, rather than in the
top ``workshop_lib/cli.py`` so that the rooms never import the module that imports them (the
wiring). Every ``workshop`` command imports it at start-up, so it imports only ``json`` and
``jsonsafe`` there; the file-writing helpers load when ``--out`` is used.

* ``--json`` prints exactly one JSON object on stdout (:func:`print_json`), with NaN/Inf as null;
* progress and notes go to stderr (:func:`progress`), so stdout stays that one object;
* a rendered document goes to ``--out`` atomically, or to stdout (:func:`emit_text`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .jsonsafe import json_safe


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist"):  # numpy arrays
        return obj.tolist()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps_json(obj: Any) -> str:
    """Serialise ``obj`` the way every ``--json`` output does: Paths and numpy values allowed,
    NaN/Inf written as null (JSON has neither)."""
    return json.dumps(json_safe(obj), default=_json_default, indent=2, allow_nan=False)


def print_json(obj: Any) -> None:
    """Print exactly one JSON object on stdout."""
    sys.stdout.write(dumps_json(obj) + "\n")
    sys.stdout.flush()


def emit_text(text: str, out: str | os.PathLike[str] | None) -> None:
    """Write a rendered document to ``out`` atomically (saying so on stderr), or to stdout.

    ``--out`` names a file; a directory, a path through a file or one we may not write is the
    caller's input, so it is one UsageError line (exit 2) rather than a traceback-shaped failure.
    """
    if out:
        from .fsutil import write_output  # lazily: tempfile and friends cost start-up time

        write_output(out, text, "--out")
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def progress(message: str) -> None:
    """Progress and notes go to stderr so ``--json`` stdout stays one object."""
    print(message, file=sys.stderr, flush=True)
