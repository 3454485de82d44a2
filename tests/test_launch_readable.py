"""Notebook 03's view of a run: iteration lines and a progress line, not torch's and megatron-core's warning walls.

The pure sink is checked on lines as a real local run prints them (two ranks, interleaved); one real
two-iteration local run then checks the whole path the notebook takes (``launch.api.follow_logs``
over the local backend): the view has the iteration lines and no deprecation walls, while
``train.log`` keeps every warning for the monitor and ``diagnose``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from workshop_lib.facts import library_warnings as known
from workshop_lib.launch.readable import SOURCE_WINDOW, ReadableLog

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "manifests/jobs/techpulse-eks.yaml"

C10D = "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py"
REDUCE = (
    f"{C10D}:83: FutureWarning: `torch.distributed.reduce_scatter_tensor` is deprecated. "
    "Please use `torch.distributed.reduce_scatter_single` instead."
)
GATHER = (
    f"{C10D}:83: FutureWarning: `torch.distributed.all_gather_into_tensor` is deprecated. "
    "Please use `torch.distributed.all_gather_single` instead."
)
SHARDED = (
    "/repo/workshop_lib/train/device.py:81: FutureWarning: "
    "Please use DTensor instead and we are deprecating ShardedTensor."
)
SOURCE = "  return func(*args, **kwargs)"
ITER = (
    " [2026-11-23 21:11:24] iteration        1/      30 | consumed samples:            8 | elapsed time per "
    "iteration (ms): 897.6 | throughput per GPU (TFLOP/s/GPU): 0.0 | learning rate: 1.666667E-04 | global "
    "batch size:     8 | lm loss: 6.954000E+00 | loss scale: 1.0 | grad norm: 9.120 | number of skipped "
    "iterations:   0 | number of nan iterations:   0 |"
)


def _view(lines):
    shown, progress = [], []
    view = ReadableLog(shown.append, progress=progress.append)
    for line in lines:
        view(line)
    return view, shown, progress


def test_known_warnings_and_their_source_lines_are_counted_not_shown():
    # Two ranks print the same warnings; their lines interleave in the shared log.
    lines = [
        " > number of parameters on (tensor, pipeline) model parallel rank (1, 0): 918656",
        SHARDED,
        SHARDED,
        SOURCE,
        SOURCE,
        "  loaded pretrained weights from /r/base/iter_0000000 (weights only: iteration 0, fresh optimizer)",
        "Cannot save the BlendedDataset indexes because path_to_cache is None",
        REDUCE,
        SOURCE,
        REDUCE,
        SOURCE,
        GATHER,
        GATHER,
        SOURCE,
        SOURCE,
        ITER,
    ]
    view, shown, progress = _view(lines)
    assert shown == [lines[0], lines[5], ITER]  # the indented Megatron line after the warnings stays
    assert view.hidden_count == 7 and len(view.hidden) == 4
    assert progress[-1].startswith("training: iteration 1/30 (3%) | lm loss 6.954 | 0.90 s/iteration")
    summary = view.summary_line("/r/train/train.log")
    assert summary.startswith("7 known library warnings hidden") and summary.endswith(
        "full log in /r/train/train.log"
    )


def test_unknown_or_altered_warnings_are_shown_as_printed():
    lines = [
        # same message, another module: not the known one
        "/venv/torch/distributed/other.py:12: FutureWarning: `torch.distributed.all_gather_into_tensor` is "
        "deprecated. Please use `torch.distributed.all_gather_single` instead.",
        SOURCE,
        # known module and category, another message
        f"{C10D}:83: FutureWarning: `torch.distributed.broadcast_object` is deprecated.",
        SOURCE,
        # known message as another category
        GATHER.replace("FutureWarning", "DeprecationWarning"),
        SOURCE,
    ]
    view, shown, _ = _view(lines)
    assert shown == lines and view.hidden_count == 0 and view.summary_line("x") is None


def test_a_hidden_warning_without_its_source_line_eats_nothing_else():
    """The source line is awaited only for a few lines: a later indented line is the run's own."""
    later = "  successfully saved checkpoint from iteration      30 to /r/train/checkpoints [ t 4.24s ]"
    lines = [GATHER] + [f"line {i}" for i in range(SOURCE_WINDOW)] + [later]
    view, shown, _ = _view(lines)
    assert shown == lines[1:] and view.hidden_count == 1


def test_the_source_line_is_matched_exactly_when_the_file_is_here(tmp_path):
    """With the warned-about file at hand, only its own source line is taken for the warning's."""
    src = tmp_path / "torch/distributed/c10d_logger.py"
    src.parent.mkdir(parents=True)
    src.write_text("\n" * 82 + "            return func(*args, **kwargs)\n")
    header = GATHER.replace(C10D, str(src))
    other = "  loaded pretrained weights from /r/base/iter_0000000"
    view, shown, _ = _view([header, other, SOURCE])
    assert shown == [other] and view.hidden_count == 1


def test_a_fifo_named_in_the_log_is_never_read(tmp_path):
    import os

    fifo = tmp_path / "torch/distributed/c10d_logger.py"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)  # opening it for reading would block forever
    view, shown, _ = _view([GATHER.replace(C10D, str(fifo)), SOURCE, ITER])
    assert shown == [ITER] and view.hidden_count == 1


def test_the_table_is_exact():
    """Every entry names a warning class, and the printed-path pattern covers the module exactly."""
    import builtins

    for entry in known.KNOWN:
        assert issubclass(getattr(builtins, entry.category), Warning), entry
        assert entry.action in (known.IGNORE, known.HIDE) and entry.why
    entry = known.match_printed("FutureWarning", REDUCE.split("FutureWarning: ", 1)[1], C10D)
    assert entry is not None and entry.action == known.HIDE
    assert (
        known.match_printed("FutureWarning", entry.message, C10D.replace("c10d_logger", "c10d_loggerx"))
        is None
    )


def test_ignored_warnings_are_filtered_by_category_message_and_module():
    import warnings

    from workshop_lib.train.log import ignore_known_warnings

    entry = next(
        e for e in known.KNOWN if e.action == known.IGNORE and e.module == r"megatron\.core\.optimizer"
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert ignore_known_warnings() == sum(e.action == known.IGNORE for e in known.KNOWN)
        for module, category, message in (
            ("megatron.core.optimizer", UserWarning, entry.message),  # filtered
            ("megatron.core.optimizerx", UserWarning, entry.message),  # another module
            ("megatron.core.optimizer", FutureWarning, entry.message),  # another category
            ("megatron.core.optimizer", UserWarning, entry.message + " (and more)"),  # another message
        ):
            warnings.warn_explicit(message, category, "f.py", 1, module=module)
    assert [(w.category, str(w.message)) for w in seen] == [
        (UserWarning, entry.message),
        (FutureWarning, entry.message),
        (UserWarning, entry.message + " (and more)"),
    ]


# ---- one real local run, shown as notebook 03 shows it ------------------------------------------
@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    from workshop_lib.cli import main
    from workshop_lib.launch import api, backends, jobspec

    root = tmp_path_factory.mktemp("run")
    prep = [
        "prep-data", "--input", str(REPO / "data/techpulse_sample.jsonl"), "--output-prefix",
        str(root / "data/techpulse"), "--append-eod", "--dataset-info", str(root / "data/dataset.json"),
        "--no-progress", "--json",
    ]  # fmt: skip
    assert main(prep) == 0
    spec = jobspec.from_dict({**yaml.safe_load(JOB.read_text()), "backend": "local"}, str(JOB))
    launcher = backends.get("local", run_dir=root, train_iters=2)
    launcher.submit(spec, replace=True)
    shown, progress = [], []
    from workshop_lib.launch import readable

    result = readable.follow(launcher, spec, emit=shown.append, progress=progress.append)
    assert api.follow_logs  # the notebook's name for the same call
    status = launcher.status(spec)
    return root, result, shown, progress, status


@pytest.mark.slow
def test_the_notebook_view_shows_iterations_and_the_log_keeps_the_warnings(followed):
    root, result, shown, progress, status = followed
    assert status["phase"] == "Succeeded", json.dumps(status)[-1000:]
    iterations = [line for line in shown if " iteration " in line and "/       2 |" in line]
    assert len(iterations) == 2, "\n".join(shown)[-2000:]
    walls = [line for line in shown if known.WARNING_LINE.match(line)]
    assert not walls, walls
    assert progress[0].startswith("training: waiting") and progress[-1].startswith(
        "training: iteration 2/2 (100%)"
    )

    log = (root / "train/train.log").read_text(encoding="utf-8").splitlines()
    printed = [m for m in map(known.WARNING_LINE.match, log) if m]
    kept = [m for m in printed if known.match_printed(m["category"], m["message"], m["file"])]
    assert kept and result["hidden_warnings"] >= len(kept), printed  # the log keeps what the view hid
    assert any(m["category"] == "FutureWarning" for m in kept)
    assert shown[-1] == (
        f"{result['hidden_warnings']} known library warnings hidden "
        f"({shown[-1].split('(', 1)[1].split(' kinds')[0]} kinds, see workshop_lib/facts/library_warnings.py); "
        f"full log in {root / 'train/train.log'}"
    )
    # The ranks filter megatron-core's CPU notes before it loads: not even the log has them.
    assert not any("Transformer Engine and Apex are not installed" in line for line in log)
    assert len(shown) + result["hidden_warnings"] <= result["lines"] + 1  # nothing invented, one summary
