"""The trainer's log lines are Megatron-LM's (facts/megatron_log.py) and parse back with the monitor."""

from __future__ import annotations

import re
from datetime import datetime

from workshop_lib.monitor.parse import parse_eval_line, parse_iteration_line
from workshop_lib.train.log import iteration_line, validation_lines

# Megatron-LM's training_log, cell by cell ("{:8d}/{:8d}", "{:12d}", "{:.1f}", "{:.6E}", "{:5d}", "{:3d}")
MEGATRON_ITERATION = re.compile(
    r"^ \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +(\d+)/ +(\d+) \|"
    r" consumed samples: +\d+ \| elapsed time per iteration \(ms\): \d+\.\d \|"
    r" throughput per GPU \(TFLOP/s/GPU\): \d+\.\d \| learning rate: \d\.\d{6}E[+-]\d\d \|"
    r" global batch size: +\d+ \| lm loss: \d\.\d{6}E[+-]\d\d \| loss scale: \d+\.\d \|"
    r" grad norm: \d+\.\d{3} \| number of skipped iterations: +\d+ \| number of nan iterations: +\d+ \|$"
)


def _line(**over):
    values = dict(
        iteration=10,
        train_iters=100,
        consumed_samples=160,
        elapsed_ms=812.34,
        tflops_per_gpu=1.23,
        learning_rate=1e-4,
        global_batch_size=16,
        losses={"lm loss": 9.87654321},
        loss_scale=1.0,
        grad_norm=3.2101,
        skipped_iterations=0,
        nan_iterations=0,
        timestamp=datetime(2026, 1, 2, 3, 4, 5),
    )
    values.update(over)
    return iteration_line(**values)


def test_iteration_line_is_megatrons_exact_text():
    assert _line() == (
        " [2026-01-02 03:04:05] iteration       10/     100 | consumed samples:          160 |"
        " elapsed time per iteration (ms): 812.3 | throughput per GPU (TFLOP/s/GPU): 1.2 |"
        " learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 9.876543E+00 |"
        " loss scale: 1.0 | grad norm: 3.210 | number of skipped iterations:   0 |"
        " number of nan iterations:   0 |"
    )
    assert MEGATRON_ITERATION.match(_line())


def test_iteration_line_parses_back():
    rec = parse_iteration_line(_line(iteration=7, consumed_samples=112, grad_norm=0.5))
    assert rec["iteration"] == 7 and rec["train_iters"] == 100
    assert rec["consumed_samples"] == 112 and rec["global_batch_size"] == 16
    assert rec["lm_loss"] == 9.876543 and rec["learning_rate"] == 1e-4 and rec["grad_norm"] == 0.5
    assert rec["elapsed_ms"] == 812.3 and rec["tflops_per_gpu"] == 1.2
    assert rec["skipped_iterations"] == 0 and rec["nan_iterations"] == 0


def test_validation_block_between_dashed_rows():
    dashes, line, dashes2 = validation_lines(100, {"lm loss": 7.654321})
    assert (
        line
        == " validation loss at iteration 100 | lm loss value: 7.654321E+00 | lm loss PPL: 2.109742E+03 | "
    )
    assert dashes == dashes2 == "-" * (len(line) + 1)
    split, iteration, values = parse_eval_line(line)
    assert (split, iteration) == ("validation", 100)
    assert values["lm_loss"] == 7.654321


def test_throughput_uses_the_plan_rooms_flops_formula():
    from workshop_lib.plan.config import ModelConfig
    from workshop_lib.plan.flops import megatron_flops
    from workshop_lib.train import arguments
    from workshop_lib.train.trainer import _flops_per_iteration

    a = arguments.parse_args(
        [
            "--num-layers",
            "32",
            "--hidden-size",
            "4096",
            "--num-attention-heads",
            "32",
            "--seq-length",
            "4096",
            "--lr",
            "1e-4",
            "--train-iters",
            "10",
            "--data-path",
            "x",
            "--tokenizer-type",
            "NullTokenizer",
            "--vocab-size",
            "32000",
            "--swiglu",
            "--group-query-attention",
            "--num-query-groups",
            "8",
            "--global-batch-size",
            "512",
            "--tensor-model-parallel-size",
            "2",
        ]
    )
    arguments.finalize_parallel(a, 16)
    m = ModelConfig(
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        seq_length=4096,
        vocab_size=32000,
        num_query_groups=8,
        ffn_hidden_size=a.ffn_hidden_size,
        swiglu=True,
        vocab_pad_tp=2,
    )
    assert _flops_per_iteration(a, 32000) == megatron_flops(m, 512) > 0


def test_memory_report_is_megatrons_line_and_parses_back_to_bytes():
    """Megatron-LM's report_memory text (MiB as Python floats), read back by `workshop monitor parse`;
    real lines from Megatron runs (the diagnose corpus) parse the same way, with or without "[Rank N] (".
    """
    from workshop_lib.monitor.parse import parse_text
    from workshop_lib.train.log import memory_report_line

    stats = {"allocated_bytes": 22_702_429_696, "max_allocated_bytes": 37_854_760_960,
             "reserved_bytes": 38_000_000_000, "max_reserved_bytes": 38_575_013_888}  # fmt: skip
    line = memory_report_line(3, 4, stats)
    mib = [v / 2**20 for v in stats.values()]
    assert line == (
        f"[Rank 3] (after 4 iterations) memory (MB) | allocated: {mib[0]} | max allocated: {mib[1]}"
        f" | reserved: {mib[2]} | max reserved: {mib[3]}"
    )
    assert "| allocated: 21650.72412109375 | max allocated: 36101.11328125 |" in line
    real = (
        "[default0]:[Rank 0] (after 1 iterations) memory (MB) | allocated: 4256.57470703125 | max allocated: "
        "6819.63232421875 | reserved: 9644.0 | max reserved: 9644.0\n"
        "after 1 iterations memory (MB) | allocated: 12335.4560546875 | max allocated: 19976.07177734375 | "
        "reserved: 23330.0 | max reserved: 23330.0 | device usage: 29104.37890625\n"
    )
    parsed = parse_text(line + "\n" + real)
    assert [(m["rank"], m["iteration"]) for m in parsed.memory] == [(0, 1), (3, 4), (None, 1)]
    assert parsed.memory[1] == {"rank": 3, "iteration": 4, **stats}
    assert parsed.memory[2]["max_allocated_bytes"] == round(19976.07177734375 * 2**20)
    assert parsed.summary["peak_allocated_bytes"] == 37_854_760_960
    assert parsed.summary["peak_reserved_bytes"] == 38_575_013_888
    assert parsed.records == []  # a memory line is not an iteration
