"""import-hf / export-hf refuse bad input with exit 2 and one line; the config mapping (torch-free)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from workshop_lib.convert import hfconfig

transformers = pytest.importorskip("transformers")

LLAMA = dict(
    architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=64, intermediate_size=96,
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=300,
    max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
)  # fmt: skip


@pytest.fixture(scope="module")
def hf_llama(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hf") / "llama"
    cfg = transformers.LlamaConfig(
        **{k: v for k, v in LLAMA.items() if k not in ("architectures", "model_type")}
    )
    transformers.LlamaForCausalLM(cfg).save_pretrained(d, max_shard_size="60KB")  # sharded, with an index
    assert (d / "model.safetensors.index.json").is_file()
    return d


def _folder(tmp_path: Path, src: Path, **cfg_changes) -> Path:
    """A copy of ``src`` (weights linked) whose config.json has ``cfg_changes``."""
    d = tmp_path / "m"
    d.mkdir()
    for f in src.iterdir():
        (d / f.name).symlink_to(f)
    cfg = json.loads((src / "config.json").read_text())
    cfg.update(cfg_changes)
    (d / "config.json").unlink()
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def _one_line_error(r, *needles: str) -> None:
    assert r.code == 2, (r.code, r.err)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.err, r.err
    for n in needles:
        assert n in lines[0], lines[0]


def test_unknown_architecture(cli, tmp_path, hf_llama):
    d = _folder(tmp_path, hf_llama, architectures=["GPTNeoXForCausalLM"], model_type="gpt_neox")
    _one_line_error(
        cli("import-hf", "--hf-dir", d, "--save", tmp_path / "out"), "GPTNeoXForCausalLM", "config.json"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"rope_parameters": None, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "'yarn'"),
        ({"rope_parameters": None, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, "'dynamic'"),
        ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "disagree"),
        (
            {"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 2.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
            "low_freq_factor",
        ),
        ({"attention_bias": True}, "attention_bias"),
        ({"hidden_act": "gelu"}, "hidden_act"),
    ],
)  # fmt: skip
def test_unsupported_options(cli, tmp_path, hf_llama, change, needle):
    d = _folder(tmp_path, hf_llama, **change)
    _one_line_error(cli("import-hf", "--hf-dir", d, "--save", tmp_path / "out"), needle)


def test_parallel_layout_the_model_cannot_take(cli, tmp_path, hf_llama):
    r = cli("import-hf", "--hf-dir", hf_llama, "--save", tmp_path / "o", "--tensor-model-parallel-size", "4")
    _one_line_error(r, "--tensor-model-parallel-size 4", "2 key/value heads")
    r = cli(
        "import-hf", "--hf-dir", hf_llama, "--save", tmp_path / "o", "--pipeline-model-parallel-size", "3"
    )
    _one_line_error(r, "--pipeline-model-parallel-size 3", "2 layers")
    r = cli("import-hf", "--hf-dir", hf_llama, "--save", tmp_path / "o", "--expert-model-parallel-size", "2")
    _one_line_error(r, "--expert-model-parallel-size")


def test_missing_shard_and_missing_tensor(cli, tmp_path, hf_llama):
    d = _folder(tmp_path, hf_llama)
    index = json.loads((hf_llama / "model.safetensors.index.json").read_text())
    victim = sorted(set(index["weight_map"].values()))[-1]
    (d / victim).unlink()
    _one_line_error(cli("import-hf", "--hf-dir", d, "--save", tmp_path / "out"), victim, "missing")
    (d / victim).symlink_to(hf_llama / victim)
    (d / "model.safetensors.index.json").unlink()
    del index["weight_map"]["model.norm.weight"]
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    r = cli("import-hf", "--hf-dir", d, "--save", tmp_path / "out")
    _one_line_error(r, "model.norm.weight")  # in a shard but not in the index: not in the model


def test_bin_only_folder_is_never_unpickled(cli, tmp_path, hf_llama):
    d = tmp_path / "bin"
    d.mkdir()
    (d / "config.json").write_text((hf_llama / "config.json").read_text())
    (d / "pytorch_model.bin").write_bytes(b"\x80\x04 not opened")
    _one_line_error(
        cli("import-hf", "--hf-dir", d, "--save", tmp_path / "out"), "pytorch_model.bin", "safetensors"
    )


def test_save_folder_must_be_new(cli, tmp_path, hf_llama):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    _one_line_error(cli("import-hf", "--hf-dir", hf_llama, "--save", out), "not empty")
    assert (out / "keep.txt").read_text() == "x"


def test_import_json_contract_and_export_refusals(cli, tmp_path, hf_llama):
    r = cli("import-hf", "--hf-dir", hf_llama, "--save", tmp_path / "mg", "--json")
    assert r.code == 0, r.err
    out = r.json()
    assert set(out) >= {"save", "architecture", "megatron_flags", "parameters", "seconds", "peak_rss_bytes"}
    assert out["architecture"] == "LlamaForCausalLM" and out["parameters"] > 0
    assert all(isinstance(t, str) for t in out["megatron_flags"])
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    _one_line_error(cli("export-hf", "--load", tmp_path / "nowhere", "--hf-dir", tmp_path / "x"), "--load")
    # a description that does not match the checkpoint's shapes
    desc = json.loads((tmp_path / "mg" / "workshop_model.json").read_text())
    desc["hf_config"]["intermediate_size"] = 128
    (tmp_path / "mg" / "workshop_model.json").write_text(json.dumps(desc))
    _one_line_error(
        cli("export-hf", "--load", tmp_path / "mg", "--hf-dir", tmp_path / "x"), "linear_fc1.weight", "shape"
    )
    assert not (tmp_path / "x").exists()


def test_interrupted_export_leaves_no_folder(tmp_path, hf_llama, monkeypatch):
    from workshop_lib.convert import exporter
    from workshop_lib.convert.importer import import_hf

    import_hf(hf_llama, tmp_path / "mg")
    calls = {"n": 0}
    real = exporter.DcpReader.read

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(self, *a, **k)

    monkeypatch.setattr(exporter.DcpReader, "read", flaky)
    with pytest.raises(KeyboardInterrupt):
        exporter.export_hf(tmp_path / "mg", tmp_path / "hf_out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mg"]


def test_config_mapping_both_rope_spellings():
    hub = dict(LLAMA, rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192})  # fmt: skip
    v5 = {k: v for k, v in hub.items() if k not in ("rope_theta", "rope_scaling")}
    v5["rope_parameters"] = dict(hub["rope_scaling"], rope_theta=500000.0)
    a, b = hfconfig.spec_from_config(hub), hfconfig.spec_from_config(v5)
    assert a.megatron_flags(128) == b.megatron_flags(128)
    assert (a.rotary_base, a.rope_scaling_factor) == (500000, 32.0)
    linear = hfconfig.spec_from_config(dict(LLAMA, rope_scaling={"type": "linear", "factor": 4.0}))
    assert "--rotary-seq-len-interpolation-factor" in linear.megatron_flags()
    # every flag is one the trainer accepts
    from workshop_lib.train.arguments import known_flags

    flags = set(known_flags())
    assert {t for t in a.megatron_flags(128) if t.startswith("--")} <= flags


def test_vocab_padding_choice():
    assert hfconfig.vocab_divisor(32000, 1) == 128 and hfconfig.vocab_divisor(32000, 4) == 64
    assert hfconfig.vocab_divisor(128256, 8) == 32 and hfconfig.padded_vocab(128256, 32, 8) == 128256
    assert hfconfig.padded_vocab(301, hfconfig.vocab_divisor(301, 2), 2) == 302


def test_sliding_window_is_reported():
    spec = hfconfig.spec_from_config(dict(LLAMA, architectures=["MistralForCausalLM"], sliding_window=4096))
    assert spec.sliding_window == 4096 and "--seq-length <= 4096" in spec.warnings[0]


def test_plan_reads_hf_config_without_torch(tmp_path):
    import subprocess

    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    code = (
        "import sys, json; from workshop_lib.cli import main; "
        f"main(['plan', '--hf-config', {str(tmp_path / 'config.json')!r}, '--seq-length', '128', '--json']); "
        "assert 'torch' not in sys.modules"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["valid"] and "--swiglu" in plan["megatron_args"]


def test_dtype_is_kept(tmp_path, hf_llama):
    from safetensors import safe_open

    from workshop_lib.convert.exporter import export_hf
    from workshop_lib.convert.importer import import_hf

    import_hf(hf_llama, tmp_path / "mg")
    export_hf(tmp_path / "mg", tmp_path / "bf", dtype="bfloat16")
    index = json.loads((tmp_path / "bf" / "model.safetensors.index.json").read_text())
    name, file = next(iter(index["weight_map"].items()))
    with safe_open(str(tmp_path / "bf" / file), "pt") as f:
        assert f.get_tensor(name).dtype == torch.bfloat16
    assert json.loads((tmp_path / "bf" / "config.json").read_text()).get("dtype", "bfloat16") == "bfloat16"


def test_from_scratch_gpt_is_refused_in_one_line(tmp_path):
    from workshop_lib.convert.exporter import describe
    from workshop_lib.errors import UsageError

    ckpt = tmp_path / "iter_0000010"
    ckpt.mkdir()
    args = {"position_embedding_type": "learned_absolute", "normalization": "LayerNorm", "num_layers": 2}
    torch.save({"args": args, "iteration": 10}, ckpt / "common.pt")
    with pytest.raises(UsageError, match="not Llama-shaped.*learned_absolute.*workshop_model.json") as exc:
        describe(ckpt)
    assert "\n" not in str(exc.value)
