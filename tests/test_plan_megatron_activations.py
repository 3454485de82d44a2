"""Activation memory: what megatron-core saves for backward, against the planner's per-layer bytes.

A small bf16 ``GPTModel`` (local layer spec, unfused attention, CPU) runs one forward pass under
``torch.autograd.graph.saved_tensors_hooks``; the bytes of every distinct non-parameter storage saved
for backward are summed, for 1 and 2 layers, and the difference is one layer's activations. It equals
the planner's Korthikanti figure ``s b h (34 + 5 a s / h)`` once the run's known differences are
applied: dropout is off here (no 1-byte masks: -2 sbh and -1 as^2 b, no attention-dropout output:
-2 as^2 b), megatron-core keeps the softmax in fp32 (``attention_softmax_in_fp32``: +4 as^2 b, plus
the 2-byte copy the next matmul reads), and each LayerNorm keeps its mean and rstd (2 x 2 bytes per
token). Cases cover multi-head attention with GELU, GQA (whose K and V the unfused path repeats to every
head) and SwiGLU with Megatron's default fused bias-SwiGLU kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from workshop_lib.plan.config import ModelConfig, ParallelConfig
from workshop_lib.plan.memory import per_layer_activation_bytes

pytest.importorskip("torch")
pytest.importorskip("megatron.core")
pytest.importorskip("workshop_lib.train.device")

WORKER = textwrap.dedent(
    r"""
    import json, os, socket, sys, warnings
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    torch.set_num_threads(1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    from megatron.core import parallel_state as ps
    ps.initialize_model_parallel(1, 1)
    from workshop_lib.train.device import use_cpu
    use_cpu()
    from megatron.core.tensor_parallel import random as mr
    mr.get_cuda_rng_tracker().add("model-parallel-rng", 1234)
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    def saved(L, h, a, s, b, g=None, swiglu=False, ffn=None):
        cfg = TransformerConfig(
            num_layers=L, hidden_size=h, num_attention_heads=a, num_query_groups=g, ffn_hidden_size=ffn or 4 * h,
            use_cpu_initialization=True, bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
            gated_linear_unit=swiglu, activation_func=F.silu if swiglu else F.gelu,
            bias_activation_fusion=swiglu, masked_softmax_fusion=False, bias_dropout_fusion=False,
            attention_dropout=0.0, hidden_dropout=0.0)
        m = GPTModel(config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(), vocab_size=512,
                     max_sequence_length=s).bfloat16()
        params = {p.untyped_storage().data_ptr() for p in m.parameters()}
        seen = {}
        def pack(t):
            st = t.untyped_storage()
            if st.data_ptr() not in params:
                seen.setdefault(st.data_ptr(), st.nbytes())
            return t
        ids = torch.randint(0, 512, (b, s))
        pos = torch.arange(s).unsqueeze(0).expand(b, s)
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool)).logical_not().view(1, 1, s, s)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            m(ids, pos, mask, labels=ids)
        return sum(seen.values())

    out = []
    for c in json.loads(sys.argv[1]):
        out.append({**c, "per_layer": saved(2, **c) - saved(1, **c)})
    print(json.dumps(out))
    """
)

CASES = [
    dict(h=256, a=4, s=128, b=2),
    dict(h=128, a=4, s=256, b=1),
    dict(h=192, a=6, s=64, b=3),
    dict(h=256, a=8, s=128, b=2, g=2),  # GQA: the unfused path repeats K and V to every head
    dict(h=256, a=8, s=128, b=2, swiglu=True, ffn=1024),  # Megatron's fused bias-SwiGLU keeps 6 ffn/h
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    script = tmp_path_factory.mktemp("acts") / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(script), json.dumps(CASES)], capture_output=True, text=True,
                          timeout=300, env=env)  # fmt: skip
    if proc.returncode != 0:
        pytest.fail("megatron-core forward failed:\n" + proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("i", range(len(CASES)))
def test_saved_activations_match_korthikanti(measured, i):
    c = measured[i]
    h, a, s, b = c["h"], c["a"], c["s"], c["b"]
    m = ModelConfig(num_layers=2, hidden_size=h, num_attention_heads=a, seq_length=s, vocab_size=512,
                    attention_backend="unfused", num_query_groups=c.get("g"), swiglu=c.get("swiglu", False),
                    ffn_hidden_size=c.get("ffn"))  # fmt: skip
    planner = per_layer_activation_bytes(m, ParallelConfig(micro_batch_size=b, bf16=True))
    sbh, as2b = s * b * h, a * s * s * b
    if not c.get("swiglu"):
        assert planner == pytest.approx(sbh * 34 + 5 * as2b)
    expected = planner - 2 * sbh - 3 * as2b + 4 * as2b + 2 * 2 * 2 * s * b
    assert c["per_layer"] == expected
    # Asked with --transformer-impl local, the planner counts these layers' fp32 softmax itself
    # (7 bytes a score with dropout: fp32 softmax, mask, dropout output); without dropout they keep
    # the fp32 softmax and its bf16 copy, 6.
    local = per_layer_activation_bytes(
        replace(m, transformer_impl="local"), ParallelConfig(micro_batch_size=b, bf16=True)
    )
    assert c["per_layer"] == local - 2 * sbh - 1 * as2b + 2 * 2 * 2 * s * b
