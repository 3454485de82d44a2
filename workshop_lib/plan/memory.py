"""Memory on one GPU: weights, gradients, optimizer states, activations, and an allowance.

Model states follow Megatron-LM's ``theoretical_memory_usage.py``: with mixed precision
(``--bf16``/``--fp16``) each parameter costs 2 bytes of half-precision weight, 4 bytes of fp32
main gradient (Megatron accumulates and reduces bf16 gradients in fp32) and 12 bytes of optimizer
state (fp32 master weight, Adam's m and v): 18 bytes, or ``6 + 12 / DP`` with
``--use-distributed-optimizer``, which shards the 12 bytes over the data-parallel ranks (the
data-parallel x context-parallel group for dense weights, the expert-data-parallel group for
routed experts). Plain fp32 training (no ``--bf16``, Megatron's default) costs 4 + 4 + 8 = 16
bytes. ``--fp8-format`` keeps the bf16 weights and adds a cached FP8 copy of each weight
(1 byte/param) that Transformer Engine reuses across micro-batches.

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", Table 2), per layer and micro-batch, in bytes, for sequence ``s``, micro-batch
``b``, hidden ``h``, heads ``a``, tensor-parallel size ``t``:

* no parallelism: ``s b h (34 + 5 a s / h)``;
* tensor parallel: ``s b h (10 + 24 / t + 5 a s / (h t))``;
* tensor + sequence parallel: ``s b h (34 / t + 5 a s / (h t))``;
* selective recomputation drops ``5 a s / h`` (the score matrix, softmax and its dropout); flash
  and fused attention never store it either, so only ``--attention-backend unfused`` keeps it;
* full recomputation keeps only each layer's input, ``2 s b h`` (``/ t`` with SP).

The ``34`` generalises to ``10 + 4 + 4 g / a + 4 ffn / h`` (GELU) or ``... + 6 ffn / h`` (SwiGLU
keeps its two ``ffn``-wide inputs, as Megatron's fused bias-SwiGLU does), with ``g / a`` the GQA ratio
(flash/fused attention keep K and V at ``g`` heads; the unfused path repeats them to ``a``); ``10`` is the part outside the
tensor-parallel region (norm inputs and outputs, dropout masks) that sequence parallel splits.
MoE layers hold, per token, ``k`` routed copies of the expert MLP's activations. Context
parallel divides the sequence by ``cp``. FP8 stores the inputs of the four GEMMs in 1 byte.

The first pipeline stage holds the most: its ``L / p`` layers for ``p`` micro-batches in flight
under 1F1B (``min(p, m)``), and ``p (1 + (p - 1) / (p v))`` micro-batches' worth under the
interleaved schedule with ``v`` virtual stages. Embedding inputs and dropout masks (Megatron's
``8 s b + s b h`` per micro-batch in flight) and, where the stage also computes the loss, the
output layer's ``4 s b h (1 + V / h)`` are added as Megatron does.

Measured on an H100 with the kit's trainer but without Transformer Engine
(``benchmarks/results/gpu_h100.md``, held by ``tests/test_plan_against_h100.py``): the model states
match the allocator within 3 %, and with megatron-core's fused SwiGLU and PyTorch's flash attention
(the trainer's defaults on GPUs) the peak grows per micro-batch sample by 0.96-1.02x the activations
counted here, also for a model shape (GQA) they were not compared with before; one layer's saved
tensors, counted, are within 8 %. Plain SwiGLU keeps 4 bytes x ffn more a token, and
megatron-core's local attention keeps its softmax in fp32 (:func:`score_bytes`: asked with
``--transformer-impl local``, the plan counts 7 bytes a score, not 5).

The allowance (:data:`ALLOWANCE`) is what a real process needs beyond the tensors: the CUDA
context and library workspaces, NCCL's communication buffers, and allocator fragmentation. It
appears only in ``total``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .config import ModelConfig, ParallelConfig
from .model import ParamCounts, stage_layers

GIB = 1024**3

# The overhead allowance, in one place. Figures measured on A100/H100 with PyTorch 2.x:
ALLOWANCE = {
    # CUDA context + cuBLAS/cuDNN workspaces + Transformer Engine/cuBLASLt workspaces.
    "cuda_context_bytes": int(1.0 * GIB),
    # NCCL channel buffers: ~NCCL_BUFFSIZE (4 MiB) x channels x peers per communicator; about
    # 0.25 GiB for each kind of parallel group that actually communicates (TP, PP, DP, CP, EP).
    "nccl_bytes_per_group": int(0.25 * GIB),
    # The caching allocator's fragmentation and temporary buffers (logits, all-gather outputs):
    # a fraction of the tensors' memory.
    "fragmentation_fraction": 0.05,
}


@dataclass(frozen=True)
class Precision:
    weight: float
    grad: float
    optim: float  # before distributed-optimizer sharding
    fp8: bool
    name: str


def precision(par: ParallelConfig) -> Precision:
    if par.bf16 or par.fp16:
        fp8 = bool(par.fp8_format)
        return Precision(2.0 + (1.0 if fp8 else 0.0), 4.0, 12.0, fp8, "bf16" if par.bf16 else "fp16")
    return Precision(4.0, 4.0, 8.0, False, "fp32")


def dense_dp_shards(par: ParallelConfig, world: int) -> int:
    """Ranks the distributed optimizer shards non-expert state over (DP x CP)."""
    return max(1, world // (par.tp * par.pp))


def expert_dp_shards(par: ParallelConfig, world: int) -> int:
    return max(1, world // (par.pp * par.ep * par.etp))


def per_layer_activation_bytes(
    m: ModelConfig, par: ParallelConfig, moe: bool = False, *, recompute_selective: bool | None = None
) -> float:
    """Activation bytes one GPU stores for one layer and one micro-batch (no full recompute)."""
    t, cp = par.tp, par.cp
    s_local = m.seq_length / cp
    sbh = s_local * par.micro_batch_size * m.hidden_size
    h, a = m.hidden_size, m.heads
    kvr = m.groups / m.heads
    fp8 = bool(par.fp8_format) and (par.bf16 or par.fp16)
    selective = (
        (par.recompute_granularity == "selective") if recompute_selective is None else recompute_selective
    )
    # Outside the TP region: LN1 in (2), QKV GEMM in (2), dropout mask (1), LN2 in (2),
    # fc1 GEMM in (2), dropout mask (1).
    outside = 10.0 - (2.0 if fp8 else 0.0)
    # Inside: Q (2), K (2 g/a), V (2 g/a), projection input (2). megatron-core's unfused attention
    # repeats K and V to every head before its matmuls and keeps the repeated copies.
    if m.attention_backend == "unfused":
        kvr = 1.0
    inside_attn = 2.0 + 4.0 * kvr + (1.0 if fp8 else 2.0)
    if m.attention_backend == "unfused" and not selective:
        inside_attn += score_bytes(m) * a * m.seq_length / h
    gate = 6.0 if m.swiglu else 4.0

    def mlp_inside(ffn: int) -> float:
        # fc1 output (GELU input, or SwiGLU's two halves) and fc2 input; FP8 stores fc2's input in 1 byte.
        return gate * ffn / h - (ffn / h if fp8 else 0.0)

    if moe:
        k = m.moe_router_topk
        # Each token's k routed copies (2 bytes x h each) and the expert MLPs' activations. With
        # expert-TP the copies are gathered over the expert-TP group (not split by it) while the
        # expert MLPs are split; with expert-TP 1 each GPU keeps its sequence-parallel share.
        inside_mlp = k * (2.0 * par.etp + mlp_inside(m.moe_ffn))
        inside_mlp += 4.0 * float(m.num_experts or 0) / h * 2  # fp32 router logits and probs
        if m.moe_shared_expert_intermediate_size:
            inside_mlp += mlp_inside(m.moe_shared_expert_intermediate_size)
    else:
        inside_mlp = mlp_inside(m.ffn)
    if par.sequence_parallel and t > 1:
        per = (outside + inside_attn + inside_mlp) / t
    else:
        per = outside + (inside_attn + inside_mlp) / t
    return sbh * per


def score_bytes(m: ModelConfig) -> float:
    """Bytes unfused attention keeps per score (one query-key pair of one head) for backward.

    Megatron's fused softmax kernel (Transformer Engine's layers) keeps the bf16 softmax (2), the
    dropout mask (1) and the dropout output (2): Korthikanti's 5. megatron-core's local layers, which
    the trainer uses without Transformer Engine, take the softmax in fp32 (``attention_softmax_in_fp32``)
    and keep that (4) instead: 7. On an H100, with dropout off, one local layer kept 6 bytes a score
    (the fp32 softmax and its bf16 copy; ``benchmarks/results/gpu_h100.md``).
    """
    return 7.0 if m.transformer_impl == "local" else 5.0


def korthikanti_per_layer(
    s: int,
    b: int,
    h: int,
    a: int,
    t: int = 1,
    *,
    sp: bool = False,
    selective: bool = False,
    full: bool = False,
) -> float:
    """The paper's Table 2, verbatim (bytes per layer, 16-bit activations, ffn = 4h)."""
    sbh = s * b * h
    if full:
        return 2.0 * sbh / (t if sp else 1)
    att = 0.0 if selective else 5.0 * a * s / h
    if sp:
        return sbh * (34.0 / t + att / t)
    return sbh * (10.0 + 24.0 / t + att / t)


def in_flight_microbatches(par: ParallelConfig, num_layers: int, num_microbatches: int | None) -> float:
    """Micro-batches' worth of activations the first pipeline stage holds at its peak."""
    p = par.pp
    if p <= 1:
        return 1.0
    v = par.vpp(num_layers)
    if v > 1:
        return p * (1.0 + (p - 1) / (p * v))
    if num_microbatches is not None:
        return float(min(p, num_microbatches))
    return float(p)


@dataclass(frozen=True)
class MemoryBreakdown:
    weights: float
    gradients: float
    optimizer: float
    activations: float
    allowance: float
    stage: int  # which pipeline stage this is (0 = first)
    detail: dict

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.allowance

    def as_json(self) -> dict:
        return {
            "weights": int(round(self.weights)),
            "gradients": int(round(self.gradients)),
            "optimizer": int(round(self.optimizer)),
            "activations": int(round(self.activations)),
            "total": int(round(self.total)),
        }


def _stage_activation_bytes(
    m: ModelConfig, par: ParallelConfig, stage: int, num_microbatches: int | None, stages: list[list[int]]
) -> tuple[float, dict]:
    p = par.pp
    t = par.tp
    b = par.micro_batch_size
    s_local = m.seq_length / par.cp
    sbh = s_local * b * m.hidden_size
    pattern = m.moe_layer_pattern()
    layers = stages[stage]
    dense_v = per_layer_activation_bytes(m, par, moe=False)
    moe_v = per_layer_activation_bytes(m, par, moe=True) if m.is_moe else dense_v
    per_layer = [moe_v if pattern[i] else dense_v for i in layers]
    gran = par.recompute_granularity
    layer_input = 2.0 * sbh / (t if (par.sequence_parallel and t > 1) else 1)
    transient = 0.0
    if gran == "full":
        n = max(1, par.recompute_num_layers or 1)
        v = par.vpp(m.num_layers)
        chunk_layers = max(1, len(layers) // v)
        if par.recompute_method == "block":
            n_rec = min(n, chunk_layers)
            stored = 0.0
            for c in range(v):
                chunk = per_layer[c * chunk_layers : (c + 1) * chunk_layers]
                stored += n_rec * layer_input + sum(chunk[n_rec:])
            transient = max(per_layer[:n_rec]) if n_rec else 0.0
            stored_per_mb = stored
        else:  # uniform: the input of every group of n layers
            groups = v * math.ceil(chunk_layers / n)
            stored_per_mb = groups * layer_input
            transient = max(dense_v, moe_v) * min(n, len(per_layer)) if per_layer else 0.0
    else:
        stored_per_mb = sum(per_layer)
    if stage == 0:
        inflight = in_flight_microbatches(par, m.num_layers, num_microbatches)
    else:
        # Stage r of p holds p - r micro-batches under 1F1B (the last stage one).
        inflight = 1.0 if p <= 1 else float(max(1, min(p - stage, num_microbatches or p)))
        v = par.vpp(m.num_layers)
        if v > 1:
            inflight = (p - stage) * (1.0 + (p - 1) / (p * v))
    acts = stored_per_mb * inflight + transient
    detail = {
        "per_layer_bytes": per_layer[0] if per_layer else 0.0,
        "layers": len(layers),
        "in_flight_microbatches": inflight,
        "recompute_transient_bytes": transient,
    }
    if stage == 0:
        emb = (8.0 * s_local * b + sbh) * inflight / t
        acts += emb
        detail["embedding_bytes"] = emb
    if stage == p - 1:
        out = 4.0 * sbh * (1.0 + m.padded_vocab(t) / m.hidden_size) / t
        acts += out
        detail["output_layer_bytes"] = out
    return acts, detail


def memory_per_gpu(
    m: ModelConfig,
    par: ParallelConfig,
    params: ParamCounts,
    world: int,
    num_microbatches: int | None,
    stage: int = 0,
) -> MemoryBreakdown:
    """Memory of one GPU of pipeline ``stage`` (0 = the first stage, the busiest)."""
    prec = precision(par)
    dense = params.per_gpu_stage_dense[stage]
    expert = params.per_gpu_stage_expert[stage]
    n = dense + expert
    weights = prec.weight * n
    grads = prec.grad * n
    if par.use_distributed_optimizer:
        optim = prec.optim * (dense / dense_dp_shards(par, world) + expert / expert_dp_shards(par, world))
    else:
        optim = prec.optim * n
    stages = stage_layers(m, par.pp)
    acts, detail = _stage_activation_bytes(m, par, stage, num_microbatches, stages)
    groups = sum(
        1 for size in (par.tp, par.pp, world // max(1, par.tp * par.pp * par.cp), par.cp, par.ep) if size > 1
    )
    frag = ALLOWANCE["fragmentation_fraction"] * (weights + grads + optim + acts)
    allowance = ALLOWANCE["cuda_context_bytes"] + ALLOWANCE["nccl_bytes_per_group"] * groups + frag
    detail.update(
        {
            "stage": stage,
            "parameters_on_gpu": n,
            "bytes_per_parameter": {
                "weights": prec.weight,
                "gradients": prec.grad,
                "optimizer": prec.optim,
                "precision": prec.name,
            },
            "allowance_bytes": {
                "cuda_context": ALLOWANCE["cuda_context_bytes"],
                "nccl_buffers": ALLOWANCE["nccl_bytes_per_group"] * groups,
                "fragmentation": frag,
            },
        }
    )
    return MemoryBreakdown(weights, grads, optim, acts, allowance, stage, detail)


def busiest_gpu_memory(
    m: ModelConfig, par: ParallelConfig, params: ParamCounts, world: int, num_microbatches: int | None
) -> MemoryBreakdown:
    """The first stage, or the last one where the output layer makes it heavier."""
    first = memory_per_gpu(m, par, params, world, num_microbatches, 0)
    if par.pp <= 1:
        return first
    last = memory_per_gpu(m, par, params, world, num_microbatches, par.pp - 1)
    return last if last.total > first.total else first
