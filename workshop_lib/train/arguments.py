"""The trainer's command line: Megatron-LM's flag names and meanings, from the kit's one flag table.

Every flag the trainer accepts is a row of ``workshop_lib/facts/megatron_flags.py`` with Megatron-LM's
spelling, type and default (Megatron-LM's ``megatron/training/arguments.py``); this module builds the parser from
those rows and keeps what only the trainer checks (the cross-flag rules below). Anything else is an error with one clear line and exit
status 2, never silently ignored: a flag that Megatron-LM does not have (or that belongs to
another framework) is named with what to use instead.

``parse_args(argv)`` parses and validates what can be checked without the process group;
``finalize_parallel(args, world_size)`` derives the data-parallel size and checks the batch and
parallel arithmetic once the world size is known. Both raise :class:`UsageError`.

This module imports only the standard library (and the data room's split parser, numpy), so
``--help`` and flag errors are instant.
"""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Sequence
from typing import NoReturn

from ..errors import UsageError
from ..facts import megatron_flags

PROG = "python -m workshop_lib.train"

# Flags that are not Megatron-LM training flags (other frameworks, tool scripts or invented),
# with what to use instead. They appear in tutorials, so they get a specific answer.
NOT_MEGATRON_FLAGS: dict[str, str] = {
    "--zero-stage": "is a DeepSpeed flag; Megatron shards optimizer state with --use-distributed-optimizer",
    "--cpu-offload": "is a DeepSpeed flag; Megatron-LM has no CPU offload of this kind (use "
    "--recompute-granularity or a larger --tensor-model-parallel-size to save memory)",
    "--datacenter-id": "is not a Megatron-LM flag; multi-site jobs use the same flags as one site",
    "--new-lr": "is a custom script's flag, not Megatron-LM's; to change the learning rate on resume "
    "pass --lr with --override-opt_param-scheduler",
    "--rope-scaling-type": "is not a Megatron-LM flag; use --use-rope-scaling --rope-scaling-factor F",
    "--yarn-alpha": "is not a Megatron-LM flag (YaRN is not supported by this trainer)",
    "--pipeline-model-parallel-split-rank": "applies to encoder-decoder models only; a GPT model "
    "splits its layers evenly over --pipeline-model-parallel-size",
    "--model-type": "belongs to tools/checkpoint, not to training",
    "--checkpoint-dir": "belongs to a checkpoint inspection script; the trainer uses --save/--load",
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError (one line, exit 2) instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message + f" (see '{PROG} --help')")


def build_parser() -> argparse.ArgumentParser:
    """The supported flags, grouped as Megatron-LM groups them: every trainer row of the flag table.

    ``facts/megatron_flags.py`` holds each flag's type, default, choices, group and help; this only
    turns its rows into argparse arguments, so the trainer, ``workshop plan`` and the job file's type
    checks cannot disagree about a flag.
    """
    p = _Parser(
        prog=PROG,
        description="Megatron-Core GPT pre-training with Megatron-LM's flags (run it under torchrun).",
        allow_abbrev=False,
    )
    groups: dict[str, argparse._ArgumentGroup] = {}
    for row in megatron_flags.accepted_by(megatron_flags.TRAINER):
        g = groups.get(row.group) or groups.setdefault(row.group, p.add_argument_group(row.group))
        name = f"--{row.name}"
        if row.type is bool:
            g.add_argument(name, action="store_true", help=row.help)
        elif row.type is list:
            g.add_argument(name, nargs="*", default=row.default, help=row.help)
        elif row.choices:
            g.add_argument(name, choices=row.choices, default=row.default, help=row.help)
        else:
            g.add_argument(name, type=row.type, default=row.default, help=row.help)
    return p


def known_flags() -> list[str]:
    """Every flag the trainer accepts (for error hints and for other rooms' checks)."""
    return sorted(
        opt for action in build_parser()._actions for opt in action.option_strings if opt.startswith("--")
    )


def _unknown_flag_message(token: str, flags: list[str]) -> str:
    name = token.split("=", 1)[0]
    if name in NOT_MEGATRON_FLAGS:
        return f"unsupported flag {name}: it {NOT_MEGATRON_FLAGS[name]}"
    hint = difflib.get_close_matches(name, flags, n=1, cutoff=0.75)
    alt = f"; did you mean {hint[0]}?" if hint else f"; see '{PROG} --help' for the supported flags"
    return f"unknown flag {name}: not a Megatron-LM flag this trainer supports{alt}"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate Megatron-LM flags; raises UsageError naming the flag and the fix."""
    parser = build_parser()
    args, rest = parser.parse_known_args(list(argv))
    if rest:
        flags = known_flags()
        flag = next((t for t in rest if t.startswith("-")), None)
        if flag is None:
            raise UsageError(f"unexpected argument {rest[0]!r}: every value must follow its --flag")
        raise UsageError(_unknown_flag_message(flag, flags))
    _normalize(args)
    _validate(args)
    return args


def _normalize(args: argparse.Namespace) -> None:
    """Fold legacy spellings into the current flags, as Megatron-LM's validate_args does."""
    if args.use_rotary_position_embeddings:
        args.position_embedding_type = "rope"
    if args.use_flash_attn:
        args.attention_backend = "flash"
    if args.checkpoint_activations:
        args.recompute_granularity = args.recompute_granularity or "full"
        args.recompute_method = args.recompute_method or "uniform"
        args.recompute_num_layers = args.recompute_num_layers or args.checkpoint_num_layers or 1
    if args.recompute_activations:
        args.recompute_granularity = args.recompute_granularity or "selective"
    if args.recompute_granularity == "full":
        args.recompute_method = args.recompute_method or "uniform"
        args.recompute_num_layers = args.recompute_num_layers or args.checkpoint_num_layers or 1
    if args.max_position_embeddings is None:
        args.max_position_embeddings = args.seq_length
    if args.ffn_hidden_size is None and args.hidden_size:
        if args.swiglu:  # Megatron: int((4*h*2/3)/64)*64 keeps the parameter count of a 4h GELU MLP
            args.ffn_hidden_size = int((4 * args.hidden_size * 2 / 3) / 64) * 64 or 4 * args.hidden_size
        else:
            args.ffn_hidden_size = 4 * args.hidden_size
    if args.kv_channels is None and args.hidden_size and args.num_attention_heads:
        args.kv_channels = args.hidden_size // args.num_attention_heads
    if not args.group_query_attention:
        args.num_query_groups = args.num_attention_heads
    if args.expert_tensor_parallel_size is None:
        args.expert_tensor_parallel_size = args.tensor_model_parallel_size
    if args.moe_ffn_hidden_size is None:
        args.moe_ffn_hidden_size = args.ffn_hidden_size
    if args.num_layers_per_virtual_pipeline_stage and args.num_layers:
        args.virtual_pipeline_model_parallel_size = (
            args.num_layers // args.pipeline_model_parallel_size // args.num_layers_per_virtual_pipeline_stage
        )
    if args.start_weight_decay is None:
        args.start_weight_decay = args.weight_decay
    if args.end_weight_decay is None:
        args.end_weight_decay = args.weight_decay
    args.params_dtype = "bf16" if args.bf16 else ("fp16" if args.fp16 else "fp32")


def _need(args: argparse.Namespace, *names: str) -> None:
    missing = ["--" + n.replace("_", "-") for n in names if getattr(args, n) is None]
    if missing:
        raise UsageError(f"missing required flag{'s' if len(missing) > 1 else ''} {', '.join(missing)}")


def _positive(args: argparse.Namespace, *names: str) -> None:
    for n in names:
        v = getattr(args, n)
        if v is not None and v <= 0:
            raise UsageError(f"--{n.replace('_', '-')} must be positive, got {v}")


def _validate(args: argparse.Namespace) -> None:
    _need(args, "num_layers", "hidden_size", "num_attention_heads", "seq_length", "lr")
    _positive(
        args,
        "num_layers",
        "hidden_size",
        "num_attention_heads",
        "seq_length",
        "micro_batch_size",
        "global_batch_size",
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "context_parallel_size",
        "expert_model_parallel_size",
        "log_interval",
        "eval_interval",
        "save_interval",
        "num_query_groups",
    )
    if (args.train_iters is None) == (args.train_samples is None):
        raise UsageError("give exactly one of --train-iters and --train-samples")
    if args.bf16 and args.fp16:
        raise UsageError("--bf16 and --fp16 are mutually exclusive; pick one")
    if args.hidden_size % args.num_attention_heads:
        raise UsageError(
            f"--hidden-size {args.hidden_size} is not divisible by --num-attention-heads {args.num_attention_heads}"
        )
    if args.num_attention_heads % args.num_query_groups:
        raise UsageError(
            f"--num-attention-heads {args.num_attention_heads} is not divisible by "
            f"--num-query-groups {args.num_query_groups}"
        )
    tp, pp = args.tensor_model_parallel_size, args.pipeline_model_parallel_size
    if args.num_attention_heads % tp:
        raise UsageError(
            f"--num-attention-heads {args.num_attention_heads} is not divisible by "
            f"--tensor-model-parallel-size {tp}"
        )
    if args.num_query_groups % tp:
        raise UsageError(
            f"--num-query-groups {args.num_query_groups} is not divisible by --tensor-model-parallel-size {tp}; "
            "use more query groups or less tensor parallelism"
        )
    if args.num_layers % pp:
        raise UsageError(
            f"--num-layers {args.num_layers} is not divisible by --pipeline-model-parallel-size {pp}"
        )
    if args.virtual_pipeline_model_parallel_size is not None:
        vp = args.virtual_pipeline_model_parallel_size
        if pp == 1:
            raise UsageError("virtual pipeline stages need --pipeline-model-parallel-size > 1")
        if vp < 1 or args.num_layers % (pp * vp):
            raise UsageError(
                f"--num-layers {args.num_layers} does not split into {pp} pipeline stages x {vp} virtual stages"
            )
    if args.position_embedding_type == "learned_absolute" and args.max_position_embeddings < args.seq_length:
        raise UsageError(
            f"--seq-length {args.seq_length} exceeds --max-position-embeddings {args.max_position_embeddings}"
        )
    if args.sequence_parallel and tp == 1:
        args.sequence_parallel = False  # Megatron-LM turns it off silently; nothing to shard
    if args.recompute_method is not None and args.recompute_granularity != "full":
        raise UsageError("--recompute-method needs --recompute-granularity full")
    if args.overlap_param_gather and not args.use_distributed_optimizer:
        raise UsageError("--overlap-param-gather needs --use-distributed-optimizer")
    if args.num_experts is not None:
        if args.num_experts % args.expert_model_parallel_size:
            raise UsageError(
                f"--num-experts {args.num_experts} is not divisible by "
                f"--expert-model-parallel-size {args.expert_model_parallel_size}"
            )
        if args.moe_router_topk > args.num_experts:
            raise UsageError(
                f"--moe-router-topk {args.moe_router_topk} exceeds --num-experts {args.num_experts}"
            )
        if args.moe_shared_expert_intermediate_size and not args.disable_bias_linear:
            raise UsageError(
                "--moe-shared-expert-intermediate-size needs --disable-bias-linear (megatron-core)"
            )
    elif args.expert_model_parallel_size > 1:
        raise UsageError("--expert-model-parallel-size > 1 needs --num-experts")
    if args.reset_attention_mask:
        raise UsageError(
            "--reset-attention-mask is not supported by this trainer (it needs per-sample attention masks); "
            "drop it, or use --reset-position-ids alone"
        )
    if args.lr_decay_style == "WSD" and args.lr_wsd_decay_iters is None and args.lr_wsd_decay_samples is None:
        raise UsageError("--lr-decay-style WSD needs --lr-wsd-decay-iters (or --lr-wsd-decay-samples)")
    if args.lr_warmup_fraction is not None and (args.lr_warmup_iters or args.lr_warmup_samples):
        raise UsageError("give only one of --lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples")
    if args.min_lr > args.lr:
        raise UsageError(f"--min-lr {args.min_lr} exceeds --lr {args.lr}")
    if args.eval_iters < 0:
        raise UsageError(f"--eval-iters must be >= 0, got {args.eval_iters}")
    if args.save_interval is not None and args.save is None:
        raise UsageError("--save-interval needs --save DIR")
    _validate_data(args)


def _validate_data(args: argparse.Namespace) -> None:
    if args.mock_data and args.data_path:
        raise UsageError("give --data-path or --mock-data, not both")
    if not args.mock_data:
        if not args.data_path:
            raise UsageError(
                "missing --data-path PREFIX (the prep-data output without .bin/.idx), or --mock-data"
            )
        args.blend = parse_blend(args.data_path)
    else:
        args.blend = None
    from ..data.blend import parse_split  # Megatron's parse_and_normalize_split, kept by the data room

    args.split_weights = parse_split(args.split)
    if args.tokenizer_type is None:
        raise UsageError(
            "missing --tokenizer-type (HuggingFaceTokenizer --tokenizer-model DIR, "
            "GPT2BPETokenizer --vocab-file F --merge-file F, or NullTokenizer --vocab-size N)"
        )
    if args.tokenizer_type in ("HuggingFaceTokenizer", "TikTokenizer") and not args.tokenizer_model:
        raise UsageError(
            f"--tokenizer-type {args.tokenizer_type} needs --tokenizer-model (a tokenizer folder or file)"
        )
    if args.tokenizer_type == "GPT2BPETokenizer" and not (args.vocab_file and args.merge_file):
        raise UsageError("--tokenizer-type GPT2BPETokenizer needs --vocab-file and --merge-file")
    if args.tokenizer_type == "NullTokenizer" and not args.vocab_size:
        raise UsageError("--tokenizer-type NullTokenizer needs --vocab-size N (largest token id + 1)")


def parse_blend(tokens: Sequence[str]) -> tuple[list[str], list[float] | None]:
    """Megatron's ``--data-path``: ``PREFIX`` (one or more) or ``W1 PREFIX1 W2 PREFIX2 ...``.

    Returns ``(prefixes, weights or None)``. Megatron treats an even-length list as weight-prefix
    pairs; a list such as ``A 0.5 B 0.5`` (prefix before weight) is refused here with the right order.
    """
    tokens = [t for tok in tokens for t in tok.split()]  # "--data-path='0.5 A 0.5 B'" as one token
    if not tokens:
        raise UsageError("--data-path is empty; give PREFIX or W1 PREFIX1 W2 PREFIX2 ...")
    numeric = [megatron_flags.is_number(t) for t in tokens]
    if not any(numeric):
        return list(tokens), None
    if len(tokens) % 2 or not all(numeric[0::2]) or any(numeric[1::2]):
        raise UsageError(
            f"--data-path {' '.join(tokens)!r} is not a blend: write weight-prefix pairs, weight first, "
            "e.g. --data-path 0.7 /data/a_text_document 0.3 /data/b_text_document"
        )
    weights = [float(t) for t in tokens[0::2]]
    if any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) <= 0:
        raise UsageError(f"--data-path weights must be non-negative with a positive sum, got {weights}")
    return list(tokens[1::2]), weights


def finalize_parallel(args: argparse.Namespace, world_size: int) -> None:
    """Derive the data-parallel size and check the batch arithmetic for ``world_size`` ranks."""
    tp, pp, cp = (
        args.tensor_model_parallel_size,
        args.pipeline_model_parallel_size,
        args.context_parallel_size,
    )
    model_parallel = tp * pp * cp
    if world_size % model_parallel:
        raise UsageError(
            f"world size {world_size} is not divisible by tensor x pipeline x context parallel "
            f"= {tp} x {pp} x {cp} = {model_parallel}; change the sizes or --nproc-per-node"
        )
    dp = world_size // model_parallel
    if args.data_parallel_size is not None and args.data_parallel_size != dp:
        raise UsageError(
            f"--data-parallel-size {args.data_parallel_size} does not match world size {world_size} / "
            f"(TP {tp} x PP {pp} x CP {cp}) = {dp}; Megatron derives it, so drop the flag"
        )
    args.data_parallel_size = dp
    args.world_size = world_size
    if args.global_batch_size is None:
        args.global_batch_size = args.micro_batch_size * dp
    if args.global_batch_size % (args.micro_batch_size * dp):
        raise UsageError(
            f"--global-batch-size {args.global_batch_size} is not divisible by --micro-batch-size "
            f"{args.micro_batch_size} x data-parallel size {dp}; e.g. use "
            f"{args.micro_batch_size * dp * max(1, args.global_batch_size // (args.micro_batch_size * dp))}"
        )
    args.num_microbatches = args.global_batch_size // (args.micro_batch_size * dp)
    if args.num_experts is not None and (
        args.expert_model_parallel_size * args.expert_tensor_parallel_size
    ) > (world_size // pp):
        raise UsageError(
            f"expert parallel {args.expert_model_parallel_size} x expert tensor parallel "
            f"{args.expert_tensor_parallel_size} exceeds the {world_size // pp} ranks of a pipeline stage"
        )
    if args.train_iters is None:  # sample-based schedule, as Megatron converts it
        args.train_iters = args.train_samples // args.global_batch_size
        if args.train_iters < 1:
            raise UsageError(
                f"--train-samples {args.train_samples} is less than one global batch ({args.global_batch_size})"
            )
        args.lr_decay_iters = (
            args.lr_decay_samples // args.global_batch_size if args.lr_decay_samples else args.lr_decay_iters
        )
        args.lr_warmup_iters = args.lr_warmup_samples // args.global_batch_size
    if args.lr_decay_iters is None:
        args.lr_decay_iters = args.train_iters
    if args.lr_warmup_fraction is not None:
        args.lr_warmup_iters = int(args.lr_warmup_fraction * args.lr_decay_iters)
    if args.lr_wsd_decay_iters is None and args.lr_wsd_decay_samples:
        args.lr_wsd_decay_iters = args.lr_wsd_decay_samples // args.global_batch_size
    if args.lr_warmup_iters >= args.lr_decay_iters and args.lr_decay_style != "constant":
        raise UsageError(
            f"--lr-warmup-iters {args.lr_warmup_iters} must be less than --lr-decay-iters {args.lr_decay_iters}"
        )
