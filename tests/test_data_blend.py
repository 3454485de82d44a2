"""blend math, inspect-data, shard rendering and local shard-then-merge, dataset.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from workshop_lib.data.blend import blend_report, megatron_epochs, parse_split, samples_per_split
from workshop_lib.data.dataset_info import read_dataset_info
from workshop_lib.data.indexed import IndexedDatasetWriter
from workshop_lib.data.shard import render_prep_job, shard_files
from workshop_lib.errors import UsageError
from workshop_lib.paths import SAMPLE_CORPUS

REPO = Path(__file__).resolve().parents[1]


def make_dataset(prefix: Path, lengths: list[int]) -> str:
    """A dataset whose documents have the given token counts (0 = empty document)."""
    w = IndexedDatasetWriter(prefix, np.uint16)
    w.add_documents(np.ones(sum(lengths), np.uint16), np.array(lengths))
    w.finalize()
    return str(prefix)


def test_megatron_sample_and_epoch_arithmetic():
    # train = iters x gbs; valid = (iters // interval + 1) x eval_iters x gbs; test = eval_iters x gbs
    assert samples_per_split(100, 8, 10, 50) == [800, 240, 80]
    # GPTDataset._get_num_epochs: smallest e with e x tokens >= samples x seq + 1
    assert megatron_epochs(10, 1000, 100) == 2  # 1001 tokens needed
    assert megatron_epochs(9, 1000, 100) == 1
    assert megatron_epochs(0, 0, 100) == 0
    assert megatron_epochs(1, 0, 100) is None


def test_blend_single_dataset_numbers(tmp_path):
    p = make_dataset(tmp_path / "a", [100] * 1000)
    r = blend_report(
        [f"{p}:1"],
        seq_length=50,
        global_batch_size=4,
        train_iters=100,
        split="98,2,0",
        eval_iters=5,
        eval_interval=50,
    )
    assert r["data_path"] == f"1 {p}"
    assert r["tokens_needed"] == 100 * 4 * 50
    d = r["datasets"][0]
    assert (d["documents"], d["tokens"], d["sequences"]) == (1000, 100_000, 1000)
    assert d["splits"]["train"]["sequences"] == 980 and d["splits"]["train"]["samples"] == 400
    assert d["epochs"] == pytest.approx((400 * 50 + 1) / 98_000, abs=1e-4)
    assert d["splits"]["valid"]["samples"] == (100 // 50 + 1) * 5 * 4
    assert d["splits"]["test"] == {
        "sequences": 0,
        "tokens": 0,
        "samples": 0,
        "epochs": 0.0,
        "megatron_epochs": 0,
    }
    assert r["warnings"] == []


def test_blend_weights_pairs_and_surplus(tmp_path):
    a = make_dataset(tmp_path / "a", [10] * 600)
    b = make_dataset(tmp_path / "b", [20] * 600)
    r = blend_report([f"{a}:0.25", f"{b}:0.75"], seq_length=10, global_batch_size=2, train_iters=10)
    assert r["data_path"] == f"0.25 {a} 0.75 {b}"
    # ceil(ceil(20 x 0.25) x 1.005) = 6 and ceil(ceil(20 x 0.75) x 1.005) = 16
    assert [d["splits"]["train"]["samples"] for d in r["datasets"]] == [6, 16]
    # the --output-prefix given to prep-data resolves to its _text_document dataset
    make_dataset(tmp_path / "c_text_document", [5] * 600)
    r2 = blend_report([f"{tmp_path / 'c'}:1"], seq_length=10, global_batch_size=2, train_iters=1)
    assert r2["datasets"][0]["prefix"].endswith("c_text_document")


def test_blend_refuses_an_empty_split_and_warns_on_epochs(tmp_path):
    small = make_dataset(tmp_path / "small", [50] * 400 + [0] * 200)  # 400 sequences < 500
    with pytest.raises(UsageError, match="test split .* gets no data"):
        blend_report([small], seq_length=20, global_batch_size=2, train_iters=10)  # default 969,30,1
    r = blend_report([small], seq_length=20, global_batch_size=2, train_iters=10, split="98,2,0")
    assert r["warnings"] == []
    r = blend_report([small], seq_length=100, global_batch_size=64, train_iters=100, split="98,2,0")
    assert r["datasets"][0]["epochs"] > 4 and "reads its train split" in r["warnings"][0]


def test_blend_cli_contract(tmp_path, cli):
    p = make_dataset(tmp_path / "a", [30] * 1000)
    res = cli(
        "blend",
        f"{p}:1",
        "--seq-length",
        16,
        "--global-batch-size",
        4,
        "--train-iters",
        10,
        "--split",
        "98,2,0",
        "--json",
    )
    assert res.code == 0, res.err
    out = res.json()
    assert set(out) >= {"data_path", "datasets", "tokens_needed"}
    assert set(out["datasets"][0]) >= {"prefix", "weight", "documents", "tokens", "epochs"}
    for bad in ([f"{p}:abc"], [f"{p}:-1"], [str(tmp_path / "nope") + ":1"]):
        res = cli("blend", *bad, "--seq-length", 16, "--global-batch-size", 4, "--train-iters", 10)
        assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res.err
    res = cli(
        "blend",
        str(make_dataset(tmp_path / "tiny", [30] * 10)),
        "--seq-length",
        16,
        "--global-batch-size",
        4,
        "--train-iters",
        10,
        "--json",
    )
    assert res.code == 2 and res.out == "" and "Megatron would hang" in res.err


@pytest.mark.parametrize(
    ("split", "says"),
    [
        ("1.2.3", "'1.2.3' is not a number"),
        ("-1,2,3", "cannot be negative"),
        ("98,-2,0", "cannot be negative"),
        ("0,0,0", "positive sum"),
        ("0", "positive sum"),
        ("98,2,x", "unexpected 'x'"),
        ("", "positive sum"),
        ("1,1,1,1", "up to three"),
        (".", "'.' is not a number"),
    ],
)
def test_blend_bad_split_is_one_line_exit_2_naming_split_and_the_form(tmp_path, cli, split, says):
    p = make_dataset(tmp_path / "a", [30] * 100)
    res = cli(
        "blend", f"{p}:1", "--seq-length", 8, "--global-batch-size", 1, "--train-iters", 1, f"--split={split}"
    )
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1, res.err
    assert "--split" in res.err and "98,2,0 or 969/30/1" in res.err and says in res.err


@pytest.mark.parametrize(
    ("split", "vector"),
    [
        ("98,2,0", [0.98, 0.02, 0.0]),
        ("969/30/1", [0.969, 0.03, 0.001]),
        ("1 1", [0.5, 0.5, 0.0]),
        ("3", [1, 0, 0]),
    ],
)
def test_parse_split_keeps_megatrons_forms(split, vector):
    assert parse_split(split) == pytest.approx(vector)


def test_blend_starts_without_heavy_imports(tmp_path):
    p = make_dataset(tmp_path / "a", [30] * 1000)
    code = (
        "import sys; from workshop_lib.cli import main; main(['blend', sys.argv[1], '--seq-length', '8', "
        "'--global-batch-size', '1', '--train-iters', '1', '--split', '98,2,0', '--json']); "
        "print([m for m in ('torch', 'megatron', 'tokenizers', 'gigatoken') if m in sys.modules], file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code, f"{p}:1"], capture_output=True, text=True, check=True)
    assert out.stderr.strip().endswith("[]")


def test_inspect_data(tmp_path, cli):
    res = cli(
        "prep-data",
        "--input",
        SAMPLE_CORPUS,
        "--output-prefix",
        tmp_path / "t",
        "--append-eod",
        "--no-progress",
        "--json",
    )
    assert res.code == 0
    res = cli("inspect-data", tmp_path / "t_text_document", "--json", "--samples", 2)
    assert res.code == 0, res.err
    r = res.json()
    assert r["documents"] == 2167 and r["tokens"] == res.json()["tokens"] and r["dtype"] == "uint16"
    assert sum(h["count"] for h in r["histogram"]) == 2167
    first = json.loads(SAMPLE_CORPUS.open().readline())["text"]
    assert r["samples"][0]["document"] == 0 and first.startswith(r["samples"][0]["text"][:100])
    res = cli("inspect-data", tmp_path / "nothing")
    assert res.code == 2 and "no such index" in res.err


def test_shard_files_are_contiguous_and_cover_everything():
    files = list(range(10))
    groups = [shard_files(files, 4, i) for i in range(4)]
    assert sum(groups, []) == files and all(groups)
    assert shard_files([1], 3, 2) == [1] and shard_files([1], 3, 0) == []
    with pytest.raises(UsageError):
        shard_files(files, 2, 2)


def test_render_prep_job_is_an_indexed_job():
    job = render_prep_job(
        ["/shared/corpus/*.jsonl.zst"],
        "/shared/data/techpulse",
        shards=8,
        cpus=4,
        parallelism=2,
        prep_args=["--append-eod"],
    )
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == 8 and job["spec"]["parallelism"] == 2
    c = job["spec"]["template"]["spec"]["containers"][0]
    cmd = " ".join(c["command"])
    assert (
        "--shard-index $(JOB_COMPLETION_INDEX)" in cmd and "--num-shards 8" in cmd and "--append-eod" in cmd
    )
    assert "_shard$(JOB_COMPLETION_INDEX)" in cmd and c["resources"]["limits"]["cpu"] == "4"
    assert "techpulse_shard7_text_document" in job["metadata"]["annotations"]["workshop/merge-command"]
    with pytest.raises(UsageError, match="shared volume"):
        render_prep_job(["/home/me/x.jsonl"], "/shared/out", shards=2)
    with pytest.raises(UsageError):
        render_prep_job(["/shared/x.jsonl"], "/shared/out", shards=2, name="Bad_Name")


def test_render_cli_yaml_and_local_shards_merge_to_one_run(tmp_path, cli, cli_proc):
    res = cli(
        "render-prep-job", "--input", "/shared/c/*.jsonl", "--output-prefix", "/shared/d/t", "--shards", 2
    )
    assert res.code == 0 and yaml.safe_load(res.out)["spec"]["completions"] == 2
    lines = SAMPLE_CORPUS.read_bytes().splitlines(keepends=True)
    for i in range(5):
        (tmp_path / f"part{i}.jsonl").write_bytes(b"".join(lines[i * 450 : (i + 1) * 450]))
    glob = str(tmp_path / "part*.jsonl")
    single = cli_proc(
        "prep-data", "--input", glob, "--output-prefix", tmp_path / "one", "--append-eod", "--no-progress"
    )
    assert single.code == 0, single.err
    for i in range(3):  # pods, as local processes (JOB_COMPLETION_INDEX picks the shard)
        r = cli_proc(
            "prep-data",
            "--input",
            glob,
            "--output-prefix",
            tmp_path / f"t_shard{i}",
            "--num-shards",
            3,
            "--append-eod",
            "--no-progress",
            env={"JOB_COMPLETION_INDEX": str(i)},
        )
        assert r.code == 0, r.err
    res = cli(
        "merge-data",
        "--output-prefix",
        tmp_path / "t_text_document",
        *[tmp_path / f"t_shard{i}_text_document" for i in range(3)],
        "--json",
    )
    assert res.code == 0 and res.json()["documents"] == 2167
    for ext in ("bin", "idx"):
        assert (tmp_path / f"t_text_document.{ext}").read_bytes() == (
            tmp_path / f"one_text_document.{ext}"
        ).read_bytes()


def test_read_dataset_info_missing_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="run notebook 01"):
        read_dataset_info(tmp_path)


@pytest.mark.parametrize("prep_args", ["--tokenizer-model '/shared/tok", '--append-eod "x', "--a \\"])
def test_render_unbalanced_prep_args_is_one_line_exit_2(cli, prep_args):
    res = cli(
        "render-prep-job",
        "--input",
        "/shared/c/a.jsonl",
        "--output-prefix",
        "/shared/d/t",
        "--shards",
        2,
        f"--prep-args={prep_args}",
    )
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1, res.err
    assert "--prep-args" in res.err and prep_args in res.err


def test_render_quoted_prep_args_reach_the_pod_command_as_one_argument(cli):
    res = cli(
        "render-prep-job",
        "--input",
        "/shared/c/a.jsonl",
        "--output-prefix",
        "/shared/d/t",
        "--shards",
        2,
        "--prep-args",
        "--append-eod --tokenizer-model '/shared/my tok'",
    )
    assert res.code == 0, res.err
    command = yaml.safe_load(res.out)["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[-3:] == ["--append-eod", "--tokenizer-model", "/shared/my tok"]


def test_render_warns_when_named_files_are_fewer_than_shards_and_says_so_in_the_yaml(cli):
    args = ["render-prep-job", "--output-prefix", "/shared/d/t", "--shards", 4, "--input"]
    res = cli(*args, "/shared/c/a.jsonl", "/shared/c/b.jsonl.zst")
    assert res.code == 0 and yaml.safe_load(res.out)["spec"]["completions"] == 4
    assert "warning: 2 input file(s) for --shards 4" in res.err and "2 pod(s) get no input" in res.err
    assert "Sharding is by whole input file" in res.out
    for inputs in (["/shared/c/*.jsonl"], ["/shared/c"], [f"/shared/c/{i}.jsonl" for i in range(4)]):
        res = cli(*args, *inputs)
        assert res.code == 0 and res.err == "", res.err
    assert "whole input files" in " ".join(cli("render-prep-job", "--help").out.split())
