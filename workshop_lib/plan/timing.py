"""How long an iteration takes: compute at an achievable fraction of peak, plus communication.

The model, term by term (all per iteration, on the busiest GPU):

* **Compute**: Megatron's FLOPs (:mod:`.flops`) plus recomputation, divided evenly over the GPUs,
  at ``ACHIEVABLE_FRACTION`` of the GPU's dense peak (bf16, or FP8 x ``FP8_SPEEDUP`` on the GEMMs),
  lowered for thin GEMMs: ``x / (x + 128)`` with ``x = h / TP`` and with ``x = micro-batch x seq / CP``
  tokens (small matrices do not fill the tensor cores).
* **Tensor parallel** (per layer, per micro-batch): 2 all-reduces forward and 2 backward of the
  ``s b h`` activations (with sequence parallel: all-gathers and reduce-scatters of the same
  total volume), ``2 (t - 1) / t`` bytes moved per byte reduced; one more forward with full
  recomputation. Over NVLink when TP fits in a node, else the network.
* **Context parallel**: the ring passes every rank's K and V chunk ``cp - 1`` times forward and
  twice that backward (K, V and their gradients); half is assumed hidden behind attention.
* **Expert parallel**: two all-to-alls (dispatch and combine) forward and two backward per MoE
  layer, each moving ``k s b h (ep - 1) / ep`` bytes per GPU.
* **Pipeline**: each micro-batch sends ``s b h`` bytes (``/ t`` with SP) forward and its gradient
  back at each stage boundary (``v`` times with interleaving); plus the bubble: the whole
  pipelined part is stretched by ``1 + (p - 1) / (m v)``.
* **Data parallel** (once per iteration, not overlapped: Megatron only overlaps with
  ``--overlap-grad-reduce``): an all-reduce of the fp32 gradients, ``2 (d - 1) / d`` x 4 bytes per
  parameter; with the distributed optimizer a reduce-scatter of the fp32 gradients and an
  all-gather of the bf16 parameters, ``(d - 1) / d`` x (4 + 2) bytes per parameter.

Link bandwidths come from :mod:`workshop_lib.facts.hardware`, derated by ``LINK_EFFICIENCY``
(what NCCL's bus bandwidth reaches in practice). Which links a group uses follows Megatron's rank
order (TP fastest, then CP, EP, DP, PP): a group whose ranks span more than one node crosses the
network, where each GPU gets its node's network bandwidth divided by the GPUs of the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.hardware import GPU, GPUS, INSTANCES, Instance
from ..facts.prices import price_per_hour
from .config import ClusterConfig, ModelConfig, ParallelConfig
from .flops import megatron_flops, recompute_flops

# Sustained fraction of the dense tensor-core peak that a well-tuned Megatron run reaches on the
# GEMMs and the surrounding kernels, before communication and the bubble (modelled separately).
# A100: calibrated on Narayanan et al. 2021, Table 1: the 10 rows' measured TFLOP/s per GPU (their
# TP/PP/batch, full recomputation, the paper's FLOP count) are reproduced at a mean ratio of 0.99,
# range 0.91-1.13 (tests/test_plan_timing.py, benchmarks/results/plan_search.md). Hopper and
# Blackwell reach a smaller fraction of their much higher peaks (published bf16 MFU at scale:
# ~38-45% on H100, e.g. Llama 3's 38-43%), hence the lower figures there.
ACHIEVABLE_FRACTION = {
    "default": 0.60,
    "a10g": 0.55,
    "a100-40gb": 0.67,
    "a100-80gb": 0.67,
    "h100-80gb": 0.55,
    "h200": 0.55,
    "b200": 0.50,
}
# Thin GEMMs fill the tensor cores less: the compute rate is scaled by x / (x + K) for the
# per-GPU hidden width (h / TP) and for the tokens of a micro-batch (b s / CP).
WIDTH_HALF_EFFICIENCY = 128.0
TOKENS_HALF_EFFICIENCY = 128.0
# FP8 GEMMs run at up to 2x bf16 peak, end to end ~1.3-1.5x on H100 (Transformer Engine).
FP8_SPEEDUP = 1.4
# Share of the link's peak that NCCL collectives reach as bus bandwidth.
LINK_EFFICIENCY = {"nvlink": 0.80, "network": 0.75, "pcie": 0.70}


def instance_for(cl: ClusterConfig) -> Instance | None:
    if cl.instance_type:
        return INSTANCES.get(cl.instance_type.removeprefix("ml."))
    for inst in INSTANCES.values():
        if inst.gpu == cl.gpu and inst.gpus_per_node == cl.gpus_per_node:
            return inst
    for inst in INSTANCES.values():
        if inst.gpu == cl.gpu:
            return inst
    return None


@dataclass(frozen=True)
class Links:
    intra_bytes_per_s: float  # per GPU, within a node
    inter_bytes_per_s: float  # per GPU, across nodes
    intra_kind: str


def links(cl: ClusterConfig) -> Links:
    gpu = GPUS.get(cl.gpu)
    inst = instance_for(cl)
    if gpu is None:
        return Links(100e9, 10e9, "nvlink")
    if gpu.nvlink_bytes_per_s > 0:
        intra, kind = gpu.nvlink_bytes_per_s * LINK_EFFICIENCY["nvlink"], "nvlink"
    else:
        intra, kind = gpu.pcie_bytes_per_s * LINK_EFFICIENCY["pcie"], "pcie"
    if inst is not None:
        inter = inst.network_gbps * 1e9 / 8 / max(cl.gpus_per_node, 1) * LINK_EFFICIENCY["network"]
    else:
        inter = 100e9 / 8 / max(cl.gpus_per_node, 1) * LINK_EFFICIENCY["network"]
    return Links(intra, min(inter, intra), kind)


def group_bandwidth(stride: int, size: int, cl: ClusterConfig, ln: Links) -> float:
    """Bandwidth per GPU of a group of ``size`` ranks ``stride`` apart in Megatron's rank order."""
    if size <= 1:
        return float("inf")
    span = stride * size
    if span <= cl.gpus_per_node or cl.nodes == 1:
        return ln.intra_bytes_per_s
    return ln.inter_bytes_per_s


def achievable_flops_per_gpu(gpu: GPU, par: ParallelConfig, m: ModelConfig) -> float:
    base = ACHIEVABLE_FRACTION.get(gpu.key, ACHIEVABLE_FRACTION["default"])
    peak = gpu.bf16_tflops * 1e12
    if not (par.bf16 or par.fp16):
        peak = gpu.bf16_tflops * 1e12 / 2  # TF32 tensor cores at half the bf16 rate
    if par.fp8_format and gpu.fp8_tflops:
        peak *= FP8_SPEEDUP
    width = m.hidden_size / par.tp
    tokens = par.micro_batch_size * m.seq_length / par.cp
    shape = (width / (width + WIDTH_HALF_EFFICIENCY)) * (tokens / (tokens + TOKENS_HALF_EFFICIENCY))
    return peak * base * shape


@dataclass(frozen=True)
class Estimate:
    seconds_per_iteration: float
    tokens_per_second: float
    mfu: float
    breakdown: dict

    def as_json(self) -> dict:
        return {
            "seconds_per_iteration": self.seconds_per_iteration,
            "tokens_per_second": self.tokens_per_second,
            "mfu": self.mfu,
        }


def estimate(
    m: ModelConfig,
    par: ParallelConfig,
    cl: ClusterConfig,
    *,
    dp: int,
    num_microbatches: int,
    params_per_gpu_dense: int,
    params_per_gpu_expert: int,
) -> Estimate:
    gpu = GPUS[cl.gpu]
    world = cl.world_size
    ln = links(cl)
    tp, pp, cp, ep = par.tp, par.pp, par.cp, par.ep
    b, s, h = par.micro_batch_size, m.seq_length, m.hidden_size
    mbs_n = max(1, num_microbatches)
    gbs = b * dp * mbs_n
    v = par.vpp(m.num_layers)
    layers_per_stage = m.num_layers / pp
    act_bytes = 2.0  # bf16 activations on the wire

    flops = megatron_flops(m, gbs)
    extra = recompute_flops(m, gbs, par.recompute_granularity)
    compute = (flops + extra) / world / achievable_flops_per_gpu(gpu, par, m)

    # Tensor parallel: 4 all-reduce equivalents per layer per micro-batch (+2 with full recompute).
    tp_t = 0.0
    if tp > 1:
        vol = b * (s / cp) * h * act_bytes * 2 * (tp - 1) / tp
        n_ar = 4 + (2 if par.recompute_granularity == "full" else 0)
        tp_t = n_ar * vol * layers_per_stage * mbs_n / group_bandwidth(1, tp, cl, ln)
    # Context parallel: K and V chunks around the ring.
    cp_t = 0.0
    if cp > 1:
        kv = 2 * b * (s / cp) * m.groups * m.head_dim / tp * act_bytes
        cp_t = 0.5 * 3 * (cp - 1) * kv * layers_per_stage * mbs_n / group_bandwidth(tp, cp, cl, ln)
    # Expert parallel: all-to-all dispatch + combine, forward and backward.
    ep_t = 0.0
    if m.is_moe and ep > 1:
        moe_layers = m.num_moe_layers / pp
        vol = (
            m.moe_router_topk
            * b
            * (s / cp)
            * h
            * act_bytes
            * (ep - 1)
            / ep
            / (tp if par.sequence_parallel else 1)
        )
        ep_t = 4 * vol * moe_layers * mbs_n / group_bandwidth(tp * cp, ep, cl, ln)
    # Pipeline point-to-point.
    pp_t = 0.0
    if pp > 1:
        vol = b * (s / cp) * h * act_bytes / (tp if par.sequence_parallel else 1)
        pp_t = 2 * vol * v * mbs_n / group_bandwidth(tp * cp * dp, pp, cl, ln)
    bubble = (pp - 1) / (mbs_n * v) if pp > 1 else 0.0
    pipelined = (compute + tp_t + cp_t + ep_t + pp_t) * (1 + bubble)
    # Data parallel gradient reduction (dense over DP x CP, experts over expert-DP).
    dp_t = 0.0
    dense_dp = dp * cp
    if dense_dp > 1:
        frac = (dense_dp - 1) / dense_dp
        per_param = (4 + 2) * frac if par.use_distributed_optimizer else 2 * 4 * frac
        dp_t += params_per_gpu_dense * per_param / group_bandwidth(tp, dense_dp, cl, ln)
    edp = world // max(1, pp * ep * par.etp)
    if params_per_gpu_expert and edp > 1:
        frac = (edp - 1) / edp
        per_param = (4 + 2) * frac if par.use_distributed_optimizer else 2 * 4 * frac
        dp_t += params_per_gpu_expert * per_param / group_bandwidth(tp * ep, edp, cl, ln)
    total = pipelined + dp_t
    tokens = gbs * s
    peak = gpu.bf16_tflops * 1e12
    mfu = flops / (total * world * peak) if total > 0 else 0.0
    breakdown = {
        "compute_seconds": compute,
        "recompute_flops": extra,
        "tensor_parallel_seconds": tp_t,
        "context_parallel_seconds": cp_t,
        "expert_parallel_seconds": ep_t,
        "pipeline_p2p_seconds": pp_t,
        "pipeline_bubble_seconds": pipelined - pipelined / (1 + bubble),
        "data_parallel_seconds": dp_t,
        "achievable_tflops_per_gpu": achievable_flops_per_gpu(gpu, par, m) / 1e12,
        "tflops_per_gpu": flops / total / world / 1e12 if total > 0 else 0.0,
        "intra_node_bytes_per_s": ln.intra_bytes_per_s,
        "inter_node_bytes_per_s": ln.inter_bytes_per_s,
    }
    return Estimate(total, tokens / total if total > 0 else 0.0, mfu, breakdown)


def training_time(
    tokens_per_second: float,
    train_tokens: float,
    *,
    nodes: int,
    instance_type: str | None,
    price: float | None = None,
) -> dict:
    """Days to train ``train_tokens`` and what it costs at the node-hour price."""
    seconds = train_tokens / tokens_per_second if tokens_per_second > 0 else float("inf")
    hourly = price if price is not None else price_per_hour(instance_type)
    hours = seconds / 3600
    return {
        "train_tokens": train_tokens,
        "days": seconds / 86400,
        "node_hours": hours * nodes,
        "usd_per_node_hour": hourly,
        "cost_usd": (hours * nodes * hourly) if hourly is not None else None,
    }
