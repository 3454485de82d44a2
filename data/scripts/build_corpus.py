"""Build ``data/techpulse_sample.jsonl``: a small, real, redistributable technology corpus.

The documents are the docstrings of the Python standard library (modules, classes and functions),
read with :mod:`inspect` from the interpreter that runs this script. That text is part of CPython
and is distributed under the Python Software Foundation License (see ``data/README.md``), so the
corpus may be shipped with the kit. It stands in for TechPulse Media's curated technology articles.

Run from the repository root (deterministic for a given Python version)::

    .venv/bin/python data/scripts/build_corpus.py [--out data/techpulse_sample.jsonl] [--max-mb 4]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import pkgutil
import sys
import warnings
from pathlib import Path

# Modules that open windows or browsers, print on import, are test suites, or are deprecated shims.
SKIP = {
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3",
    "ensurepip", "pydoc_data", "__phello__", "_pydev_bundle", "xxsubtype", "xxlimited",
    "msilib", "winreg", "winsound", "_winapi", "msvcrt", "nt", "_msi", "idle", "distutils",
}
MIN_CHARS = 100  # documents shorter than this are mostly "Return self==value." boilerplate


def module_names() -> list[str]:
    """Public stdlib modules and their public submodules, sorted."""
    names = set()
    for top in sorted(sys.stdlib_module_names):
        if top.startswith("_") or top in SKIP:
            continue
        names.add(top)
        with contextlib.suppress(Exception):
            mod = importlib.import_module(top)
            if hasattr(mod, "__path__"):
                for info in pkgutil.walk_packages(mod.__path__, prefix=top + "."):
                    parts = info.name.split(".")
                    if any(p.startswith("_") or p in SKIP or p == "tests" for p in parts):
                        continue
                    if top == "encodings":  # hundreds of near-identical codec modules
                        continue
                    names.add(info.name)
    return sorted(names)


def signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def documents_for(modname: str):
    quiet = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            warnings.simplefilter("ignore")
            mod = importlib.import_module(modname)
    except BaseException:  # noqa: BLE001 - platform-specific modules fail to import; skip them
        return
    doc = inspect.getdoc(mod)
    if doc and len(doc) >= MIN_CHARS:
        yield f"{modname}", f"The {modname} module", f"Module {modname}\n\n{doc}"
    public = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    for name in sorted(set(public)):
        obj = getattr(mod, name, None)
        if obj is None or getattr(obj, "__module__", None) != modname:
            continue  # re-exports are documented where they are defined
        if inspect.isclass(obj):
            parts = [f"class {modname}.{name}{signature(obj)}", inspect.getdoc(obj) or ""]
            for mname, member in sorted(vars(obj).items()):
                if mname.startswith("_") and mname != "__init__":
                    continue
                mdoc = inspect.getdoc(member) if callable(member) or isinstance(member, property) else None
                if mdoc and not mdoc.startswith(("Return self", "Implement ")):
                    sig = signature(member) if callable(member) else ""
                    parts.append(f"{name}.{mname}{sig}\n    " + mdoc.replace("\n", "\n    "))
            text = "\n\n".join(p for p in parts if p)
            kind = "class"
        elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
            fdoc = inspect.getdoc(obj) or ""
            text = f"{modname}.{name}{signature(obj)}\n\n{fdoc}"
            kind = "function"
        else:
            continue
        if len(text) >= MIN_CHARS:
            yield f"{modname}.{name}", f"The {kind} {modname}.{name}", text


def language_reference():
    """The topics of the Python Language Reference that ``help('if')`` shows (``pydoc_data``)."""
    from pydoc_data.topics import topics

    for key in sorted(topics):
        text = topics[key].strip()
        if len(text) >= MIN_CHARS:
            yield f"reference:{key}", f"Python language reference: {key}", text


def all_documents():
    yield from language_reference()
    for modname in module_names():
        yield from documents_for(modname)


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=here / "techpulse_sample.jsonl")
    ap.add_argument("--max-mb", type=float, default=4.0, help="stop once the corpus reaches this size")
    args = ap.parse_args()
    limit = int(args.max_mb * 1024 * 1024)
    seen, size, count = set(), 0, 0
    tmp = args.out.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for ident, title, text in all_documents():
            if ident in seen or text in seen:
                continue
            seen.update((ident, text))
            line = json.dumps({"id": f"py{sys.version_info[0]}{sys.version_info[1]}:{ident}",
                               "title": title, "text": text}, ensure_ascii=False) + "\n"
            if size + len(line.encode()) > limit:
                break
            out.write(line)
            size += len(line.encode())
            count += 1
    tmp.replace(args.out)
    print(f"wrote {count} documents, {size / 1e6:.2f} MB to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
