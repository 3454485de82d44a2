"""The trainer end to end on this CPU: torchrun + gloo, a tiny GPT on the sample corpus.

Each test starts one or two short torchrun jobs (2 processes, 2 layers, hidden 64, seq 64).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workshop_lib.monitor.parse import parse_eval_line, parse_iteration_line
from workshop_lib.paths import SAMPLE_CORPUS, SAMPLE_TOKENIZER

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # generous: the CPU is shared


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """The sample corpus through `workshop prep-data` (the data room's command)."""
    out = tmp_path_factory.mktemp("data") / "sample"
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", "prep-data", "--input", str(SAMPLE_CORPUS),
         "--output-prefix", str(out), "--tokenizer-type", "HuggingFaceTokenizer",
         "--tokenizer-model", str(SAMPLE_TOKENIZER), "--append-eod", "--json"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return f"{out}_text_document"


def tiny_flags(data_path: str, **over: object) -> list[str]:
    flags = {
        "num-layers": 2, "hidden-size": 64, "num-attention-heads": 4, "seq-length": 64,
        "max-position-embeddings": 64, "micro-batch-size": 4, "global-batch-size": 8,
        "train-iters": 12, "lr": 3e-3, "min-lr": 3e-4, "lr-decay-style": "cosine", "lr-warmup-iters": 1,
        "weight-decay": 0.1, "clip-grad": 1.0, "data-path": data_path, "split": "98,2,0",
        "tokenizer-type": "HuggingFaceTokenizer", "tokenizer-model": str(SAMPLE_TOKENIZER),
        "log-interval": 1, "eval-interval": 6, "eval-iters": 1, "num-workers": 0, "seed": 1234,
    }  # fmt: skip
    flags.update(over)
    out: list[str] = []
    for key, value in flags.items():
        if value is False or value is None:
            continue
        out += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return out


def train(nproc: int, flags: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", "train", "--nproc-per-node", str(nproc), "--", *flags],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip


def iterations(output: str) -> list[dict]:
    return [r for r in map(parse_iteration_line, output.splitlines()) if r]


def validations(output: str) -> list[tuple]:
    return [v for v in map(parse_eval_line, output.splitlines()) if v]


def assert_falls(records: list[dict]) -> None:
    losses = [r["lm_loss"] for r in records]
    assert len(losses) >= 6, losses
    assert sum(losses[-3:]) / 3 < losses[0] - 0.1, losses


def test_tensor_parallel_trains_logs_and_checkpoints(dataset, tmp_path):
    tb, ckpt = tmp_path / "tb", tmp_path / "ckpt"
    proc = train(2, tiny_flags(dataset, **{
        "tensor-model-parallel-size": 2, "sequence-parallel": True, "num-workers": 2,
        "tensorboard-dir": tb, "save": ckpt, "save-interval": 6,
    }))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "tensor parallel 2" in out and "data parallel 1" in out
    recs = iterations(out)
    assert [r["iteration"] for r in recs] == list(range(1, 13))
    assert all(r["train_iters"] == 12 and r["global_batch_size"] == 8 for r in recs)
    assert [r["consumed_samples"] for r in recs] == [8 * i for i in range(1, 13)]
    assert_falls(recs)
    assert [(s, i) for s, i, _ in validations(out)] == [("validation", 6), ("validation", 12)]
    # validation lines sit between two dashed rows of their length + 1, as Megatron prints them
    lines = out.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(" validation loss at iteration 6 |"))
    assert lines[k - 1] == lines[k + 1] == "-" * (len(lines[k]) + 1)
    # checkpoints as Megatron lays them out
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "12"
    for it in ("iter_0000006", "iter_0000012"):
        assert (ckpt / it / "metadata.json").is_file() and (ckpt / it / "common.pt").is_file()
    # TensorBoard scalars under Megatron's tags
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"lm loss", "learning-rate", "grad-norm", "lm loss validation"} <= tags
    assert [e.step for e in acc.Scalars("lm loss")] == list(range(1, 13))


def test_data_parallel_resume_gives_the_same_losses(dataset, tmp_path):
    common = {"hidden-dropout": 0.1, "attention-dropout": 0.1, "train-iters": 16, "eval-interval": 4}
    straight = train(2, tiny_flags(dataset, **common))
    assert straight.returncode == 0, straight.stderr[-3000:]
    assert "data parallel 2" in straight.stdout
    assert_falls(iterations(straight.stdout))

    ckpt = tmp_path / "ckpt"
    first = train(2, tiny_flags(dataset, **common, save=ckpt, **{"save-interval": 8, "exit-interval": 8}))
    assert first.returncode == 0, first.stderr[-3000:]
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "8"
    # a partial folder of a later, interrupted save is not what --load picks up
    (ckpt / "iter_0000012").mkdir()
    second = train(2, tiny_flags(dataset, **common, save=ckpt, load=ckpt, **{"save-interval": 8}))
    assert second.returncode == 0, second.stderr[-3000:]
    assert "successfully loaded checkpoint" in second.stdout and "at iteration 8" in second.stdout

    def losses(out: str, start: int) -> list[str]:
        return [
            f"{r['iteration']}:{r['lm_loss']:.6E}:{r['learning_rate']:.6E}:{r['consumed_samples']}"
            for r in iterations(out)
            if r["iteration"] > start
        ]

    assert losses(second.stdout, 8) == losses(straight.stdout, 8)
    assert losses(first.stdout, 0) == losses(straight.stdout, 0)[:8]
    assert validations(first.stdout) + validations(second.stdout) == validations(straight.stdout)


def test_pipeline_parallel_trains(dataset):
    proc = train(
        2, tiny_flags(dataset, **{"pipeline-model-parallel-size": 2, "train-iters": 8, "eval-iters": 0})
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "pipeline parallel 2" in proc.stdout
    recs = iterations(proc.stdout)
    assert [r["iteration"] for r in recs] == list(range(1, 9))
    assert_falls(recs)


def test_sigterm_saves_a_checkpoint_and_exits(dataset, tmp_path):
    ckpt = tmp_path / "ckpt"
    flags = tiny_flags(dataset, **{
        "train-iters": 100000, "lr-decay-iters": 1000, "eval-iters": 0, "save": ckpt, "save-interval": 100000,
    })  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "workshop_lib.cli", "train", "--nproc-per-node", "2", "--", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    lines: list[str] = []
    deadline = time.time() + TIMEOUT
    try:
        for line in proc.stdout:
            lines.append(line)
            m = re.search(r"iteration +(\d+)/", line)
            if m and int(m.group(1)) >= 3:
                break
            assert time.time() < deadline, "no iteration lines"
        proc.send_signal(signal.SIGTERM)  # what Kubernetes sends a pod being evicted
        rest, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(lines) + rest
    assert "exiting program after receiving SIGTERM" in out, out[-3000:]
    saved = int((ckpt / "latest_checkpointed_iteration.txt").read_text())
    assert saved >= 3
    assert (ckpt / f"iter_{saved:07d}" / "metadata.json").is_file()
    assert f"successfully saved checkpoint from iteration {saved:7d}" in out
    assert "exitcode  : -15" not in out  # the workers were not killed by the signal: they saved and exited
