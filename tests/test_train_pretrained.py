"""Starting from someone else's weights: --pretrained-checkpoint, its checks, and `workshop evaluate`.

One tiny model (2 layers, hidden 64, GQA) is trained for two iterations and saved (A); every other
run starts from A. The trainer runs as one process (``python -m workshop_lib.train``, world size 1)
to keep each run to seconds; the multi-process path is the same code under torchrun.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

MODEL = [
    "--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4",
    "--group-query-attention", "--num-query-groups", "2", "--swiglu", "--normalization", "RMSNorm",
    "--position-embedding-type", "rope", "--disable-bias-linear",
]  # fmt: skip


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _flags(data: str, *extra: str, iters: int = 2) -> list[str]:
    return [
        *MODEL,
        "--seq-length", "64", "--max-position-embeddings", "64", "--micro-batch-size", "2",
        "--global-batch-size", "4", "--lr", "1e-3", "--train-iters", str(iters), "--log-interval", "1",
        "--data-path", data, "--tokenizer-type", "HuggingFaceTokenizer",
        "--tokenizer-model", str(REPO / "data" / "tokenizer"), "--split", "100,0,0", "--eval-iters", "0",
        "--num-workers", "0", *extra,
    ]  # fmt: skip


def _train(flags: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": _free_port(), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "workshop_lib.train", *flags],
        capture_output=True, text=True, timeout=300, cwd=cwd, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small domain dataset, a held-out one, and checkpoint A trained on the first."""
    root = tmp_path_factory.mktemp("pretrained")
    lines = (REPO / "data" / "techpulse_sample.jsonl").read_text().splitlines()
    (root / "train.jsonl").write_text("\n".join(lines[:300]) + "\n")
    held = (REPO / "data" / "techpulse_heldout.jsonl").read_text().splitlines()
    (root / "held.jsonl").write_text("\n".join(held[:20]) + "\n")
    for name in ("train", "held"):
        r = subprocess.run(
            [sys.executable, "-m", "workshop_lib.cli", "prep-data", "--input", str(root / f"{name}.jsonl"),
             "--output-prefix", str(root / name), "--append-eod", "--workers", "1", "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    data = str(root / "train_text_document")
    a = _train(_flags(data, "--save", str(root / "A")), root)
    assert a.returncode == 0, a.stderr[-3000:]
    return {"root": root, "data": data, "held": str(root / "held_text_document")}


def _evaluate(cli_proc, load: Path, *data: str, extra: tuple[str, ...] = ()) -> dict:
    r = cli_proc(
        "evaluate", "--load", str(load), "--data-path", *data, "--seq-length", "64", *extra, "--json"
    )
    assert r.code == 0, r.err[-2000:]
    return r.json()


def test_pretrained_start_loads_the_weights_and_resets_the_run(world, cli_proc):
    root, data = world["root"], world["data"]
    # A learning rate of ~0 keeps the weights: the saved model must then be A's, not a fresh init.
    b = _train(_flags(data, "--lr", "1e-12", "--min-lr", "0", "--pretrained-checkpoint", str(root / "A"),
                      "--save", str(root / "B"), iters=1), root)  # fmt: skip
    assert b.returncode == 0, b.stderr[-3000:]
    assert "loaded pretrained weights from" in b.stdout
    assert "iteration        1/       1" in b.stdout  # the run starts at 0, not at A's iteration 2
    assert (root / "B" / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    ev_a = _evaluate(cli_proc, root / "A", world["held"])["results"][0]
    ev_b = _evaluate(cli_proc, root / "B", world["held"])["results"][0]
    assert ev_a["tokens"] == ev_b["tokens"] > 0
    assert ev_b["loss"] == pytest.approx(ev_a["loss"], abs=1e-5)
    # A fresh model of the same shape (no pretrained weights) scores differently.
    c = _train(_flags(data, "--lr", "1e-12", "--min-lr", "0", "--save", str(root / "C"), "--seed", "7",
                      iters=1), root)  # fmt: skip
    assert c.returncode == 0, c.stderr[-3000:]
    ev_c = _evaluate(cli_proc, root / "C", world["held"])["results"][0]
    assert abs(ev_c["loss"] - ev_a["loss"]) > 1e-3

    # A job restarted after its first save resumes its own checkpoint, not the base model again.
    r = _train(_flags(data, "--lr", "1e-12", "--min-lr", "0",  # B's schedule, so the resume is allowed
                      "--pretrained-checkpoint", str(root / "A"), "--load", str(root / "B"),
                      "--save", str(root / "B"), iters=1), root)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "successfully loaded checkpoint from" in r.stdout and "at iteration 1" in r.stdout
    assert "loaded pretrained weights" not in r.stdout


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("--num-query-groups", "4"), "--num-query-groups 4 here, --num-query-groups 2 in the checkpoint"),
        (("--hidden-size", "32"), "--hidden-size 32 here, --hidden-size 64 in the checkpoint"),
        (("--untie-embeddings-and-output-weights",), "--untie-embeddings-and-output-weights here"),
    ],
)
def test_a_model_that_differs_from_the_checkpoint_is_one_line(world, change, expected):
    flags = _flags(world["data"], "--pretrained-checkpoint", str(world["root"] / "A"))
    i = flags.index(change[0]) if change[0] in flags else None
    if i is not None and len(change) == 2:
        flags[i + 1] = change[1]
    else:
        flags.append(change[0])
    r = _train(flags, world["root"])
    assert r.returncode == 2, r.stderr[-2000:]
    errors = [line for line in r.stderr.splitlines() if "workshop train: error:" in line]
    assert len(errors) == 1 and expected in errors[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_a_tokenizer_that_is_not_the_models_is_refused(world):
    root = world["root"]
    ckpt = root / "A-with-tokenizer"
    shutil.copytree(root / "A", ckpt)
    doc = json.loads((REPO / "data" / "tokenizer" / "tokenizer.json").read_text())
    vocab = doc["model"]["vocab"]
    first, second = sorted(vocab, key=vocab.get)[100:102]  # the model's tokenizer swaps two ids
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (ckpt / "tokenizer").mkdir()
    (ckpt / "tokenizer" / "tokenizer.json").write_text(json.dumps(doc))
    r = _train(_flags(world["data"], "--pretrained-checkpoint", str(ckpt)), root)
    assert r.returncode == 2
    assert "is not the tokenizer of the model" in r.stderr and "2 of its" in r.stderr


def test_pretrained_checkpoint_without_a_checkpoint_is_one_line(world, tmp_path):
    r = _train(_flags(world["data"], "--pretrained-checkpoint", str(tmp_path)), world["root"])
    assert r.returncode == 2
    assert "--pretrained-checkpoint" in r.stderr and "workshop import-hf" in r.stderr


def test_evaluate_scores_every_token_once_and_honours_eval_iters(world, cli_proc):
    from workshop_lib.data.indexed import IndexedDatasetReader

    reader = IndexedDatasetReader(world["held"])
    total = sum(len(reader.sequence(i)) for i in range(len(reader)))
    full = _evaluate(cli_proc, world["root"] / "A", world["held"], world["held"])
    assert set(full) >= {"load", "results"}
    held, again = full["results"]
    assert set(held) >= {"data_path", "loss", "perplexity", "tokens"}
    assert held["tokens"] == total - 1  # every token but the first is predicted exactly once
    assert held["perplexity"] == pytest.approx(2.718281828 ** held["loss"], rel=1e-6)
    assert again["loss"] == held["loss"]  # the same tokens give the same figure
    part = _evaluate(
        cli_proc, world["root"] / "A", world["held"], extra=("--eval-iters", "1", "--micro-batch-size", "2")
    )
    assert part["results"][0]["tokens"] == 2 * 64


def test_evaluate_bad_input_is_one_line(world, cli_proc, tmp_path):
    r = cli_proc("evaluate", "--load", str(tmp_path), "--data-path", world["held"])
    assert r.code == 2 and "latest_checkpointed_iteration.txt" in r.err and "Traceback" not in r.err
    r = cli_proc("evaluate", "--load", str(world["root"] / "A"), "--data-path", str(tmp_path / "nothing"))
    assert r.code == 2 and "not found" in r.err and "Traceback" not in r.err
    r = cli_proc("evaluate", "--load", str(world["root"] / "A"), "--data-path", world["held"],
                 "--eval-iters", "0")  # fmt: skip
    assert r.code == 2 and "--eval-iters" in r.err
