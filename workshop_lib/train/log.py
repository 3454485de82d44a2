"""Log lines in Megatron-LM's format (``workshop_lib.facts.megatron_log``), TensorBoard scalars, and the
known library warnings a rank filters before megatron-core loads (``workshop_lib.facts.library_warnings``)."""

from __future__ import annotations

import builtins
import math
import re
import warnings
from datetime import datetime

from ..facts import library_warnings
from ..facts import megatron_log as fmt


def ignore_known_warnings(*, also_hidden: bool = False) -> int:
    """Filter the table's ``IGNORE`` warnings, each by its exact category, message and module.

    Called by every rank before megatron-core is imported (it prints its CPU notes at import); a
    warning that differs in any of the three is still printed. ``also_hidden`` filters the ``HIDE``
    entries too, for work done in this process (``workshop evaluate``, notebook 04), which has no
    log file to keep them in. Returns how many filters were added.
    """
    actions = {library_warnings.IGNORE, library_warnings.HIDE} if also_hidden else {library_warnings.IGNORE}
    n = 0
    for entry in library_warnings.KNOWN:
        if entry.action not in actions:
            continue
        warnings.filterwarnings(
            "ignore",
            message=re.escape(entry.message) + r"\Z",
            category=getattr(builtins, entry.category),
            module=entry.module + r"\Z",
        )
        n += 1
    return n


def _cell(label: str, spec: str, value) -> str:
    return f" {label}: {format(value, spec)} |"


def iteration_line(
    *,
    iteration: int,
    train_iters: int,
    consumed_samples: int,
    elapsed_ms: float,
    tflops_per_gpu: float,
    learning_rate: float,
    global_batch_size: int,
    losses: dict[str, float],
    loss_scale: float,
    grad_norm: float | None,
    skipped_iterations: int,
    nan_iterations: int,
    timestamp: datetime | None = None,
) -> str:
    """One iteration line exactly as Megatron-LM's ``training_log`` prints it (with its timestamp)."""
    stamp = (timestamp or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    values = {
        "consumed_samples": consumed_samples,
        "elapsed_ms": elapsed_ms,
        "tflops_per_gpu": tflops_per_gpu,
        "learning_rate": learning_rate,
        "global_batch_size": global_batch_size,
        "loss_scale": loss_scale,
        "grad_norm": grad_norm,
        "skipped_iterations": skipped_iterations,
        "nan_iterations": nan_iterations,
    }
    line = f" [{stamp}]" + fmt.ITERATION_PREFIX.format(iteration=iteration, train_iters=train_iters)
    for f in fmt.ITERATION_FIELDS_BEFORE_LOSSES:
        line += _cell(f.label, f.fmt, values[f.key])
    for name, value in losses.items():
        line += _cell(name, fmt.LOSS_FMT, value)
    for f in fmt.ITERATION_FIELDS_AFTER_LOSSES:
        if values[f.key] is None:  # Megatron leaves out the grad norm when it is not computed
            continue
        line += _cell(f.label, f.fmt, values[f.key])
    return line


def memory_report_line(rank: int, iteration: int, stats: dict[str, int]) -> str:
    """Megatron-LM's ``report_memory`` line from ``torch.cuda``'s allocator figures (bytes).

    ``stats`` maps each of ``fmt.MEMORY_CELLS``' keys to bytes; the line prints MiB as Megatron does,
    so ``workshop monitor parse`` (and anyone's grep) reads our runs and Megatron's alike.
    """
    line = fmt.MEMORY_REPORT.format(rank=rank, iteration=iteration)
    for label, key in fmt.MEMORY_CELLS:
        line += f" | {label}: {stats[key] / fmt.MEMORY_UNIT_BYTES}"
    return line


def cuda_memory_stats() -> dict[str, int]:
    """This rank's allocator figures, in bytes, under ``fmt.MEMORY_CELLS``' keys."""
    import torch

    return {
        "allocated_bytes": torch.cuda.memory_allocated(),
        "max_allocated_bytes": torch.cuda.max_memory_allocated(),
        "reserved_bytes": torch.cuda.memory_reserved(),
        "max_reserved_bytes": torch.cuda.max_memory_reserved(),
    }


def validation_lines(iteration: int, losses: dict[str, float]) -> list[str]:
    """The validation block: a dashed row, the loss line, a dashed row (Megatron's layout)."""
    line = fmt.VALIDATION_PREFIX.format(iteration=iteration)
    for name, value in losses.items():
        line += fmt.VALIDATION_LOSS_CELLS.format(name=name, value=value, ppl=math.exp(min(20.0, value)))
    dashes = "-" * (len(line) + 1)
    return [dashes, line, dashes]


class Scalars:
    """TensorBoard (and Weights & Biases) scalars under Megatron-LM's tag names; no-op when unset."""

    def __init__(self, args, *, enabled: bool):
        self.writer = None
        self.wandb = None
        self.args = args
        if not enabled:
            return
        if args.tensorboard_dir:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=args.tensorboard_dir, max_queue=1000)
        if args.wandb_project:
            try:
                import wandb
            except ImportError:
                from ..errors import UsageError

                raise UsageError("--wandb-project needs the wandb package (pip install wandb)") from None
            self.wandb = wandb.init(
                project=args.wandb_project,
                entity=args.wandb_entity,
                name=args.wandb_exp_name,
                dir=args.wandb_save_dir,
                config={k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool))},
            )

    def train(self, iteration: int, consumed: int, values: dict[str, float]) -> None:
        if self.writer and iteration % self.args.tensorboard_log_interval == 0:
            for tag, value in values.items():
                if value is None:
                    continue
                self.writer.add_scalar(tag, value, iteration)
                if tag in ("lm loss",):
                    self.writer.add_scalar(f"{tag} vs samples", value, consumed)
        if self.wandb:
            self.wandb.log({k: v for k, v in values.items() if v is not None}, step=iteration)

    def validation(self, iteration: int, consumed: int, losses: dict[str, float]) -> None:
        for name, value in losses.items():
            ppl = math.exp(min(20.0, value))
            if self.writer:
                self.writer.add_scalar(f"{name} validation", value, iteration)
                self.writer.add_scalar(f"{name} validation vs samples", value, consumed)
                if self.args.log_validation_ppl_to_tensorboard:
                    self.writer.add_scalar(f"{name} validation ppl", ppl, iteration)
            if self.wandb:
                self.wandb.log({f"{name} validation": value}, step=iteration)

    def close(self) -> None:
        if self.writer:
            self.writer.flush()
            self.writer.close()
        if self.wandb:
            self.wandb.finish()
