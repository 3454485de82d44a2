"""Notebook 03's own pieces: its exercise check accepts the right answer and rejects a wrong one.

(The notebook runs end to end, headless on the local backend, in tests/test_notebooks.py.)
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NB = Path(__file__).resolve().parents[1] / "notebooks" / "03_launch.ipynb"


def _cells():
    return nbformat.read(NB, as_version=4).cells


def _exercise():
    cells = _cells()
    i = next(i for i, c in enumerate(cells) if "exercise-check" in c.metadata.get("tags", []))
    return cells[i - 1].source, cells[i].source


def _run(answer):
    exercise, check_cell = _exercise()
    ns: dict = {}
    exec("from workshop_lib.launch import api as launch\n" + exercise, ns)  # noqa: S102 - the notebook's own cells
    ns["my_answer"] = answer
    exec(check_cell, ns)  # noqa: S102


def test_exercise_check_accepts_the_culprit(capsys):
    _run("NCCL_P2P_DISABLE")
    assert "correct: NCCL_P2P_DISABLE" in capsys.readouterr().out


@pytest.mark.parametrize("wrong", ["NCCL_DEBUG", "FI_PROVIDER"])
def test_exercise_check_rejects_a_wrong_answer(wrong):
    with pytest.raises(AssertionError, match="fine here"):
        _run(wrong)


def test_unanswered_exercise_just_says_so(capsys):
    _run(None)
    assert "Set my_answer" in capsys.readouterr().out


def test_parameters_cover_both_backends():
    (params,) = [c for c in _cells() if "parameters" in c.metadata.get("tags", [])]
    for name in ("run_dir", "backend", "kubeconfig", "context", "namespace", "train_iters"):
        assert f"\n{name} =" in "\n" + params.source
    assert 'backend = "local"' in params.source
