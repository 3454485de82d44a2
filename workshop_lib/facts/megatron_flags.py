"""Megatron-LM's training flags, once: the table every parser, reader and check of the kit is made from.

Why one table: the trainer (``python -m workshop_lib.train``), ``workshop plan`` and the job YAML's
``args`` all take Megatron-LM's flags, and each used to describe them itself, so a choice (``rope``,
``RMSNorm``, ``block``...) or a type could be right in one place and stale in another. Now
:mod:`workshop_lib.train.arguments` builds its argparse parser from :data:`FLAGS`, ``workshop plan``
builds its own from the rows it accepts, the planner's readers (``plan/config.py``) fill
``ModelConfig``/``ParallelConfig`` from each row's ``planner`` attribute, ``plan --search`` leaves open
the rows marked ``searched``, and the job file's type checks (``launch/jobspec.py``) read each row's
type. A value judged "a number" anywhere (a blend weight, a negative multi-value item) is judged by
:func:`is_number`, and a layout's flags become ``--flag=value`` strings only in :func:`format_flags`.

Each row is Megatron-LM's spelling (no leading dashes), its type (``int``, ``float``, ``str``,
``bool`` for a bare ``store_true`` flag, ``list`` for ``nargs='*'``), its default and choices as
Megatron-LM's ``megatron/training/arguments.py`` declares them (the trainer's exceptions are noted on
their rows), the argument group Megatron-LM files it under, the trainer's help line, and ``use``:
which of the kit's commands accept it (``train``: the trainer; ``plan``: ``workshop plan``; ``job``:
the job YAML's ``args``, type-checked before anything is rendered).

How to add a flag: add one ``_f(...)`` row in its group, in the order ``--help`` should list it.
A trainer flag gets ``use=TJ`` (the default) and is then parsed, type-checked in job files and listed
by ``--help`` with no other edit; the trainer still has to act on it (``train/``). A flag the planner
models also gets ``use=TPJ`` and ``planner="model.<ModelConfig attribute>"`` or
``"parallel.<ParallelConfig attribute>"`` (``sets=`` for a bare flag that stores something other than
True, e.g. ``--disable-bias-linear`` sets ``add_bias_linear`` to False), and ``searched=True`` if
``plan --search`` should try its values when the user leaves it out. ``shape=True`` marks a flag that
decides a checkpoint's tensor shapes: the trainer refuses to load a checkpoint saved with another
value (``train/checkpointing.check_model_flags``). Standard library only: this is the bottom floor,
and ``--help`` must stay instant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

# Argument groups, named as Megatron-LM's ``_add_*_args`` functions name theirs.
NET = "network size"
MOE = "mixture of experts"
PAR = "parallelism"
TRAIN = "training"
LR = "learning rate and optimizer"
PREC = "mixed precision"
DATA = "data and tokenizer"
CKPT = "checkpointing"
LOG = "logging and evaluation"

# Which commands accept a flag.
TRAINER, PLAN, JOB = "train", "plan", "job"
TJ = frozenset({TRAINER, JOB})
TPJ = frozenset({TRAINER, PLAN, JOB})
J = frozenset({JOB})


class Flag(NamedTuple):
    """One Megatron-LM flag and every use the kit makes of it.

    A NamedTuple rather than a dataclass: ``dataclasses`` pulls in ``inspect`` and ``ast``, which
    would add tens of milliseconds to every ``--help`` that reads this table.
    """

    name: str  # Megatron-LM's spelling, without the leading "--"
    type: type  # int | float | str | bool (a bare store_true flag) | list (nargs='*')
    group: str  # the argument group Megatron-LM files it under
    default: Any = None  # Megatron-LM's default (the trainer's where it differs, noted on the row)
    choices: tuple[str, ...] = ()
    help: str | None = None  # the trainer's --help line
    use: frozenset[str] = TJ  # the commands that accept it: TRAINER, PLAN, JOB
    planner: str | None = None  # "model.<attr>" / "parallel.<attr>" it fills; "model": read specially
    sets: Any = True  # for a bare flag: the value its planner attribute takes when it is given
    searched: bool = False  # plan --search tries its values when the user leaves it out
    aliases: tuple[str, ...] = ()  # other spellings the job YAML's planner reader accepts
    shape: bool = False  # it decides a checkpoint's tensor shapes: a run that loads one must match it

    @property
    def dest(self) -> str:
        """The argparse attribute name (``tensor_model_parallel_size``)."""
        return self.name.replace("-", "_")

    @property
    def config(self) -> str | None:
        """``"model"`` or ``"parallel"``: the planner config it belongs to (None: not modelled)."""
        return self.planner.split(".", 1)[0] if self.planner else None

    @property
    def attr(self) -> str | None:
        """The ModelConfig/ParallelConfig attribute it fills (None: none, or read specially)."""
        return self.planner.split(".", 1)[1] if self.planner and "." in self.planner else None


def _f(name: str, type: type, group: str, **kw: Any) -> Flag:
    return Flag(name, type, group, **kw)


# One row per flag, in Megatron-LM's groups and the order the trainer's --help lists them.
# fmt: off
FLAGS: tuple[Flag, ...] = (
    # network size
    _f("num-layers", int, NET, use=TPJ, planner="model.num_layers", shape=True),
    _f("hidden-size", int, NET, use=TPJ, planner="model.hidden_size", shape=True),
    _f("ffn-hidden-size", int, NET, use=TPJ, planner="model.ffn_hidden_size", help="default 4*hidden (SwiGLU: 8/3*hidden)", shape=True),
    _f("num-attention-heads", int, NET, use=TPJ, planner="model.num_attention_heads", shape=True),
    _f("kv-channels", int, NET, use=TPJ, planner="model.kv_channels", help="default hidden/heads", shape=True),
    _f("group-query-attention", bool, NET, use=TPJ, planner="model",
       help="use grouped-query attention (with --num-query-groups)"),
    _f("num-query-groups", int, NET, default=1, use=TPJ, planner="model.num_query_groups", shape=True),
    _f("max-position-embeddings", int, NET, use=TPJ, planner="model.max_position_embeddings", help="default --seq-length"),
    _f("position-embedding-type", str, NET, default="learned_absolute", choices=("learned_absolute", "rope", "none"), use=TPJ, planner="model.position_embedding_type", shape=True),
    _f("use-rotary-position-embeddings", bool, NET, help="legacy spelling of --position-embedding-type rope"),
    _f("rotary-base", int, NET, default=10000),
    _f("rotary-percent", float, NET, default=1.0),
    _f("use-rope-scaling", bool, NET, help="apply Llama 3.x RoPE frequency scaling"),
    _f("rope-scaling-factor", float, NET, default=8.0),
    _f("rotary-seq-len-interpolation-factor", float, NET,
       help="linear RoPE position interpolation: positions divided by this factor"),
    _f("make-vocab-size-divisible-by", int, NET, default=128, use=TPJ, planner="model.make_vocab_size_divisible_by"),
    _f("normalization", str, NET, default="LayerNorm", choices=("LayerNorm", "RMSNorm"), use=TPJ, planner="model.normalization", shape=True),
    _f("norm-epsilon", float, NET, default=1e-05),
    _f("swiglu", bool, NET, use=TPJ, planner="model.swiglu", help="SwiGLU MLP", shape=True),
    _f("disable-bias-linear", bool, NET, use=TPJ, planner="model.add_bias_linear", sets=False,
       help="no bias in linear layers", shape=True),
    _f("add-qkv-bias", bool, NET, help="bias in the query/key/value projection only (Qwen2)", shape=True),
    _f("untie-embeddings-and-output-weights", bool, NET, use=TPJ, planner="model.untie_embeddings_and_output_weights",
       help="separate input embedding and output layer", shape=True),
    _f("qk-layernorm", bool, NET, use=TPJ, planner="model.qk_layernorm", help="normalise queries and keys", shape=True),
    _f("init-method-std", float, NET, default=0.02),
    _f("hidden-dropout", float, NET, default=0.1),
    _f("attention-dropout", float, NET, default=0.1),
    _f("attention-backend", str, NET, default="auto", choices=("flash", "fused", "unfused", "local", "auto"), use=TPJ, planner="model.attention_backend"),
    _f("use-flash-attn", bool, NET, help="legacy spelling of --attention-backend flash"),
    _f("transformer-impl", str, NET, default="transformer_engine", choices=("local", "transformer_engine"), use=TPJ, planner="model.transformer_impl"),
    _f("attention-softmax-in-fp32", bool, NET, help="softmax in fp32 (always on with the CPU attention)"),
    _f("apply-query-key-layer-scaling", bool, NET, help="scale Q*K^T by 1/layer number"),
    # mixture of experts
    _f("num-experts", int, MOE, use=TPJ, planner="model.num_experts", shape=True),
    _f("moe-router-topk", int, MOE, default=2, use=TPJ, planner="model.moe_router_topk"),
    _f("moe-ffn-hidden-size", int, MOE, use=TPJ, planner="model.moe_ffn_hidden_size", shape=True),
    _f("moe-shared-expert-intermediate-size", int, MOE, use=TPJ, planner="model.moe_shared_expert_intermediate_size"),
    _f("moe-layer-freq", int, MOE, default=1, use=TPJ, planner="model.moe_layer_freq",
       help="every N-th layer is an MoE layer"),
    _f("moe-router-load-balancing-type", str, MOE, default="aux_loss", choices=("aux_loss", "seq_aux_loss", "sinkhorn", "none")),
    _f("moe-aux-loss-coeff", float, MOE, default=0.0),
    _f("moe-token-dispatcher-type", str, MOE, default="allgather", choices=("allgather", "alltoall")),
    _f("moe-grouped-gemm", bool, MOE, help="grouped GEMM experts (needs Transformer Engine)"),
    _f("moe-router-pre-softmax", bool, MOE, use=J, planner="model.moe_router_pre_softmax",
       help="softmax before the top-k choice (Mixtral); planner only, the trainer lacks it"),
    # parallelism
    _f("tensor-model-parallel-size", int, PAR, default=1, use=TPJ, planner="parallel.tensor_model_parallel_size", searched=True, aliases=("tensor-parallel-size", "tp")),
    _f("pipeline-model-parallel-size", int, PAR, default=1, use=TPJ, planner="parallel.pipeline_model_parallel_size", searched=True, aliases=("pipeline-parallel-size",)),
    _f("context-parallel-size", int, PAR, default=1, use=TPJ, planner="parallel.context_parallel_size", searched=True),
    _f("expert-model-parallel-size", int, PAR, default=1, use=TPJ, planner="parallel.expert_model_parallel_size", searched=True),
    _f("expert-tensor-parallel-size", int, PAR, use=TPJ, planner="parallel.expert_tensor_parallel_size"),
    _f("virtual-pipeline-model-parallel-size", int, PAR),
    _f("num-layers-per-virtual-pipeline-stage", int, PAR, use=TPJ, planner="parallel.num_layers_per_virtual_pipeline_stage", searched=True, aliases=("num-layers-per-virtual-stage",)),
    _f("data-parallel-size", int, PAR, help="derived from the world size; checked if given"),
    _f("sequence-parallel", bool, PAR, use=TPJ, planner="parallel.sequence_parallel", searched=True,
       help="sequence parallelism (with TP > 1)"),
    _f("use-distributed-optimizer", bool, PAR, use=TPJ, planner="parallel.use_distributed_optimizer", searched=True,
       help="shard optimizer state over data-parallel ranks"),
    _f("overlap-grad-reduce", bool, PAR, help="overlap the gradient reduce with the backward pass"),
    _f("overlap-param-gather", bool, PAR, help="overlap the parameter all-gather (distributed optimizer)"),
    _f("distributed-backend", str, PAR, choices=("nccl", "gloo"), help="default: nccl on GPUs, gloo on CPU"),
    # Megatron-LM's is an int; a fraction (0.1 = 6 s) lets a test see a hang time out.
    _f("distributed-timeout-minutes", float, PAR, default=10, help="collective timeout; fractions allowed (0.1 = 6 s)"),
    # training
    _f("micro-batch-size", int, TRAIN, default=1, use=TPJ, planner="parallel.micro_batch_size", searched=True),
    _f("global-batch-size", int, TRAIN, use=TPJ, planner="parallel.global_batch_size",
       help="default micro-batch * data-parallel"),
    _f("train-iters", int, TRAIN),
    _f("train-samples", int, TRAIN),
    _f("seq-length", int, TRAIN, use=TPJ, planner="model.seq_length"),
    _f("seed", int, TRAIN, default=1234),
    _f("exit-interval", int, TRAIN, help="stop (and save) after this iteration"),
    _f("exit-signal-handler", bool, TRAIN, help="save and exit on SIGTERM (always on in this trainer)"),
    # Megatron-LM's store_false spelling: checking is the default there and here
    _f("no-check-for-nan-in-loss-and-grad", bool, TRAIN,
       help="keep training through a NaN/Inf loss or gradient norm (default: every rank stops at the first, saving nothing)"),
    _f("check-for-nan-in-loss-and-grad", bool, TRAIN,
       help="older Megatron-LM's spelling of the default: stop at the first NaN/Inf loss"),
    _f("recompute-granularity", str, TRAIN, choices=("full", "selective"), use=TPJ, planner="parallel.recompute_granularity", searched=True),
    _f("recompute-method", str, TRAIN, choices=("uniform", "block"), use=TPJ, planner="parallel.recompute_method"),
    _f("recompute-num-layers", int, TRAIN, use=TPJ, planner="parallel.recompute_num_layers"),
    _f("no-bias-swiglu-fusion", bool, TRAIN,
       help="SwiGLU in plain PyTorch ops instead of megatron-core's fused kernel (GPUs; keeps 4 bytes x ffn more a token)"),
    _f("no-bias-gelu-fusion", bool, TRAIN, help="bias + GELU in plain PyTorch ops instead of megatron-core's fused kernel"),
    _f("recompute-activations", bool, TRAIN, help="legacy spelling of --recompute-granularity selective"),
    _f("checkpoint-activations", bool, TRAIN, help="legacy spelling of --recompute-granularity full"),
    _f("checkpoint-num-layers", int, TRAIN, help="legacy --recompute-num-layers"),
    # learning rate and optimizer
    _f("optimizer", str, LR, default="adam", choices=("adam", "sgd")),
    _f("lr", float, LR),
    _f("min-lr", float, LR, default=0.0),
    _f("lr-decay-style", str, LR, default="linear", choices=("constant", "linear", "cosine", "inverse-square-root", "WSD")),
    _f("lr-decay-iters", int, LR),
    _f("lr-decay-samples", int, LR),
    _f("lr-wsd-decay-style", str, LR, default="exponential", choices=("exponential", "linear", "cosine")),
    _f("lr-wsd-decay-iters", int, LR),
    _f("lr-wsd-decay-samples", int, LR),
    _f("lr-warmup-iters", int, LR, default=0),
    _f("lr-warmup-samples", int, LR, default=0),
    _f("lr-warmup-fraction", float, LR),
    _f("lr-warmup-init", float, LR, default=0.0),
    _f("weight-decay", float, LR, default=0.01),
    _f("start-weight-decay", float, LR),
    _f("end-weight-decay", float, LR),
    _f("weight-decay-incr-style", str, LR, default="constant", choices=("constant", "linear", "cosine")),
    _f("clip-grad", float, LR, default=1.0),
    _f("adam-beta1", float, LR, default=0.9),
    _f("adam-beta2", float, LR, default=0.999),
    _f("adam-eps", float, LR, default=1e-08),
    _f("sgd-momentum", float, LR, default=0.9),
    _f("override-opt_param-scheduler", bool, LR, help="take the schedule from these flags, not the checkpoint"),
    _f("use-checkpoint-opt_param-scheduler", bool, LR, help="take the schedule from the checkpoint"),
    # mixed precision
    _f("bf16", bool, PREC, use=TPJ, planner="parallel.bf16",
       help="bf16 weights and activations (fp32 main weights and grads)"),
    _f("fp16", bool, PREC, use=TPJ, planner="parallel.fp16", help="fp16 with dynamic loss scaling"),
    _f("loss-scale", float, PREC, help="static loss scale (fp16)"),
    _f("initial-loss-scale", float, PREC, default=2.0**32),
    _f("fp8-format", str, PREC, choices=("e4m3", "hybrid"), use=TPJ, planner="parallel.fp8_format"),
    _f("fp8-amax-history-len", int, PREC, default=1),
    _f("fp8-amax-compute-algo", str, PREC, default="most_recent", choices=("most_recent", "max")),
    _f("accumulate-allreduce-grads-in-fp32", bool, PREC, help="fp32 gradient accumulation and all-reduce"),
    # data and tokenizer
    _f("data-path", list, DATA, help="PREFIX, or W1 PREFIX1 W2 PREFIX2 ..."),
    _f("train-data-path", list, DATA, use=J,
       help="Megatron-LM's own blend per split; this trainer reads --data-path with --split"),
    _f("valid-data-path", list, DATA, use=J,
       help="Megatron-LM's own blend per split; this trainer reads --data-path with --split"),
    _f("test-data-path", list, DATA, use=J,
       help="Megatron-LM's own blend per split; this trainer reads --data-path with --split"),
    _f("split", str, DATA, default="969, 30, 1"),
    _f("mock-data", bool, DATA, help="synthetic tokens instead of --data-path"),
    _f("data-cache-path", str, DATA),
    _f("num-workers", int, DATA, default=2),
    _f("tokenizer-type", str, DATA, choices=("HuggingFaceTokenizer", "GPT2BPETokenizer", "TikTokenizer", "NullTokenizer")),
    _f("tokenizer-model", str, DATA, use=TPJ),
    _f("vocab-file", str, DATA),
    _f("merge-file", str, DATA),
    _f("vocab-size", int, DATA, use=TPJ, planner="model.vocab_size"),
    _f("reset-position-ids", bool, DATA, help="restart position ids at each document"),
    _f("reset-attention-mask", bool, DATA, help="block attention across documents (not supported)"),
    _f("eod-mask-loss", bool, DATA, help="no loss on end-of-document tokens"),
    # checkpointing
    _f("save", str, CKPT),
    _f("load", str, CKPT),
    _f("save-interval", int, CKPT),
    _f("no-load-optim", bool, CKPT, help="do not load optimizer state"),
    _f("no-load-rng", bool, CKPT, help="do not load RNG state"),
    _f("no-save-optim", bool, CKPT, help="do not save optimizer state"),
    _f("no-save-rng", bool, CKPT, help="do not save RNG state"),
    _f("finetune", bool, CKPT, help="load weights only and start at iteration 0"),
    _f("pretrained-checkpoint", str, CKPT,
       help="start from these weights (workshop import-hf's --save) when --load holds no checkpoint yet"),
    _f("ckpt-format", str, CKPT, default="torch_dist", choices=("torch_dist",)),
    # logging and evaluation
    _f("log-interval", int, LOG, default=100),
    _f("eval-interval", int, LOG, default=1000),
    _f("eval-iters", int, LOG, default=100),
    _f("tensorboard-dir", str, LOG),
    _f("tensorboard-log-interval", int, LOG, default=1),
    _f("log-throughput", bool, LOG, help="print TFLOP/s/GPU (always printed by this trainer)"),
    _f("log-timers-to-tensorboard", bool, LOG, help="write iteration time and throughput to TensorBoard"),
    _f("log-validation-ppl-to-tensorboard", bool, LOG, help="write validation perplexity to TensorBoard"),
    _f("wandb-project", str, LOG),
    _f("wandb-entity", str, LOG),
    _f("wandb-exp-name", str, LOG),
    _f("wandb-save-dir", str, LOG),
)
# fmt: on

BY_NAME: dict[str, Flag] = {f.name: f for f in FLAGS}
ALIASES: dict[str, str] = {a: f.name for f in FLAGS for a in f.aliases}


def flag(name: str) -> Flag:
    """The row of ``name`` (no leading dashes); KeyError for a flag not in the table."""
    return BY_NAME[name]


def accepted_by(command: str) -> tuple[Flag, ...]:
    """The rows a command accepts (``TRAINER``, ``PLAN`` or ``JOB``), in table order."""
    return tuple(f for f in FLAGS if command in f.use)


def choices(name: str) -> tuple[str, ...]:
    """The allowed values of a choice flag, in Megatron-LM's order."""
    return BY_NAME[name].choices


def is_number(text: Any) -> bool:
    """Whether a flag value reads as a number, as Megatron-LM's ``float()`` would read it.

    The one test for "is this a number": a blend weight in ``--data-path W1 P1 W2 P2``, a negative
    value among a multi-value flag's items (not a flag), a ``float`` flag's value in a job file.
    """
    if isinstance(text, bool):
        return False
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def typed_value(name: str, text: str) -> Any:
    """A ``--name=text`` value as the job YAML writes it: a number where it reads as one, else the text.

    ``str`` and ``bool`` flags keep their text (``--tokenizer-model=123`` is a path); other flags,
    including ones not in the table, become an int, else a float, else stay text.
    """
    row = BY_NAME.get(name)
    if row is not None and row.type in (str, bool):
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_argv(tokens: Iterable[str]) -> dict[str, Any]:
    """Command-line tokens (``["--num-layers", "32", "--swiglu", "--lr=3e-5"]``) in job-YAML form.

    ``--flag value``, ``--flag=value`` and a bare ``--flag`` (True); each value typed by
    :func:`typed_value`, a ``list`` flag's values kept as a list. The inverse of :func:`format_flags`
    for what ``workshop import-hf`` records and ``workshop plan --hf-config`` reads.
    """
    out: dict[str, Any] = {}
    key: str | None = None
    for tok in tokens:
        if tok.startswith("--"):
            key, eq, value = tok[2:].partition("=")
            out[key] = typed_value(key, value) if eq else True
            key = None if eq else key
        elif key is None:
            raise ValueError(f"{tok!r} does not follow a --flag")
        elif key in BY_NAME and BY_NAME[key].type is list:
            out[key] = [*(out[key] if isinstance(out[key], list) else []), tok]
        elif out[key] is True:
            out[key] = typed_value(key, tok)
        else:
            raise ValueError(f"--{key} takes one value, got another: {tok!r}")
    return out


def format_flags(flags: Mapping[str, Any]) -> list[str]:
    """``{"tensor-model-parallel-size": 2, "bf16": True}`` -> ``["--tensor-model-parallel-size=2", "--bf16"]``.

    The one place a layout's flags become strings (the plan's ``megatron_args``, its text report):
    ``True`` is a bare flag, ``False``/``None`` are left out, anything else is ``--flag=value``.
    """
    out: list[str] = []
    for key, value in flags.items():
        if value is True:
            out.append(f"--{key}")
        elif value is not False and value is not None:
            out.append(f"--{key}={value}")
    return out


def names(rows: Iterable[Flag]) -> list[str]:
    """The names of some rows (for messages and tests)."""
    return [f.name for f in rows]
