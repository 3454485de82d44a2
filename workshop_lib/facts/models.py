"""Model presets: the architectures the workshop talks about, as Megatron-LM flags.

Each preset is a dict of Megatron flags in job-YAML form (names without dashes, ``True`` for a
bare flag) so it can be pasted into a job's ``args`` or read by the planner
(``workshop plan --model NAME``).

Sources:
* GPT-3 family: Brown et al. 2020, Table 2.1 (seq 2048, GPT-2 BPE vocabulary 50257; GPT-3 13B's
  d_model is printed as 5140 in the paper, which is not divisible by its 40 heads: 5120 is used).
* ``narayanan-*``: Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM"), Table 1: heads, hidden size, layers; vocabulary 51,200 and
  sequence 2048 as in the paper. ``parameters_b`` is the paper's own parameter count (billions)
  and ``paper`` its tensor/pipeline sizes, GPU count, batch size and measured TFLOP/s per GPU.
* ``techpulse-7b``: the workshop's model, 32 layers, hidden 4096, 32 heads, seq 4096, with the
  Llama-2-7B block (RMSNorm, SwiGLU with ffn 11008, rotary positions, no biases, untied
  embeddings, 32k vocabulary).
* Llama 3.1 8B/70B/405B: Meta's model cards / ``config.json`` (GQA with 8 KV heads, vocab 128,256,
  rope; training sequence 8192).
* Mixtral 8x7B: Mistral AI's ``config.json`` (8 experts, top-2, expert ffn 14336, 8 KV heads).
"""

from __future__ import annotations

from typing import Any

_GPT: dict[str, Any] = {
    "seq-length": 2048,
    "max-position-embeddings": 2048,
    "vocab-size": 50257,
    "position-embedding-type": "learned_absolute",
    "normalization": "LayerNorm",
}


def _gpt(layers: int, hidden: int, heads: int, **extra: Any) -> dict[str, Any]:
    return {"num-layers": layers, "hidden-size": hidden, "num-attention-heads": heads, **_GPT, **extra}


_LLAMA: dict[str, Any] = {
    "position-embedding-type": "rope",
    "normalization": "RMSNorm",
    "swiglu": True,
    "disable-bias-linear": True,
    "untie-embeddings-and-output-weights": True,
}


def _narayanan(
    layers: int,
    hidden: int,
    heads: int,
    params_b: float,
    tp: int,
    pp: int,
    gpus: int,
    batch: int,
    tflops: float,
) -> dict[str, Any]:
    return {
        "num-layers": layers,
        "hidden-size": hidden,
        "num-attention-heads": heads,
        "seq-length": 2048,
        "max-position-embeddings": 2048,
        "vocab-size": 51200,
        "_meta": {
            "parameters_b": params_b,
            "paper": {
                "tensor_model_parallel_size": tp,
                "pipeline_model_parallel_size": pp,
                "gpus": gpus,
                "global_batch_size": batch,
                # Achieved teraFLOP/s per GPU on Selene (A100 80GB), counting one recomputation pass.
                "tflops_per_gpu": tflops,
            },
        },
    }


PRESETS: dict[str, dict[str, Any]] = {
    "gpt-125m": _gpt(12, 768, 12),
    "gpt-350m": _gpt(24, 1024, 16),
    "gpt-760m": _gpt(24, 1536, 16),
    "gpt-1.3b": _gpt(24, 2048, 16),
    "gpt-2.7b": _gpt(32, 2560, 32),
    "gpt-6.7b": _gpt(32, 4096, 32),
    "gpt-13b": _gpt(40, 5120, 40),
    "gpt-175b": _gpt(96, 12288, 96),
    "narayanan-1.7b": _narayanan(24, 2304, 24, 1.7, 1, 1, 32, 512, 137),
    "narayanan-3.6b": _narayanan(30, 3072, 32, 3.6, 2, 1, 64, 512, 138),
    "narayanan-7.5b": _narayanan(36, 4096, 32, 7.5, 4, 1, 128, 512, 142),
    "narayanan-18.4b": _narayanan(40, 6144, 48, 18.4, 8, 1, 256, 1024, 135),
    "narayanan-39.1b": _narayanan(48, 8192, 64, 39.1, 8, 2, 512, 1536, 138),
    "narayanan-76.1b": _narayanan(60, 10240, 80, 76.1, 8, 4, 1024, 1792, 140),
    "narayanan-145.6b": _narayanan(80, 12288, 96, 145.6, 8, 8, 1536, 2304, 148),
    "narayanan-310.1b": _narayanan(96, 16384, 128, 310.1, 8, 16, 1920, 2160, 155),
    "narayanan-529.6b": _narayanan(105, 20480, 128, 529.6, 8, 35, 2520, 2520, 163),
    "narayanan-1t": _narayanan(128, 25600, 160, 1008.0, 8, 64, 3072, 3072, 163),
    "techpulse-7b": {
        "num-layers": 32,
        "hidden-size": 4096,
        "num-attention-heads": 32,
        "ffn-hidden-size": 11008,
        "seq-length": 4096,
        "max-position-embeddings": 4096,
        "vocab-size": 32000,
        **_LLAMA,
    },
    "llama3.1-8b": {
        "num-layers": 32,
        "hidden-size": 4096,
        "num-attention-heads": 32,
        "group-query-attention": True,
        "num-query-groups": 8,
        "ffn-hidden-size": 14336,
        "seq-length": 8192,
        "max-position-embeddings": 131072,
        "vocab-size": 128256,
        **_LLAMA,
    },
    "llama3.1-70b": {
        "num-layers": 80,
        "hidden-size": 8192,
        "num-attention-heads": 64,
        "group-query-attention": True,
        "num-query-groups": 8,
        "ffn-hidden-size": 28672,
        "seq-length": 8192,
        "max-position-embeddings": 131072,
        "vocab-size": 128256,
        **_LLAMA,
    },
    "llama3.1-405b": {
        "num-layers": 126,
        "hidden-size": 16384,
        "num-attention-heads": 128,
        "group-query-attention": True,
        "num-query-groups": 8,
        "ffn-hidden-size": 53248,
        "seq-length": 8192,
        "max-position-embeddings": 131072,
        "vocab-size": 128256,
        **_LLAMA,
    },
    "mixtral-8x7b": {
        "num-layers": 32,
        "hidden-size": 4096,
        "num-attention-heads": 32,
        "group-query-attention": True,
        "num-query-groups": 8,
        "ffn-hidden-size": 14336,
        "seq-length": 4096,
        "max-position-embeddings": 32768,
        "vocab-size": 32000,
        "num-experts": 8,
        "moe-router-topk": 2,
        "moe-ffn-hidden-size": 14336,
        **_LLAMA,
    },
}


def preset(name: str) -> dict[str, Any]:
    """The flags of preset ``name`` (a copy, without the ``_meta`` entry)."""
    key = name.lower()
    if key not in PRESETS:
        from ..errors import UsageError

        raise UsageError(f"--model: unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return {k: v for k, v in PRESETS[key].items() if not k.startswith("_")}


def preset_meta(name: str) -> dict[str, Any]:
    return dict(PRESETS[name.lower()].get("_meta", {}))
