"""Layouts as flags, and where each parallel dimension's traffic goes (notebook 02's helpers)."""

from __future__ import annotations

import pytest

from workshop_lib.plan.layout import dimension_links, layout_flags
from workshop_lib.widgets.plan_views import LayoutExplorer, layout_table


def test_layout_flags_spell_only_what_the_layout_uses():
    flags = layout_flags(
        "techpulse-7b", tp=1, sequence_parallel=True, recompute="full", global_batch_size=512
    )
    assert flags["sequence-parallel"] is True  # spelled as chosen: the planner's rules judge it
    # The notebook's explorer compares runnable layouts: SP means nothing without TP.
    ex = LayoutExplorer("techpulse-7b", "p4d.24xlarge", 2, layout={"sequence_parallel": True})
    assert "sequence-parallel" not in ex.flags(tp=1) and ex.flags(tp=2)["sequence-parallel"] is True
    assert "model" not in layout_flags(tp=2) and layout_flags(fp8=True)["fp8-format"] == "hybrid"
    assert flags["recompute-granularity"] == "full" and flags["recompute-num-layers"] == 1
    assert flags["global-batch-size"] == 512 and flags["bf16"] is True
    assert "context-parallel-size" not in flags and "expert-model-parallel-size" not in flags
    with pytest.raises(ValueError, match="recompute"):
        layout_flags("techpulse-7b", recompute="some")


def test_dimension_links_follow_megatrons_rank_order():
    ex = LayoutExplorer("techpulse-7b", "p4d.24xlarge", 2, layout={"global_batch_size": 512})
    links = dimension_links(ex.plan(tp=2, pp=2), gpus_per_node=8)
    assert links["TP"] == (2, "NVLink (inside a node)")
    assert links["DP"] == (4, "NVLink (inside a node)")  # 2 x 4 = 8 ranks: one node
    assert links["PP"] == (2, "network (across nodes)")
    assert links["CP"] == (1, "-")
    assert dimension_links(ex.plan(tp=1), gpus_per_node=8)["DP"] == (16, "network (across nodes)")


def test_explorer_varies_one_layout_and_keeps_the_vocabulary_for_its_model_only():
    ex = LayoutExplorer(
        "techpulse-7b",
        "p4d.24xlarge",
        2,
        vocab_size=8192,
        layout={"tp": 2, "global_batch_size": 512, "distributed_optimizer": True},
    )
    assert ex.flags()["vocab-size"] == 8192
    assert "vocab-size" not in ex.flags(model="llama3.1-70b")
    base, bigger_mbs = ex.plan(), ex.plan(micro_batch_size=2)
    assert base["num_microbatches"] == 2 * bigger_mbs["num_microbatches"] == 64
    assert (
        bigger_mbs["memory_per_gpu_bytes"]["activations"] == 2 * base["memory_per_gpu_bytes"]["activations"]
    )
    table = layout_table([("base", base), ("mbs 2", bigger_mbs)])
    assert list(table.index) == ["base", "mbs 2"] and table.loc["base", "micro-batches"] == 64
