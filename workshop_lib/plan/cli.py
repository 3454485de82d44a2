"""Subcommands of the ``plan`` room (registered by ``workshop_lib.cli``).

``workshop plan [model flags | --model PRESET] [parallel flags] [--gpu G --gpus-per-node N --nodes N]
[--search] [--json]`` — see docs/cli.md, ``workshop plan``. Flag names are Megatron-LM's.
Nothing heavy is imported: the planner is pure Python.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..cli_output import print_json, progress
from ..facts import megatron_flags

# workshop plan's Megatron flags: the flag table's rows it accepts, in the table's order. Model rows
# go to the "model" group of --help, the others to "parallelism, batch and precision".
_PLAN_FLAGS = megatron_flags.accepted_by(megatron_flags.PLAN)
_MODEL_GROUP = tuple(f for f in _PLAN_FLAGS if f.config == "model" or f.name == "tokenizer-model")
_PARALLEL_GROUP = tuple(f for f in _PLAN_FLAGS if f not in _MODEL_GROUP)
# The plan's own help where it reads a flag differently from the trainer.
_PLAN_HELP = {"tokenizer-model": "read the vocabulary size from a tokenizer.json"}

# For --search: flags (attribute names) pinned by the user are not searched.
_SEARCHABLE = {f.name: f.attr for f in _PLAN_FLAGS if f.searched}


def _add(group: argparse._ArgumentGroup, row: megatron_flags.Flag) -> None:
    """One table row as a plan argument: sizes are whole numbers >= 1, choices as the table lists them.

    Defaults are None (absent): the planner's readers apply Megatron-LM's defaults themselves, and
    --search must see which flags the user pinned.
    """
    name, help = f"--{row.name}", _PLAN_HELP.get(row.name)
    if row.type is bool:
        group.add_argument(name, action="store_true", default=None, help=help)
    elif row.choices:
        group.add_argument(name, choices=row.choices, help=help)
    elif row.type is int:
        group.add_argument(name, type=_positive_int, default=None, metavar="N", help=help)
    elif row.type is str:
        group.add_argument(name, metavar="PATH", help=help)
    else:  # a new kind of plan row must say how the plan reads it, not become an untyped string
        raise TypeError(f"--{row.name}: workshop plan has no reader for {row.type.__name__} flags")


def _positive_int(text: str) -> int:
    """argparse type for sizes: a whole number >= 1.

    Every size flag of the planner (layers, widths, vocabulary, parallel sizes, batch, nodes) is a
    count; 0 or a negative is a typo that would otherwise surface as a ZeroDivisionError or as a
    "valid" plan Megatron refuses, so it is a usage error (exit 2) here.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {value})")
    return value


def _positive_float(text: str) -> float:
    """argparse type for --train-tokens: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number (got {text})")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
    p = sub.add_parser(
        "plan",
        help="parallelism calculator: parameters, memory per GPU, FLOPs, time; --search for the best layouts",
        description="Plan a Megatron-LM run: parameters, memory on the busiest GPU, batch math, validity "
        "with fixes, FLOPs and a time estimate. Flags are Megatron-LM's; absent ones take Megatron's defaults.",
    )
    g = p.add_argument_group("model (or --model PRESET)")
    g.add_argument(
        "--model", metavar="PRESET", help="a preset from workshop_lib/facts/models.py, e.g. techpulse-7b"
    )
    for row in _MODEL_GROUP:
        _add(g, row)
    g.add_argument(
        "--hf-config",
        metavar="PATH",
        help="a Hugging Face config.json (Llama, Mistral, Qwen2, Mixtral): the model import-hf would build; "
        "model flags given too override it",
    )
    q = p.add_argument_group("parallelism, batch and precision")
    for row in _PARALLEL_GROUP:
        _add(q, row)
    c = p.add_argument_group("cluster")
    c.add_argument(
        "--gpu", default=None, help="a10g|a100-40gb|a100-80gb|h100-80gb|h200|b200 (default h100-80gb)"
    )
    c.add_argument("--gpus-per-node", type=_positive_int, default=None, metavar="N")
    c.add_argument("--nodes", type=_positive_int, default=1, metavar="N")
    c.add_argument(
        "--instance-type",
        default=None,
        help="an instance type (e.g. p4d.24xlarge): sets --gpu, --gpus-per-node and the network",
    )
    o = p.add_argument_group("output")
    o.add_argument("--search", action="store_true", help="search the parallel layouts left open")
    o.add_argument(
        "--top", type=_positive_int, default=None, metavar="N", help="with --search: keep the best N (>= 1)"
    )
    o.add_argument(
        "--train-tokens",
        type=_positive_float,
        default=None,
        metavar="N",
        help="tokens to train, for days and cost (default 1e12)",
    )
    o.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_run)


def _collect(ns: argparse.Namespace) -> dict[str, Any]:
    """The Megatron flags given on the command line, in job-YAML form (absent ones left out)."""
    return {f.name: getattr(ns, f.dest) for f in _PLAN_FLAGS if getattr(ns, f.dest) is not None}


def hf_config_args(path: str) -> dict[str, Any]:
    """The plan's model flags for a Hugging Face config.json (the convert room's mapping, torch-free)."""
    from ..convert.hfconfig import load_spec

    spec, _cfg = load_spec(path)
    known = {f.name for f in _PLAN_FLAGS if f.config == "model"}
    return {k: v for k, v in megatron_flags.parse_argv(spec.megatron_flags()).items() if k in known}


def _run(ns: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..facts import hardware
    from . import api, report
    from .config import ClusterConfig

    args = _collect(ns)
    if ns.hf_config:
        if ns.model:
            raise UsageError("give --model PRESET or --hf-config PATH, not both")
        args = {**hf_config_args(ns.hf_config), **args}
    gpu, gpn, inst = ns.gpu, ns.gpus_per_node, ns.instance_type
    if inst:
        i = hardware.instance(inst)
        inst = i.name
        if gpu and gpu != i.gpu:
            raise UsageError(
                f"--gpu {gpu} contradicts --instance-type {i.name} (which has {i.gpu}); give one"
            )
        gpu, gpn = i.gpu, gpn or i.gpus_per_node
    gpu = gpu or "h100-80gb"
    gpn = gpn or 8
    hardware.gpu(gpu)
    if ns.nodes < 1 or gpn < 1:
        raise UsageError("--nodes and --gpus-per-node must be at least 1")
    m, par, missing = api.resolve_args(args, model=ns.model)
    if missing:
        raise UsageError(
            f"missing model flags {', '.join('--' + f for f in missing)}; give them or --model PRESET "
            f"(e.g. --model techpulse-7b)"
        )
    cl = ClusterConfig(gpu=gpu, gpus_per_node=gpn, nodes=ns.nodes, instance_type=inst)
    tokens = ns.train_tokens or api.DEFAULT_TRAIN_TOKENS
    if ns.search:
        from .search import search

        if par.global_batch_size is None:
            par = par.with_(global_batch_size=512)
            progress("workshop plan --search: no --global-batch-size given; searching with 512")
        fixed = [attr for flag, attr in _SEARCHABLE.items() if flag in args]
        configs = search(m, cl, par, fixed=fixed, limit=ns.top)
        if ns.json:
            print_json({"configs": [api.plan_json(c) for c in configs]})
        else:
            print(report.search_table(configs, m, cl))
        return 0
    result = api.plan(m, par, cl, train_tokens=tokens)
    if ns.json:
        print_json(api.plan_json(result))
    else:
        print(report.plan_text(result))
    return 0
