"""What the trainer's own layers keep for backward, counted by ``benchmarks/saved_activations.py``.

The probe builds the model through the trainer's parser, ``transformer_config`` and ``stage_spec``
and sums every distinct storage saved for backward: on this CPU machine that is megatron-core's local
spec with the kit's SDPA attention. Grouped-query attention must keep K and V at their own number
of heads (SDPA's ``enable_gqa``), as Transformer Engine does and as ``workshop plan`` counts them,
not repeated to every query head. The same probe ran on an H100 (``gpu_h100.json``, second lease).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("megatron.core")

REPO = Path(__file__).resolve().parents[1]
BASE = {
    "hidden-size": 256, "num-attention-heads": 8, "ffn-hidden-size": 704, "seq-length": 128,
    "micro-batch-size": 2, "position-embedding-type": "rope", "normalization": "RMSNorm", "swiglu": True,
    "disable-bias-linear": True, "attention-dropout": 0.0, "hidden-dropout": 0.0, "bf16": True,
}  # fmt: skip
CASES = [BASE, {**BASE, "group-query-attention": True, "num-query-groups": 2}]


@pytest.fixture(scope="module")
def layers():
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.saved_activations", json.dumps(CASES)],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.fail("the probe failed:\n" + proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def head_shaped(case: dict, heads: int) -> int:
    """How many saved storages of one layer are [b, heads, s, head_dim] (SDPA's saved inputs/outputs)."""
    c = case["case"]
    d = c["hidden-size"] // c["num-attention-heads"]
    want = [c["micro-batch-size"], heads, c["seq-length"], d]
    return sum(1 for s in case["per_layer_storages"] if s["shape"] == want)


def test_multi_head_attention_keeps_q_k_v_and_its_output(layers):
    assert head_shaped(layers[0], 8) == 4


def test_grouped_query_attention_keeps_k_and_v_at_their_own_heads(layers):
    mha, gqa = layers
    assert head_shaped(gqa, 8) == 2  # Q and the output
    assert head_shaped(gqa, 2) == 2  # K and V, not repeated to 8 heads
    c = gqa["case"]
    d = c["hidden-size"] // c["num-attention-heads"]
    kv_bytes = 2 * 2 * c["micro-batch-size"] * c["seq-length"] * d  # K and V, bf16, per head
    # At least six heads' worth of K and V less than multi-head attention (the QKV projection's
    # output is narrower too).
    assert mha["per_layer_bytes"] - gqa["per_layer_bytes"] >= (8 - 2) * kv_bytes
