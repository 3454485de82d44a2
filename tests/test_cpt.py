"""Continued pre-training around the converters: evaluation checked against transformers, the shipped
base model, and the cluster Job that imports a base model on the shared volume."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import yaml
from conftest import REPO


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A random Llama (transformers, built from a config) with the kit's tokenizer, imported."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("cpt")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=8192, hidden_size=32, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0, tie_word_embeddings=False,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(root / "hf")
    held = (REPO / "data" / "general_heldout.jsonl").read_text().splitlines()[:12]
    (root / "held.jsonl").write_text("\n".join(held) + "\n")
    for argv in (
        ["prep-data", "--input", str(root / "held.jsonl"), "--output-prefix", str(root / "held"),
         "--append-eod", "--workers", "1"],
        ["import-hf", "--hf-dir", str(root / "hf"), "--save", str(root / "ckpt"), "--json"],
    ):  # fmt: skip
        r = subprocess.run([sys.executable, "-m", "workshop_lib.cli", *argv], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
    return root, model


def test_evaluate_equals_transformers_on_the_same_windows(tiny_llama, cli_proc):
    """`workshop evaluate` on the imported model gives the loss transformers computes for the original."""
    import torch

    from workshop_lib.data.indexed import IndexedDatasetReader

    root, model = tiny_llama
    seq = 48
    reader = IndexedDatasetReader(str(root / "held_text_document"))
    tokens = np.concatenate([reader.sequence(i) for i in range(len(reader))]).astype(np.int64)
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(tokens) - 1, seq):
            window = torch.from_numpy(tokens[start : start + seq + 1]).unsqueeze(0)
            logits = model(input_ids=window[:, :-1]).logits[0]
            total += torch.nn.functional.cross_entropy(logits, window[0, 1:], reduction="sum").item()
            count += window.shape[1] - 1
    r = cli_proc("evaluate", "--load", str(root / "ckpt"), "--data-path", str(root / "held_text_document"),
                 "--seq-length", str(seq), "--json")  # fmt: skip
    assert r.code == 0, r.err[-2000:]
    got = r.json()["results"][0]
    assert got["tokens"] == count
    assert got["loss"] == pytest.approx(total / count, abs=1e-4)
    assert got["perplexity"] == pytest.approx(math.exp(total / count), rel=1e-4)


def test_shipped_base_model_is_a_real_small_llama():
    """The workshop's base model: a Hugging Face folder, Llama-shaped, small enough to ship."""
    base = REPO / "data" / "base_model"
    cfg = json.loads((base / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["num_key_value_heads"] < cfg["num_attention_heads"]  # grouped-query attention
    size = sum(p.stat().st_size for p in base.iterdir())
    assert size < 8 * 2**20, f"{size} bytes: keep the base model a few MB"
    assert (base / "tokenizer.json").read_bytes() == (
        REPO / "data" / "tokenizer" / "tokenizer.json"
    ).read_bytes()
    from safetensors import safe_open

    with safe_open(str(base / "model.safetensors"), "np") as f:
        names = list(f.keys())
    assert any("self_attn.q_proj" in n for n in names) and any("mlp.gate_proj" in n for n in names)


def _render_import(cli, *extra: str):
    return cli("render-import-job", "--hf-dir", "/shared/base-models/llama-3.1-8b",
               "--save", "/shared/checkpoints/base", *extra)  # fmt: skip


def test_render_import_job_downloads_with_a_secret_reference_only(cli):
    r = _render_import(cli, "--hf-repo", "meta-llama/Llama-3.1-8B", "--hf-token-secret", "hf-token",
                       "--tensor-model-parallel-size", "2")  # fmt: skip
    assert r.code == 0, r.err
    docs = [d for d in yaml.safe_load_all(r.out) if d]
    assert len(docs) == 1 and docs[0]["kind"] == "Job"
    pod = docs[0]["spec"]["template"]["spec"]
    (download,) = pod["initContainers"]
    assert download["command"][:3] == ["hf", "download", "meta-llama/Llama-3.1-8B"]
    (token,) = [e for e in download["env"] if e["name"] == "HF_TOKEN"]
    assert token == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}}
    (importer,) = pod["containers"]
    cmd = importer["command"]
    assert cmd[:2] == ["workshop", "import-hf"]
    assert cmd[cmd.index("--save") + 1] == "/shared/checkpoints/base"
    assert cmd[cmd.index("--tensor-model-parallel-size") + 1] == "2"
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == "fsx-shared-pvc"
    assert "&id" not in r.out  # no YAML anchors: every object written out


def test_render_import_job_without_download_has_one_container(cli):
    r = _render_import(cli)
    assert r.code == 0, r.err
    pod = yaml.safe_load(r.out)["spec"]["template"]["spec"]
    assert "initContainers" not in pod and len(pod["containers"]) == 1


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (("--hf-repo", "not a repo"), "--hf-repo"),
        (("--hf-token-secret", "hf-token"), "--hf-token-secret"),  # a token with nothing to download
        (("--hf-repo", "a/b", "--hf-token-secret", "Bad Secret!"), "--hf-token-secret"),
        (("--mount-path", "/etc"), "--mount-path"),
        (("--memory", "lots"), "--memory"),
        (("--name", "Import_Job"), "--name"),
    ],
)
def test_render_import_job_bad_input_is_one_line(cli, extra, field):
    r = _render_import(cli, *extra)
    assert r.code == 2, (r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.err


def test_render_import_job_paths_stay_on_the_volume_and_literal(cli):
    r = cli("render-import-job", "--hf-dir", "/shared/../etc/x", "--save", "/shared/c")
    assert r.code == 2 and "--hf-dir" in r.err
    r = cli("render-import-job", "--hf-dir", "/shared/$(HF_TOKEN)", "--save", "/shared/c")
    assert r.code == 0
    cmd = yaml.safe_load(r.out)["spec"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[cmd.index("--hf-dir") + 1] == "/shared/$$(HF_TOKEN)"  # Kubernetes would expand $(...)
