"""Subcommands of the ``train`` room (registered by ``workshop_lib.cli``)."""

from __future__ import annotations

import argparse

from ..cli_output import print_json


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

    e = sub.add_parser(
        "evaluate",
        help="loss and perplexity of a checkpoint's model on held-out datasets",
        description="Score every token of each dataset once (consecutive --seq-length windows) with the "
        "model a checkpoint holds (workshop train's --save or workshop import-hf's --save), so a base "
        "model and its continued pre-training are compared on the same tokens.",
    )
    e.add_argument("--load", required=True, help="checkpoint folder (with latest_checkpointed_iteration.txt)")
    e.add_argument(
        "--data-path", nargs="+", required=True, metavar="PREFIX", help="prep-data output prefixes"
    )
    e.add_argument(
        "--seq-length", type=int, default=None, help="window length (default: the model's positions)"
    )
    e.add_argument("--eval-iters", type=int, default=None, help="score only the first N micro-batches")
    e.add_argument("--micro-batch-size", type=int, default=8, help="windows per forward pass")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(func=_evaluate)


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


def _evaluate(args: argparse.Namespace) -> int:
    from .evaluate import evaluate, format_table

    result = evaluate(
        args.load,
        list(args.data_path),
        seq_length=args.seq_length,
        eval_iters=args.eval_iters,
        micro_batch_size=args.micro_batch_size,
    )
    if args.json:
        print_json(result)
    else:
        print(format_table(result))
    return 0
