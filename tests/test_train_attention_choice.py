"""Which core attention the trainer's layer spec holds, per device and --attention-backend.

Building a spec allocates nothing, so the GPU branch (CUDA present, Transformer Engine absent, as
on the lent H100 where benchmarks/results/gpu_h100.md was measured) is checked here on the CPU by
answering ``torch.cuda.is_available()`` with True while the spec is built.
"""

from __future__ import annotations

import shlex

import pytest
import torch

pytest.importorskip("megatron.core")

from megatron.core.transformer.dot_product_attention import DotProductAttention  # noqa: E402

from workshop_lib.train import arguments, model  # noqa: E402
from workshop_lib.train.attention import SDPACoreAttention, SequenceParallelNorm  # noqa: E402
from workshop_lib.train.device import Device  # noqa: E402

FLAGS = shlex.split(
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
    "--max-position-embeddings 128 --micro-batch-size 2 --global-batch-size 4 --train-iters 2 "
    "--lr 1e-4 --mock-data --tokenizer-type HuggingFaceTokenizer --tokenizer-model data/tokenizer "
    "--bf16"
)


def gpu_spec(monkeypatch, *extra: str):
    args = arguments.parse_args([*FLAGS, *extra])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    config, use_te = model.transformer_config(args, Device(True, "nccl", torch.device("cpu")))
    assert not use_te  # no Transformer Engine in this environment, as on the lent GPU
    return model.stage_spec(args, config, use_te, None)


@pytest.mark.parametrize("backend", [None, "auto", "flash"])
def test_gpu_without_te_uses_pytorch_sdpa_for_auto_and_flash(monkeypatch, backend):
    extra = ["--attention-backend", backend] if backend else []
    spec = gpu_spec(monkeypatch, *extra)
    assert spec.submodules.self_attention.submodules.core_attention is SDPACoreAttention
    # only the attention changes: megatron-core's own norms stay on the GPU
    assert spec.submodules.input_layernorm is not SequenceParallelNorm


@pytest.mark.parametrize("backend", ["unfused", "local"])
def test_gpu_without_te_keeps_megatron_local_attention_when_asked(monkeypatch, backend):
    spec = gpu_spec(monkeypatch, "--attention-backend", backend)
    assert spec.submodules.self_attention.submodules.core_attention is DotProductAttention


def test_use_flash_attn_legacy_flag_means_sdpa_on_gpu(monkeypatch):
    spec = gpu_spec(monkeypatch, "--attention-backend", "unfused", "--use-flash-attn")
    assert spec.submodules.self_attention.submodules.core_attention is SDPACoreAttention


def test_each_spec_is_built_fresh(monkeypatch):
    """The swap edits the spec in place: a later unfused build must not inherit an earlier SDPA one."""
    gpu_spec(monkeypatch, "--attention-backend", "flash")
    spec = gpu_spec(monkeypatch, "--attention-backend", "unfused")
    assert spec.submodules.self_attention.submodules.core_attention is DotProductAttention
