"""The time model against published measurements: Narayanan et al. 2021, Table 1.

The paper trained ten GPT models (1.7B to 1T) on Selene (DGX A100 80GB, 8 x 200 Gb/s HDR
InfiniBand per node) with full recomputation, and reports the teraFLOP/s per GPU it achieved,
counted with its eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), which includes one recomputation pass.
Planning each row with the paper's own layout and counting FLOPs the same way gives our estimate
of the same figure; the test suite and ``benchmarks/bench_plan_search.py`` both read it from here.
The compute fraction in ``timing.py`` was tuned on these rows, so agreement here shows the model is
consistent with the paper, not that it predicts other hardware.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts.models import PRESETS, preset_meta
from .api import plan, resolve_args
from .config import ClusterConfig

# Selene's nodes are DGX A100 80GB with 8 x 200 Gb/s HDR InfiniBand, like Azure's ND A100 v4.
SELENE_LIKE = ("a100-80gb", 8, "Standard_ND96amsr_A100_v4")


@dataclass(frozen=True)
class PaperRow:
    name: str
    paper: dict[str, Any]  # the preset's "paper" metadata: layout, GPUs, batch, measured TFLOP/s
    plan: dict[str, Any]
    estimated_tflops_per_gpu: float

    @property
    def ratio(self) -> float:
        return self.estimated_tflops_per_gpu / self.paper["tflops_per_gpu"]


def paper_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan et al.'s eq. 3: FLOPs per iteration with full recomputation (one extra forward)."""
    return 96 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def narayanan_table1() -> list[PaperRow]:
    """Every Table 1 row planned with the paper's layout, with our estimate of its TFLOP/s per GPU."""
    rows = []
    for name in PRESETS:
        meta = preset_meta(name).get("paper")
        if not meta:
            continue
        m, par, _ = resolve_args({
            "model": name, "tensor-model-parallel-size": meta["tensor_model_parallel_size"],
            "pipeline-model-parallel-size": meta["pipeline_model_parallel_size"],
            "global-batch-size": meta["global_batch_size"], "micro-batch-size": 1, "bf16": True,
            "recompute-granularity": "full", "recompute-method": "uniform", "recompute-num-layers": 1,
        })  # fmt: skip
        gpu, per_node, instance_type = SELENE_LIKE
        p = plan(m, par, ClusterConfig(gpu, per_node, meta["gpus"] // per_node, instance_type))
        flops = paper_flops(
            meta["global_batch_size"], m.seq_length, m.num_layers, m.hidden_size, m.vocab_size
        )
        est = flops / p["estimate"]["seconds_per_iteration"] / meta["gpus"] / 1e12
        rows.append(PaperRow(name, meta, p, est))
    return rows
