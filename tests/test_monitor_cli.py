"""The monitor commands: JSON shapes, exit codes, one-line errors, plots, TensorBoard as a source."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from workshop_lib.facts.failures import CONTRACT_LABELS
from workshop_lib.monitor.parse import CONTRACT_KEYS

LOGS = Path(__file__).parent / "fixtures" / "logs"


def test_parse_json_contract(cli):
    res = cli(
        "monitor",
        "parse",
        LOGS / "format_current.log",
        "--json",
        "--gpu",
        "h100-80gb",
        "--seq-length",
        "4096",
    )
    assert res.code == 0, res.err
    out = json.loads(res.out)  # exactly one object, NaN written as null
    assert {"iterations", "validation", "summary"} <= set(out)
    assert all(list(r) == list(CONTRACT_KEYS) for r in out["iterations"])
    assert out["iterations"][2]["lm_loss"] is None and out["summary"]["nonfinite_loss_iterations"] == [45]
    assert out["validation"] == [{"iteration": 44, "lm_loss": 1.901234, "lm_loss_ppl": 6.694071}]
    s = out["summary"]
    assert s["mfu"] == pytest.approx(((236.0 + 228.4) / 2) / 989.0)
    assert s["tokens_per_second"] == pytest.approx((128 * 4096 / 5.5338 + 128 * 4096 / 5.7186) / 2)
    assert "NaN" not in res.out and "Infinity" not in res.out


def test_parse_table(cli):
    res = cli("monitor", "parse", LOGS / "healthy_megatron_long.log")
    assert res.code == 0 and "403 iterations logged" in res.out and "trend decreasing" in res.out


def test_diagnose_json_every_contract_label(cli):
    for label in CONTRACT_LABELS:
        res = cli("monitor", "diagnose", LOGS / f"fail_{label}.log", "--json")
        assert res.code == 0
        out = json.loads(res.out)
        findings = out["findings"]
        assert label in {f["label"] for f in findings}
        assert out["primary"] == findings[0]["label"] and out["unrecognised"] == []  # contract: one verdict
        for f in findings:
            assert {"label", "line_number", "line", "explanation", "fix"} <= set(f)


def test_diagnose_healthy_is_empty(cli):
    res = cli("monitor", "diagnose", LOGS / "healthy_megatron_long.log", "--json")
    assert res.code == 0 and json.loads(res.out) == {"primary": None, "findings": [], "unrecognised": []}


@pytest.mark.parametrize("args", [
    ("monitor", "parse", "no/such.log", "--json"),
    ("monitor", "diagnose", "no/such.log", "--json"),
    ("monitor", "plot", "no/such.log", "--out", "x.png"),
    ("monitor", "nccl", "no/such.log"),
    ("monitor", "gpu", "no/such.txt"),
    ("checkpoints", "no/such/dir", "--json"),
    ("monitor", "parse", str(LOGS / "format_legacy.log"), "--gpu", "tpu"),
    ("checkpoints", ".", "--delete"),
])  # fmt: skip
def test_bad_input_is_exit_2_one_line(cli, args):
    res = cli(*args)
    assert res.code == 2
    assert res.out == "" and len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err


def test_missing_file_as_a_real_process(cli_proc):
    res = cli_proc("monitor", "parse", "no/such.log", "--json", timeout=60)
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1


def test_plot_writes_png(cli, tmp_path):
    out = tmp_path / "curves.png"
    res = cli("monitor", "plot", LOGS / "format_current.log", "--out", out, "--json")
    assert res.code == 0 and json.loads(res.out)["iterations"] == 3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_empty_log_is_usage_error(cli, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("nothing yet\n")
    res = cli("monitor", "plot", log, "--out", tmp_path / "x.png")
    assert res.code == 2 and "no iteration lines" in res.err


def test_nccl_and_gpu_json(cli):
    res = cli("monitor", "nccl", LOGS / "fail_nccl_socket_fallback.log", "--json")
    assert res.code == 0 and json.loads(res.out)["verdict"] == "degraded"
    res = cli("monitor", "gpu", Path(__file__).parent / "fixtures" / "gpu" / "query_gpu.csv", "--json")
    out = json.loads(res.out)
    assert res.code == 0 and out["low_gpus"] == 1 and [g["gpu"] for g in out["gpus"] if g["low"]] == [2]


def test_checkpoints_json_and_cleanup(cli, tmp_path):
    for it in (10, 20, 30):
        d = tmp_path / f"iter_{it:07d}" / "mp_rank_00"
        d.mkdir(parents=True)
        (d / "model_optim_rng.pt").write_bytes(b"x" * 100)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("30")
    res = cli("checkpoints", tmp_path, "--json", "--keep-last", "2", "--storage", "amlfs-500")
    out = json.loads(res.out)
    assert res.code == 0 and out["iterations"] == [10, 20, 30] and out["latest"] == 30
    assert out["cleanup"]["dry_run"] and len(out["cleanup"]["delete"]) == 1
    res = cli("checkpoints", tmp_path, "--keep-last", "2", "--delete")
    assert res.code == 0 and "deleted 1 checkpoint" in res.out and not (tmp_path / "iter_0000010").exists()


def _write_events(directory: Path) -> None:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(directory))
    for step in (10, 20, 30):
        vals = [("lm loss", 10.0 - step / 10), ("learning-rate", 1e-4), ("grad-norm", 1.5), ("loss-scale", 1.0),
                ("iteration-time", 0.5), ("batch-size", 16.0)]  # fmt: skip
        if step == 30:
            vals += [("lm loss validation", 7.5), ("lm loss validation ppl", 1808.0)]
        s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in vals])
        w.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=s))
    w.close()


def test_tensorboard_as_second_source(cli, tmp_path):
    pytest.importorskip("tensorboard")
    _write_events(tmp_path / "tb")
    res = cli("monitor", "parse", "--tensorboard", tmp_path / "tb", "--json")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert [r["iteration"] for r in out["iterations"]] == [10, 20, 30]
    assert out["iterations"][0]["lm_loss"] == 9.0 and out["iterations"][0]["elapsed_ms"] == 500.0
    assert out["iterations"][0]["global_batch_size"] == 16
    assert out["validation"] == [{"iteration": 30, "lm_loss": 7.5, "lm_loss_ppl": 1808.0}]
    png = tmp_path / "tb.png"
    assert cli("monitor", "plot", "--tensorboard", tmp_path / "tb", "--out", png).code == 0 and png.exists()
    shutil.rmtree(tmp_path / "tb")
    assert cli("monitor", "parse", "--tensorboard", tmp_path / "tb").code == 2


def test_monitor_import_is_light():
    import subprocess
    import sys

    code = ("import sys, workshop_lib.monitor.cli, workshop_lib.monitor.parse, workshop_lib.monitor.diagnose;"
            "print(','.join(m for m in ('torch','pandas','matplotlib','kubernetes','tensorboard') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("kind", ["gzip", "zstd", "bzip2", "xz"])
def test_compressed_logs_read_like_plain_ones(cli, tmp_path, kind):
    import bz2
    import gzip
    import lzma

    import zstandard

    raw = (LOGS / "healthy_megatron_long.log").read_bytes()
    packed = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress,
              "zstd": zstandard.ZstdCompressor().compress}[kind](raw)  # fmt: skip
    log = tmp_path / "train.log.archived"  # the magic bytes decide, not the suffix
    log.write_bytes(packed)
    plain = json.loads(cli("monitor", "parse", LOGS / "healthy_megatron_long.log", "--json").out)
    res = cli("monitor", "parse", log, "--json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["iterations"] == plain["iterations"] and len(plain["iterations"]) == 403
    fail = (LOGS / "fail_nccl_timeout.log").read_bytes()
    failed = tmp_path / "fail.log.gz"
    failed.write_bytes(gzip.compress(fail))
    res = cli("monitor", "diagnose", failed, "--json")
    assert res.code == 0 and "nccl_timeout" in {f["label"] for f in json.loads(res.out)["findings"]}


def test_truncated_archive_is_exit_2_one_line(cli, tmp_path):
    import gzip

    log = tmp_path / "train.log.gz"
    log.write_bytes(gzip.compress((LOGS / "healthy_megatron_long.log").read_bytes())[:500])
    for cmd in ("parse", "diagnose", "nccl"):
        res = cli("monitor", cmd, log)
        assert res.code == 2 and "truncated" in res.err and len(res.err.strip().splitlines()) == 1


def test_gpu_on_a_directory_says_directory(cli, tmp_path):
    res = cli("monitor", "gpu", tmp_path)
    assert res.code == 2 and "is a directory" in res.err and "no such file" not in res.err


@pytest.mark.parametrize("out", ["x.txt", "x", "x.jpeg"])
def test_plot_out_with_unsupported_format_is_exit_2_naming_out(cli, tmp_path, out):
    res = cli("monitor", "plot", LOGS / "format_current.log", "--out", tmp_path / out)
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1
    assert "--out" in res.err and all(f in res.err for f in (".png", ".svg", ".pdf"))
    assert not (tmp_path / out).exists()


@pytest.mark.parametrize("fmt", ["svg", "pdf", "PNG"])
def test_plot_writes_svg_pdf_and_upper_case_png(cli, tmp_path, fmt):
    out = tmp_path / f"curves.{fmt}"
    res = cli("monitor", "plot", LOGS / "format_current.log", "--out", out)
    assert res.code == 0, res.err
    head = out.read_bytes()[:8]
    assert head.startswith({"svg": b"<?xml", "pdf": b"%PDF", "PNG": b"\x89PNG"}[fmt])
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left behind


def test_gpu_out_with_unsupported_format_is_exit_2(cli, tmp_path):
    smi = tmp_path / "dmon.txt"
    smi.write_text(
        "# gpu    sm   mem   enc   dec\n# Idx     %     %     %     %\n    0    95    40     0     0\n"
    )
    res = cli("monitor", "gpu", smi, "--out", tmp_path / "bars.txt")
    assert res.code == 2 and "--out" in res.err and len(res.err.strip().splitlines()) == 1
