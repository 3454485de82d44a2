"""Training curves (matplotlib, imported lazily) and TensorBoard event files as a second source.

:func:`plot_training` draws, from a :class:`~workshop_lib.monitor.parse.ParsedLog`: the loss with
its smoothed curve and validation points, the learning rate, the grad norm, the loss scale and the
throughput (TFLOP/s per GPU, or ms per iteration when throughput is not logged or rounds to 0).
:func:`read_tensorboard` turns Megatron's TensorBoard scalars (``lm loss``, ``learning-rate``,
``grad-norm``, ``loss-scale``, ``iteration-time``, ``lm loss validation``...) into the same
``ParsedLog``, so summaries and plots work on either source.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..fsutil import ensure_parent_dir
from .parse import CONTRACT_KEYS, ParsedLog, smooth

# Megatron's TensorBoard tags -> our columns (seconds are converted to ms where needed).
TB_TAGS: dict[str, str] = {
    "lm loss": "lm_loss",
    "learning-rate": "learning_rate",
    "grad-norm": "grad_norm",
    "loss-scale": "loss_scale",
    "batch-size": "global_batch_size",
    "iteration-time": "elapsed_ms",  # Megatron logs seconds
    "throughput": "tflops_per_gpu",
    "num-zeros": "num_zeros",
    "params-norm": "params_norm",
    "load_balancing_loss": "load_balancing_loss",
}
TB_VALIDATION_TAG = "lm loss validation"
TB_VALIDATION_PPL_TAG = "lm loss validation ppl"
TB_TEST_TAG = "lm loss test"

# What ``--out`` may end with: formats every matplotlib backend writes without extra packages.
PLOT_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")


def check_plot_out(out: str | os.PathLike[str]) -> str:
    """The format of ``out`` from its suffix, or a one-line UsageError naming ``--out``.

    Checked before a log is parsed so a typo costs nothing, and so matplotlib's ``ValueError``
    (which lists ~15 formats, several of which need extra packages) never reaches the user.
    """
    suffix = Path(out).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise UsageError(
            f"--out {out}: {'.' + suffix if suffix else 'no'} suffix is not a supported format; "
            f"name a {', '.join('.' + f for f in PLOT_FORMATS)} file"
        )
    target = Path(out)
    if target.is_dir():
        raise UsageError(f"--out {out}: is a directory; name the image file to write (e.g. {out}/loss.png)")
    ensure_parent_dir(target, "--out", shown=out)
    return suffix


def save_figure(fig, out: str | os.PathLike[str], *, dpi: int) -> None:
    """Write ``fig`` to ``out`` atomically (a half-written PNG is what a dashboard would show)."""
    fmt_name = check_plot_out(out)
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=dpi, format=fmt_name)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def read_tensorboard(directory: str | os.PathLike[str]) -> ParsedLog:
    """Scalars from TensorBoard event files under ``directory`` as a ParsedLog."""
    d = Path(directory)
    if not d.exists():
        raise UsageError(
            f"{d}: no such TensorBoard directory; pass Megatron's --tensorboard-dir (e.g. runs/workshop/train/tensorboard)"
        )
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as exc:
        from ..errors import WorkshopError

        raise WorkshopError(
            "reading TensorBoard files needs the tensorboard package: pip install tensorboard"
        ) from exc

    runs = sorted({p.parent for p in d.rglob("events.out.tfevents.*")})
    if not runs:
        raise UsageError(f"{d}: no events.out.tfevents.* files; is this the --tensorboard-dir of a run?")
    by_step: dict[int, dict[str, Any]] = {}
    val: dict[int, dict[str, Any]] = {}
    test: dict[int, dict[str, Any]] = {}
    for run in runs:
        acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            base = tag.split(" vs ")[0]  # Megatron also logs "X vs samples"; keep the per-iteration one
            if tag != base:
                continue
            events = acc.Scalars(tag)
            if tag in (TB_VALIDATION_TAG, TB_VALIDATION_PPL_TAG, TB_TEST_TAG):
                target = test if tag == TB_TEST_TAG else val
                key = "lm_loss_ppl" if tag == TB_VALIDATION_PPL_TAG else "lm_loss"
                for e in events:
                    target.setdefault(e.step, {"iteration": e.step, "lm_loss": None, "lm_loss_ppl": None})[
                        key
                    ] = e.value
                continue
            col = TB_TAGS.get(tag)
            if col is None:
                col = tag.replace(" ", "_").replace("-", "_").lower()
            for e in events:
                rec = by_step.setdefault(e.step, {**dict.fromkeys(CONTRACT_KEYS), "iteration": e.step})
                v = e.value
                if col == "elapsed_ms":
                    v = v * 1000.0
                if col == "global_batch_size" and math.isfinite(v):
                    v = int(v)
                rec[col] = v
    records = [by_step[s] for s in sorted(by_step)]
    return ParsedLog(records=records, validation=[val[s] for s in sorted(val)], test=[test[s] for s in sorted(test)],
                     source=str(d))  # fmt: skip


def plot_training(
    log: ParsedLog, out: str | os.PathLike[str] | None = None, *, title: str | None = None, fig=None
):
    """Draw the curves; save to ``out`` (PNG) when given. Returns the matplotlib Figure."""
    if out is not None:
        check_plot_out(out)
    import matplotlib

    if out is not None and fig is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    recs = log.records
    if not recs:
        raise UsageError(
            f"{log.source or 'log'}: no iteration lines to plot; has training started (look for 'iteration N/ M |')?"
        )
    if fig is None:
        fig = plt.figure(figsize=(13, 7))
    fig.clf()
    axes = fig.subplots(2, 3).ravel()
    it = [r["iteration"] for r in recs]

    def col(name: str) -> list[float]:
        return [r.get(name) if isinstance(r.get(name), int | float) else math.nan for r in recs]

    ax = axes[0]
    loss = col("lm_loss")
    ax.plot(it, loss, color="tab:blue", alpha=0.35, linewidth=1, label="lm loss")
    ax.plot(it, smooth(loss), color="tab:blue", linewidth=2, label="smoothed")
    bad = [i for i, r in zip(it, recs, strict=True)
           if isinstance(r.get("lm_loss"), float) and not math.isfinite(r["lm_loss"])]  # fmt: skip
    for i in bad:
        ax.axvline(i, color="tab:red", alpha=0.3, linewidth=1)
    if log.validation:
        ax.plot([v["iteration"] for v in log.validation], [v["lm_loss"] for v in log.validation], "o",
                color="tab:orange", label="validation")  # fmt: skip
    if log.test:
        ax.plot(
            [v["iteration"] for v in log.test],
            [v["lm_loss"] for v in log.test],
            "s",
            color="tab:green",
            label="test",
        )
    ax.set_title("loss" + (f" ({len(bad)} NaN/Inf)" if bad else ""))
    ax.legend(fontsize=8)
    extra_losses = [c for c in log.extra_columns if c.endswith("loss") and c != "lm_loss"]
    panels = [
        (axes[1], "learning_rate", "learning rate", False),
        (axes[2], "grad_norm", "grad norm", False),
        (axes[3], "loss_scale", "loss scale", True),
    ]
    for a, name, label, logy in panels:
        ys = col(name)
        if any(math.isfinite(y) for y in ys):
            a.plot(it, ys, color="tab:purple")
            if logy and all(y > 0 for y in ys if math.isfinite(y)):
                a.set_yscale("log")
        else:
            a.text(0.5, 0.5, "not logged", ha="center", va="center", transform=a.transAxes, color="grey")
        a.set_title(label)
    a = axes[4]
    tf = col("tflops_per_gpu")
    # A tiny model on a CPU logs "0.0" TFLOP/s (Megatron prints one decimal): a flat zero says
    # nothing, so time per iteration is drawn instead, as for logs without throughput.
    if any(math.isfinite(y) and y > 0 for y in tf):
        a.plot(it, tf, color="tab:green")
        a.set_title("throughput (TFLOP/s/GPU)")
    else:
        a.plot(it, col("elapsed_ms"), color="tab:green")
        a.set_title("time per iteration (ms)")
    a = axes[5]
    if extra_losses:
        for c in extra_losses:
            a.plot(it, col(c), label=c)
        a.legend(fontsize=8)
        a.set_title("other losses")
    else:
        a.plot(it, col("consumed_samples"), color="tab:grey")
        a.set_title("consumed samples")
    for a in axes:
        a.set_xlabel("iteration")
        a.grid(alpha=0.3)
    fig.suptitle(title or f"Training curves: {Path(log.source).name if log.source else ''}")
    fig.tight_layout()
    if out is not None:
        save_figure(fig, out, dpi=90)
        plt.close(fig)
    return fig


def plot_evaluation(evaluation: dict, ax=None):
    """Held-out loss of the base and the trained model, per set (``before_after``'s rows), as bars.

    The picture continued pre-training is judged by: the domain bar should drop, the general bar
    should stay where it was (replay keeps it there).
    """
    import matplotlib.pyplot as plt

    rows = evaluation["rows"]
    sets = list(dict.fromkeys(r["set"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    loss = {(r["model"], r["set"]): r["loss"] for r in rows}
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2))
    width = 0.8 / max(1, len(models))
    colours = {"base": "#8C8C8C", "trained": "#4C72B0"}
    for i, model in enumerate(models):
        xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(sets))]
        ys = [loss.get((model, s), math.nan) for s in sets]
        bars = ax.bar(xs, ys, width, label=model, color=colours.get(model))
        for bar, y in zip(bars, ys, strict=True):
            ax.annotate(
                f"{y:.2f}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=8
            )
    ax.set_xticks(range(len(sets)), [f"held-out {s}" for s in sets])
    ax.set_ylabel("loss (nats per token)")
    ax.set_title(f"before and after continued pre-training (seq length {evaluation.get('seq_length')})")
    ax.legend()
    return ax
