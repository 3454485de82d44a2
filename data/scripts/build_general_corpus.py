"""Build the general-text corpus that continued pre-training replays, and the held-out sets.

Continued pre-training on a narrow domain makes a model forget what it knew; the usual remedy is to
*replay* a share of general text alongside the domain corpus and to watch a held-out general set
while training. The kit needs three small, real, redistributable files for that story:

``data/general_sample.jsonl`` / ``data/general_heldout.jsonl``
    General English prose: the quotations, proverbs, poems and riddles of BSD ``fortune(6)``
    (Debian's ``fortunes`` package, BSD licence; see ``data/README.md``). A curated subset of its
    files is used (no computing files, which would overlap the domain, and none of the files a
    workshop audience should not meet). Every 20th quotation goes to the held-out file.
``data/techpulse_heldout.jsonl``
    Held-out *domain* text the base model and the training never see: the docstrings of NumPy
    (BSD-3-Clause), technical Python documentation like ``techpulse_sample.jsonl`` but from another
    project, so it measures the domain rather than memorised documents.

Run from the repository root; the fortune files come from the Debian package, unpacked without
installing it::

    apt-get download fortunes && dpkg -x fortunes_*.deb /tmp/fortunes
    .venv/bin/python data/scripts/build_general_corpus.py --fortunes /tmp/fortunes/usr/share/games/fortunes
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import pkgutil
import warnings
from pathlib import Path

# The fortune files used, by name: general prose with no overlap with the technical domain.
FORTUNE_FILES = (
    "art", "education", "food", "goedel", "humorists", "kids", "law", "literature", "love",
    "magic", "medicine", "miscellaneous", "paradoxum", "people", "pets", "platitudes",
    "riddles", "science", "songs-poems", "sports", "tao", "wisdom", "work",
)  # fmt: skip
HELDOUT_EVERY = 20
MIN_CHARS = 40
NUMPY_MIN_CHARS = 200


def fortunes(folder: Path):
    """(id, text) for every quotation of the chosen files, in file order."""
    for name in FORTUNE_FILES:
        raw = (folder / name).read_text(encoding="utf-8", errors="replace")
        for i, chunk in enumerate(raw.split("\n%\n")):
            text = chunk.strip("%\n").strip()
            if len(text) >= MIN_CHARS:
                yield f"fortune:{name}:{i}", text


def numpy_documents():
    """(id, text) for the public NumPy docstrings of at least NUMPY_MIN_CHARS characters."""
    import numpy

    seen: set[int] = set()
    mods = ["numpy"] + [
        m.name
        for m in pkgutil.walk_packages(numpy.__path__, prefix="numpy.")
        if not any(p.startswith("_") or p in ("tests", "testing", "f2py", "distutils", "core") for p in m.name.split("."))
    ]
    for modname in sorted(mods):
        quiet = io.StringIO()
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                warnings.simplefilter("ignore")
                mod = importlib.import_module(modname)
        except BaseException:  # noqa: BLE001 - optional submodules fail to import; skip them
            continue
        for name in sorted(getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]):
            obj = getattr(mod, name, None)
            if obj is None or id(obj) in seen or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            seen.add(id(obj))
            doc = inspect.getdoc(obj) or ""
            if len(doc) >= NUMPY_MIN_CHARS:
                yield f"{modname}.{name}", f"{modname}.{name}\n\n{doc}"


def write_jsonl(path: Path, rows) -> int:
    tmp = path.with_suffix(".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for doc_id, text in rows:
            fh.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fortunes", type=Path, required=True, help="folder of the fortune files")
    ap.add_argument("--out-dir", type=Path, default=here)
    ap.add_argument("--numpy-max-docs", type=int, default=60)
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # NumPy's deprecated aliases warn on every attribute read
    quotes = list(fortunes(args.fortunes))
    train = [q for i, q in enumerate(quotes) if i % HELDOUT_EVERY != HELDOUT_EVERY - 1]
    held = [q for i, q in enumerate(quotes) if i % HELDOUT_EVERY == HELDOUT_EVERY - 1]
    n_train = write_jsonl(args.out_dir / "general_sample.jsonl", train)
    n_held = write_jsonl(args.out_dir / "general_heldout.jsonl", held)
    docs = list(numpy_documents())[: args.numpy_max_docs]
    n_dom = write_jsonl(args.out_dir / "techpulse_heldout.jsonl", docs)
    print(f"general_sample: {n_train}, general_heldout: {n_held}, techpulse_heldout: {n_dom} documents")


if __name__ == "__main__":
    main()
