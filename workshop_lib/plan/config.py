"""The planner's inputs: a model, a parallel layout and a cluster, read from Megatron flags.

Everything the planner computes starts from three frozen dataclasses. They are filled from the
job-YAML form of Megatron-LM's flags (``{"num-layers": 32, "bf16": True, ...}``) by
:func:`model_from_args` and :func:`parallel_from_args` (after :func:`normalize_args`), with Megatron-LM's own defaults where a flag is absent
(Megatron-LM's ``megatron/training/arguments.py``):

* ``--ffn-hidden-size``: ``4 * hidden``; with ``--swiglu`` ``int(4 * hidden * 2 / 3 / 64) * 64``;
* ``--kv-channels``: ``hidden // heads``; ``--num-query-groups``: the number of heads unless
  ``--group-query-attention`` is given (then Megatron's default is 1);
* ``--max-position-embeddings``: required by Megatron; the planner uses ``--seq-length``;
* ``--make-vocab-size-divisible-by 128``: the vocabulary is padded to a multiple of ``128 * TP``;
* LayerNorm, learned absolute positions, GELU, biases on, tied embeddings, fp32 (no ``--bf16``);
* MoE: ``--moe-router-topk 2``, ``--moe-ffn-hidden-size`` = ``--ffn-hidden-size``, every layer MoE;
* ``--micro-batch-size 1``, ``--global-batch-size`` = micro batch x data-parallel size;
* ``--expert-tensor-parallel-size`` = ``--tensor-model-parallel-size``.

Nothing here imports anything heavier than the standard library.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..facts import megatron_flags

# When neither --vocab-size nor a readable tokenizer is given: the GPT-2 BPE vocabulary, which is
# what Megatron-LM's GPT examples (GPT2BPETokenizer) use.
DEFAULT_VOCAB_SIZE = 50257


@functools.lru_cache(maxsize=256)
def _moe_pattern(num_layers: int, is_moe: bool, freq: int) -> list[bool]:
    return [is_moe and i % freq == 0 for i in range(num_layers)]


@dataclass(frozen=True)
class ModelConfig:
    """A GPT model as megatron-core builds it (``GPTModel`` + transformer layer spec)."""

    num_layers: int
    hidden_size: int
    num_attention_heads: int
    seq_length: int
    vocab_size: int = DEFAULT_VOCAB_SIZE
    num_query_groups: int | None = None  # None: = heads (multi-head attention)
    kv_channels: int | None = None  # None: hidden // heads
    ffn_hidden_size: int | None = None  # None: Megatron's default (4h, or the SwiGLU rule)
    max_position_embeddings: int | None = None  # None: seq_length
    make_vocab_size_divisible_by: int = 128
    position_embedding_type: str = "learned_absolute"  # choices: facts/megatron_flags.py
    normalization: str = "LayerNorm"  # choices: facts/megatron_flags.py
    swiglu: bool = False
    add_bias_linear: bool = True
    untie_embeddings_and_output_weights: bool = False
    attention_backend: str = "auto"  # choices: facts/megatron_flags.py
    # "local": megatron-core's local layers (the trainer on GPUs without Transformer Engine), whose
    # unfused attention keeps its softmax in fp32
    transformer_impl: str = "transformer_engine"  # choices: facts/megatron_flags.py
    num_experts: int | None = None
    moe_router_topk: int = 2
    moe_ffn_hidden_size: int | None = None
    moe_shared_expert_intermediate_size: int | None = None
    moe_layer_freq: int = 1
    qk_layernorm: bool = False
    moe_router_pre_softmax: bool = False
    name: str = "custom"
    notes: tuple[str, ...] = ()  # how flags were interpreted (shown in the plan's details)

    # Derived values, resolved as Megatron resolves them.
    @property
    def heads(self) -> int:
        return self.num_attention_heads

    @property
    def groups(self) -> int:
        return self.num_query_groups or self.num_attention_heads

    @property
    def head_dim(self) -> int:
        return self.kv_channels or self.hidden_size // self.num_attention_heads

    @property
    def ffn(self) -> int:
        if self.ffn_hidden_size:
            return self.ffn_hidden_size
        if self.swiglu:
            return int((4 * self.hidden_size * 2 / 3) / 64) * 64
        return 4 * self.hidden_size

    @property
    def moe_ffn(self) -> int:
        return self.moe_ffn_hidden_size or self.ffn

    @property
    def max_positions(self) -> int:
        return self.max_position_embeddings or self.seq_length

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layer_pattern()) if self.is_moe else 0

    def moe_layer_pattern(self) -> list[bool]:
        return _moe_pattern(self.num_layers, self.is_moe, self.moe_layer_freq)

    def padded_vocab(self, tp: int = 1) -> int:
        """Megatron's ``_vocab_size_with_padding``: round up to ``divisible_by * TP``."""
        multiple = self.make_vocab_size_divisible_by * tp
        return int(math.ceil(self.vocab_size / multiple) * multiple)

    # The TP size the vocabulary was padded for (set by the planner); FLOPs use this padding.
    @property
    def padded_vocab_for_flops(self) -> int:
        return self.padded_vocab(self.vocab_pad_tp)

    vocab_pad_tp: int = 1

    def with_(self, **kw: Any) -> ModelConfig:
        return replace(self, **kw)


@dataclass(frozen=True)
class ParallelConfig:
    """Parallel layout, batch and precision flags (Megatron's names, underscores)."""

    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 1
    expert_model_parallel_size: int = 1
    expert_tensor_parallel_size: int | None = None  # None: = TP
    num_layers_per_virtual_pipeline_stage: int | None = None
    sequence_parallel: bool = False
    use_distributed_optimizer: bool = False
    recompute_granularity: str | None = None  # None: no recompute; choices: facts/megatron_flags.py
    recompute_method: str | None = None  # None: not given; choices: the flag table
    recompute_num_layers: int | None = None
    micro_batch_size: int = 1
    global_batch_size: int | None = None  # None: micro x DP (Megatron's default)
    bf16: bool = False
    fp16: bool = False
    fp8_format: str | None = None  # None: no FP8; choices: the flag table

    @property
    def tp(self) -> int:
        return self.tensor_model_parallel_size

    @property
    def pp(self) -> int:
        return self.pipeline_model_parallel_size

    @property
    def cp(self) -> int:
        return self.context_parallel_size

    @property
    def ep(self) -> int:
        return self.expert_model_parallel_size

    @property
    def etp(self) -> int:
        return self.expert_tensor_parallel_size or self.tensor_model_parallel_size

    def vpp(self, num_layers: int) -> int:
        """Virtual stages per pipeline rank (1 without interleaving)."""
        n = self.num_layers_per_virtual_pipeline_stage
        if not n or self.pp <= 1:
            return 1
        # (Uneven splits are reported by the validity rules; the arithmetic uses the whole part.)
        return max(1, (num_layers // self.pp) // n)

    def with_(self, **kw: Any) -> ParallelConfig:
        return replace(self, **kw)


@dataclass(frozen=True)
class ClusterConfig:
    """GPUs: which kind, how many per node, how many nodes, and the node type for its network."""

    gpu: str = "h100-80gb"
    gpus_per_node: int = 8
    nodes: int = 1
    instance_type: str | None = None  # None: the first instance in the table with this GPU

    @property
    def world_size(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class PlanInput:
    model: ModelConfig
    parallel: ParallelConfig
    cluster: ClusterConfig
    notes: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------------------------------------
# Reading Megatron flags in job-YAML form.

# The flags each config reads are the rows of the flag table with a ``planner`` attribute
# (``facts/megatron_flags.py``); so are their types, choices and the aliases the reader accepts.
MODEL_FLAGS: tuple[megatron_flags.Flag, ...] = tuple(
    f for f in megatron_flags.FLAGS if f.config == "model" and f.attr
)
PARALLEL_FLAGS: tuple[megatron_flags.Flag, ...] = tuple(
    f for f in megatron_flags.FLAGS if f.config == "parallel" and f.attr
)
ALIASES = megatron_flags.ALIASES

REQUIRED_MODEL_FLAGS = ("num-layers", "hidden-size", "num-attention-heads", "seq-length")


def normalize_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Flag names without dashes in front, ``_`` spelled ``-``; ``False``/``None`` flags dropped."""
    out: dict[str, Any] = {}
    for key, value in (args or {}).items():
        k = str(key).lstrip("-").replace("_", "-")
        k = ALIASES.get(k, k)
        if value is None or value is False:
            continue
        out[k] = value
    return out


def _int(flag: str, value: Any) -> int:
    if isinstance(value, bool):
        raise UsageError(f"args.{flag}: expected an integer, got {value!r}; give a number, e.g. {flag}: 2")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"args.{flag}: expected an integer, got {value!r}; give a number") from None
    if not f.is_integer():
        raise UsageError(f"args.{flag}: expected an integer, got {value!r}; give a whole number")
    return int(f)


def _bool(flag: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", ""):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "no"):
        return False
    if isinstance(value, int):
        return bool(value)
    raise UsageError(f"args.{flag}: expected true/false for a bare flag, got {value!r}")


def _choice(flag: str, value: Any, choices: tuple[str, ...]) -> str:
    v = str(value)
    for c in choices:
        if v.lower() == c.lower():
            return c
    raise UsageError(f"args.{flag}: {v!r} is not one of {', '.join(choices)}")


def tokenizer_vocab_size(path: str | Path) -> int | None:
    """Vocabulary size of a Hugging Face ``tokenizer.json`` (or a directory holding one), cheaply.

    Megatron's HuggingFaceTokenizer uses ``len(tokenizer)``: the model vocabulary plus added
    tokens that are not already in it. Returns None when the file cannot be read.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        vocab = data["model"]["vocab"]
        ids = set(vocab.values()) if isinstance(vocab, dict) else set(range(len(vocab)))
        for tok in data.get("added_tokens", []):
            ids.add(tok["id"])
        return len(ids)
    except Exception:  # noqa: BLE001 - any unreadable tokenizer means "unknown"
        return None


def model_from_args(
    args: Mapping[str, Any], base: ModelConfig | None = None
) -> tuple[ModelConfig, list[str]]:
    """A :class:`ModelConfig` from normalized flags (a preset ``base`` fills what is absent).

    Returns the config and the names of required flags that are missing.
    """
    kw = _read(args, MODEL_FLAGS)
    notes: list[str] = []
    gqa = "group-query-attention" in args and _bool("group-query-attention", args["group-query-attention"])
    if gqa:
        kw.setdefault("num_query_groups", kw.get("num_query_groups") or 1)
    elif "num_query_groups" in kw and (base is None or not base.num_query_groups):
        # Megatron uses --num-query-groups only together with --group-query-attention.
        kw.pop("num_query_groups")
        notes.append("--num-query-groups is ignored without --group-query-attention (as Megatron does)")
    if "vocab_size" not in kw and base is None:
        size = tokenizer_vocab_size(str(args["tokenizer-model"])) if "tokenizer-model" in args else None
        if size:
            kw["vocab_size"] = size
            notes.append(f"vocabulary size {size} read from the tokenizer {args['tokenizer-model']}")
        else:
            where = (
                f"the tokenizer {args['tokenizer-model']} is not readable here"
                if "tokenizer-model" in args
                else "no --vocab-size or tokenizer"
            )
            notes.append(
                f"vocabulary size assumed {DEFAULT_VOCAB_SIZE} (GPT-2): {where}; pass --vocab-size to be exact"
            )
    if notes:
        kw["notes"] = tuple(notes)
    missing: list[str] = []
    if base is not None:
        return replace(base, **kw), missing
    for flag in REQUIRED_MODEL_FLAGS:
        if megatron_flags.flag(flag).attr not in kw:
            missing.append(flag)
    if missing:
        kw.setdefault("num_layers", 1)
        kw.setdefault("hidden_size", 64)
        kw.setdefault("num_attention_heads", 1)
        kw.setdefault("seq_length", 1)
    return ModelConfig(**kw), missing


def parallel_from_args(args: Mapping[str, Any]) -> ParallelConfig:
    """A :class:`ParallelConfig` from normalized flags (Megatron's defaults where a flag is absent)."""
    return ParallelConfig(**_read(args, PARALLEL_FLAGS))


def _read(args: Mapping[str, Any], rows: tuple[megatron_flags.Flag, ...]) -> dict[str, Any]:
    """The config attributes the given rows fill from ``args``, each value checked by its row's type.

    A bare flag given as true sets its attribute to the row's ``sets`` value (``--disable-bias-linear``
    sets ``add_bias_linear=False``); given as false it leaves the default.
    """
    kw: dict[str, Any] = {}
    for row in rows:
        if row.name not in args:
            continue
        value = args[row.name]
        if row.type is bool:
            if _bool(row.name, value):
                kw[row.attr] = row.sets
        elif row.choices:
            kw[row.attr] = _choice(row.name, value, row.choices)
        elif row.type is int:
            kw[row.attr] = _int(row.name, value)
        else:  # a new kind of planner row must say how it is read, not be judged a whole number
            raise TypeError(f"--{row.name}: the planner has no reader for {row.type.__name__} flags")
    return kw
