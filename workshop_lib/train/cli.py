"""Subcommands of the ``train`` room (registered by ``workshop_lib.cli``)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
    p = sub.add_parser(
        "train",
        help="train locally with torchrun (CPU + gloo here, GPUs + NCCL where present)",
        description="Run the Megatron-Core trainer (python -m workshop_lib.train) under torchrun. "
        "Everything after '--' is Megatron-LM training flags, e.g. "
        "workshop train --nproc-per-node 2 -- --num-layers 2 --hidden-size 64 ... "
        "Ctrl-C or SIGTERM: the ranks finish the iteration, save a checkpoint (with --save) and stop; "
        "a second Ctrl-C stops at once. A failed run ends with one 'diagnosis:' line.",
    )
    p.add_argument("--nproc-per-node", type=int, default=1, help="processes (GPUs) on this node")
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", type=int, default=None, help="default: a free port")
    p.add_argument(
        "--trust-checkpoint",
        action="store_true",
        help="load a --load checkpoint even if another user owns it or others may write it "
        "(loading unpickles it: only for checkpoints whose writer you trust)",
    )
    p.add_argument("flags", nargs=argparse.REMAINDER, help="-- then Megatron-LM training flags")
    p.set_defaults(func=_train)


def _train(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from .launcher import run_local

    flags = list(args.flags)
    if flags and flags[0] == "--":
        flags = flags[1:]
    if not flags:
        raise UsageError("no training flags; put Megatron-LM flags after '--' (see 'workshop train --help')")
    return run_local(
        args.nproc_per_node,
        flags,
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        master_addr=args.master_addr,
        master_port=args.master_port,
        trust_checkpoint=args.trust_checkpoint,
    )
