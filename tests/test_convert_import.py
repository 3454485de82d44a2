"""import-hf / export-hf against the outside truth: transformers models and megatron-core itself.

Tiny models are built with ``transformers`` from a config (random weights, nothing downloaded),
saved as safetensors and imported. One torchrun spawn (2 CPU processes, gloo) then builds the
trainer's GPTModel from the printed flags for every (model, TP, PP) job, loads the checkpoint with
the trainer's own ``load_checkpoint`` (strict) and runs it forward; its logits must equal the
Hugging Face model's on the same tokens (fp32, atol 1e-4). Export must give back exactly the tensors
that went in, from the imported checkpoint and from checkpoints the trainer wrote at TP=2 and PP=2
(with optimizer state in them).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from workshop_lib.convert.exporter import export_hf  # noqa: E402
from workshop_lib.convert.importer import import_hf  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 600
LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
COMMON = dict(
    hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
)


def _configs() -> dict:
    t = transformers
    return {
        # Llama 3.1 as the Hub writes it: rope_theta + rope_scaling, untied
        "llama31": (t.LlamaConfig, dict(COMMON, vocab_size=320, max_position_embeddings=256,
                                          rope_theta=500000.0, rope_scaling=dict(LLAMA3_SCALING))),
        # Llama 3.2 as transformers 5 writes it: rope_parameters, tied embeddings, factor 32
        "llama32": (t.LlamaConfig, dict(COMMON, vocab_size=320, max_position_embeddings=256, tie_word_embeddings=True,
                                          rope_parameters=dict(LLAMA3_SCALING, factor=32.0, rope_theta=500000.0))),
        # Mistral with a vocabulary TP=2 does not divide (one zero row of padding), MHA, and a head_dim
        # that is not hidden/heads (--kv-channels)
        "mistral": (t.MistralConfig, dict(COMMON, num_key_value_heads=4, vocab_size=301, sliding_window=None,
                                            head_dim=32)),
        # Qwen2: q/k/v biases, tied
        "qwen2": (t.Qwen2Config, dict(COMMON, vocab_size=320, tie_word_embeddings=True)),
        # Mixtral: 4 experts, top-2
        "mixtral": (t.MixtralConfig, dict(COMMON, intermediate_size=48, vocab_size=320, num_local_experts=4,
                                            num_experts_per_tok=2)),
    }  # fmt: skip


BF16 = ("llama32",)  # a bf16 checkpoint: the fp32 trainer model loads it, export gives bf16 back
JOBS = {  # (model, import TP) -> layouts to load into
    ("llama31", 1): [(1, 1), (2, 1), (1, 2)],
    ("llama32", 1): [(1, 1), (1, 2)],
    ("mistral", 2): [(2, 1)],
    ("qwen2", 1): [(1, 1), (2, 1)],
    ("mixtral", 1): [(1, 1), (2, 1), (1, 2), (1, 1, 2)],  # the last with expert parallel 2
}


def _causal_lm(cls_cfg, kw):
    cfg_cls, kwargs = cls_cfg, kw
    cfg = cfg_cls(**kwargs)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Tiny HF models (non-trivial norms and biases) saved as safetensors, and their imports."""
    root = tmp_path_factory.mktemp("convert")
    torch.manual_seed(0)
    tokens = torch.randint(0, 300, (2, 24))
    torch.save(tokens, root / "tokens.pt")
    models, imports = {}, {}
    for name, (cfg_cls, kw) in _configs().items():
        m = _causal_lm(cfg_cls, kw)
        with torch.no_grad():  # so that a swapped norm or bias cannot hide
            for n, p in m.named_parameters():
                if n.endswith(("norm.weight", "bias")):
                    p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in n else 0.1 * torch.randn_like(p))
        if name in BF16:  # stored in bf16 (as on the Hub); the fp32 reference holds the same rounded values
            with torch.no_grad():
                for p in m.parameters():
                    p.copy_(p.to(torch.bfloat16).float())
            copy.deepcopy(m).to(torch.bfloat16).save_pretrained(root / f"hf_{name}")  # m keeps fp32 buffers
        else:
            m.save_pretrained(root / f"hf_{name}")
        if name == "llama31":  # the Hub's spelling (transformers 5 saved rope_parameters)
            cfg_path = root / f"hf_{name}" / "config.json"
            cfg = json.loads(cfg_path.read_text())
            params = cfg.pop("rope_parameters")
            cfg["rope_theta"] = params.pop("rope_theta")
            cfg["rope_scaling"] = params
            cfg_path.write_text(json.dumps(cfg))
        models[name] = m
    for name, tp in JOBS:
        imports[name] = import_hf(root / f"hf_{name}", root / f"mg_{name}_tp{tp}", tp=tp)
    return {"root": root, "tokens": tokens, "models": models, "imports": imports}


@pytest.fixture(scope="module")
def world(imported):
    """The logits of the trainer's model for every (model, TP, PP) job, from one torchrun spawn."""
    root, jobs = imported["root"], []
    for (name, _tp), layouts in JOBS.items():
        for ltp, lpp, *rest in layouts:
            ep = rest[0] if rest else 1
            out = root / f"logits_{name}_{ltp}{lpp}{ep}.pt"
            load = imported["imports"][name]["save"]
            jobs.append({"load": load, "tp": ltp, "pp": lpp, "ep": ep, "out": str(out), "name": name})
    (root / "jobs.json").write_text(json.dumps({"tokens": str(root / "tokens.pt"), "jobs": jobs}))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(_free_port()),
         str(REPO / "tests" / "convert_worker.py"), str(root / "jobs.json")],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {**imported, "jobs": jobs}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_megatron_logits_equal_transformers_on_every_layout(world):
    for job in world["jobs"]:
        m = world["models"][job["name"]]
        with torch.no_grad():
            ref = m(world["tokens"]).logits
        got = torch.load(job["out"], weights_only=True)
        vocab = ref.shape[-1]
        assert got.shape[-1] >= vocab
        diff = (got[..., :vocab] - ref).abs().max().item()
        assert diff < 1e-4, (
            f"{job['name']} TP={job['tp']} PP={job['pp']} EP={job['ep']}: max |logit diff| {diff}"
        )


@pytest.mark.slow
def test_round_trip_gives_back_the_same_tensors(imported, tmp_path):
    from safetensors import safe_open

    world = imported
    for name, info in world["imports"].items():
        out = tmp_path / f"back_{name}"
        result = export_hf(info["save"], out, max_shard_size=60_000)  # several shards + index
        assert len(result["shards"]) > 1 and (out / "model.safetensors.index.json").is_file()
        src = world["root"] / f"hf_{name}"
        with safe_open(str(src / "model.safetensors"), "pt") as f:
            want = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
        index = json.loads((out / "model.safetensors.index.json").read_text())
        assert set(index["weight_map"]) == set(want), name
        for k, file in index["weight_map"].items():
            with safe_open(str(out / file), "pt") as f:
                assert torch.equal(f.get_tensor(k), want[k]), f"{name}: {k}"
        back = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
        assert type(back).__name__ == type(world["models"][name]).__name__
        with torch.no_grad():
            assert torch.equal(back(world["tokens"]).logits, world["models"][name](world["tokens"]).logits)


def test_description_and_layout(imported):
    world = imported
    info = world["imports"]["llama31"]
    save = Path(info["save"])
    desc = json.loads((save / "workshop_model.json").read_text())
    assert desc["architecture"] == "LlamaForCausalLM" and desc["vocab_size"] == 320
    assert desc["megatron_flags"] == info["megatron_flags"]
    flags = info["megatron_flags"]
    assert flags[flags.index("--rope-scaling-factor") + 1] == "8" and "--use-rope-scaling" in flags
    assert flags[flags.index("--rotary-base") + 1] == "500000"
    assert "--untie-embeddings-and-output-weights" in flags
    assert (save / "latest_checkpointed_iteration.txt").read_text().strip() == "release"
    assert (save / "iter_0000000" / "metadata.json").is_file() and (
        save / "iter_0000000" / "common.pt"
    ).is_file()
    l32 = world["imports"]["llama32"]["megatron_flags"]
    assert (
        l32[l32.index("--rope-scaling-factor") + 1] == "32"
        and "--untie-embeddings-and-output-weights" not in l32
    )
    assert "--add-qkv-bias" in world["imports"]["qwen2"]["megatron_flags"]
    mix = world["imports"]["mixtral"]["megatron_flags"]
    assert mix[mix.index("--num-experts") + 1] == "4" and mix[mix.index("--moe-router-topk") + 1] == "2"
    mistral = json.loads((Path(world["imports"]["mistral"]["save"]) / "workshop_model.json").read_text())
    assert (mistral["vocab_size"], mistral["padded_vocab_size"], mistral["tensor_model_parallel_size"]) == (
        301,
        302,
        2,
    )
    for name, m in world["models"].items():
        assert world["imports"][name]["parameters"] == sum(p.numel() for p in m.parameters()), name


def _train_zero_lr(load: str, save: Path, tp: int, pp: int) -> None:
    """One trainer iteration at lr 0 from ``load`` (weights unchanged), saved with optimizer state."""
    desc = json.loads((Path(load) / "workshop_model.json").read_text())
    flags = [
        *desc["megatron_flags"],
        "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
        "--seq-length", "32", "--micro-batch-size", "1", "--global-batch-size", str(2 // (tp * pp)),
        "--train-iters", "1", "--lr", "0", "--mock-data", "--tokenizer-type", "NullTokenizer",
        "--load", load, "--no-load-rng", "--save", str(save), "--eval-iters", "0", "--log-interval", "1",
        "--num-workers", "0",
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", "train", "--nproc-per-node", "2", "--", *flags],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _assert_same_weights(out: Path, src: Path, skip_vocab_rows: int | None = None) -> None:
    from safetensors import safe_open

    with safe_open(str(src / "model.safetensors"), "pt") as f:
        want = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"]) == set(want)
    for k, file in index["weight_map"].items():
        with safe_open(str(out / file), "pt") as f:
            got = f.get_tensor(k)
        if skip_vocab_rows is not None and k in ("model.embed_tokens.weight", "lm_head.weight"):
            assert torch.equal(got[: want[k].shape[0]], want[k]) and not got[want[k].shape[0] :].any(), k
        else:
            assert torch.equal(got, want[k]), k


@pytest.mark.slow
def test_export_of_checkpoints_the_trainer_wrote_at_tp2_and_pp2(imported, tmp_path):
    """Trainer checkpoints (TP=2; PP=2 with tied embeddings and q/k/v biases) carry optimizer state
    and a different vocabulary padding; export gathers the model back exactly."""
    import shutil

    from workshop_lib.convert.dcp_io import DcpReader

    root = imported["root"]
    for name, tp, pp in (("llama31", 2, 1), ("qwen2", 1, 2)):
        trained = tmp_path / f"trained_{name}"
        _train_zero_lr(imported["imports"][name]["save"], trained, tp, pp)
        keys = DcpReader(trained / "iter_0000001").tensors()
        assert any(k.startswith("optimizer.") for k in keys), "the trainer's checkpoint has optimizer state"
        result = export_hf(trained, tmp_path / f"back_{name}")
        assert (
            result["iteration"] == 1 and result["architecture"] == imported["imports"][name]["architecture"]
        )
        assert any("--load" in n for n in result["notes"])  # found through the run's --load
        _assert_same_weights(tmp_path / f"back_{name}", root / f"hf_{name}")
        back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / f"back_{name}").eval()
        with torch.no_grad():
            assert torch.equal(
                back(imported["tokens"]).logits, imported["models"][name](imported["tokens"]).logits
            )
    # the same checkpoint with no model description anywhere: described by the training flags alone
    mg = tmp_path / "mg_copy"
    shutil.copytree(imported["imports"]["llama31"]["save"], mg)
    trained = tmp_path / "trained_scratch"
    _train_zero_lr(str(mg), trained, 2, 1)
    (mg / "workshop_model.json").unlink()
    result = export_hf(trained, tmp_path / "back_scratch")
    assert result["architecture"] == "LlamaForCausalLM"
    assert any("training flags" in n for n in result["notes"])
    cfg = json.loads((tmp_path / "back_scratch" / "config.json").read_text())
    assert cfg["vocab_size"] == 321  # NullTokenizer: --vocab-size + 1 (its end-of-document token)
    _assert_same_weights(tmp_path / "back_scratch", root / "hf_llama31", skip_vocab_rows=1)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "back_scratch").eval()
    with torch.no_grad():
        got = back(imported["tokens"]).logits[..., :320]
        want = imported["models"]["llama31"](imported["tokens"]).logits
    assert (got - want).abs().max().item() < 1e-5
