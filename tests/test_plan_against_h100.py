"""`workshop plan`'s memory against what the trainer measured on a real H100 (no Transformer Engine).

benchmarks/results/gpu_h100.json holds the allocator figures of ``python -m benchmarks.bench_gpu`` on
the lent H100 (the trainer's Megatron memory report after iteration 4); the plan is recomputed here
from the same flags, so a change to the memory model that moves it away from the card fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench_gpu import FULL_MODEL, planned

MEASURED = json.loads((Path(__file__).resolve().parents[1] / "benchmarks/results/gpu_h100.json").read_text())
RUNS = MEASURED["runs"]
VOCAB = 8192
GIB = 1024**3
SDPA_OR_FULL_RECOMPUTE = ["mbs1-flash", "mbs4-flash", "mbs2-auto", "mbs4-full"]
UNFUSED_ATTENTION = ["mbs1", "mbs2"]  # megatron-core's local attention: the score matrix is kept


def plan_of(name: str, lease: dict = MEASURED) -> dict:
    """The plan for a run of a lease, asked as bench_gpu asks it (--transformer-impl local: no TE there)."""
    env = lease["environment"]
    return planned(FULL_MODEL, lease["runs"][name]["flags"], VOCAB, "h100-80gb", env["transformer_engine"])


def static_bytes(p: dict) -> int:
    mem = p["memory_per_gpu_bytes"]
    return mem["weights"] + mem["gradients"] + mem["optimizer"]


@pytest.mark.parametrize("name", [n for n, r in RUNS.items() if r["exit"] == 0])
def test_weights_gradients_and_adam_states_match_the_allocator_within_3_percent(name):
    """bf16 weights, fp32 main grads, fp32 master + Adam m and v: 18 bytes a parameter, as measured."""
    measured = RUNS[name]["allocated_bytes"]
    assert abs(static_bytes(plan_of(name)) / measured - 1) < 0.03


@pytest.mark.parametrize("name", SDPA_OR_FULL_RECOMPUTE + UNFUSED_ATTENTION)
def test_peak_matches_the_plan_total_within_8_percent(name):
    """Where no score matrix is kept (PyTorch SDPA, full recompute) the plan's total is the peak, and
    where megatron-core's local attention keeps one, once the plan counts its fp32 softmax.

    Measured peaks were 25.7-49.3 GiB against plans of 26.0-52.0 GiB; 8 % is about 3 GiB at 40 GiB,
    less than one micro-batch sample of this model (4.6 GiB).
    """
    p = plan_of(name)
    assert abs(p["memory_per_gpu_bytes"]["total"] / RUNS[name]["max_allocated_bytes"] - 1) < 0.08
    assert p["fits"]


def test_more_micro_batch_grows_the_peak_by_about_the_planned_activations():
    """SDPA, micro-batch 1 to 4: the card grew 4.55 GiB a sample, the plan 3.32 (local spec's unfused
    norms and SwiGLU keep more than Megatron's fused kernels); within a factor 1.5 either way."""
    lo, hi = RUNS["mbs1-flash"], RUNS["mbs4-flash"]
    measured = (hi["max_allocated_bytes"] - lo["max_allocated_bytes"]) / 3
    planned_ = (
        plan_of("mbs4-flash")["memory_per_gpu_bytes"]["activations"]
        - plan_of("mbs1-flash")["memory_per_gpu_bytes"]["activations"]
    ) / 3
    assert 1 / 1.5 < measured / planned_ < 1.5


def test_the_score_matrix_is_what_unfused_attention_adds():
    """Unfused minus SDPA at micro-batch 2: the plan's 7 a s^2 b bytes a layer (local layers, dropout
    counted) against the card's 6 (no dropout in this run): 0.91x, within 15 %."""
    measured = RUNS["mbs2"]["max_allocated_bytes"] - RUNS["mbs2-auto"]["max_allocated_bytes"]
    planned_ = (
        plan_of("mbs2")["memory_per_gpu_bytes"]["activations"]
        - plan_of("mbs2-auto")["memory_per_gpu_bytes"]["activations"]
    )
    assert abs(measured / planned_ - 1) < 0.15


def test_the_plan_foresees_unfused_micro_batch_4_running_out_of_memory():
    """megatron-core's local attention keeps its softmax in fp32: asked with --transformer-impl local
    the plan counts 7 bytes a score (not Korthikanti's 5) and says 81 GiB, which does not fit; the
    H100 ran out of memory at 75 GiB (the plan had said 68 GiB, "fits", before it knew)."""
    assert RUNS["mbs4"]["exit"] != 0
    assert not plan_of("mbs4")["fits"]


# The second lease: the trainer with megatron-core's fused SwiGLU and SDPA's own GQA, and a model
# shape the plan was never compared with before (TinyLlama-1.1B's: 22 layers, 32 heads, 4 K/V heads).
SECOND = MEASURED["second_lease"]


def growth_per_sample(lo: str, hi: str) -> tuple[float, float]:
    """(measured, planned) peak growth per micro-batch sample between two runs of the second lease."""
    a, b = SECOND["runs"][lo], SECOND["runs"][hi]
    samples = b["flags"]["micro-batch-size"] - a["flags"]["micro-batch-size"]
    measured = (b["max_allocated_bytes"] - a["max_allocated_bytes"]) / samples
    planned_ = (
        plan_of(hi, SECOND)["memory_per_gpu_bytes"]["activations"]
        - plan_of(lo, SECOND)["memory_per_gpu_bytes"]["activations"]
    ) / samples
    return measured, planned_


@pytest.mark.parametrize("lo, hi", [("mbs1-flash", "mbs4-flash"), ("gqa-mbs2", "gqa-mbs4")])
def test_with_the_fused_swiglu_the_planned_activations_are_what_the_card_grew(lo, hi):
    """3.18 GiB a sample measured against 3.32 planned (1.25B), 2.80 against 2.75 (the unseen GQA shape)."""
    measured, planned_ = growth_per_sample(lo, hi)
    assert abs(measured / planned_ - 1) < 0.06


@pytest.mark.parametrize("name", ["gqa-mbs2", "gqa-mbs4"])
def test_the_unseen_gqa_shape_fits_with_the_plan_on_the_safe_side(name):
    """The plan's total (with its CUDA-context and fragmentation allowance) is above the allocator's
    peak, by 7-9 %, for a shape its formulas were not compared with before."""
    total = plan_of(name, SECOND)["memory_per_gpu_bytes"]["total"]
    peak = SECOND["runs"][name]["max_allocated_bytes"]
    assert 1.0 < total / peak < 1.10


def test_plain_swiglu_keeps_four_bytes_per_ffn_element_more_than_the_fused_kernel():
    """One layer's saved bytes on the H100 (benchmarks/saved_activations.py): the plain silu(x1) * x2
    keeps 4 bytes x ffn more a token than megatron-core's fused SwiGLU, which the plan counts."""
    by_case = {
        json.dumps(c["case"], sort_keys=True): c["per_layer_bytes"] for c in SECOND["saved_activations"]
    }
    fused = by_case[json.dumps({**FULL_MODEL, "micro-batch-size": 1}, sort_keys=True)]
    plain = by_case[
        json.dumps({**FULL_MODEL, "micro-batch-size": 1, "no-bias-swiglu-fusion": True}, sort_keys=True)
    ]
    tokens = FULL_MODEL["seq-length"]
    assert plain - fused == 4 * FULL_MODEL["ffn-hidden-size"] * tokens
    # and the fused layer is within 8 % of the plan's per-layer bytes (Korthikanti's counts) for the
    # run of that layer's shape
    planned_layer = plan_of("mbs1-flash", SECOND)["details"]["memory"]["per_layer_bytes"]
    assert abs(fused / planned_layer - 1) < 0.08


def test_sdpa_shares_kv_heads_without_copies_on_the_h100():
    """enable_gqa against K/V repeated to every head: the same output, less memory, no slower."""
    g = SECOND["sdpa_gqa"]
    assert g["max_abs_difference"] == 0.0
    assert g["enable_gqa"]["peak_extra_bytes"] < g["repeat"]["peak_extra_bytes"]
    assert g["enable_gqa"]["ms_fwd_bwd"] <= g["repeat"]["ms_fwd_bwd"] * 1.05
