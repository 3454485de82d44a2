"""Megatron-LM's training log line formats: the one place both the trainer and the monitor read.

The trainer writes iteration lines exactly as Megatron-LM's ``training_log`` does, so that Megatron
tooling and our own parser both read them; the monitor builds its patterns from the same labels.

An iteration line (current Megatron-LM; older versions omit consumed samples and throughput, and
newer ones prefix ``[YYYY-MM-DD HH:MM:SS]``)::

     iteration       10/     100 | consumed samples:          160 | elapsed time per iteration (ms): 812.3 | throughput per GPU (TFLOP/s/GPU): 1.2 | learning rate: 1.000000E-04 | global batch size:    16 | lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 3.210 | number of skipped iterations:   0 | number of nan iterations:   0 |

A validation line (printed between two rows of dashes)::

     validation loss at iteration 100 | lm loss value: 7.654321E+00 | lm loss PPL: 2.108123E+03 |
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IterationField:
    """One ``label: value |`` cell of an iteration line."""

    label: str  # the text Megatron prints before the colon
    key: str  # our snake_case name (docs/cli.md's JSON key)
    fmt: str  # the format spec Megatron uses for the value


# In the order Megatron prints them. The loss cells (one per loss key, e.g. "lm loss",
# "load_balancing_loss") sit between global batch size and loss scale; see LOSS_FMT.
ITERATION_FIELDS_BEFORE_LOSSES: tuple[IterationField, ...] = (
    IterationField("consumed samples", "consumed_samples", "12d"),
    IterationField("elapsed time per iteration (ms)", "elapsed_ms", ".1f"),
    IterationField("throughput per GPU (TFLOP/s/GPU)", "tflops_per_gpu", ".1f"),
    IterationField("learning rate", "learning_rate", ".6E"),
    IterationField("global batch size", "global_batch_size", "5d"),
)
LOSS_FMT = ".6E"
ITERATION_FIELDS_AFTER_LOSSES: tuple[IterationField, ...] = (
    IterationField("loss scale", "loss_scale", ".1f"),
    IterationField("grad norm", "grad_norm", ".3f"),
    IterationField("number of skipped iterations", "skipped_iterations", "3d"),
    IterationField("number of nan iterations", "nan_iterations", "3d"),
)

ITERATION_PREFIX = " iteration {iteration:8d}/{train_iters:8d} |"
VALIDATION_PREFIX = " validation loss at iteration {iteration} | "
VALIDATION_LOSS_CELLS = "{name} value: {value:.6E} | {name} PPL: {ppl:.6E} | "
TEST_PREFIX = " test loss at iteration {iteration} | "


def loss_key(label: str) -> str:
    """The snake_case key for a loss label: ``"lm loss"`` -> ``"lm_loss"``."""
    return label.strip().replace(" ", "_").replace("-", "_").lower()


# Labels other Megatron versions and forks print for our keys (Megatron-DeepSpeed: ``TFLOPs``).
ITERATION_LABEL_ALIASES: dict[str, str] = {
    "TFLOPs": "tflops_per_gpu",
    "throughput per GPU (TFLOP/s/GPU)": "tflops_per_gpu",
    "elapsed time per iteration (ms)": "elapsed_ms",
}

# Cells that are neither our keys nor losses, under their snake_case column names.
ITERATION_EXTRA_LABELS: dict[str, str] = {
    "consumed tokens": "consumed_tokens",
    "num zeros": "num_zeros",
    "params norm": "params_norm",
    "actual seqlen": "actual_seqlen",
    "samples per second": "samples_per_second",
    "tokens per gpu per second (tgs)": "tokens_per_gpu_per_second",
    "decoupled learning rate": "decoupled_learning_rate",
}

# Megatron-LM's ``report_memory``: after the first logged interval, each rank of data-parallel rank 0
# prints torch.cuda's allocator figures in MiB (Python's float repr), e.g.
# "[Rank 0] (after 10 iterations) memory (MB) | allocated: 23605.2 | max allocated: 48112.9 | ...".
# Forks append cells (Enflame's "device usage"), and Megatron-DeepSpeed prints it without "[Rank N] (".
MEMORY_REPORT = "[Rank {rank}] (after {iteration} iterations) memory (MB)"
MEMORY_CELLS: tuple[tuple[str, str], ...] = (
    ("allocated", "allocated_bytes"),
    ("max allocated", "max_allocated_bytes"),
    ("reserved", "reserved_bytes"),
    ("max reserved", "max_reserved_bytes"),
)
MEMORY_UNIT_BYTES = 1024 * 1024  # Megatron's "MB" is a mebibyte

# The test-split line at the end of training (older and current Megatron).
END_OF_TRAINING_PREFIX = " validation loss at the end of training for {split} data | "
