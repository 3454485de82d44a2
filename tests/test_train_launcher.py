"""`workshop train` and the launcher API the launch room's local backend uses."""

from __future__ import annotations

import sys

from workshop_lib.train.launcher import local_env, torchrun_command


def test_torchrun_command_shape():
    cmd = torchrun_command(2, ["--num-layers", "2"], master_port=29555)
    assert cmd[:3] == [sys.executable, "-m", "workshop_lib.train.agent"]  # torchrun's flags and agent
    assert "--nproc-per-node=2" in cmd and "--nnodes=1" in cmd and "--node-rank=0" in cmd
    assert "--master-addr=127.0.0.1" in cmd and "--master-port=29555" in cmd
    assert cmd[-4:] == ["-m", "workshop_lib.train", "--num-layers", "2"]
    multi = torchrun_command(8, [], nnodes=2, node_rank=1, master_addr="10.0.0.1")
    port = [a for a in multi if a.startswith("--master-port=")][0].split("=")[1]
    assert int(port) > 0 and "--node-rank=1" in multi and "--master-addr=10.0.0.1" in multi


def test_local_env_caps_threads_and_keeps_user_values():
    env = local_env({"PATH": "/bin"}, nproc_per_node=2)
    assert int(env["OMP_NUM_THREADS"]) >= 1 and env["TORCHDYNAMO_DISABLE"] == "1"
    assert env["PATH"] == "/bin" and env["PYTHONUNBUFFERED"] == "1"
    assert local_env({"OMP_NUM_THREADS": "7"})["OMP_NUM_THREADS"] == "7"


def test_workshop_train_refuses_bad_flags_before_starting(cli):
    r = cli("train", "--nproc-per-node", "2", "--", "--num-layers", "2", "--bogus")
    assert r.code == 2 and r.err.count("\n") == 1 and "unknown flag --bogus" in r.err
    r = cli(
        "train",
        "--nproc-per-node",
        "2",
        "--",
        *[
            "--num-layers",
            "2",
            "--hidden-size",
            "64",
            "--num-attention-heads",
            "4",
            "--seq-length",
            "64",
            "--train-iters",
            "4",
            "--lr",
            "1e-3",
            "--tokenizer-type",
            "NullTokenizer",
            "--vocab-size",
            "99",
            "--data-path",
            "A",
            "0.5",
            "B",
            "0.5",
        ],
    )
    assert r.code == 2 and "weight-prefix pairs, weight first" in r.err
    r = cli("train", "--nproc-per-node", "2")
    assert r.code == 2 and "after '--'" in r.err


def test_workshop_train_bad_topology_is_one_line_before_flags_are_checked(cli):
    flags = ["--", "--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4"]
    for opts, needle in (
        (["--nproc-per-node", "0"], "--nproc-per-node must be >= 1"),
        (["--nproc-per-node", "-2"], "--nproc-per-node must be >= 1"),
        (["--nnodes", "0"], "--nnodes must be >= 1"),
        (["--nnodes", "2", "--node-rank", "2"], "--node-rank must be in 0..1"),
        (["--master-port", "70000"], "--master-port must be a TCP port"),
    ):
        r = cli("train", *opts, *flags)
        assert r.code == 2 and r.err.count("\n") == 1 and needle in r.err, (opts, r.err)
        assert "Traceback" not in r.err and "ZeroDivisionError" not in r.err


def test_torchrun_command_refuses_zero_processes():
    import pytest

    from workshop_lib.errors import UsageError

    with pytest.raises(UsageError, match="--nproc-per-node must be >= 1"):
        torchrun_command(0, [])
