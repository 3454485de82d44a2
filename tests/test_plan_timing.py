"""The time model, the hardware and price tables it reads, and the presets."""

from __future__ import annotations

import pytest

from workshop_lib.facts import hardware, prices
from workshop_lib.facts.models import PRESETS, preset
from workshop_lib.plan.api import plan, plan_from_megatron_args, resolve_args
from workshop_lib.plan.config import ClusterConfig
from workshop_lib.plan.timing import links, training_time


def test_gpu_peaks_are_dense_figures():
    g = hardware.GPUS
    assert (
        g["a10g"].bf16_tflops == 70.0 and g["a10g"].fp8_tflops is None and g["a10g"].nvlink_bytes_per_s == 0
    )
    assert g["a100-40gb"].bf16_tflops == g["a100-80gb"].bf16_tflops == 312.0
    assert g["h100-80gb"].bf16_tflops == g["h200"].bf16_tflops == 989.0
    for k in ("h100-80gb", "h200", "b200"):
        assert g[k].fp8_tflops == pytest.approx(2 * g[k].bf16_tflops, abs=1.0)  # 1979 = 2 x 989.4
    assert g["a100-40gb"].memory_bytes == 40960 * 2**20 and g["h100-80gb"].memory_bytes == 81559 * 2**20


def test_links_nvlink_inside_efa_across():
    p4d = links(ClusterConfig("a100-40gb", 8, 2, "p4d.24xlarge"))
    p5 = links(ClusterConfig("h100-80gb", 8, 2, "p5.48xlarge"))
    assert p4d.intra_bytes_per_s > 10 * p4d.inter_bytes_per_s
    assert p5.inter_bytes_per_s == pytest.approx(8 * p4d.inter_bytes_per_s)  # 3200 vs 400 Gb/s


def test_bubble_and_pipeline_terms():
    args = {
        "model": "gpt-13b",
        "bf16": True,
        "pipeline-model-parallel-size": 4,
        "global-batch-size": 32,
        "use-distributed-optimizer": True,
    }
    p = plan_from_megatron_args(args, gpu="a100-80gb", gpus_per_node=8, nodes=1)
    assert p["num_microbatches"] == 16
    assert p["pipeline_bubble_fraction"] == pytest.approx(3 / 16)
    inter = plan_from_megatron_args(
        {**args, "num-layers-per-virtual-pipeline-stage": 5}, gpu="a100-80gb", gpus_per_node=8, nodes=1
    )
    assert inter["pipeline_bubble_fraction"] == pytest.approx(3 / (16 * 2))
    assert inter["estimate"]["seconds_per_iteration"] < p["estimate"]["seconds_per_iteration"]


def test_tp_across_nodes_is_much_slower():
    base = {"model": "gpt-13b", "bf16": True, "sequence-parallel": True, "global-batch-size": 64}
    inside = plan_from_megatron_args(
        {**base, "tensor-model-parallel-size": 8}, gpu="a100-40gb", gpus_per_node=8, nodes=2
    )
    across = plan_from_megatron_args(
        {**base, "tensor-model-parallel-size": 16}, gpu="a100-40gb", gpus_per_node=8, nodes=2
    )
    assert across["estimate"]["seconds_per_iteration"] > 3 * inside["estimate"]["seconds_per_iteration"]


def test_time_mfu_and_cost_arithmetic():
    m, par, _ = resolve_args(
        {
            "model": "techpulse-7b",
            "tensor-model-parallel-size": 2,
            "sequence-parallel": True,
            "use-distributed-optimizer": True,
            "global-batch-size": 512,
            "bf16": True,
        }
    )
    p = plan(m, par, ClusterConfig("a100-40gb", 8, 2, "p4d.24xlarge"), train_tokens=1e10)
    est = p["estimate"]
    assert est["tokens_per_second"] == pytest.approx(512 * 4096 / est["seconds_per_iteration"])
    assert est["mfu"] == pytest.approx(
        p["flops_per_iteration"] / (est["seconds_per_iteration"] * 16 * 312e12)
    )
    assert 0.2 < est["mfu"] < 0.65
    tr = p["details"]["training"]
    assert tr["days"] == pytest.approx(1e10 / est["tokens_per_second"] / 86400)
    assert tr["cost_usd"] == pytest.approx(tr["days"] * 24 * 2 * prices.PRICES_USD_PER_HOUR["p4d.24xlarge"])
    custom = training_time(1000.0, 3.6e6, nodes=2, instance_type=None, price=10.0)
    assert custom["node_hours"] == pytest.approx(2.0) and custom["cost_usd"] == pytest.approx(20.0)


def test_recompute_costs_time_saves_memory():
    base = {
        "model": "gpt-13b",
        "bf16": True,
        "tensor-model-parallel-size": 4,
        "sequence-parallel": True,
        "global-batch-size": 64,
        "use-distributed-optimizer": True,
    }
    none = plan_from_megatron_args(base, gpu="a100-80gb", gpus_per_node=8, nodes=1)
    full = plan_from_megatron_args(
        {**base, "recompute-granularity": "full", "recompute-method": "uniform", "recompute-num-layers": 1},
        gpu="a100-80gb",
        gpus_per_node=8,
        nodes=1,
    )
    assert full["memory_per_gpu_bytes"]["activations"] < none["memory_per_gpu_bytes"]["activations"] / 4
    assert full["estimate"]["seconds_per_iteration"] > 1.2 * none["estimate"]["seconds_per_iteration"]
    assert full["flops_per_iteration"] == none["flops_per_iteration"]  # model FLOPs exclude recomputation


def test_every_preset_plans_and_every_instance_has_a_price():
    for name in PRESETS:
        flags = preset(name)
        assert "num-layers" in flags and "_meta" not in flags
        p = plan_from_megatron_args({"model": name, "bf16": True}, gpu="h100-80gb", gpus_per_node=8, nodes=1)
        assert p["parameters"]["total"] > 1e8
    for name in hardware.INSTANCES:
        assert prices.price_per_hour(name) > 0
    assert prices.price_per_hour("ml.p5.48xlarge") == prices.PRICES_USD_PER_HOUR["p5.48xlarge"]


def narayanan_estimates() -> dict[str, tuple[float, float]]:
    """(our estimate, the paper's measurement) of TFLOP/s per GPU for each Table 1 row."""
    from workshop_lib.plan.calibration import narayanan_table1

    rows = narayanan_table1()
    assert len(rows) == 10
    for r in rows:
        assert r.plan["valid"] and r.plan["fits"], (r.name, r.plan["errors"], r.plan["warnings"])
    return {r.name: (r.estimated_tflops_per_gpu, r.paper["tflops_per_gpu"]) for r in rows}


def test_time_model_reproduces_narayanan_table1_throughput():
    est = narayanan_estimates()
    ratios = [ours / paper for ours, paper in est.values()]
    assert all(0.85 <= r <= 1.15 for r in ratios), est
    assert sum(ratios) / len(ratios) == pytest.approx(1.0, abs=0.05)
