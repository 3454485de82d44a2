"""Notebook 02's tables and plot over the planner: compare layouts of one model, plot the search.

:class:`LayoutExplorer` holds the layout of the notebook's parameters cell and plans variations of
it (``ex.plan(tp=8, pp=4)``, another instance type, another model); :func:`layout_table` turns plans
into one pandas table with the columns the notebook discusses (memory split, batch math, bubble,
speed); :func:`search_scatter` draws every valid layout's memory against its estimated speed,
with the ones that fit highlighted. No math of their own: everything comes from ``plan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..facts.hardware import GPUS, instance
from ..plan.api import plan, resolve_args
from ..plan.config import ClusterConfig
from ..plan.layout import layout_flags
from ..plan.search import candidate_layouts, search

GIB = 1024**3


@dataclass(frozen=True)
class LayoutExplorer:
    """A model on a cluster with a default layout; every method plans a variation of it."""

    model: str
    instance_type: str
    nodes: int
    layout: dict[str, Any] = field(default_factory=dict)  # keyword arguments of layout_flags
    vocab_size: int | None = None  # the tokenizer's, used for `model` only (other presets keep theirs)

    def flags(self, *, model: str | None = None, **over: Any) -> dict[str, Any]:
        """The Megatron flags of the default layout with ``over`` applied (layout_flags' names).

        Sequence parallel is kept only where TP > 1, so a variation such as ``tp=1`` compares the
        layouts people would run rather than tripping the SP-needs-TP rule.
        """
        name = model or self.model
        layout = {**self.layout, **over}
        layout["sequence_parallel"] = bool(layout.get("sequence_parallel")) and layout.get("tp", 1) > 1
        flags = layout_flags(name, **layout)
        if self.vocab_size and name == self.model:
            flags["vocab-size"] = self.vocab_size
        return flags

    def cluster(self, instance_type: str | None = None, nodes: int | None = None) -> ClusterConfig:
        node = instance(instance_type or self.instance_type)
        return ClusterConfig(node.gpu, node.gpus_per_node, nodes or self.nodes, node.name)

    def plan(
        self, *, instance_type: str | None = None, nodes: int | None = None, **over: Any
    ) -> dict[str, Any]:
        """The full plan (contract JSON plus ``details``) of a variation of the default layout."""
        m, par, _ = resolve_args(self.flags(**over))
        return plan(m, par, self.cluster(instance_type, nodes))

    def on(self, instance_type: str, nodes: int) -> LayoutExplorer:
        """The same model and layout on another cluster."""
        return replace(self, instance_type=instance_type, nodes=nodes)

    def search_space(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(every valid layout's plan, the valid-and-fitting ones ranked by estimated speed)."""
        m, par, _ = resolve_args(self.flags())
        cl = self.cluster()
        valid = [
            p for p in (plan(m, c, cl, details=False) for c in candidate_layouts(m, cl, par)) if p["valid"]
        ]
        return valid, search(m, cl, par)


def _gib(value: float | None) -> float | None:
    return None if value is None else value / GIB


def layout_row(label: str, p: dict[str, Any]) -> dict[str, Any]:
    """One row of :func:`layout_table` for a plan."""
    mem, est = p["memory_per_gpu_bytes"], p["estimate"]
    return {
        "layout": label, "valid": p["valid"], "fits": p["fits"],
        "DP": p["data_parallel_size"], "micro-batches": p["num_microbatches"],
        "weights GiB": _gib(mem["weights"]), "grads GiB": _gib(mem["gradients"]),
        "optimizer GiB": _gib(mem["optimizer"]), "activations GiB": _gib(mem["activations"]),
        "total GiB": _gib(mem["total"]), "bubble": p["pipeline_bubble_fraction"],
        "s/iter": est["seconds_per_iteration"], "tokens/s": est["tokens_per_second"], "MFU": est["mfu"],
    }  # fmt: skip


def layout_table(plans: list[tuple[str, dict[str, Any]]]):
    """A pandas table of labelled plans: memory split (GiB), batch math, bubble and speed."""
    import pandas as pd

    df = pd.DataFrame([layout_row(label, p) for label, p in plans]).set_index("layout")
    df["MFU"] = [f"{x:.0%}" if isinstance(x, float) and x == x else "-" for x in df["MFU"]]
    df["bubble"] = [f"{x:.1%}" if x is not None else "-" for x in df["bubble"]]
    df["tokens/s"] = df["tokens/s"].round(0)
    return df.round(1)


def search_scatter(explorer: LayoutExplorer, *, ax: Any = None):
    """Memory on the busiest GPU vs estimated tokens/s for every valid layout; returns (fig, ranked)."""
    import matplotlib.pyplot as plt

    valid, ranked = explorer.search_space()
    gpu = GPUS[instance(explorer.instance_type).gpu]
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8, 4.5))
    for fits, style in (
        (False, {"s": 12, "c": "#bbbbbb", "label": "does not fit"}),
        (True, {"s": 16, "c": "#1f77b4", "label": "fits"}),
    ):
        pts = [p for p in valid if p["fits"] is fits]
        ax.scatter(
            [_gib(p["memory_per_gpu_bytes"]["total"]) for p in pts],
            [p["estimate"]["tokens_per_second"] for p in pts],
            **style,
        )
    if ranked:
        best = ranked[0]
        ax.scatter(
            [_gib(best["memory_per_gpu_bytes"]["total"])],
            [best["estimate"]["tokens_per_second"]],
            s=160,
            facecolors="none",
            edgecolors="#d62728",
            linewidths=2,
            label="best",
        )
    ax.axvline(gpu.memory_bytes / GIB, color="#d62728", ls="--", lw=1, label="GPU memory")
    ax.set_xlabel("memory on the busiest GPU (GiB)")
    ax.set_ylabel("estimated tokens / s")
    ax.set_title(
        f"{explorer.model} on {explorer.nodes} x {explorer.instance_type}: "
        f"{len(valid)} valid layouts, {len(ranked)} fit"
    )
    ax.legend(loc="best")
    return fig, ranked
