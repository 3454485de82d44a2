"""The package's shape, as docs/architecture.md draws it: no import cycles, and the floors hold.

The import graph is built from the source (``ast``), not by importing: every ``import`` and
``from ... import`` counts, including those inside functions (the lazy imports that keep start-up
fast are still dependencies), and so do module names handed to ``importlib.import_module`` (the
top ``cli.py`` loads each room's ``cli.py`` that way). A cycle makes a module's behaviour depend on
which side was imported first; an upward import makes a low floor drag in what sits above it.

A module added to the package must be given a floor here (the test names it otherwise), which is
the moment to decide where it belongs.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "workshop_lib"

# Floors, lowest first (docs/architecture.md, "Rooms"). A module may import its own floor and those
# below it, never above. The first segment after ``workshop_lib.`` names the room; ``cli`` modules
# of every room sit on the top floor whatever their room.
ERRORS = 0  # errors.py and the package's __init__: import nothing of the package
FACTS = 1  # facts/: tables; imports only errors.py
BASE = 2  # shared helpers at the base
ROOMS_LOW = 3  # data, plan, monitor: never import each other
ROOMS_HIGH = 4  # train, convert, launch
TOP = 5  # widgets, journey, every cli.py

FLOORS = {
    "workshop_lib": ERRORS,
    "errors": ERRORS,
    "facts": FACTS,
    "jsonsafe": BASE,
    "fsutil": BASE,
    "paths": BASE,
    "safeyaml": BASE,
    "k8sfields": BASE,
    "redact": BASE,
    "cli_output": BASE,
    "zstdframes": BASE,
    "handover": BASE,
    "data": ROOMS_LOW,
    "plan": ROOMS_LOW,
    "monitor": ROOMS_LOW,
    "train": ROOMS_HIGH,
    "convert": ROOMS_HIGH,
    "launch": ROOMS_HIGH,
    "widgets": TOP,
    "journey": TOP,
    "journey_engine": TOP,
    "journey_cli": TOP,
    "cli": TOP,
}
INDEPENDENT = ("data", "plan", "monitor")

# Edges the floors forbid that are still in the tree, each with why and who removes it. An entry
# whose edge has gone fails the test, so the list only ever shrinks.
KNOWN_CROSSINGS: set[tuple[str, str]] = set()


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not ``__init__``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports_of(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    known = modules()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    dynamic = any(
        isinstance(node, ast.Attribute)
        and node.attr == "import_module"
        or isinstance(node, ast.Name)
        and node.id == "__import__"
        for node in ast.walk(tree)
    )
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # ``from . import x`` and ``from .a import b`` may name submodules as well as attributes.
            targets = [origin] + [f"{origin}.{alias.name}" for alias in node.names]
        elif dynamic and isinstance(node, ast.Constant) and isinstance(node.value, str):
            targets = [node.value]
        for target in targets:
            # ``import workshop_lib.a.b`` also imports ``workshop_lib.a``; the deepest known one counts.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("workshop_lib"):
                found.add(target)
    return found


@cache
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(_imports_of(name, path)) for name, path in modules().items()}


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def floor(name: str) -> int:
    if name.endswith(".cli") or name == "workshop_lib.cli":
        return TOP
    key = room(name)
    if key not in FLOORS:
        raise AssertionError(f"{name}: not on any floor; add {key!r} to FLOORS in tests/test_structure.py")
    return FLOORS[key]


def test_the_graph_sees_lazy_and_dynamic_imports():
    """The checks below are only as good as the graph: it must hold the imports made inside
    functions and the rooms the top cli.py loads by name."""
    edges = graph()
    assert "workshop_lib.data.cli" in edges["workshop_lib.cli"]  # importlib.import_module(name)
    lazy = re.search(
        r"^\s+from \.\.facts\.hardware import GPUS", (PACKAGE / "plan/validity.py").read_text(), re.M
    )
    assert lazy and "workshop_lib.facts.hardware" in edges["workshop_lib.plan.validity"]
    assert "workshop_lib.cli_output" in edges["workshop_lib.data.cli"]


def test_cycles_are_found():
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_every_module_has_a_floor():
    for name in modules():
        floor(name)


def test_facts_import_only_errors():
    """facts/ is the bottom floor: tables any room may read, so they may not pull in any room."""
    for name, targets in graph().items():
        if room(name) == "facts":
            outside = {t for t in targets if room(t) not in ("facts", "errors")}
            assert not outside, f"{name} imports {sorted(outside)}"
    assert not graph()["workshop_lib.errors"]


@pytest.mark.parametrize("a", INDEPENDENT)
def test_data_plan_monitor_never_import_each_other(a):
    for name, targets in graph().items():
        if room(name) != a or floor(name) == TOP:
            continue
        for target in targets:
            if room(target) in INDEPENDENT and room(target) != a and (name, target) not in KNOWN_CROSSINGS:
                raise AssertionError(
                    f"{name} imports {target}: {a} and {room(target)} never import each other"
                )


def test_nothing_imports_upward():
    for name, targets in graph().items():
        for target in targets:
            if floor(target) > floor(name) and (name, target) not in KNOWN_CROSSINGS:
                raise AssertionError(f"{name} (floor {floor(name)}) imports {target} (floor {floor(target)})")


def test_known_crossings_are_still_there():
    """An exception whose import has gone must leave the list, so the floors get stricter, not looser."""
    for name, target in KNOWN_CROSSINGS:
        if name in modules():
            assert target in graph()[name], (
                f"{name} no longer imports {target}: remove it from KNOWN_CROSSINGS"
            )


# ---- comments cite only what the repository holds ----------------------------------------------
MD_NAME = re.compile(r"(?<![\w./*-])((?:\.\.?/)*[\w*-][\w.*/-]*\.md)\b")
# Shorthand for documents that were never in the repository; their facts are in docs/sources.md
# and docs/cli.md now.
ABSENT_CITATION = re.compile(
    r"\bseeds?\b(?:'s?)? *(?:0\d\d|manifests?|schedule|likely|\"|')|\bthe seeds\b|\bworkshop seed\b|INTERFACES\.md"
    r"|shared/contract",
    re.I,
)
# Files another change rewrites; an entry that no longer matches fails, so the list only shrinks.
ABSENT_CITATION_PENDING: tuple[str, ...] = ()


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python file."""
    import io
    import tokenize

    source = path.read_text(encoding="utf-8")
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def _python_files() -> list[Path]:
    return sorted(p for top in ("workshop_lib", "tests", "benchmarks") for p in (REPO / top).rglob("*.py"))


def _md_exists(name: str, beside: Path) -> bool:
    for base in (beside.parent, REPO):
        matches = list(base.glob(name)) if "*" in name else [base / name]
        for m in matches:
            m = m.resolve()
            if m.is_file() and m.is_relative_to(REPO):
                return True
    return False


def test_md_name_finder():
    assert MD_NAME.findall(
        "see ``docs/cli.md``, ../shared/contract.md and benchmarks/results/diagnose*.md"
    ) == [
        "docs/cli.md",
        "../shared/contract.md",
        "benchmarks/results/diagnose*.md",
    ]
    here = REPO / "workshop_lib" / "cli.py"
    assert _md_exists("docs/cli.md", here) and _md_exists("README.md", here)
    assert not _md_exists("../shared/contract.md", here)  # outside the repository, even if it is there
    assert not _md_exists("INTERFACES.md", here)


def test_comments_name_only_md_files_in_the_repository():
    missing = [
        f"{path.relative_to(REPO)}:{line}: {name}"
        for path in _python_files()
        for line, text in _comments_and_docstrings(path)
        for name in MD_NAME.findall(text)
        if not _md_exists(name, path)
    ]
    assert not missing, "comments cite documents that are not in the repository:\n" + "\n".join(missing)


def test_comments_cite_sources_not_absent_documents():
    """Seed documents, an interfaces file, a contract one folder up: what only the kit's authors had. Cite
    docs/sources.md (which says what they said, and the public pages behind it) or docs/cli.md."""
    found = {}
    for path in _python_files():
        rel = str(path.relative_to(REPO))
        hits = [line for line, text in _comments_and_docstrings(path) if ABSENT_CITATION.search(text)]
        if hits:
            found[rel] = hits
    for rel in ABSENT_CITATION_PENDING:
        assert found.pop(rel, None), (
            f"{rel} cites no absent document now: remove it from ABSENT_CITATION_PENDING"
        )
    assert not found, f"comments citing documents outside the repository: {found}"


# ---- no guards against the package's own modules being missing --------------------------------
# A guard for an optional third-party package (wandb, tensorboard, IPython, the Kubernetes client)
# is a real branch; one around ``workshop_lib``'s own modules is dead code that hides a broken
# import behind a fallback. Files another change rewrites; an entry that is clean now fails.
SELF_IMPORT_GUARDS_PENDING: tuple[str, ...] = ()


def self_import_guards(path: Path) -> list[int]:
    """Lines of ``except ImportError`` (or ModuleNotFoundError) whose ``try`` imports from the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        own = any(
            isinstance(n, ast.ImportFrom)
            and (n.level > 0 or (n.module or "").startswith("workshop_lib"))
            or isinstance(n, ast.Import)
            and any(a.name.startswith("workshop_lib") for a in n.names)
            for stmt in node.body
            for n in ast.walk(stmt)
        )
        for handler in node.handlers:
            names = [handler.type] if not isinstance(handler.type, ast.Tuple) else list(handler.type.elts)
            if own and any(
                isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError") for t in names
            ):
                found.append(handler.lineno)
    return found


def test_guard_finder(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "try:\n    from .a import b\nexcept ImportError:\n    b = None\n"
        "try:\n    import wandb\nexcept ImportError:\n    wandb = None\n"
        "try:\n    from ..plan import api\nexcept (ImportError, ValueError):\n    api = None\n"
    )
    assert self_import_guards(src) == [3, 11]


def test_no_guards_against_own_modules_missing():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = self_import_guards(path)
        if lines:
            found[str(path.relative_to(REPO))] = lines
    for rel in SELF_IMPORT_GUARDS_PENDING:
        assert found.pop(rel, None), (
            f"{rel} has no self-import guard now: remove it from SELF_IMPORT_GUARDS_PENDING"
        )
    assert not found, f"guards against the package's own modules being missing: {found}"
