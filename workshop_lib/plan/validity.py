"""Every rule a Megatron-LM launch checks about sizes, with the fix to suggest.

Each rule returns :class:`PlanIssue`s (``severity`` "error" or "warning", a stable ``rule`` id, a
``message`` saying what is wrong, and a ``fix`` saying what to change, with the nearest valid
values where there are some). The rules mirror the assertions of Megatron-LM's
``validate_args``, megatron-core's ``TransformerConfig`` and ``parallel_state``; an invalid
combination would stop Megatron at start-up (or, for the warnings, run slowly).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import ClusterConfig, ModelConfig, ParallelConfig


@dataclass(frozen=True)
class PlanIssue:
    severity: str  # "error" | "warning"
    rule: str
    message: str
    fix: str

    def render(self) -> str:
        return f"{self.message} Fix: {self.fix}"


def divisors(n: int) -> list[int]:
    n = int(n)
    if n <= 0:
        return []
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def nearest_multiples(value: int, step: int) -> list[int]:
    """The multiples of ``step`` just below and just above ``value`` (positive only)."""
    if step <= 0:
        return []
    lo = (value // step) * step
    hi = lo + step
    return [v for v in (lo, hi) if v > 0 and v != value] or [step]


def nearest_divisors(n: int, value: int, limit: int = 2) -> list[int]:
    ds = divisors(n)
    return sorted(sorted(ds, key=lambda d: (abs(d - value), d))[:limit])


def _fmt(values: list[int]) -> str:
    return " or ".join(str(v) for v in values)


def derived_sizes(m: ModelConfig, par: ParallelConfig, cl: ClusterConfig) -> tuple[int, int | None]:
    """(data-parallel size, number of micro-batches or None where the batch does not divide)."""
    world = cl.world_size
    mp = par.tp * par.pp * par.cp
    dp = world // mp if mp and world % mp == 0 else max(1, world // max(mp, 1))
    gbs = par.global_batch_size or par.micro_batch_size * dp
    denom = par.micro_batch_size * dp
    m_ = gbs // denom if denom and gbs % denom == 0 else None
    return dp, m_


class _Issues(list[PlanIssue]):
    """The issues found so far; each rule group appends to it in the order Megatron would complain."""

    def err(self, rule: str, msg: str, fix: str) -> None:
        self.append(PlanIssue("error", rule, msg, fix))

    def warn(self, rule: str, msg: str, fix: str) -> None:
        self.append(PlanIssue("warning", rule, msg, fix))


def check(m: ModelConfig, par: ParallelConfig, cl: ClusterConfig) -> list[PlanIssue]:
    """All issues of this combination, errors first.

    The rule groups run in a fixed order (the order of the messages a user sees). Sizes below 1
    stop the check early: every later rule divides by them.
    """
    out = _Issues()
    _check_positive_sizes(out, m, par, cl)
    if out:
        return list(out)
    dp = _rule_data_parallel_size(par, cl)
    v = _virtual_stages_for_rules(m, par)
    _check_model_shape(out, m)
    _check_world_size(out, par, cl)
    _check_tensor_parallel(out, m, par, cl)
    _check_pipeline(out, m, par)
    _check_context_parallel(out, m, par)
    _check_experts(out, m, par, cl)
    _check_batch(out, par, cl, dp, v)
    _check_recompute(out, m, par, v)
    _check_precision(out, par, cl)
    _check_distributed_optimizer(out, par, dp)
    out.sort(key=lambda i: 0 if i.severity == "error" else 1)
    return list(out)


def _rule_data_parallel_size(par: ParallelConfig, cl: ClusterConfig) -> int:
    """The data-parallel size the batch and optimizer rules reason with.

    Where the world does not divide by TP x PP x CP the world-size rule has already failed; the
    rounded-down quotient (at least 1) still lets the later rules say something useful.
    """
    world, mp = cl.world_size, par.tp * par.pp * par.cp
    return max(1, world // mp) if world >= mp else 1


def _virtual_stages_for_rules(m: ModelConfig, par: ParallelConfig) -> int:
    """Virtual pipeline stages per rank when the interleaved schedule is valid, else 1.

    The batch and recompute rules depend on it; an invalid interleaving is reported by
    :func:`_check_pipeline` and counts as no interleaving here.
    """
    L, pp, nv = m.num_layers, par.pp, par.num_layers_per_virtual_pipeline_stage
    if L % pp or not nv or pp == 1:
        return 1
    per_stage = L // pp
    if per_stage % nv or nv == per_stage:
        return 1
    return per_stage // nv


def _check_positive_sizes(out: _Issues, m: ModelConfig, par: ParallelConfig, cl: ClusterConfig) -> None:
    """Every size must be at least 1.

    Megatron-LM refuses zero or negative sizes at start-up, and every later rule divides by them.
    """
    for name, value in (
        ("tensor-model-parallel-size", par.tp),
        ("pipeline-model-parallel-size", par.pp),
        ("context-parallel-size", par.cp),
        ("expert-model-parallel-size", par.ep),
        ("micro-batch-size", par.micro_batch_size),
        ("num-layers", m.num_layers),
        ("hidden-size", m.hidden_size),
        ("num-attention-heads", m.heads),
        ("seq-length", m.seq_length),
        ("gpus-per-node", cl.gpus_per_node),
        ("nodes", cl.nodes),
    ):
        if value < 1:
            out.err(
                "positive-sizes", f"{name} is {value}; it must be at least 1.", f"set {name} to 1 or more."
            )
    # Sizes that are optional (None: Megatron's default) but, when given, must be positive. The
    # derived properties (``groups``, ``head_dim``, ``ffn``, ``is_moe``...) read 0 as "not given",
    # so without this a 0 or a negative would pass as a valid plan that Megatron refuses
    # (``num_moe_experts must be non-negative``, ``recompute_num_layers must be between 1 and ...``,
    # a ZeroDivisionError padding the vocabulary).
    for name, optional in (
        ("vocab-size", m.vocab_size),
        ("make-vocab-size-divisible-by", m.make_vocab_size_divisible_by),
        ("num-query-groups", m.num_query_groups),
        ("kv-channels", m.kv_channels),
        ("ffn-hidden-size", m.ffn_hidden_size),
        ("max-position-embeddings", m.max_position_embeddings),
        ("num-experts", m.num_experts),
        ("moe-router-topk", m.moe_router_topk),
        ("moe-ffn-hidden-size", m.moe_ffn_hidden_size),
        ("moe-shared-expert-intermediate-size", m.moe_shared_expert_intermediate_size),
        ("moe-layer-freq", m.moe_layer_freq),
        ("expert-tensor-parallel-size", par.expert_tensor_parallel_size),
        ("num-layers-per-virtual-pipeline-stage", par.num_layers_per_virtual_pipeline_stage),
        ("recompute-num-layers", par.recompute_num_layers),
        ("global-batch-size", par.global_batch_size),
    ):
        if optional is not None and optional < 1:
            out.err(
                "positive-sizes",
                f"{name} is {optional}; it must be at least 1.",
                f"set {name} to 1 or more, or leave it out for Megatron's default.",
            )


def _check_model_shape(out: _Issues, m: ModelConfig) -> None:
    """Attention heads must split the hidden size and the query groups evenly.

    megatron-core's attention reshapes the hidden state into heads and shares each key/value head
    across a whole group of query heads; learned absolute positions exist only up to
    max-position-embeddings.
    """
    a, g, h = m.heads, m.groups, m.hidden_size
    if m.kv_channels is None and h % a:
        out.err(
            "hidden-divisible-by-heads",
            f"hidden-size {h} is not divisible by num-attention-heads {a}.",
            f"use num-attention-heads {_fmt(nearest_divisors(h, a))} (divisors of {h}), or give --kv-channels.",
        )
    if a % g:
        out.err(
            "heads-divisible-by-groups",
            f"num-attention-heads {a} is not divisible by num-query-groups {g}.",
            f"use num-query-groups {_fmt(nearest_divisors(a, g))}.",
        )
    if m.position_embedding_type == "learned_absolute" and m.max_positions < m.seq_length:
        out.err(
            "max-position-embeddings",
            f"max-position-embeddings {m.max_positions} is smaller than seq-length {m.seq_length}.",
            f"set max-position-embeddings to at least {m.seq_length}.",
        )


def _check_world_size(out: _Issues, par: ParallelConfig, cl: ClusterConfig) -> None:
    """The GPUs must split into whole model-parallel groups.

    Megatron's ``parallel_state`` builds data-parallel replicas of TP x PP x CP GPUs each; a world
    size that does not divide leaves GPUs without a group, and initialisation stops.
    """
    tp, pp, cp = par.tp, par.pp, par.cp
    world = cl.world_size
    mp = tp * pp * cp
    if world % mp:
        options = [
            (t, p, c)
            for t in divisors(world)
            for p in divisors(world)
            for c in (cp,)
            if world % (t * p * c) == 0 and (t, p) != (tp, pp)
        ]
        options.sort(key=lambda x: (abs(x[0] - tp) + abs(x[1] - pp), x))
        sugg = "; ".join(f"TP={t} PP={p}" for t, p, _ in options[:2]) or "use fewer parallel ranks"
        near_world = nearest_multiples(world, mp)
        out.err(
            "world-divisible",
            f"world size {world} ({cl.nodes} nodes x {cl.gpus_per_node} GPUs) is not "
            f"divisible by TP x PP x CP = {tp} x {pp} x {cp} = {mp}.",
            f"{sugg}; or run on {_fmt(near_world)} GPUs.",
        )


def _check_tensor_parallel(out: _Issues, m: ModelConfig, par: ParallelConfig, cl: ClusterConfig) -> None:
    """Tensor parallelism splits heads, query groups and the MLP across GPUs, so each must divide.

    The warnings are about speed: tensor parallelism communicates inside every layer, so it belongs
    within a node's NVLink domain, and sequence parallelism shards what it would keep whole.
    """
    tp = par.tp
    a, g = m.heads, m.groups
    if a % tp:
        out.err(
            "heads-divisible-by-tp",
            f"num-attention-heads {a} is not divisible by TP={tp}.",
            f"use TP {_fmt([d for d in nearest_divisors(a, tp) if d <= cl.gpus_per_node] or [1])}.",
        )
    if g % tp and g != a:
        out.err(
            "query-groups-divisible-by-tp",
            f"num-query-groups {g} is not divisible by TP={tp}.",
            f"use TP {_fmt(nearest_divisors(g, tp))} (a divisor of the {g} query groups).",
        )
    if m.ffn % tp:
        out.err(
            "ffn-divisible-by-tp",
            f"ffn-hidden-size {m.ffn} is not divisible by TP={tp}.",
            f"use TP {_fmt(nearest_divisors(m.ffn, tp))}.",
        )
    if tp > cl.gpus_per_node:
        out.warn(
            "tp-crosses-nodes",
            f"TP={tp} is larger than the {cl.gpus_per_node} GPUs of a node, so "
            "every layer's all-gather/reduce-scatter crosses the inter-node network (EFA/InfiniBand, "
            "~10x slower than NVLink) several times per micro-batch.",
            f"keep TP <= {cl.gpus_per_node} and add pipeline parallelism (PP) across nodes instead.",
        )
    elif cl.gpus_per_node % tp:
        out.warn(
            "tp-straddles-nodes",
            f"TP={tp} does not divide the {cl.gpus_per_node} GPUs of a node, so "
            "some tensor-parallel groups straddle two nodes.",
            "use a TP that divides the GPUs per node.",
        )
    if par.sequence_parallel and tp == 1:
        # Megatron-LM warns and turns it off (nothing to shard), so a plan that asks for it is valid.
        out.warn(
            "sequence-parallel-needs-tp",
            "--sequence-parallel needs tensor parallelism (TP > 1); with TP=1 Megatron switches it off.",
            "remove --sequence-parallel, or set TP to 2 or more.",
        )
    if m.is_moe and tp > 1 and not par.sequence_parallel:
        out.err(
            "moe-tp-needs-sp",
            f"an MoE model with TP={tp} needs --sequence-parallel (megatron-core asserts it).",
            "add --sequence-parallel.",
        )
    if tp > 1 and not par.sequence_parallel and not m.is_moe:
        out.warn(
            "tp-without-sp",
            f"TP={tp} without --sequence-parallel keeps norm and dropout activations "
            "whole on every tensor-parallel rank.",
            "add --sequence-parallel (same communication volume, less activation memory).",
        )


def _check_pipeline(out: _Issues, m: ModelConfig, par: ParallelConfig) -> None:
    """Pipeline stages hold whole layers, and virtual stages split a stage's layers evenly.

    Megatron-LM asserts both divisions; a virtual stage as large as the stage is valid but
    interleaves nothing, so it only warns.
    """
    L, pp = m.num_layers, par.pp
    if L % pp:
        out.err(
            "layers-divisible-by-pp",
            f"num-layers {L} is not divisible by PP={pp}.",
            f"use PP {_fmt(nearest_divisors(L, pp))}, or num-layers {_fmt(nearest_multiples(L, pp))}.",
        )
        return
    per_stage = L // pp
    nv = par.num_layers_per_virtual_pipeline_stage
    if not nv:
        return
    if pp == 1:
        out.err(
            "virtual-stages-need-pp",
            "--num-layers-per-virtual-pipeline-stage needs PP > 1.",
            "remove it, or set pipeline-model-parallel-size to 2 or more.",
        )
    elif per_stage % nv:
        out.err(
            "layers-divisible-by-virtual-stages",
            f"the {per_stage} layers of each pipeline stage "
            f"are not divisible by num-layers-per-virtual-pipeline-stage {nv}.",
            f"use {_fmt([d for d in nearest_divisors(per_stage, nv) if d < per_stage] or [1])}.",
        )
    elif nv == per_stage:
        out.warn(
            "virtual-stages-trivial",
            f"num-layers-per-virtual-pipeline-stage {nv} equals the layers per stage: no interleaving.",
            f"use a divisor of {per_stage} smaller than it.",
        )


def _check_context_parallel(out: _Issues, m: ModelConfig, par: ParallelConfig) -> None:
    """Context parallelism cuts each sequence into 2 x CP chunks (two per rank, for load balance
    under the causal mask), so the sequence length must divide by 2 x CP."""
    cp = par.cp
    if cp > 1 and m.seq_length % (2 * cp):
        out.err(
            "seq-divisible-by-2cp",
            f"seq-length {m.seq_length} is not divisible by 2 x CP = {2 * cp}.",
            f"use seq-length {_fmt(nearest_multiples(m.seq_length, 2 * cp))}, or CP "
            f"{_fmt([c for c in nearest_divisors(m.seq_length // 2, cp)])}.",
        )


def _check_experts(out: _Issues, m: ModelConfig, par: ParallelConfig, cl: ClusterConfig) -> None:
    """Mixture-of-experts rules: expert parallelism needs experts and splits them evenly, and the
    router and shared experts have the restrictions megatron-core asserts at start-up."""
    ep = par.ep
    world = cl.world_size
    mp = par.tp * par.pp * par.cp
    if ep > 1 and not m.is_moe:
        out.err(
            "ep-needs-experts",
            f"EP={ep} but the model has no experts (--num-experts).",
            "set expert-model-parallel-size 1, or give --num-experts.",
        )
    if not m.is_moe:
        return
    e = int(m.num_experts or 0)
    if e % ep:
        out.err(
            "experts-divisible-by-ep",
            f"num-experts {e} is not divisible by EP={ep}.",
            f"use EP {_fmt(nearest_divisors(e, ep))}.",
        )
    etp = par.etp
    if world % mp == 0 and (world // par.pp) % (ep * etp):
        out.err(
            "ep-divides-world",
            f"EP x expert-TP = {ep} x {etp} does not divide the {world // par.pp} GPUs of a pipeline stage.",
            f"use EP {_fmt([d for d in nearest_divisors(world // par.pp // etp, ep)])}.",
        )
    if m.moe_shared_expert_intermediate_size and m.add_bias_linear:
        out.err(
            "shared-experts-no-bias",
            "megatron-core's shared experts have no bias; with biases on it stops at start-up.",
            "add --disable-bias-linear.",
        )
    if m.moe_router_topk == 1 and not m.moe_router_pre_softmax:
        out.err(
            "topk1-needs-pre-softmax",
            "moe-router-topk 1 needs --moe-router-pre-softmax (megatron-core "
            "refuses top-1 routing with the softmax after the top-k).",
            "add --moe-router-pre-softmax.",
        )
    if m.moe_router_topk > e:
        out.err(
            "topk-at-most-experts",
            f"moe-router-topk {m.moe_router_topk} exceeds num-experts {e}.",
            f"use moe-router-topk <= {e}.",
        )


def _check_batch(out: _Issues, par: ParallelConfig, cl: ClusterConfig, dp: int, v: int) -> None:
    """The global batch must be a whole number of micro-batches on every data-parallel rank.

    Megatron-LM asserts that division, and its interleaved schedule needs at least PP micro-batches;
    with few micro-batches the pipeline bubble (p-1)/(m v) dominates, which only warns.
    """
    pp = par.pp
    world, mp = cl.world_size, par.tp * par.pp * par.cp
    if world % mp:
        return
    mbs = par.micro_batch_size
    gbs = par.global_batch_size or mbs * dp
    if gbs % (mbs * dp):
        good_gbs = nearest_multiples(gbs, mbs * dp)
        good_mbs = [d for d in divisors(gbs // dp) if gbs % dp == 0] if gbs % dp == 0 else []
        mbs_hint = f", or micro-batch-size {_fmt(nearest_divisors(gbs // dp, mbs))}" if good_mbs else ""
        out.err(
            "batch-divisible",
            f"global-batch-size {gbs} is not divisible by micro-batch-size x DP = {mbs} x {dp} = {mbs * dp}.",
            f"use global-batch-size {_fmt(good_gbs)}{mbs_hint}.",
        )
        return
    n_mb = gbs // (mbs * dp)
    if v > 1 and n_mb < pp:
        out.err(
            "interleaved-microbatches",
            f"the interleaved schedule needs at least PP={pp} "
            f"micro-batches per iteration; this config has {n_mb}.",
            f"use global-batch-size {mbs * dp * pp} or more.",
        )
    elif pp > 1 and n_mb < pp:
        out.warn(
            "few-microbatches",
            f"{n_mb} micro-batches for PP={pp}: the pipeline bubble dominates.",
            f"use global-batch-size {mbs * dp * pp * 4} or more (>= 4 x PP micro-batches).",
        )
    elif pp > 1 and n_mb < 4 * pp:
        out.warn(
            "pipeline-bubble",
            f"{n_mb} micro-batches for PP={pp}: the bubble (p-1)/(m v) is "
            f"{(pp - 1) / (n_mb * v):.0%} of the ideal time.",
            f"raise global-batch-size towards {mbs * dp * pp * 4}, or interleave with virtual stages.",
        )


def _check_recompute(out: _Issues, m: ModelConfig, par: ParallelConfig, v: int) -> None:
    """Activation recomputation's flags go together as Megatron-LM's argument checks demand:
    full granularity needs a method and a layer count, a method needs full granularity, and block
    recomputation cannot cover more layers than a pipeline chunk has."""
    L, pp = m.num_layers, par.pp
    gran = par.recompute_granularity
    if gran == "full" and not par.recompute_method:
        out.err(
            "recompute-method-needed",
            "--recompute-granularity full needs --recompute-method uniform|block.",
            "add --recompute-method uniform --recompute-num-layers 1.",
        )
    if gran == "full" and par.recompute_method and not par.recompute_num_layers:
        out.err(
            "recompute-num-layers-needed",
            "--recompute-method needs --recompute-num-layers.",
            "add --recompute-num-layers 1.",
        )
    if gran != "full" and par.recompute_method:
        out.err(
            "recompute-method-needs-full",
            f"--recompute-method {par.recompute_method} only applies to --recompute-granularity full.",
            "remove --recompute-method, or use --recompute-granularity full.",
        )
    if gran == "full" and par.recompute_method == "block" and par.recompute_num_layers and L % pp == 0:
        per_chunk = (L // pp) // v
        if par.recompute_num_layers > per_chunk:
            out.err(
                "recompute-num-layers-too-large",
                f"--recompute-num-layers {par.recompute_num_layers} exceeds "
                f"the {per_chunk} layers of a pipeline chunk.",
                f"use at most {per_chunk}.",
            )


def _check_precision(out: _Issues, par: ParallelConfig, cl: ClusterConfig) -> None:
    """One half precision at a time, FP8 only inside a bf16/fp16 model on GPUs with FP8 tensor
    cores; fp32 and fp16 training are valid but slow or fragile, so they warn."""
    if par.bf16 and par.fp16:
        out.err(
            "one-half-precision", "--bf16 and --fp16 are both given.", "keep one (bf16 on A100 and newer)."
        )
    if par.fp8_format and not (par.bf16 or par.fp16):
        out.err("fp8-needs-bf16", "--fp8-format needs --bf16 (FP8 GEMMs inside a bf16 model).", "add --bf16.")
    if par.fp8_format:
        from ..facts.hardware import GPUS

        gpu = GPUS.get(cl.gpu)
        if gpu is not None and not gpu.fp8_tflops:
            out.err(
                "fp8-needs-hopper",
                f"--fp8-format needs FP8 tensor cores; {gpu.name} has none.",
                "remove --fp8-format, or use H100/H200/B200.",
            )
    if not (par.bf16 or par.fp16):
        out.warn(
            "fp32-training",
            "no --bf16: Megatron trains in fp32 (16 bytes/param of model state, no tensor-core speed-up).",
            "add --bf16.",
        )
    if par.fp16:
        out.warn(
            "fp16-loss-scaling",
            "--fp16 needs loss scaling and can skip iterations; bf16 does not.",
            "use --bf16.",
        )


def _check_distributed_optimizer(out: _Issues, par: ParallelConfig, dp: int) -> None:
    """The distributed optimizer shards optimizer state across data-parallel ranks; with one rank it
    adds bookkeeping and saves nothing, so it warns."""
    if dp == 1 and par.use_distributed_optimizer:
        out.warn(
            "distopt-no-dp",
            "--use-distributed-optimizer with a single data-parallel rank shards nothing.",
            "drop it, or add data parallelism.",
        )
