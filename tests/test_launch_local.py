"""The local backend: the job's flags scaled to a tiny CPU run, and a real short run through the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from workshop_lib.launch import backends, jobspec
from workshop_lib.launch.backends.local import TINY, LocalBackend, local_args
from workshop_lib.paths import RunDir

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "manifests/jobs/techpulse-eks.yaml"
DATASET = {
    "data_path": "/r/data/techpulse_text_document",
    "tokenizer_type": "HuggingFaceTokenizer",
    "tokenizer_model": "/repo/data/tokenizer",
}


def test_local_args_scale_the_job_to_a_tiny_model():
    spec = jobspec.load(JOB)
    run = RunDir(Path("/r"))
    args = local_args(spec.args, DATASET, run, 12)
    assert {k: args[k] for k in TINY} == TINY
    assert (
        args["tensor-model-parallel-size"] == 2 and args["sequence-parallel"] is True
    )  # TP<=2, world size 2
    assert args["train-iters"] == 12 and args["lr-decay-iters"] == 12 and args["save-interval"] == 12
    assert args["data-path"] == DATASET["data_path"] and args["tokenizer-model"] == DATASET["tokenizer_model"]
    assert args["save"] == "/r/train/checkpoints" and "load" not in args
    assert args["weight-decay"] == 0.1 and args["lr-decay-style"] == "cosine"  # kept from the job
    for gpu_only in ("bf16", "recompute-granularity", "use-distributed-optimizer", "seq-length-4096"):
        assert gpu_only not in args
    tp1 = local_args({**spec.args, "tensor-model-parallel-size": 1}, DATASET, run, 12)
    assert tp1["tensor-model-parallel-size"] == 1 and "sequence-parallel" not in tp1


def test_local_command_is_torchrun_with_two_processes(tmp_path):
    run = RunDir(tmp_path)
    run.data.mkdir(parents=True)
    run.dataset_info.write_text(json.dumps(DATASET))
    cmd = LocalBackend(run_dir=tmp_path, train_iters=5).command(jobspec.load(JOB))
    assert cmd[1:3] == ["-m", "workshop_lib.train.agent"]
    assert "--nproc-per-node=2" in cmd and "--nnodes=1" in cmd
    i = cmd.index("workshop_lib.train")
    assert cmd[i - 1] == "-m" and "--train-iters=5" in cmd[i:] and "--num-layers=2" in cmd[i:]


def test_missing_dataset_says_run_notebook_01(cli, tmp_path):
    res = cli("apply", "--config", JOB, "--backend", "local", "--run-dir", tmp_path)
    assert res.code == 2 and "run notebook 01" in res.err and len(res.err.strip().splitlines()) == 1
    res = cli("status", "--config", JOB, "--backend", "local", "--run-dir", tmp_path, "--json")
    assert res.code == 0 and res.json()["phase"] == "NotFound"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from workshop_lib.cli import main

    root = tmp_path_factory.mktemp("run")
    assert (
        main(
            [
                "prep-data",
                "--input",
                str(REPO / "data/techpulse_sample.jsonl"),
                "--output-prefix",
                str(root / "data/techpulse"),
                "--append-eod",
                "--dataset-info",
                str(root / "data/dataset.json"),
                "--no-progress",
                "--json",
            ]
        )
        == 0
    )
    return root


@pytest.mark.slow
def test_local_run_end_to_end(cli, run_dir, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({**yaml.safe_load(JOB.read_text()), "backend": "local"}))
    res = cli("apply", "--config", job, "--run-dir", run_dir, "--train-iters", "6", "--json")
    assert res.code == 0, res.err
    assert res.json()["backend"] == "local"
    res = cli("apply", "--config", job, "--run-dir", run_dir)
    assert res.code == 1 and "already going" in res.err
    res = cli("logs", "--config", job, "--run-dir", run_dir, "--follow", "--timeout", "240")
    assert res.code == 0, res.err
    iterations = [line for line in res.out.splitlines() if " iteration " in line and "/       6 |" in line]
    assert len(iterations) == 6, res.out[-2000:]
    st = cli("status", "--config", job, "--run-dir", run_dir, "--json").json()
    assert st["phase"] == "Succeeded" and st["returncode"] == 0
    log = run_dir / "train/train.log"
    assert sum(" iteration " in line for line in log.read_text().splitlines()) >= 6
    assert (run_dir / "train/checkpoints/latest_checkpointed_iteration.txt").read_text().strip() == "6"


def test_local_delete_stops_a_running_job(run_dir):
    spec = jobspec.from_dict({**yaml.safe_load(JOB.read_text()), "backend": "local"})
    b = backends.get("local", run_dir=run_dir, train_iters=10000)
    b.submit(spec, replace=True)
    assert b.status(spec)["phase"] == "Running"
    time.sleep(0.5)
    out = b.delete(spec, wait=True, timeout=30)
    assert out["deleted"] is True
    assert b.status(spec)["phase"] == "Deleted"
    state = json.loads((run_dir / "train/local_job.json").read_text())
    import os

    with pytest.raises(ProcessLookupError):
        os.kill(state["trainer_pid"], 0)


def test_status_of_a_failed_local_run_ends_with_the_verdict(cli, tmp_path):
    run_dir = tmp_path / "run"  # its own run directory: the shared one holds a real run
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({**yaml.safe_load(JOB.read_text()), "backend": "local"}))
    log = run_dir / "train/train.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(
        "[rank1]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    state = {"state": "Failed", "pid": 0, "returncode": 1, "log": str(log), "name": "megatron-cpt-techpulse"}
    (run_dir / "train/local_job.json").write_text(json.dumps(state))
    res = cli("status", "--config", job, "--run-dir", run_dir)
    assert res.code == 0, res.err
    assert res.out.splitlines()[-1].startswith(
        "diagnosis: cuda_oom at line 2: [rank0]: torch.OutOfMemoryError"
    )
    st = cli("status", "--config", job, "--run-dir", run_dir, "--json").json()
    assert (
        st["diagnosis"]["primary"] == "cuda_oom" and st["diagnosis"]["findings"][1]["label"] == "nccl_timeout"
    )
