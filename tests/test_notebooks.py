"""The workshop as participants meet it: four notebooks, run headless in order, checked with nbval.

The end-to-end run is the same code path as ``make workshop`` (``workshop run-notebooks``); nbval's
lax mode then re-executes the executed notebooks (same parameters, same run directory) and fails on
any cell error, and compares outputs for the cells marked ``# NBVAL_CHECK_OUTPUT``.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from workshop_lib.journey import NOTEBOOK_DIR, NOTEBOOKS

NAMES = [name for name, _ in NOTEBOOKS]
MINUTES = {"01": 15, "02": 15, "03": 20, "04": 15}  # docs/sources.md (EKS guide; 04 gets 15)


def _load(name: str):
    return nbformat.read(NOTEBOOK_DIR / name, as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_has_no_outputs(name):
    nb = _load(name)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name} cell {i} has outputs: clear them before committing"
            assert cell.execution_count is None, f"{name} cell {i} has an execution count"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_has_papermill_parameters(name):
    nb = _load(name)
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{name}: exactly one cell must be tagged 'parameters'"
    assert re.search(r"^run_dir\s*=", tagged[0].source, re.M), f"{name}: parameters must set run_dir"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_self_paced(name):
    """Opens with its goal and time, ends with a checklist, and has an exercise with a check."""
    nb = _load(name)
    first = next(c for c in nb.cells if c.cell_type == "markdown").source
    assert re.search(r"goal", first, re.I), f"{name}: first cell must state the goal"
    assert re.search(rf"\b{MINUTES[name[:2]]}\s*min", first), f"{name}: first cell must give the time"
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert any("- [ ]" in m for m in markdown[-3:]), f"{name}: must end with a checklist (- [ ] items)"
    sources = "\n".join(c.source for c in nb.cells)
    assert re.search(r"exercise", sources, re.I), f"{name}: needs at least one exercise"
    hidden = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and (
            c.metadata.get("jupyter", {}).get("source_hidden")
            or "exercise-check" in c.metadata.get("tags", [])
        )
    ]
    assert hidden, f"{name}: the exercise needs a hidden cell that checks the answer"


@pytest.fixture(scope="session")
def workshop_run(tmp_path_factory):
    """Run the whole workshop once, exactly as `make workshop` does (a real subprocess)."""
    out = tmp_path_factory.mktemp("workshop")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workshop_lib.cli",
            "run-notebooks",
            "--backend",
            "local",
            "--output-dir",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # journey_engine stops each kernel only once it is idle: no shutdown SIGINT lands in a handler.
    assert "KeyboardInterrupt caught in kernel" not in proc.stderr, proc.stderr[-4000:]
    return out, json.loads(proc.stdout)


@pytest.mark.slow
def test_workshop_runs_end_to_end(workshop_run):
    out, report = workshop_run
    assert [n["name"] for n in report["notebooks"]] == NAMES
    for n in report["notebooks"]:
        assert Path(n["executed"]).exists()
        assert Path(n["html"]).stat().st_size > 10_000
    s = report["summary"]
    assert s["dataset"]["documents"] > 100 and s["dataset"]["tokens"] > 10_000
    assert s["plan"]["valid"] is True
    assert s["plan"]["tensor_model_parallel_size"] >= 1
    tr = s["training"]
    assert tr["iterations"] >= 3
    assert math.isfinite(tr["final_loss"]) and tr["final_loss"] < tr["first_loss"], "loss must fall"
    assert s["diagnosis"]["verdict"] == "healthy", s["diagnosis"]
    # Continued pre-training: the run started from the imported base model, learned the domain
    # (held-out domain loss measurably below the base's), kept the general text (replay), and was
    # handed back as a Hugging Face folder.
    assert "loaded pretrained weights from" in (out / "train" / "train.log").read_text()
    ev = s["evaluation"]
    assert ev["final_domain_loss"] < ev["base_domain_loss"] - 0.5, ev  # learned the domain
    assert ev["final_general_loss"] < ev["base_general_loss"] + 0.25, ev  # and kept the general text
    assert (out / "base" / "workshop_model.json").exists()
    assert (out / "export" / "hf" / "config.json").exists()
    assert (out / "export" / "hf" / "model.safetensors.index.json").exists()
    # The handed-over files exist where the next notebook looks for them.
    assert (out / "data" / "dataset.json").exists()
    assert (out / "plan" / "job.yaml").exists()
    assert (out / "train" / "train.log").exists()


@pytest.mark.slow
def test_executed_notebooks_pass_nbval_lax(workshop_run):
    out, _ = workshop_run
    executed = sorted((out / "executed").glob("0[1-4]_*.ipynb"))
    assert len(executed) == 4
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval-current-env",
            *map(str, executed),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=NOTEBOOK_DIR,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.slow
def test_notebook_alone_says_which_notebook_to_run_first(tmp_path):
    """Notebook 04 on an empty run directory names the notebook that makes its input."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workshop_lib.cli",
            "run-notebooks",
            "--only",
            "04",
            "--no-html",
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert "04_monitor.ipynb failed" in last and "run notebook 03 first" in last, last


@pytest.mark.slow
def test_local_run_cell_shows_iterations_not_warning_walls(workshop_run):
    """Notebook 03's run cell: a progress line and Megatron's iteration lines; the known library
    warnings are counted in one line on screen and kept, every one, in train.log."""
    out, _ = workshop_run
    nb = nbformat.read(out / "executed" / "03_launch.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "follow_logs" in c.source)
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert not re.search(r"^\S.*:\d+: \w*Warning: ", text, re.M), text[-3000:]
    assert len(re.findall(r" iteration +\d+/ +30 \|", text)) == 30, text[-3000:]
    assert "known library warnings hidden" in text
    progress = [o for o in cell.outputs if o.output_type == "display_data"]
    assert progress and progress[0].data["text/plain"].startswith("training: iteration 30/30 (100%)")
    assert "FutureWarning" in (out / "train/train.log").read_text()
