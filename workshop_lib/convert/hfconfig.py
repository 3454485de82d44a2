"""A Hugging Face ``config.json`` as the Megatron flags that build the same model.

Standard library only (``workshop plan --hf-config`` uses it and must stay fast and torch-free).

Both spellings of rotary settings are read: the Hub's ``rope_theta`` + ``rope_scaling`` and
transformers 5's ``rope_parameters``. Only what megatron-core 0.16 can compute identically is
accepted; anything else (another rope type, Llama 3 scaling with other frequency bounds, biases on
the output projection, an activation other than SiLU...) is one :class:`UsageError` line naming the
field, because a converted model that silently computes something else is worse than none.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError

MAX_CONFIG_BYTES = 4 * 1024 * 1024

# architectures[0] -> family. Mistral and Llama share one layout; Qwen2 adds q/k/v biases;
# Mixtral replaces the MLP by top-k routed SwiGLU experts.
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "MixtralForCausalLM": "mixtral",
}

# megatron-core's Llama 3 scaling (RotaryEmbedding._apply_scaling) has these bounds built in;
# only the factor is a parameter.
MCORE_LLAMA3 = {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}


@dataclass
class ModelSpec:
    """The model a config.json describes, in the terms Megatron's flags use."""

    architecture: str
    family: str
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int
    max_position_embeddings: int
    rotary_base: int
    norm_epsilon: float
    vocab_size: int
    tied: bool
    qkv_bias: bool = False
    rope_scaling_factor: float | None = None  # Llama 3.x scaling (--use-rope-scaling)
    rope_linear_factor: float | None = None  # linear position interpolation
    num_experts: int | None = None
    moe_router_topk: int | None = None
    moe_aux_loss_coeff: float = 0.0
    sliding_window: int | None = None
    attention_dropout: float = 0.0
    init_method_std: float = 0.02
    warnings: list[str] = field(default_factory=list)

    def megatron_flags(self, make_vocab_size_divisible_by: int | None = None) -> list[str]:
        """argv tokens for the trainer (and ``workshop plan``) that build this model."""
        f: list[str] = [
            "--num-layers", str(self.num_layers),
            "--hidden-size", str(self.hidden_size),
            "--ffn-hidden-size", str(self.ffn_hidden_size),
            "--num-attention-heads", str(self.num_attention_heads),
        ]  # fmt: skip
        if self.num_query_groups != self.num_attention_heads:
            f += ["--group-query-attention", "--num-query-groups", str(self.num_query_groups)]
        if self.kv_channels * self.num_attention_heads != self.hidden_size:
            f += ["--kv-channels", str(self.kv_channels)]
        f += [
            "--max-position-embeddings", str(self.max_position_embeddings),
            "--position-embedding-type", "rope",
            "--rotary-base", str(self.rotary_base),
        ]  # fmt: skip
        if self.rope_scaling_factor is not None:
            f += ["--use-rope-scaling", "--rope-scaling-factor", _num(self.rope_scaling_factor)]
        if self.rope_linear_factor is not None:
            f += ["--rotary-seq-len-interpolation-factor", _num(self.rope_linear_factor)]
        f += [
            "--normalization", "RMSNorm",
            "--norm-epsilon", _num(self.norm_epsilon),
            "--swiglu",
            "--disable-bias-linear",
        ]  # fmt: skip
        if self.qkv_bias:
            f.append("--add-qkv-bias")
        if not self.tied:
            f.append("--untie-embeddings-and-output-weights")
        f += ["--vocab-size", str(self.vocab_size)]
        if make_vocab_size_divisible_by is not None:
            f += ["--make-vocab-size-divisible-by", str(make_vocab_size_divisible_by)]
        if self.num_experts:
            f += [
                "--num-experts", str(self.num_experts),
                "--moe-router-topk", str(self.moe_router_topk),
                "--moe-ffn-hidden-size", str(self.ffn_hidden_size),
                "--moe-aux-loss-coeff", _num(self.moe_aux_loss_coeff),
            ]  # fmt: skip
        f += [
            "--attention-dropout", _num(self.attention_dropout),
            "--hidden-dropout", "0.0",
            "--init-method-std", _num(self.init_method_std),
        ]  # fmt: skip
        return f

    def check_parallel(self, tp: int, pp: int, ep: int = 1) -> None:
        """Refuse a layout this model cannot take, naming the size that does not divide."""
        for name, v in (("--tensor-model-parallel-size", tp), ("--pipeline-model-parallel-size", pp)):
            if v < 1:
                raise UsageError(f"{name} must be >= 1, got {v}")
        if ep < 1:
            raise UsageError(f"--expert-model-parallel-size must be >= 1, got {ep}")
        if self.num_attention_heads % tp:
            raise UsageError(
                f"--tensor-model-parallel-size {tp} does not divide the model's {self.num_attention_heads} "
                "attention heads; pick a divisor"
            )
        if self.num_query_groups % tp:
            raise UsageError(
                f"--tensor-model-parallel-size {tp} does not divide the model's {self.num_query_groups} "
                f"key/value heads (num_key_value_heads); use a divisor of {self.num_query_groups}"
            )
        if self.num_layers % pp:
            raise UsageError(
                f"--pipeline-model-parallel-size {pp} does not divide the model's {self.num_layers} layers"
            )
        if ep > 1 and not self.num_experts:
            raise UsageError("--expert-model-parallel-size > 1 needs a mixture-of-experts model (Mixtral)")
        if self.num_experts and self.num_experts % ep:
            raise UsageError(
                f"--expert-model-parallel-size {ep} does not divide the model's {self.num_experts} experts"
            )


def _num(x: float) -> str:
    """A float as a short argv token (8.0 -> '8', 1e-05 -> '1e-05')."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def vocab_divisor(vocab_size: int, tp: int) -> int:
    """The ``--make-vocab-size-divisible-by`` that keeps the vocabulary unpadded at this TP.

    Megatron pads the embedding and output rows to a multiple of divisible-by x TP. Padded output
    rows are extra logits (0 for zero rows) that change the softmax, so the import picks the
    largest power of two up to Megatron's 128 for which no padding is needed; only a vocabulary
    that TP itself does not divide gets padded (with zero rows, trimmed again on export).
    """
    d = 128
    while d > 1 and vocab_size % (d * tp):
        d //= 2
    return d


def padded_vocab(vocab_size: int, divisor: int, tp: int) -> int:
    """megatron's ``_vocab_size_with_padding`` (train/model.py ``padded_vocab_size``)."""
    m = divisor * tp
    return ((vocab_size + m - 1) // m) * m


def read_config(path: str | Path) -> dict[str, Any]:
    """config.json as a dict; bounded in size; one line when it is missing or not JSON."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise UsageError(
            f"{p}: no config.json; pass a Hugging Face model folder (config.json + *.safetensors)"
        )
    size = p.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise UsageError(
            f"{p}: {size} bytes is not a model config (limit {MAX_CONFIG_BYTES}); check the file"
        )
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(cfg, dict):
        raise UsageError(f"{p}: expected a JSON object")
    return cfg


def _get(cfg: dict, src: str, key: str, kind: type, default: Any = ..., *, positive: bool = True) -> Any:
    v = cfg.get(key)
    if v is None:
        if default is ...:
            raise UsageError(f"{src}: field {key!r} is missing; it is required for this architecture")
        v = default
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int | float) or float(v) != int(v):
            raise UsageError(f"{src}: field {key!r} = {v!r} is not a whole number")
        v = int(v)
    elif kind is float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise UsageError(f"{src}: field {key!r} = {v!r} is not a number")
        v = float(v)
    if positive and kind in (int, float) and v <= 0:
        raise UsageError(f"{src}: field {key!r} = {v!r} must be positive")
    return v


def _rope(cfg: dict, src: str) -> tuple[float, dict | None]:
    """(theta, scaling dict or None) from either spelling."""
    params = cfg.get("rope_parameters")
    if isinstance(params, dict):
        if "rope_theta" not in params and "rope_theta" not in cfg:
            raise UsageError(f"{src}: rope_parameters has no 'rope_theta'")
        theta = params.get("rope_theta", cfg.get("rope_theta"))
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
        legacy = cfg.get("rope_scaling")
        if (
            legacy is not None
            and legacy != {}
            and (
                not isinstance(legacy, dict)
                or any(
                    scaling.get(k) != v
                    for k, v in legacy.items()
                    if k not in ("type", "rope_type", "rope_theta")
                )
                or legacy.get("rope_type", legacy.get("type")) != scaling.get("rope_type")
            )
        ):
            raise UsageError(
                f"{src}: rope_parameters and rope_scaling disagree ({params} vs {legacy}); keep one of them"
            )
    elif params is not None:
        raise UsageError(
            f"{src}: 'rope_parameters' is per-layer-type ({type(params).__name__}); only one set is supported"
        )
    else:
        theta = cfg.get("rope_theta", 10000.0)
        scaling = cfg.get("rope_scaling")
        if scaling is not None and not isinstance(scaling, dict):
            raise UsageError(f"{src}: 'rope_scaling' must be an object or null")
    theta = _get({"rope_theta": theta}, src, "rope_theta", float)
    if scaling is not None:
        rtype = scaling.get("rope_type", scaling.get("type", "default"))
        scaling = None if rtype == "default" else dict(scaling, rope_type=rtype)
    return theta, scaling


def spec_from_config(cfg: dict[str, Any], src: str = "config.json") -> ModelSpec:
    """The :class:`ModelSpec` of a Llama / Mistral / Qwen2 / Mixtral config; UsageError otherwise."""
    archs = cfg.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs else None
    if arch is None:
        by_type = {
            "llama": "LlamaForCausalLM",
            "mistral": "MistralForCausalLM",
            "qwen2": "Qwen2ForCausalLM",
            "mixtral": "MixtralForCausalLM",
        }
        arch = by_type.get(cfg.get("model_type"))
    if arch not in ARCHITECTURES:
        raise UsageError(
            f"{src}: architecture {arch or cfg.get('model_type')!r} is not supported; "
            f"import-hf converts {', '.join(ARCHITECTURES)}"
        )
    family = ARCHITECTURES[arch]
    hidden = _get(cfg, src, "hidden_size", int)
    heads = _get(cfg, src, "num_attention_heads", int)
    groups = _get(cfg, src, "num_key_value_heads", int, heads)
    head_dim = cfg.get("head_dim")
    head_dim = _get(cfg, src, "head_dim", int) if head_dim is not None else hidden // heads
    if head_dim * heads != hidden and cfg.get("head_dim") is None:
        raise UsageError(f"{src}: hidden_size {hidden} is not divisible by num_attention_heads {heads}")
    if heads % groups:
        raise UsageError(
            f"{src}: num_attention_heads {heads} is not divisible by num_key_value_heads {groups}"
        )
    act = cfg.get("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise UsageError(f"{src}: hidden_act {act!r} is not supported; Megatron's --swiglu is SiLU-gated")
    for key in ("attention_bias", "mlp_bias"):
        if cfg.get(key):
            raise UsageError(
                f"{src}: {key} = true is not supported (megatron-core adds biases to q/k/v only, "
                "with --add-qkv-bias, or to every linear layer)"
            )
    if cfg.get("partial_rotary_factor", 1.0) not in (1, 1.0, None):
        raise UsageError(f"{src}: partial_rotary_factor {cfg['partial_rotary_factor']} is not supported")
    theta, scaling = _rope(cfg, src)
    if not float(theta).is_integer():
        raise UsageError(
            f"{src}: rope_theta {theta} is not a whole number; Megatron's --rotary-base is an int"
        )
    spec = ModelSpec(
        architecture=arch,
        family=family,
        num_layers=_get(cfg, src, "num_hidden_layers", int),
        hidden_size=hidden,
        ffn_hidden_size=_get(cfg, src, "intermediate_size", int),
        num_attention_heads=heads,
        num_query_groups=groups,
        kv_channels=head_dim,
        max_position_embeddings=_get(cfg, src, "max_position_embeddings", int, 4096),
        rotary_base=int(theta),
        norm_epsilon=_get(cfg, src, "rms_norm_eps", float, 1e-6),
        vocab_size=_get(cfg, src, "vocab_size", int),
        tied=bool(cfg.get("tie_word_embeddings", False)),  # every family here defaults to untied
        qkv_bias=family == "qwen2",
        attention_dropout=_get(cfg, src, "attention_dropout", float, 0.0, positive=False),
        init_method_std=_get(cfg, src, "initializer_range", float, 0.02),
    )
    if scaling is not None:
        rtype = scaling["rope_type"]
        if rtype == "llama3":
            for k, want in MCORE_LLAMA3.items():
                got = scaling.get(k)
                if not isinstance(got, int | float) or isinstance(got, bool) or float(got) != want:
                    raise UsageError(
                        f"{src}: rope scaling llama3 with {k} = {got!r} cannot be expressed in "
                        f"megatron-core 0.16 (it fixes {k} = {want:g}); only 'factor' may differ"
                    )
            spec.rope_scaling_factor = _get(scaling, src + ": rope scaling", "factor", float)
        elif rtype == "linear":
            spec.rope_linear_factor = _get(scaling, src + ": rope scaling", "factor", float)
        else:
            raise UsageError(
                f"{src}: rope_type {rtype!r} is not supported (megatron-core computes 'default', "
                "'llama3' and 'linear' RoPE identically to transformers; not dynamic/yarn/longrope)"
            )
    window = cfg.get("sliding_window")
    if family in ("mistral", "mixtral", "qwen2") and window is not None:
        uses = cfg.get("use_sliding_window", family != "qwen2")
        if uses:
            spec.sliding_window = _get(cfg, src, "sliding_window", int)
            spec.warnings.append(
                f"{src}: sliding_window {spec.sliding_window}: Megatron attends over the whole sequence, "
                f"which equals the Hugging Face model only for --seq-length <= {spec.sliding_window}"
            )
    if family == "qwen2" and cfg.get("use_sliding_window"):
        raise UsageError(
            f"{src}: use_sliding_window = true (Qwen2 mixes sliding and full layers), which megatron-core "
            "does not reproduce; set it to false only if you train at or below the window"
        )
    if family == "mixtral":
        spec.num_experts = _get(cfg, src, "num_local_experts", int)
        spec.moe_router_topk = _get(cfg, src, "num_experts_per_tok", int)
        spec.moe_aux_loss_coeff = _get(cfg, src, "router_aux_loss_coef", float, 0.0, positive=False)
        if spec.moe_router_topk > spec.num_experts:
            raise UsageError(f"{src}: num_experts_per_tok exceeds num_local_experts")
    return spec


def load_spec(path: str | Path) -> tuple[ModelSpec, dict[str, Any]]:
    """Read ``path`` (a folder or its config.json) and map it; returns (spec, raw config)."""
    p = Path(path)
    src = str(p / "config.json" if p.is_dir() else p)
    cfg = read_config(p)
    return spec_from_config(cfg, src), cfg


def hf_config_from_spec(spec: ModelSpec, dtype: str) -> dict[str, Any]:
    """A config.json for a model described only by flags (trained from scratch): Llama or Qwen2."""
    arch = "Qwen2ForCausalLM" if spec.qkv_bias else "LlamaForCausalLM"
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "model_type": "qwen2" if spec.qkv_bias else "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.ffn_hidden_size,
        "num_hidden_layers": spec.num_layers,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_query_groups,
        "head_dim": spec.kv_channels,
        "hidden_act": "silu",
        "max_position_embeddings": spec.max_position_embeddings,
        "rms_norm_eps": spec.norm_epsilon,
        "rope_theta": float(spec.rotary_base),
        "tie_word_embeddings": spec.tied,
        "vocab_size": spec.vocab_size,
        "attention_dropout": 0.0,
        "initializer_range": spec.init_method_std,
        "torch_dtype": dtype,
    }
    if not spec.qkv_bias:
        cfg.update(attention_bias=False, mlp_bias=False)
    if spec.rope_scaling_factor is not None:
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": spec.rope_scaling_factor, **MCORE_LLAMA3}
    elif spec.rope_linear_factor is not None:
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": spec.rope_linear_factor}
    return cfg
