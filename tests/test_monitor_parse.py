"""Megatron log parsing: every format variant with exact values, streaming equals one-shot."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from workshop_lib.monitor.parse import CONTRACT_KEYS, LogFollower, parse_log, parse_text

LOGS = Path(__file__).parent / "fixtures" / "logs"


def test_legacy_format_missing_fields_are_none():
    log = parse_log(LOGS / "format_legacy.log")
    its = log.iterations
    assert [r["iteration"] for r in its] == [1, 2, 100]
    first = its[0]
    assert set(first) == set(CONTRACT_KEYS)
    assert first == {
        "iteration": 1, "train_iters": 508626, "consumed_samples": 288, "elapsed_ms": 255940.5,
        "tflops_per_gpu": None, "learning_rate": 0.0, "global_batch_size": 288, "lm_loss": None,
        "loss_scale": 4294967296.0, "grad_norm": None, "skipped_iterations": 1, "nan_iterations": 0,
    }  # fmt: skip
    # the oldest form: no consumed samples, no batch size
    assert its[2]["consumed_samples"] is None and its[2]["global_batch_size"] is None
    assert its[2]["lm_loss"] == pytest.approx(7.123456) and its[2]["train_iters"] == 500


def test_current_format_timestamps_moe_and_validation():
    log = parse_log(LOGS / "format_current.log")
    r = log.records[0]
    assert r["timestamp"] == "2024-04-06 02:59:36"
    assert r["tflops_per_gpu"] == 239.8 and r["learning_rate"] == pytest.approx(8.6e-6)
    assert r["load_balancing_loss"] == pytest.approx(1.019746) and r["num_zeros"] == 0.0
    assert math.isnan(log.records[2]["lm_loss"]) and math.isnan(log.records[2]["grad_norm"])
    assert log.validation == [{"iteration": 44, "lm_loss": pytest.approx(1.901234), "lm_loss_ppl": pytest.approx(6.694071),
                               "load_balancing_loss": pytest.approx(1.02), "load_balancing_loss_ppl": pytest.approx(2.773195)}]  # fmt: skip
    assert log.test[0]["iteration"] == 45 and log.test[0]["lm_loss"] == pytest.approx(1.95)
    df = log.to_dataframe()
    assert math.isnan(df.loc[2, "lm_loss"])  # NaN stays NaN in the DataFrame
    assert list(df.columns[: len(CONTRACT_KEYS)]) == list(CONTRACT_KEYS)
    assert "load_balancing_loss" in df.columns and str(df["timestamp"].dtype).startswith("datetime64")
    js = log.to_json_dict()
    assert js["iterations"][2]["lm_loss"] is None  # JSON: null for NaN, and counted
    assert js["summary"]["nonfinite_loss_iterations"] == [45] and js["summary"]["nan_iterations"] == 1
    assert js["extra_columns"]["load_balancing_loss"] == [
        pytest.approx(1.019746),
        pytest.approx(1.020033),
        pytest.approx(1.018004),
    ]


def test_launcher_and_cloud_prefixes():
    log = parse_log(LOGS / "format_prefixes.log")
    assert [r["iteration"] for r in log.records] == [10, 20, 30, 40, 50]
    assert [r["lm_loss"] for r in log.records] == pytest.approx([9.876543, 9.5, 9.1, 8.7, 8.3])
    assert log.records[2]["timestamp"] == "2025-11-21 10:01:02"
    assert log.records[4]["elapsed_ms"] == 770.0 and log.records[4]["train_iters"] == 200


def test_megatron_deepspeed_variant():
    r = parse_log(LOGS / "format_deepspeed.log").records[0]
    assert (
        r["tflops_per_gpu"] == 71.39 and r["elapsed_ms"] == 3012.9 and r["lm_loss"] == pytest.approx(10.3604)
    )
    assert r["consumed_tokens"] == 10485760 and r["actual_seqlen"] == 2048
    assert r["samples_per_second"] == 169.936 and r["tokens_per_gpu_per_second"] == 2719.0


def test_extra_loss_keys():
    r = parse_log(LOGS / "format_bert_sop.log").records[0]
    assert r["lm_loss"] == pytest.approx(6.54321)
    assert r["sop_loss"] == pytest.approx(0.693147) and r["my_custom_aux_loss"] == pytest.approx(0.0125)
    assert r["loss_scale"] == 131072.0 and r["grad_norm"] == 2.718


def test_many_ranks_are_deduplicated():
    log = parse_log(LOGS / "format_multirank.log")
    assert [r["iteration"] for r in log.records] == [10, 20]
    assert log.repeated_iterations == 2
    assert log.records[0]["elapsed_ms"] == 812.9  # the later print wins


def test_summary_of_healthy_log():
    log = parse_log(LOGS / "healthy_megatron_long.log", gpu="a100-40gb")
    s = log.summary
    assert s["iterations_logged"] == 403 and s["last_iteration"] == 2000 and s["train_iters"] == 2000
    assert s["best_loss"] == pytest.approx(2.183074) and s["best_loss_iteration"] == 1970
    assert s["loss_trend"] == "decreasing" and s["seq_length"] == 2048
    assert s["mean_elapsed_ms"] == pytest.approx(2009.0)
    assert s["tokens_per_second"] == pytest.approx(256 * 2048 / 2.009, rel=1e-3)
    assert s["mfu"] == pytest.approx(s["mean_tflops_per_gpu"] / 312.0)
    assert s["skipped_iterations"] == 3 and s["nan_iterations"] == 0 and s["eta_seconds"] == 0
    assert [v["iteration"] for v in log.validation] == [500, 1000, 1500, 2000]
    assert log.args["micro_batch_size"] == 2 and log.args["fp16"] is True


def test_eta_to_train_iters():
    text = "".join(
        f" iteration {i:8d}/{1000:8d} | elapsed time per iteration (ms): {500.0 if i > 10 else 9000.0:.1f} | lm loss: 5.0E+00 |\n"
        for i in (10, 20, 30)
    )
    s = parse_text(text).summary
    assert s["eta_seconds"] == pytest.approx(970 * 0.5)


def _chunks(data: bytes, sizes):
    i = 0
    for n in sizes:
        yield data[i : i + n]
        i += n
    yield data[i:]


@pytest.mark.parametrize("name", ["healthy_megatron_long.log", "format_current.log", "format_prefixes.log"])
def test_incremental_equals_one_shot(tmp_path, name):
    data = (LOGS / name).read_bytes()
    one_shot = parse_log(LOGS / name)
    path = tmp_path / "train.log"
    path.write_bytes(b"")
    follower = LogFollower(path)
    for chunk in _chunks(data, [1, 7, 100, 333, 4096, 10, 50000]):  # split mid-line and mid-character
        with open(path, "ab") as fh:
            fh.write(chunk)
        follower.poll()
    inc = follower.finish()
    assert inc.records == one_shot.records or _same(inc.records, one_shot.records)
    assert inc.validation == one_shot.validation and inc.test == one_shot.test
    assert inc.summary == one_shot.summary or _same([inc.summary], [one_shot.summary])


def _same(a, b):
    def norm(x):
        return "nan" if isinstance(x, float) and math.isnan(x) else x

    return [{k: norm(v) for k, v in r.items()} for r in a] == [{k: norm(v) for k, v in r.items()} for r in b]


def test_follower_reads_only_new_bytes_and_holds_partial_line(tmp_path):
    path = tmp_path / "train.log"
    line = " iteration       10/     100 | lm loss: 5.000000E+00 | loss scale: 1.0 |\n"
    path.write_text(line[:30])
    f = LogFollower(path)
    assert f.poll().records == []  # partial line held back
    with open(path, "a") as fh:
        fh.write(line[30:])
    assert [r["iteration"] for r in f.poll().records] == [10]
    assert f.offset == len(line)


def test_follower_restarts_on_truncation_and_rotation(tmp_path):
    path = tmp_path / "train.log"
    a = " iteration       10/     100 | lm loss: 5.000000E+00 |\n iteration       20/     100 | lm loss: 4.000000E+00 |\n"
    path.write_text(a)
    f = LogFollower(path)
    assert len(f.poll().records) == 2
    path.write_text(" iteration        5/     100 | lm loss: 6.000000E+00 |\n")  # truncated: shorter
    assert [r["iteration"] for r in f.poll().records] == [5] and f.resets == 1
    rotated = tmp_path / "new.log"
    rotated.write_text(a + a)
    os.replace(rotated, path)  # a new inode, longer than before
    assert [r["iteration"] for r in f.poll().records] == [10, 20] and f.resets == 2


def test_missing_log_is_a_usage_error(tmp_path):
    from workshop_lib.errors import UsageError

    with pytest.raises(UsageError, match="no such log file"):
        parse_log(tmp_path / "nope.log")


def test_streamed_json_is_the_built_object_memory_reports_included():
    """`monitor parse --json` streams its object (write_json); it must equal to_json_dict's, memory too."""
    import io
    import json

    log = Path(__file__).parent / "fixtures" / "gpu" / "h100_trainer_mbs4_oom.log"
    parsed = parse_log(log)
    out = io.StringIO()
    parsed.write_json(out)
    streamed = json.loads(out.getvalue())
    assert streamed == json.loads(json.dumps(parsed.to_json_dict()))
    assert streamed["memory"][0]["max_allocated_bytes"] == 73160713216


def test_repeated_memory_reports_keep_the_last_line_per_rank_and_iteration():
    """Each distinct report line is parsed once (a fork that prints it every interval); a repeat still
    counts as the latest report for its rank and iteration, as it did when every line was parsed."""
    a = "[Rank 0] (after 5 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0"
    b = "[Rank 0] (after 5 iterations) memory (MB) | allocated: 3.0 | max allocated: 4.0"
    c = "[Rank 1] (after 5 iterations) memory (MB) | allocated: 5.0 | max allocated: 6.0"
    mib = 2**20
    for lines, want in (
        ([a, b, a, c], [(0, 2 * mib), (1, 6 * mib)]),
        ([a, b, a, b, c, c], [(0, 4 * mib), (1, 6 * mib)]),
        ([a] * 1000 + [b], [(0, 4 * mib)]),
    ):
        parsed = parse_text("\n".join(lines) + "\n")
        assert [(m["rank"], m["max_allocated_bytes"]) for m in parsed.memory] == want
