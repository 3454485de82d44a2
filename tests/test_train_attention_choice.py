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


def _unset_attention_switches(monkeypatch) -> None:
    """Unset the NVTE switches for this test; megatron-core writes os.environ itself, so each is set
    first, which makes monkeypatch restore the original afterwards."""
    for name in model.NVTE_ATTENTION_SWITCHES:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def _megatron_core_refuses(backend: str, env: dict[str, str], monkeypatch) -> bool:
    """Whether megatron-core's own LanguageModule._set_attention_backend asserts for this environment."""
    from types import SimpleNamespace

    from megatron.core.models.common.language_module.language_module import LanguageModule
    from megatron.core.transformer.enums import AttnBackend

    _unset_attention_switches(monkeypatch)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    fake = SimpleNamespace(config=SimpleNamespace(attention_backend=AttnBackend[backend]))
    try:
        LanguageModule._set_attention_backend(fake)
    except AssertionError:
        return True
    return False


def test_attention_environment_check_agrees_with_megatron_core(monkeypatch):
    """Every backend against every setting of the three NVTE switches (unset, 0, 1): the trainer
    refuses exactly where megatron-core would assert inside the model's constructor."""
    import itertools

    from megatron.core.transformer.enums import AttnBackend

    from workshop_lib.facts.megatron_flags import flag

    backends = sorted(b.name for b in AttnBackend if b.name in model.NVTE_SWITCHES_FOR_BACKEND)
    assert set(backends) == set(model.NVTE_SWITCHES_FOR_BACKEND)  # megatron-core has each of ours
    # the refusal lists the flag's own choices, in its order
    assert tuple(model.NVTE_SWITCHES_FOR_BACKEND) == flag("attention-backend").choices
    refused = 0
    for backend in backends:
        for values in itertools.product((None, "0", "1"), repeat=3):
            env = {n: v for n, v in zip(model.NVTE_ATTENTION_SWITCHES, values, strict=True) if v is not None}
            core = _megatron_core_refuses(backend, env, monkeypatch)
            try:
                model.check_attention_environment(backend, backend, env)
                ours = False
            except model.UsageError:
                ours = True
            assert ours == core, (backend, env)
            refused += ours
    assert 0 < refused < len(backends) * 27


def test_attention_environment_refusal_is_one_line_naming_the_switch(monkeypatch):
    """On the CPU the trainer uses the local backend whatever --attention-backend says; a switch
    exported for a GPU recipe is named, with the way out."""
    _unset_attention_switches(monkeypatch)
    monkeypatch.setenv("NVTE_FLASH_ATTN", "1")
    args = arguments.parse_args(FLAGS)
    with pytest.raises(model.UsageError) as err:
        model.transformer_config(args, Device(False, "gloo", torch.device("cpu")))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("NVTE_FLASH_ATTN='1' in the environment contradicts attention backend local (")
    assert "--attention-backend" in msg


@pytest.mark.parametrize(
    "extra, fused",
    [
        ((), True),  # GELU with biases: megatron-core's fused bias-GELU, as Megatron-LM
        (("--no-bias-gelu-fusion",), False),
        (("--disable-bias-linear",), False),  # the GELU kernel needs a bias
        (("--swiglu",), True),
        (("--swiglu", "--disable-bias-linear"), True),  # the SwiGLU kernel takes no bias too
        (("--swiglu", "--no-bias-swiglu-fusion"), False),
    ],
)
def test_the_mlp_activation_is_fused_on_gpus_as_megatron_lm_does(extra, fused):
    args = arguments.parse_args([*FLAGS, *extra])
    gpu = Device(True, "nccl", torch.device("cpu"))
    assert model.activation_fusion(args, gpu) is fused
    # the CPU keeps the plain ops (the kernels are torch.compile'd)
    assert model.activation_fusion(args, Device(False, "gloo", torch.device("cpu"))) is False
