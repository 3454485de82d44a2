"""`workshop plan`, `--search`, the plan API launch uses, the job YAML writer and the calculator widget."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from workshop_lib.plan.api import PlanIssue, check_megatron_args, plan_from_megatron_args

TOP_KEYS = {"valid", "errors", "warnings", "parameters", "data_parallel_size", "num_microbatches",
            "memory_per_gpu_bytes", "fits", "pipeline_bubble_fraction", "flops_per_iteration", "estimate",
            "megatron_args"}  # fmt: skip
TECHPULSE = {
    "model": "techpulse-7b",
    "tensor-model-parallel-size": 2,
    "sequence-parallel": True,
    "use-distributed-optimizer": True,
    "micro-batch-size": 1,
    "global-batch-size": 512,
    "bf16": True,
}


def _keys_ok(p: dict) -> None:
    assert set(p) >= TOP_KEYS
    assert set(p["parameters"]) == {"total", "active", "embedding", "per_gpu_max"}
    assert set(p["memory_per_gpu_bytes"]) == {"weights", "gradients", "optimizer", "activations", "total"}
    assert set(p["estimate"]) == {"seconds_per_iteration", "tokens_per_second", "mfu"}


def test_plan_json_has_every_contract_key(cli):
    res = cli(
        "plan",
        "--model",
        "techpulse-7b",
        "--gpu",
        "a100-40gb",
        "--gpus-per-node",
        "8",
        "--nodes",
        "2",
        "--tensor-model-parallel-size",
        "2",
        "--sequence-parallel",
        "--use-distributed-optimizer",
        "--global-batch-size",
        "512",
        "--bf16",
        "--json",
    )
    assert res.code == 0, res.err
    p = res.json()
    _keys_ok(p)
    assert p["valid"] and p["fits"]
    assert p["data_parallel_size"] == 8 and p["num_microbatches"] == 64
    assert p["pipeline_bubble_fraction"] == 0
    mem = p["memory_per_gpu_bytes"]
    # The allowance appears only in the total.
    parts = mem["weights"] + mem["gradients"] + mem["optimizer"] + mem["activations"]
    assert mem["total"] > parts
    assert mem["total"] - parts == p["details"]["memory_allowance_bytes"]
    assert (
        "--tensor-model-parallel-size=2" in p["megatron_args"] and "--sequence-parallel" in p["megatron_args"]
    )
    assert 0 < p["estimate"]["mfu"] < 1


def test_megatron_defaults_when_flags_absent(cli):
    res = cli(
        "plan",
        "--num-layers",
        "2",
        "--hidden-size",
        "64",
        "--num-attention-heads",
        "4",
        "--seq-length",
        "128",
        "--vocab-size",
        "1000",
        "--json",
    )
    p = res.json()
    assert res.code == 0
    assert "--ffn-hidden-size=256" in p["megatron_args"]  # 4h
    assert "--max-position-embeddings=128" in p["megatron_args"]
    assert p["details"]["padded_vocab_size"] == 1024  # --make-vocab-size-divisible-by 128
    assert p["data_parallel_size"] == 8 and p["num_microbatches"] == 1  # global batch = micro x DP
    # fp32 (Megatron's default without --bf16): 4 + 4 + 8 bytes per parameter.
    assert p["memory_per_gpu_bytes"]["weights"] == 4 * p["parameters"]["per_gpu_max"]
    assert any("fp32" in w for w in p["warnings"])
    swiglu = cli(
        "plan",
        "--num-layers",
        "2",
        "--hidden-size",
        "4096",
        "--num-attention-heads",
        "32",
        "--seq-length",
        "128",
        "--swiglu",
        "--json",
    ).json()
    assert "--ffn-hidden-size=10880" in swiglu["megatron_args"]  # int(4h * 2/3 / 64) * 64


def test_invalid_is_exit_0_with_every_reason(cli):
    res = cli(
        "plan",
        "--model",
        "techpulse-7b",
        "--gpus-per-node",
        "8",
        "--nodes",
        "2",
        "--tensor-model-parallel-size",
        "3",
        "--pipeline-model-parallel-size",
        "5",
        "--global-batch-size",
        "100",
        "--micro-batch-size",
        "3",
        "--bf16",
        "--json",
    )
    assert res.code == 0
    p = res.json()
    assert p["valid"] is False
    text = " ".join(p["errors"])
    for needle in ("world size 16", "num-attention-heads 32 is not divisible by TP=3", "num-layers 32"):
        assert needle in text
    assert all(" Fix: " in e for e in p["errors"])


@pytest.mark.parametrize(
    ("args", "rule", "fix_has"),
    [
        ({"global-batch-size": 100}, "batch-divisible", "96 or 104"),
        ({"tensor-model-parallel-size": 16}, "tp-crosses-nodes", "PP"),
        (
            {"tensor-model-parallel-size": 1, "sequence-parallel": True},
            "sequence-parallel-needs-tp",
            "remove",
        ),
        ({"pipeline-model-parallel-size": 3}, "layers-divisible-by-pp", "PP 2 or 4"),
        (
            {"pipeline-model-parallel-size": 2, "num-layers-per-virtual-pipeline-stage": 3},
            "layers-divisible-by-virtual-stages",
            "use",
        ),
        ({"context-parallel-size": 3, "seq-length": 4000}, "seq-divisible-by-2cp", "seq-length"),
        ({"recompute-granularity": "full"}, "recompute-method-needed", "--recompute-method uniform"),
        ({"fp8-format": "hybrid"}, "fp8-needs-hopper", "H100"),
    ],
)
def test_rules_and_fixes(args, rule, fix_has):
    base = {**TECHPULSE, **args}
    issues = check_megatron_args(base, gpu="a100-40gb", gpus_per_node=8, nodes=2)
    assert all(isinstance(i, PlanIssue) for i in issues)
    hit = [i for i in issues if i.rule == rule]
    assert hit, [i.rule for i in issues]
    assert fix_has in hit[0].fix
    p = plan_from_megatron_args(base, gpu="a100-40gb", gpus_per_node=8, nodes=2)
    rendered = p["errors"] if hit[0].severity == "error" else p["warnings"]
    assert f"{hit[0].message} Fix: {hit[0].fix}" in rendered


def test_moe_rules():
    moe = {"model": "mixtral-8x7b", "bf16": True, "global-batch-size": 256}
    issues = check_megatron_args(
        {**moe, "expert-model-parallel-size": 3}, gpu="h100-80gb", gpus_per_node=8, nodes=4
    )
    assert "experts-divisible-by-ep" in {i.rule for i in issues}
    issues = check_megatron_args(
        {**moe, "tensor-model-parallel-size": 2}, gpu="h100-80gb", gpus_per_node=8, nodes=4
    )
    assert "moe-tp-needs-sp" in {i.rule for i in issues}
    issues = check_megatron_args(
        {"model": "techpulse-7b", "expert-model-parallel-size": 2}, gpu="h100-80gb", gpus_per_node=8, nodes=1
    )
    assert "ep-needs-experts" in {i.rule for i in issues}
    shared = {"num-layers": 4, "hidden-size": 256, "num-attention-heads": 4, "seq-length": 128, "num-experts": 4,
              "moe-shared-expert-intermediate-size": 256}  # fmt: skip
    issues = check_megatron_args(shared, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    assert "shared-experts-no-bias" in {i.rule for i in issues}
    issues = check_megatron_args(
        {**shared, "disable-bias-linear": True}, gpu="h100-80gb", gpus_per_node=8, nodes=1
    )
    assert "shared-experts-no-bias" not in {i.rule for i in issues}
    top1 = {**shared, "disable-bias-linear": True, "moe-router-topk": 1}
    assert "topk1-needs-pre-softmax" in {
        i.rule for i in check_megatron_args(top1, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    }
    ok = check_megatron_args(
        {**top1, "moe-router-pre-softmax": True}, gpu="h100-80gb", gpus_per_node=8, nodes=1
    )
    assert "topk1-needs-pre-softmax" not in {i.rule for i in ok}


def test_api_accepts_job_yaml_form_and_ignores_other_flags():
    args = {
        "num-layers": "32",
        "hidden-size": 4096,
        "num-attention-heads": 32,
        "seq-length": 4096,
        "max-position-embeddings": 4096,
        "tensor-model-parallel-size": "2",
        "sequence-parallel": True,
        "micro-batch-size": 1,
        "global-batch-size": 512,
        "bf16": True,
        "lr": 3e-4,
        "save": "/shared/x",
        "data-path": "/shared/data/x",
        "tokenizer-type": "HuggingFaceTokenizer",
        "train-iters": 10,
    }
    p = plan_from_megatron_args(args, gpu="a100-40gb", gpus_per_node=8, nodes=2)
    _keys_ok(p)
    assert p["valid"]


def test_missing_model_flags():
    issues = check_megatron_args({"tensor-model-parallel-size": 2}, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    assert issues[0].rule == "model-args-missing" and "num-layers" in issues[0].message
    p = plan_from_megatron_args({"tensor-model-parallel-size": 2}, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    _keys_ok(p)
    assert p["valid"] is False


def test_usage_errors_exit_2(cli):
    res = cli("plan", "--tensor-model-parallel-size", "2", "--json")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "--num-layers" in res.err
    res = cli("plan", "--model", "nope", "--json")
    assert res.code == 2 and "techpulse-7b" in res.err
    res = cli("plan", "--model", "gpt-125m", "--gpu", "tpu")
    assert res.code == 2


def test_does_not_fit_is_a_warning_with_fixes(cli):
    p = cli(
        "plan", "--model", "llama3.1-70b", "--gpu", "a100-40gb", "--nodes", "1", "--bf16", "--json"
    ).json()
    assert p["valid"] and not p["fits"]
    assert any("does not fit" in w or "more than the" in w for w in p["warnings"])


def test_techpulse_story():
    """TP=2 within a p4d node fits the 7B; TP=1 does not; on p5 TP=1 fits."""
    common = {**TECHPULSE}
    tp2 = plan_from_megatron_args(common, gpu="a100-40gb", gpus_per_node=8, nodes=2)
    tp1 = plan_from_megatron_args(
        {**common, "tensor-model-parallel-size": 1, "sequence-parallel": False},
        gpu="a100-40gb",
        gpus_per_node=8,
        nodes=2,
    )
    p5 = plan_from_megatron_args(
        {**common, "tensor-model-parallel-size": 1, "sequence-parallel": False},
        gpu="h100-80gb",
        gpus_per_node=8,
        nodes=2,
    )
    assert tp2["fits"] and not tp1["fits"] and p5["fits"]
    assert p5["estimate"]["tokens_per_second"] > 2 * tp2["estimate"]["tokens_per_second"]


def test_search_valid_fitting_sorted(cli):
    res = cli(
        "plan",
        "--search",
        "--model",
        "techpulse-7b",
        "--instance-type",
        "p4d.24xlarge",
        "--nodes",
        "2",
        "--global-batch-size",
        "512",
        "--bf16",
        "--json",
    )
    assert res.code == 0
    configs = res.json()["configs"]
    assert configs
    tps = [c["estimate"]["tokens_per_second"] for c in configs]
    assert tps == sorted(tps, reverse=True)
    for c in configs:
        _keys_ok(c)
        assert c["valid"] and c["fits"]
    # Pinned flags are not searched.
    pinned = cli(
        "plan",
        "--search",
        "--model",
        "techpulse-7b",
        "--instance-type",
        "p4d.24xlarge",
        "--nodes",
        "2",
        "--global-batch-size",
        "512",
        "--bf16",
        "--tensor-model-parallel-size",
        "4",
        "--json",
    ).json()
    assert pinned["configs"] and all(
        "--tensor-model-parallel-size=4" in c["megatron_args"] for c in pinned["configs"]
    )


def test_search_70b_on_1024_gpus_under_a_second():
    from workshop_lib.plan.api import resolve_args
    from workshop_lib.plan.config import ClusterConfig
    from workshop_lib.plan.search import search

    m, par, _ = resolve_args({"model": "llama3.1-70b", "global-batch-size": 1024, "bf16": True})
    t0 = time.perf_counter()
    configs = search(m, ClusterConfig("h100-80gb", 8, 128), par)
    assert time.perf_counter() - t0 < 2.0  # the benchmark records the figure; CI machines vary
    assert configs and all(c["valid"] and c["fits"] for c in configs)


def test_plan_cli_is_fast_and_light():
    import subprocess
    import sys

    code = ("import sys, time; t=time.time(); from workshop_lib.cli import main; "
            "main(['plan','--model','techpulse-7b','--json']); "
            "heavy=[m for m in ('torch','megatron','kubernetes','pandas','matplotlib','ipywidgets') if m in sys.modules];"
            "print(heavy, file=sys.stderr)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["valid"]
    assert out.stderr.strip().endswith("[]")


def test_job_dict_and_yaml(tmp_path):
    from workshop_lib.plan.jobfile import job_dict, write_job_yaml

    run = tmp_path / "run"
    (run / "data").mkdir(parents=True)
    (run / "data" / "dataset.json").write_text(json.dumps({
        "data_path": str(run / "data" / "techpulse_text_document"), "tokenizer_type": "HuggingFaceTokenizer",
        "tokenizer_model": "/repo/data/tokenizer", "vocab_size": 8000, "eod_token_id": 0, "documents": 3,
        "tokens": 100}))  # fmt: skip
    job = job_dict(
        {**TECHPULSE, "vocab-size": 32000},
        name="megatron-cpt-techpulse",
        namespace="megatron-workshop",
        image="img:1",
        platform="eks-efa",
        instance_type="p4d.24xlarge",
        nodes=2,
        run_dir=run,
    )
    assert list(job)[:6] == ["name", "namespace", "image", "platform", "instance_type", "nodes"]
    a = job["args"]
    assert a["tensor-model-parallel-size"] == 2 and a["sequence-parallel"] is True and a["bf16"] is True
    assert a["num-layers"] == 32 and a["swiglu"] is True
    assert a["data-path"] == "/shared/data/techpulse_text_document"
    assert a["tokenizer-model"] == "/shared/tokenizer/tokenizer" and "vocab-size" not in a
    assert a["save"].startswith("/shared/") and a["load"] == a["save"]
    local = job_dict(TECHPULSE, backend="local", run_dir=run)
    assert local["backend"] == "local"
    assert local["args"]["data-path"] == str(run / "data" / "techpulse_text_document")
    out = write_job_yaml(run / "plan" / "job.yaml", local)
    assert yaml.safe_load(out.read_text()) == local
    try:
        from workshop_lib.launch import jobspec
    except ImportError:  # pragma: no cover - the launch room is absent
        return
    spec = jobspec.load(out)
    assert spec.nodes == 2


def test_calculator_widget_updates_without_browser(tmp_path):
    pytest.importorskip("ipywidgets")
    from workshop_lib.widgets.calculator import Calculator

    calc = Calculator(model="techpulse-7b", instance_type="p4d.24xlarge", nodes=2, tp=2, run_dir=tmp_path)
    assert calc.plan["valid"] and calc.plan["fits"] and calc.errors() == []
    before = calc.memory_total_bytes()
    assert "wl-memory" in calc.memory_out._dom_classes and "wl-errors" in calc.errors_out._dom_classes
    assert {"TP", "PP", "CP", "EP", "Micro batch", "Global batch", "Nodes", "Instance", "Model"} <= set(
        calc.inputs
    )
    calc.set(TP=4)
    assert calc.memory_total_bytes() < before
    calc.set(PP=2)
    assert calc.memory_out.value.count("wl-seg-weights") == 2  # a bar for the first and the last stage
    calc.set(PP=1)
    calc.set(TP=3)
    assert any("TP=3" in e for e in calc.errors())
    assert "TP=3" in calc.errors_out.value
    calc.set(TP=2, **{"Global batch": 100})
    assert any("global-batch-size 100" in e for e in calc.errors())
    calc.set(**{"Global batch": 512}, Model="llama3.1-70b")
    assert calc.plan["fits"] is False and "does not fit" in calc.memory_out.value
    assert max(calc.render_seconds) < 0.1
    calc.set(Model="techpulse-7b")
    path = calc.write_job()
    assert (
        path == tmp_path / "plan" / "job.yaml"
        and yaml.safe_load(path.read_text())["args"]["num-layers"] == 32
    )


@pytest.mark.parametrize(
    "flags",
    [
        ["--make-vocab-size-divisible-by", "0"],
        ["--group-query-attention", "--num-query-groups", "0"],
        ["--vocab-size", "0"],
        ["--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "-1"],
        ["--num-experts", "0"],
        ["--global-batch-size", "-1"],
        ["--num-layers", "0"],
        ["--hidden-size", "-64"],
        ["--num-attention-heads", "0"],
        ["--seq-length", "0"],
        ["--micro-batch-size", "0"],
        ["--tensor-model-parallel-size", "0"],
        ["--pipeline-model-parallel-size", "-1"],
        ["--context-parallel-size", "0"],
        ["--expert-model-parallel-size", "0"],
        ["--nodes", "0"],
        ["--gpus-per-node", "0"],
        ["--train-tokens", "0"],
    ],
)
def test_non_positive_sizes_are_exit_2_one_line(cli, flags):
    base = ["--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "4", "--seq-length", "128"]
    res = cli("plan", *base, *flags, "--json")
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1, res.err
    assert flags[-2] in res.err and ("must be >= 1" in res.err or "positive" in res.err)
    assert "Traceback" not in res.err


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("make-vocab-size-divisible-by", 0),
        ("vocab-size", 0),
        ("num-experts", 0),
        ("global-batch-size", -1),
        ("recompute-num-layers", -1),
        ("kv-channels", 0),
        ("ffn-hidden-size", -4),
        ("num-layers-per-virtual-pipeline-stage", 0),
        ("expert-tensor-parallel-size", 0),
    ],
)
def test_non_positive_sizes_in_job_yaml_are_plan_errors(flag, value):
    args = {"num-layers": 4, "hidden-size": 256, "num-attention-heads": 4, "seq-length": 128, "bf16": True,
            "group-query-attention": True, "num-query-groups": 2, flag: value}  # fmt: skip
    if flag == "recompute-num-layers":
        args.update({"recompute-granularity": "full", "recompute-method": "block"})
    p = plan_from_megatron_args(args, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    assert p["valid"] is False
    assert any(e.startswith(f"{flag} is {value}; it must be at least 1.") for e in p["errors"]), p["errors"]
    assert not any("use global-batch-size" in e for e in p["errors"])
    issues = check_megatron_args(args, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    assert {i.rule for i in issues if i.severity == "error"} == {"positive-sizes"}


def test_zero_query_groups_with_gqa_in_job_yaml_is_a_plan_error():
    args = {"num-layers": 4, "hidden-size": 256, "num-attention-heads": 4, "seq-length": 128,
            "group-query-attention": True, "num-query-groups": 0}  # fmt: skip
    p = plan_from_megatron_args(args, gpu="h100-80gb", gpus_per_node=8, nodes=1)
    assert p["valid"] is False and any(e.startswith("num-query-groups is 0") for e in p["errors"])


@pytest.mark.parametrize("top", ["0", "-1"])
def test_search_top_must_be_positive(cli, top):
    res = cli("plan", "--model", "gpt-125m", "--search", "--top", top, "--json")
    assert res.code == 2 and "--top" in res.err and len(res.err.strip().splitlines()) == 1


def test_search_api_limit_keeps_exactly_n_and_refuses_non_positive():
    from workshop_lib.errors import UsageError
    from workshop_lib.plan.api import resolve_args
    from workshop_lib.plan.config import ClusterConfig
    from workshop_lib.plan.search import search

    m, par, _ = resolve_args({"model": "gpt-125m", "global-batch-size": 64, "bf16": True})
    cl = ClusterConfig(gpu="h100-80gb", gpus_per_node=8, nodes=1)
    everything = search(m, cl, par)
    assert len(everything) > 3
    assert search(m, cl, par, limit=3) == everything[:3]
    for bad in (0, -1):
        with pytest.raises(UsageError, match="--top"):
            search(m, cl, par, limit=bad)
