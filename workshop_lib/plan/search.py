"""Search every parallel layout of a model on a cluster; keep the valid ones that fit, fastest first.

The space: TP over the divisors of the GPUs per node (TP never crosses a node), PP over the
divisors of the layer count, CP in 1, 2, 4, 8 (sequence divisible by 2 CP), EP over the divisors
of the expert count (MoE only), virtual stages (interleaving) where each stage has several layers,
micro-batch 1, 2, 4, 8, recomputation none / full (uniform, 1 layer) / selective (only with
``--attention-backend unfused``: flash and fused attention never store the score matrix that
selective recomputation drops, so it would only cost time), the distributed
optimizer on or off, and sequence parallel on whenever TP > 1 (it is never worse). Anything the
caller pins (``fixed``) is not searched. Each candidate is checked with the same rules and memory
model as a single plan; the ranking key is the estimated tokens per second (ties: less memory).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from .config import ClusterConfig, ModelConfig, ParallelConfig
from .layout import RECOMPUTE_CHOICES
from .validity import divisors

MICRO_BATCHES = (1, 2, 4, 8)
CONTEXT_PARALLEL = (1, 2, 4, 8)
RECOMPUTE = tuple(None if r == "none" else r for r in RECOMPUTE_CHOICES)


def candidate_layouts(
    m: ModelConfig, cl: ClusterConfig, base: ParallelConfig, fixed: Iterable[str] = ()
) -> Iterable[ParallelConfig]:
    fixed = set(fixed)
    world = cl.world_size
    gbs = base.global_batch_size
    tps = (
        [base.tp]
        if "tensor_model_parallel_size" in fixed
        else [
            t for t in divisors(cl.gpus_per_node) if m.heads % t == 0 and m.groups % t == 0 and m.ffn % t == 0
        ]
    )
    pps = [base.pp] if "pipeline_model_parallel_size" in fixed else divisors(m.num_layers)
    cps = (
        [base.cp]
        if "context_parallel_size" in fixed
        else [c for c in CONTEXT_PARALLEL if c == 1 or m.seq_length % (2 * c) == 0]
    )
    if m.is_moe:
        eps = [base.ep] if "expert_model_parallel_size" in fixed else divisors(int(m.num_experts or 1))
    else:
        eps = [1]
    mbss = [base.micro_batch_size] if "micro_batch_size" in fixed else list(MICRO_BATCHES)
    if "recompute_granularity" in fixed:
        recs = [base.recompute_granularity]
    elif m.attention_backend == "unfused":
        recs = list(RECOMPUTE)
    else:  # flash/fused attention stores no score matrix: selective recompute would save nothing
        recs = [None, "full"]
    distopts = [base.use_distributed_optimizer] if "use_distributed_optimizer" in fixed else [True, False]
    for tp, pp, cp in itertools.product(tps, pps, cps):
        mp = tp * pp * cp
        if world % mp:
            continue
        dp = world // mp
        if gbs is not None and gbs % dp:
            continue
        if "num_layers_per_virtual_pipeline_stage" in fixed:
            vstages = [base.num_layers_per_virtual_pipeline_stage]
        elif pp > 1:
            per = m.num_layers // pp
            vstages = [None] + [d for d in divisors(per) if d < per and per // d <= 8][-2:]
        else:
            vstages = [None]
        for ep in eps:
            if m.is_moe and (world // pp) % (ep * tp):
                continue
            for mbs in mbss:
                if gbs is not None and (gbs // dp) % mbs:
                    continue
                n_mb = (gbs // dp // mbs) if gbs is not None else 1
                for nv in vstages:
                    if nv and n_mb < pp:
                        continue
                    for rec in recs:
                        for dist in distopts:
                            if dist and dp * cp == 1:
                                continue
                            sp = tp > 1 if "sequence_parallel" not in fixed else base.sequence_parallel
                            yield base.with_(
                                tensor_model_parallel_size=tp,
                                pipeline_model_parallel_size=pp,
                                context_parallel_size=cp,
                                expert_model_parallel_size=ep,
                                num_layers_per_virtual_pipeline_stage=nv,
                                micro_batch_size=mbs,
                                recompute_granularity=rec,
                                recompute_method="uniform" if rec == "full" else None,
                                recompute_num_layers=1 if rec == "full" else None,
                                use_distributed_optimizer=dist,
                                sequence_parallel=sp,
                            )


def search(
    m: ModelConfig,
    cl: ClusterConfig,
    base: ParallelConfig,
    *,
    fixed: Iterable[str] = (),
    limit: int | None = None,
    details: bool = False,
) -> list[dict[str, Any]]:
    """Plans of every valid, fitting layout, best estimated throughput first (the best ``limit``)."""
    from ..errors import UsageError
    from .api import plan

    if limit is not None and limit < 1:
        # A slice would silently drop the last configs (-1) or keep them all (0).
        raise UsageError(f"--top: {limit} must be at least 1 (the number of best layouts to keep)")

    results: list[tuple[float, float, dict[str, Any]]] = []
    for par in candidate_layouts(m, cl, base, fixed):
        p = plan(m, par, cl, details=details)
        if not (p["valid"] and p["fits"]):
            continue
        results.append((-p["estimate"]["tokens_per_second"], p["memory_per_gpu_bytes"]["total"], p))
    results.sort(key=lambda r: (r[0], r[1]))
    out = [r[2] for r in results]
    return out if limit is None else out[:limit]
