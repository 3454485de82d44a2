"""Floating-point operations per iteration, as Megatron-LM counts them.

:func:`megatron_flops` follows ``num_floating_point_operations(args, batch_size)`` of
Megatron-LM's ``megatron/training/training.py`` (the standard-Transformer branch, causal attention: only half
of the ``QK^T`` and ``(QK^T)V`` products are counted). It is the number Megatron divides by the
iteration time to log ``throughput per GPU (TFLOP/s/GPU)``, so a plan's MFU and a training log's
TFLOP/s are directly comparable. It counts model FLOPs: recomputation is not included.

:func:`narayanan_flops` is the closed form of Narayanan et al. 2021 (eq. 3),
``72 B s l h^2 (1 + s / 6h + V / 12 l h)`` for a GPT with ``ffn = 4h`` and full attention
(``s`` not halved: the paper counts the whole ``s x s`` score matrix). The paper's eq. 3,
``96 B s l h^2 (1 + s/6h + V/16lh)``, adds one more forward pass for activation recomputation;
72 is the same count without it. ``megatron_flops(..., causal=False)`` equals this closed form
for such a model.
"""

from __future__ import annotations

from .config import ModelConfig


def megatron_flops(m: ModelConfig, batch_size: int, *, causal: bool = True) -> float:
    """``num_floating_point_operations(args, batch_size)`` for a dense or MoE GPT.

    ``causal=False`` counts the full score matrix (the papers' convention) instead of half.
    """
    s, h = m.seq_length, m.hidden_size
    fwd_bwd, fma = 3, 2
    ffn_expansion = 3 if m.swiglu else 2
    n_moe = m.num_moe_layers
    n_dense = m.num_layers - n_moe
    routed_to = m.moe_router_topk if m.is_moe else 0
    shared = m.moe_shared_expert_intermediate_size or 0
    q = m.head_dim * m.heads
    kv = m.head_dim * m.groups
    self_attn = (
        fwd_bwd
        * fma
        * (
            h * (q + kv + kv)  # qkv projection
            + q * s / (2 if causal else 1) * 2  # core attention: QK^T and (QK^T)V
            + q * h  # output projection
        )
    )
    mlp = (
        fwd_bwd
        * fma
        * h
        * (
            m.ffn * ffn_expansion * n_dense
            + m.moe_ffn * routed_to * ffn_expansion * n_moe
            + shared * ffn_expansion * n_moe
        )
    )
    logits = fwd_bwd * fma * h * m.padded_vocab_for_flops
    return float(batch_size * s * (mlp + self_attn * m.num_layers + logits))


def narayanan_flops(batch_size: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al. 2021, eq. 3 without recomputation: ``72 B s l h^2 (1 + s/6h + V/12lh)``."""
    b, s, n, h, v = batch_size, seq, layers, hidden, vocab
    return 72.0 * b * s * n * h * h * (1 + s / (6 * h) + v / (12 * n * h))


def recompute_flops(m: ModelConfig, batch_size: int, granularity: str | None) -> float:
    """Extra FLOPs spent recomputing activations (not in Megatron's count; they cost time).

    ``full``: one more forward pass of every transformer layer (a third of the layers' FLOPs).
    ``selective``: the core attention's forward again (``QK^T``, softmax, ``(QK^T)V``).
    """
    if not granularity:
        return 0.0
    s, h = m.seq_length, m.hidden_size
    q = m.head_dim * m.heads
    if granularity == "selective":
        return float(batch_size * s * 2 * q * s / 2 * 2)
    layers_only = megatron_flops(m, batch_size) - batch_size * s * 6 * h * m.padded_vocab_for_flops
    return layers_only / 3.0
