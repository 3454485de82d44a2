"""A parallel layout as Megatron flags, and where each parallel dimension's traffic travels.

Notebook 02 compares many layouts of one model; these two pure functions keep that comparison in
the library: :func:`layout_flags` spells a layout as the job-YAML form of Megatron's flags (what
``plan_from_megatron_args`` and the job file take), and :func:`dimension_links` says, for a plan,
whether each of TP, CP, DP and PP talks over NVLink inside a node or over the network between
nodes, following Megatron's rank order (TP fastest, then CP, then DP, then PP).
"""

from __future__ import annotations

from typing import Any

from ..facts.megatron_flags import choices

# The recompute choice of a layout, as the notebook, the calculator and --search offer it: "none",
# then Megatron's granularities from the least recomputed to the most (Megatron lists them the other
# way round: full, selective).
RECOMPUTE_CHOICES = ("none", *reversed(choices("recompute-granularity")))


def layout_flags(
    model: str | None = None,
    *,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    ep: int = 1,
    micro_batch_size: int = 1,
    global_batch_size: int | None = None,
    vp_layers: int | None = None,
    sequence_parallel: bool = False,
    distributed_optimizer: bool = False,
    recompute: str = "none",
    fp8: bool = False,
    bf16: bool = True,
) -> dict[str, Any]:
    """A parallel layout as Megatron flags (job-YAML form), with ``"model": model`` when given.

    Every choice is spelled out as made, sequence parallel with TP=1 included, so the planner's
    rules can say what is wrong with it; full recompute uses Megatron's usual ``uniform`` method
    over one layer at a time.
    """
    if recompute not in RECOMPUTE_CHOICES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_CHOICES}, not {recompute!r}")
    flags: dict[str, Any] = {"model": model} if model else {}
    flags.update({"tensor-model-parallel-size": tp, "pipeline-model-parallel-size": pp,
                  "micro-batch-size": micro_batch_size})  # fmt: skip
    if global_batch_size is not None:
        flags["global-batch-size"] = global_batch_size
    if bf16:
        flags["bf16"] = True
    if cp > 1:
        flags["context-parallel-size"] = cp
    if ep > 1:
        flags["expert-model-parallel-size"] = ep
    if vp_layers:
        flags["num-layers-per-virtual-pipeline-stage"] = vp_layers
    if sequence_parallel:
        flags["sequence-parallel"] = True
    if distributed_optimizer:
        flags["use-distributed-optimizer"] = True
    if recompute == "selective":
        flags["recompute-granularity"] = "selective"
    elif recompute == "full":
        flags.update(
            {"recompute-granularity": "full", "recompute-method": "uniform", "recompute-num-layers": 1}
        )
    if fp8:
        flags["fp8-format"] = "hybrid"
    return flags


def dimension_links(plan: dict[str, Any], gpus_per_node: int) -> dict[str, tuple[int, str]]:
    """``{"TP": (size, link), "CP": ..., "DP": ..., "PP": ...}`` for a plan from ``plan()``.

    A group of ``size`` ranks spaced ``stride`` apart stays inside one node when
    ``stride * size <= gpus_per_node``; otherwise its collectives cross the network.
    """
    flags = plan["flags"]
    tp = int(flags.get("tensor-model-parallel-size", 1))
    pp = int(flags.get("pipeline-model-parallel-size", 1))
    cp = int(flags.get("context-parallel-size", 1))
    dp = int(plan["data_parallel_size"])

    def link(stride: int, size: int) -> str:
        if size == 1:
            return "-"
        return "NVLink (inside a node)" if stride * size <= gpus_per_node else "network (across nodes)"

    return {"TP": (tp, link(1, tp)), "CP": (cp, link(tp, cp)), "DP": (dp, link(tp * cp, dp)),
            "PP": (pp, link(tp * cp * dp, pp))}  # fmt: skip
