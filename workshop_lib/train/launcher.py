"""Launching the trainer with torchrun: the command line, the environment, and a streaming runner.

``torchrun_command`` and ``local_env`` are what the launch room's local backend uses;
:func:`run_local` is ``workshop train``: it checks the flags first (one line and exit 2 for a bad
flag, before any process starts), then runs torchrun with its output streamed, forwards SIGTERM
and SIGINT to it (the trainer saves a checkpoint and exits), and returns torchrun's exit status.

Nothing here imports torch: the trainer processes do.
"""

from __future__ import annotations

import argparse
import copy
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence

TRAINER_MODULE = "workshop_lib.train"


def free_port() -> int:
    """A TCP port that is free on this host now (for a single-node rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_topology(
    nproc_per_node: int, nnodes: int = 1, node_rank: int = 0, master_port: int | None = None
) -> None:
    """One UsageError naming the first bad launch option.

    Runs before the trainer flags are checked: those divide by the world size, so a zero here
    would surface as a ZeroDivisionError traceback instead of a usage line.
    """
    from ..errors import UsageError

    if nproc_per_node < 1:
        raise UsageError(
            f"--nproc-per-node must be >= 1 (got {nproc_per_node}): one process per GPU or CPU rank"
        )
    if nnodes < 1:
        raise UsageError(f"--nnodes must be >= 1 (got {nnodes})")
    if not 0 <= node_rank < nnodes:
        raise UsageError(f"--node-rank must be in 0..{nnodes - 1} for --nnodes {nnodes} (got {node_rank})")
    if master_port is not None and not 1 <= master_port <= 65535:
        raise UsageError(f"--master-port must be a TCP port, 1..65535 (got {master_port})")


def torchrun_command(
    nproc_per_node: int,
    flags: Sequence[str],
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
) -> list[str]:
    """``python -m torch.distributed.run ... -m workshop_lib.train FLAGS`` as an argv list."""
    check_topology(nproc_per_node, nnodes, node_rank, master_port)
    port = master_port if master_port is not None else free_port()
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={port}",
        "-m",
        TRAINER_MODULE,
        *flags,
    ]


def local_env(base: Mapping[str, str] | None = None, *, nproc_per_node: int = 2) -> dict[str, str]:
    """The environment for a CPU (gloo) run: one share of the cores per process, no JIT compile.

    Values already in ``base`` (default: this process's environment) are kept, so a user's
    ``OMP_NUM_THREADS`` wins.
    """
    env = dict(os.environ if base is None else base)
    threads = max(1, (os.cpu_count() or 1) // max(1, nproc_per_node))
    env.setdefault("OMP_NUM_THREADS", str(threads))
    env.setdefault("MKL_NUM_THREADS", env["OMP_NUM_THREADS"])
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("TORCHDYNAMO_DISABLE", "1")  # megatron-core's torch.compile'd helpers run eagerly on CPU
    env.setdefault("PYTHONUNBUFFERED", "1")  # log lines appear as they are printed
    env.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # what Megatron wants on GPUs; harmless on CPU
    return env


def check_flags(flags: Sequence[str], world_size: int, *, data: bool = True) -> argparse.Namespace:
    """Parse and validate the trainer flags for ``world_size`` ranks (raises UsageError).

    With ``data`` it also reads the tokenizer and the dataset index and checks every split can
    deliver samples, so a bad ``--tokenizer-model``/``--data-path``/``--split`` is one line here
    instead of an error in every rank.
    """
    from . import arguments

    args = arguments.parse_args(flags)
    planned = copy.copy(args)
    arguments.finalize_parallel(planned, world_size)
    if data:
        from .tokenizer import build_tokenizer

        build_tokenizer(planned)
    if data and not args.mock_data:
        from .data import check_split_plan

        check_split_plan(planned)
    return args


def run_local(
    nproc_per_node: int,
    flags: Sequence[str],
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run the trainer under torchrun in the foreground; returns its exit status."""
    check_topology(nproc_per_node, nnodes, node_rank, master_port)
    check_flags(flags, nproc_per_node * nnodes)
    cmd = torchrun_command(
        nproc_per_node,
        flags,
        nnodes=nnodes,
        node_rank=node_rank,
        master_addr=master_addr,
        master_port=master_port,
    )
    proc = subprocess.Popen(cmd, env=local_env(env, nproc_per_node=nproc_per_node))

    def forward(signum, frame):  # noqa: ARG001 - the trainer saves a checkpoint on SIGTERM
        proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
