"""Parameter counts, exactly as megatron-core's ``GPTModel`` builds them.

Per transformer layer (``get_gpt_layer_local_spec`` / the Transformer Engine spec hold the same
parameters; TE fuses the norms into the following linear layers but keeps their weights):

* ``input_layernorm`` and ``pre_mlp_layernorm``: ``h`` (RMSNorm) or ``2h`` (LayerNorm: weight + bias);
* ``linear_qkv`` (column parallel): ``h x (q + 2 kv)`` with ``q = heads x head_dim``,
  ``kv = groups x head_dim``, plus a bias of ``q + 2 kv`` unless ``--disable-bias-linear``;
* ``linear_proj`` (row parallel): ``q x h`` plus a bias ``h`` (not split by TP);
* ``q_layernorm``/``k_layernorm`` over ``head_dim`` with ``--qk-layernorm``;
* MLP: ``fc1`` ``h x ffn`` (``h x 2 ffn`` with SwiGLU: gate and up stacked) + bias, ``fc2``
  ``ffn x h`` + bias ``h`` (not split by TP);
* MoE layer: the router ``experts x h`` (+ ``experts`` bias unless ``--disable-bias-linear``), ``experts`` MLPs of ``--moe-ffn-hidden-size``,
  and a shared-expert MLP of ``--moe-shared-expert-intermediate-size`` when given.

Around the layers: word embeddings ``padded_vocab x h`` (split over TP by vocabulary rows),
learned positions ``max_positions x h`` (not split), the final norm, and with
``--untie-embeddings-and-output-weights`` an output layer ``padded_vocab x h`` (split over TP).
With tied embeddings and PP > 1 the last stage keeps its own copy of the word embeddings as the
output layer (kept equal by an all-reduce); that copy costs memory but is not a new parameter.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .config import ModelConfig, ParallelConfig


def _norm(m: ModelConfig, width: int) -> int:
    return width if m.normalization == "RMSNorm" else 2 * width


@dataclass(frozen=True)
class LayerParams:
    """One transformer layer's parameters: the whole layer, and what one GPU holds."""

    total: int
    dense_per_gpu: int  # non-expert parameters on one GPU (TP-split, norms and row biases whole)
    expert_per_gpu: int  # routed-expert parameters on one GPU (EP- and expert-TP-split)
    routed_expert_total: int  # all routed experts of the layer (for active-parameter counts)
    routed_one_expert: int  # one routed expert


def attention_params(m: ModelConfig, tp: int = 1) -> tuple[int, int]:
    """(total, per GPU) of the self-attention block including its input norm."""
    h, d = m.hidden_size, m.head_dim
    q, kv = m.heads * d, m.groups * d
    qkv_out = q + 2 * kv
    bias = m.add_bias_linear
    total = h * qkv_out + (qkv_out if bias else 0)  # linear_qkv
    total += q * h + (h if bias else 0)  # linear_proj
    norm = _norm(m, h)
    qk_norm = 2 * _norm(m, d) if m.qk_layernorm else 0
    per_gpu = (h * qkv_out + (qkv_out if bias else 0)) // tp + (q * h) // tp + (h if bias else 0)
    return total + norm + qk_norm, per_gpu + norm + qk_norm


def mlp_params(m: ModelConfig, ffn: int, tp: int = 1) -> tuple[int, int]:
    """(total, per GPU) of one MLP of width ``ffn`` (no norm)."""
    h = m.hidden_size
    up = 2 * ffn if m.swiglu else ffn
    bias = m.add_bias_linear
    fc1 = h * up + (up if bias else 0)
    fc2 = ffn * h + (h if bias else 0)
    per_gpu = fc1 // tp + (ffn * h) // tp + (h if bias else 0)
    return fc1 + fc2, per_gpu


def layer_params(m: ModelConfig, moe: bool, tp: int = 1, etp: int = 1, ep: int = 1) -> LayerParams:
    attn_total, attn_gpu = attention_params(m, tp)
    norm = _norm(m, m.hidden_size)  # pre_mlp_layernorm
    if not moe:
        mt, mg = mlp_params(m, m.ffn, tp)
        return LayerParams(attn_total + norm + mt, attn_gpu + norm + mg, 0, 0, 0)
    e = int(m.num_experts or 0)
    router = e * m.hidden_size + (e if m.add_bias_linear else 0)
    one_t, one_g = mlp_params(m, m.moe_ffn, etp)
    shared_t = shared_g = 0
    if m.moe_shared_expert_intermediate_size:
        shared_t, shared_g = mlp_params(m, m.moe_shared_expert_intermediate_size, tp)
    total = attn_total + norm + router + e * one_t + shared_t
    dense_gpu = attn_gpu + norm + router + shared_g
    expert_gpu = (e // max(ep, 1)) * one_g
    return LayerParams(total, dense_gpu, expert_gpu, e * one_t, one_t)


@dataclass(frozen=True)
class ParamCounts:
    total: int  # unique parameters of the model
    active: int  # parameters one token passes through (MoE: top-k routed experts only)
    embedding: int  # word + learned position embeddings + an untied output layer
    transformer: int  # layers + final norm
    per_stage: tuple[int, ...]  # unsplit parameters held by each pipeline stage (incl. tied copy)
    per_gpu_stage: tuple[int, ...]  # parameters one GPU of each stage holds
    per_gpu_stage_dense: tuple[int, ...]  # ... of which non-expert
    per_gpu_stage_expert: tuple[int, ...]  # ... of which routed experts

    @property
    def per_gpu_max(self) -> int:
        return max(self.per_gpu_stage)


def stage_layers(m: ModelConfig, pp: int) -> list[list[int]]:
    """Layer indices per pipeline rank (Megatron's even split; the interleaved schedule gives a
    rank several chunks but the same number of layers)."""
    per = m.num_layers // pp if pp and m.num_layers % pp == 0 else None
    if per is None:  # uneven (invalid for Megatron without extra flags): split as evenly as possible
        base, extra = divmod(m.num_layers, pp)
        out, start = [], 0
        for r in range(pp):
            n = base + (1 if r < extra else 0)
            out.append(list(range(start, start + n)))
            start += n
        return out
    return [list(range(r * per, (r + 1) * per)) for r in range(pp)]


def count_params(m: ModelConfig, par: ParallelConfig | None = None) -> ParamCounts:
    """Every parameter count the plan reports, for the model split as ``par`` says."""
    par = par or ParallelConfig()
    return _count_params(m, par.tp, max(par.pp, 1), par.ep, par.etp)


@functools.lru_cache(maxsize=4096)
def _count_params(m: ModelConfig, tp: int, pp: int, ep: int, etp: int) -> ParamCounts:
    h = m.hidden_size
    vocab = m.padded_vocab(tp)
    word = vocab * h
    pos = m.max_positions * h if m.position_embedding_type == "learned_absolute" else 0
    out_layer = word if m.untie_embeddings_and_output_weights else 0
    final_norm = _norm(m, h)

    pattern = m.moe_layer_pattern()
    dense_layer = layer_params(m, False, tp, etp, ep)
    moe_layer = layer_params(m, True, tp, etp, ep) if m.is_moe else None

    n_moe_all = sum(pattern) if moe_layer is not None else 0
    layers_total = (m.num_layers - n_moe_all) * dense_layer.total + n_moe_all * (
        moe_layer or dense_layer
    ).total
    transformer = layers_total + final_norm
    total = transformer + word + pos + out_layer
    active = total
    if moe_layer is not None:
        k = min(m.moe_router_topk, int(m.num_experts or 0))
        n_moe = sum(pattern)
        active = total - n_moe * (moe_layer.routed_expert_total - k * moe_layer.routed_one_expert)

    per_stage, per_gpu, per_gpu_dense, per_gpu_expert = [], [], [], []
    stages = stage_layers(m, pp)
    for r, idx in enumerate(stages):
        n_moe = sum(1 for i in idx if pattern[i]) if moe_layer is not None else 0
        n_dense = len(idx) - n_moe
        ml = moe_layer or dense_layer
        s_total = n_dense * dense_layer.total + n_moe * ml.total
        g_dense = n_dense * dense_layer.dense_per_gpu + n_moe * ml.dense_per_gpu
        g_expert = n_dense * dense_layer.expert_per_gpu + n_moe * ml.expert_per_gpu
        if r == 0:
            s_total += word + pos
            g_dense += word // tp + pos
        if r == pp - 1:
            s_total += final_norm
            g_dense += final_norm
            if m.untie_embeddings_and_output_weights or pp > 1:
                s_total += word
                g_dense += word // tp
        per_stage.append(s_total)
        per_gpu.append(g_dense + g_expert)
        per_gpu_dense.append(g_dense)
        per_gpu_expert.append(g_expert)
    return ParamCounts(
        total=total,
        active=active,
        embedding=word + pos + out_layer,
        transformer=transformer,
        per_stage=tuple(per_stage),
        per_gpu_stage=tuple(per_gpu),
        per_gpu_stage_dense=tuple(per_gpu_dense),
        per_gpu_stage_expert=tuple(per_gpu_expert),
    )
