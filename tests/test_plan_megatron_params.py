"""The planner's parameter counts equal what megatron-core 0.16 builds, exactly.

One ``torchrun --nproc-per-node 2`` job (CPU, gloo) builds every case with megatron-core's
``GPTModel`` and the local layer spec, under the case's TP/PP/EP, and reports each rank's
``numel`` sum; the planner must give the same total and the same per-GPU count for every rank.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from workshop_lib.plan.config import ModelConfig, ParallelConfig
from workshop_lib.plan.model import count_params

pytest.importorskip("torch")
pytest.importorskip("megatron.core")

WORKER = textwrap.dedent(
    r"""
    import json, os, sys, warnings
    warnings.filterwarnings("ignore")
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    torch.set_num_threads(1)
    if not torch.cuda.is_available():  # tied embeddings + PP all-reduce the copy after .cuda()
        torch.Tensor.cuda = lambda self, *a, **k: self
    dist.init_process_group("gloo")
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    from megatron.core.transformer.transformer_config import TransformerConfig

    cases = json.load(open(sys.argv[1]))
    results = []
    for c in cases:
        ps.destroy_model_parallel()
        ps.initialize_model_parallel(
            tensor_model_parallel_size=c["tp"], pipeline_model_parallel_size=c["pp"],
            expert_model_parallel_size=c["ep"], expert_tensor_parallel_size=c["etp"])
        m = c["model"]
        cfg = TransformerConfig(
            num_layers=m["num_layers"], hidden_size=m["hidden_size"],
            num_attention_heads=m["num_attention_heads"], num_query_groups=m["num_query_groups"],
            kv_channels=m["kv_channels"], ffn_hidden_size=m["ffn"], use_cpu_initialization=True,
            normalization=m["normalization"], add_bias_linear=m["add_bias_linear"],
            gated_linear_unit=m["swiglu"], activation_func=F.silu if m["swiglu"] else F.gelu,
            bias_activation_fusion=False, num_moe_experts=m["num_experts"],
            moe_router_topk=m["moe_router_topk"], moe_ffn_hidden_size=m["moe_ffn"],
            moe_shared_expert_intermediate_size=m["moe_shared_expert_intermediate_size"],
            qk_layernorm=m["qk_layernorm"], tensor_model_parallel_size=c["tp"],
            pipeline_model_parallel_size=c["pp"], expert_model_parallel_size=c["ep"],
            expert_tensor_parallel_size=c["etp"],
            params_dtype=torch.float32, pipeline_dtype=torch.float32)
        spec = get_gpt_layer_local_spec(num_experts=m["num_experts"], normalization=m["normalization"],
                                        qk_layernorm=m["qk_layernorm"])
        model = GPTModel(
            config=cfg, transformer_layer_spec=spec, vocab_size=m["padded_vocab"],
            max_sequence_length=m["max_positions"],
            pre_process=ps.is_pipeline_first_stage(), post_process=ps.is_pipeline_last_stage(),
            share_embeddings_and_output_weights=not m["untie"],
            position_embedding_type=m["position_embedding_type"])
        n = sum(p.numel() for p in model.parameters())
        info = {"rank": dist.get_rank(), "pp_rank": ps.get_pipeline_model_parallel_rank(), "numel": n}
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, info)
        results.append(gathered)
        del model
    if dist.get_rank() == 0:
        json.dump(results, open(sys.argv[2], "w"))
    dist.barrier()
    dist.destroy_process_group()
    """
)


def _m(**kw) -> ModelConfig:
    base = dict(num_layers=2, hidden_size=64, num_attention_heads=4, seq_length=32, vocab_size=1000)
    base.update(kw)
    return ModelConfig(**base)


# (id, model, tp, pp, ep)
CASES = [
    ("dense-gpt", _m(), 1, 1, 1),
    (
        "gqa-rope-rmsnorm",
        _m(num_query_groups=2, position_embedding_type="rope", normalization="RMSNorm"),
        1,
        1,
        1,
    ),
    (
        "swiglu-nobias-untied",
        _m(swiglu=True, add_bias_linear=False, untie_embeddings_and_output_weights=True, ffn_hidden_size=160),
        1,
        1,
        1,
    ),
    ("kv-channels-qk-norm", _m(kv_channels=24, qk_layernorm=True, num_query_groups=2), 1, 1, 1),
    (
        "moe-shared",
        _m(
            num_experts=4,
            moe_router_topk=2,
            moe_ffn_hidden_size=96,
            swiglu=True,
            add_bias_linear=False,
            normalization="RMSNorm",
            moe_shared_expert_intermediate_size=128,
        ),
        1,
        1,
        1,
    ),
    ("moe-bias", _m(num_experts=4, moe_router_topk=2, moe_layer_freq=1), 1, 1, 1),
    ("tp2-dense", _m(vocab_size=1001), 2, 1, 1),
    (
        "tp2-gqa-swiglu-untied",
        _m(
            num_query_groups=2,
            swiglu=True,
            untie_embeddings_and_output_weights=True,
            normalization="RMSNorm",
            position_embedding_type="rope",
        ),
        2,
        1,
        1,
    ),
    ("pp2-tied", _m(num_layers=4), 1, 2, 1),
    ("pp2-untied", _m(num_layers=4, untie_embeddings_and_output_weights=True), 1, 2, 1),
    ("ep2-moe", _m(num_experts=4, moe_router_topk=2, swiglu=True, add_bias_linear=False), 1, 1, 2),
    ("tp2-moe", _m(num_experts=4, moe_router_topk=2, swiglu=True, add_bias_linear=False), 2, 1, 1),
    (
        "tp2-ep2-etp1-moe",
        _m(num_experts=4, moe_router_topk=2, moe_shared_expert_intermediate_size=64, add_bias_linear=False),
        2,
        1,
        2,
    ),
]
# Expert tensor-parallel size per case (None: = TP, megatron-core's default).
ETP = {"tp2-ep2-etp1-moe": 1}


def _case_json(m: ModelConfig, tp: int, pp: int, ep: int, etp: int | None = None) -> dict:
    return {
        "tp": tp,
        "pp": pp,
        "ep": ep,
        "etp": etp,
        "model": {
            "num_layers": m.num_layers,
            "hidden_size": m.hidden_size,
            "num_attention_heads": m.heads,
            "num_query_groups": m.num_query_groups,
            "kv_channels": m.kv_channels,
            "ffn": m.ffn,
            "normalization": m.normalization,
            "add_bias_linear": m.add_bias_linear,
            "swiglu": m.swiglu,
            "num_experts": m.num_experts,
            "moe_router_topk": m.moe_router_topk,
            "moe_ffn": m.moe_ffn if m.is_moe else None,
            "moe_shared_expert_intermediate_size": m.moe_shared_expert_intermediate_size,
            "qk_layernorm": m.qk_layernorm,
            "padded_vocab": m.padded_vocab(tp),
            "max_positions": m.max_positions,
            "untie": m.untie_embeddings_and_output_weights,
            "position_embedding_type": m.position_embedding_type,
        },
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcore")
    (tmp / "worker.py").write_text(WORKER)
    (tmp / "cases.json").write_text(
        json.dumps([_case_json(m, tp, pp, ep, ETP.get(n)) for n, m, tp, pp, ep in CASES])
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    with socket.socket() as sock:  # a free port for the rendezvous (port 0 makes torchrun wait)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node=2",
            "--master-addr=127.0.0.1",
            f"--master-port={port}",
            str(tmp / "worker.py"),
            str(tmp / "cases.json"),
            str(tmp / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if proc.returncode != 0:
        pytest.fail("megatron-core build failed:\n" + proc.stdout[-3000:] + proc.stderr[-5000:])
    return dict(zip([c[0] for c in CASES], json.loads((tmp / "out.json").read_text()), strict=True))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_parameter_counts_match_megatron_core(built, case):
    name, m, tp, pp, ep = case
    ranks = built[name]
    counts = count_params(
        m,
        ParallelConfig(
            tensor_model_parallel_size=tp,
            pipeline_model_parallel_size=pp,
            expert_model_parallel_size=ep,
            expert_tensor_parallel_size=ETP.get(name),
        ),
    )
    for r in ranks:
        assert r["numel"] == counts.per_gpu_stage[r["pp_rank"]], (name, r)
    if tp == 1 and pp == 1 and ep == 1:
        assert ranks[0]["numel"] == counts.total
    if pp == 2:
        # Tied embeddings: the last stage's output layer is a copy, not a new parameter.
        copy = 0 if m.untie_embeddings_and_output_weights else m.padded_vocab(1) * m.hidden_size
        assert sum(r["numel"] for r in ranks) - copy == counts.total
