"""The self-paced exercises of notebooks 02 and 04: each hidden check accepts the right answer,
rejects a wrong one, and only prompts when unanswered. (Notebook 03's are in test_launch_notebook.py;
notebook 01's is answered in the notebook and runs in the end-to-end test.)

The cells are the notebooks' own, executed in-process in one namespace, as a kernel would.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _cells(name: str):
    return nbformat.read(NOTEBOOKS / name, as_version=4).cells


def _exercises(cells):
    """(answer cell, check cell) pairs: each check is tagged, its answer cell precedes it."""
    return [
        (cells[i - 1].source, c.source)
        for i, c in enumerate(cells)
        if "exercise-check" in c.metadata.get("tags", [])
    ]


@pytest.fixture(scope="module")
def nb02(tmp_path_factory):
    cells = _cells("02_parallelism.ipynb")
    ns: dict = {}
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    exec(params.source, ns)  # noqa: S102 - the notebook's own cells
    ns["run_dir"] = str(tmp_path_factory.mktemp("run"))
    setup = next(c for c in cells if c.cell_type == "code" and "LayoutExplorer(" in c.source)
    exec(setup.source, ns)  # noqa: S102
    return ns, _exercises(cells)


def _answer(ns, pair, name, value):
    answer_cell, check_cell = pair
    exec(answer_cell, ns)  # noqa: S102
    ns[name] = value
    exec(check_cell, ns)  # noqa: S102


def test_nb02_microbatch_exercise(nb02, capsys):
    ns, pairs = nb02
    assert len(pairs) == 2
    _answer(ns, pairs[0], "my_answer", None)
    assert "Set my_answer" in capsys.readouterr().out
    _answer(ns, pairs[0], "my_answer", 16)  # 512 / (micro 4 x DP 8)
    assert "correct: 512 / (4 x 8) = 16" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="micro-batches"):
        _answer(ns, pairs[0], "my_answer", 64)


def test_nb02_expert_parallel_exercise(nb02, capsys):
    ns, pairs = nb02
    _answer(ns, pairs[1], "my_ep", 8)
    assert "correct: EP=8" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="experts per GPU"):
        _answer(ns, pairs[1], "my_ep", 4)


def test_nb04_label_exercise(capsys):
    (pair,) = _exercises(_cells("04_monitor.ipynb"))
    ns: dict = {}
    _answer(ns, pair, "my_label", None)
    assert "Set my_label" in capsys.readouterr().out
    _answer(ns, pair, "my_label", "shm_too_small")
    assert "correct: shm_too_small" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="not it"):
        _answer(ns, pair, "my_label", "cuda_oom")
