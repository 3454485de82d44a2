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
