"""A training plot that refreshes while the job runs (notebook 04's live mode).

:class:`LivePlot` follows the log with :class:`~workshop_lib.monitor.parse.LogFollower` (only new
bytes are read at each refresh) and redraws :func:`~workshop_lib.monitor.plot.plot_training` into
an ipywidgets ``Output`` when new iterations arrived. :func:`live_plot` is the notebook entry point:
with ``live=False`` (headless runs, papermill, CI) it draws once and returns; with ``live=True`` it
refreshes every ``interval_s`` seconds until training reaches ``train_iters``, the log stops growing
for ``idle_stop_s`` seconds, or ``max_updates`` refreshes were made (interrupt the cell to stop early).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..monitor.parse import LogFollower, ParsedLog
from ..monitor.plot import plot_training


class LivePlot:
    """Follow ``log_path`` and redraw the curves when iterations were added."""

    def __init__(self, log_path: str | os.PathLike[str], *, gpu: str | None = None, seq_length: int | None = None,
                 out_png: str | os.PathLike[str] | None = None):  # fmt: skip
        self.follower = LogFollower(log_path, gpu=gpu, seq_length=seq_length)
        self.out_png = Path(out_png) if out_png else None
        self.log: ParsedLog = self.follower.poll()
        self._drawn: tuple[int, int] | None = None
        self.figure = None
        self.redraws = 0
        self.output = None  # an ipywidgets.Output once displayed

    def done(self) -> bool:
        recs = self.log.records
        return (
            bool(recs)
            and recs[-1]["train_iters"] is not None
            and recs[-1]["iteration"] >= recs[-1]["train_iters"]
        )

    def update(self) -> bool:
        """Read new bytes; redraw if there are new iterations. Returns whether it redrew."""
        self.log = self.follower.poll()
        key = (len(self.log.records), len(self.log.validation))
        if not self.log.records or key == self._drawn:
            return False
        self._drawn = key
        self.redraw()
        return True

    def redraw(self) -> None:
        import matplotlib.pyplot as plt

        if self.figure is None:
            self.figure = plt.figure(figsize=(13, 7))
        plot_training(self.log, fig=self.figure)
        if self.out_png is not None:
            self.out_png.parent.mkdir(parents=True, exist_ok=True)
            self.figure.savefig(self.out_png, dpi=90)
        self.redraws += 1
        if self.output is not None:
            from IPython.display import display

            with self.output:
                self.output.clear_output(wait=True)
                display(self.figure)

    def status(self) -> str:
        s = self.log.summary
        if not s["iterations_logged"]:
            return "waiting for the first iteration line..."
        eta = f", ETA {s['eta_seconds']:.0f} s" if s["eta_seconds"] is not None else ""
        loss = f"{s['last_loss']:.4g}" if isinstance(s["last_loss"], float) else "-"
        return f"iteration {s['last_iteration']}/{s['train_iters']}, loss {loss}{eta}"


def live_plot(
    log_path: str | os.PathLike[str],
    *,
    live: bool = False,
    interval_s: float = 5.0,
    max_updates: int | None = None,
    idle_stop_s: float = 600.0,
    gpu: str | None = None,
    seq_length: int | None = None,
    out_png: str | os.PathLike[str] | None = None,
) -> ParsedLog:
    """Draw the training curves once (``live=False``) or keep refreshing them while the job runs."""
    import matplotlib.pyplot as plt

    lp = LivePlot(log_path, gpu=gpu, seq_length=seq_length, out_png=out_png)
    if not live:
        lp.log = lp.follower.finish()
        if lp.log.records:
            lp.redraw()
            _show(lp.figure)
            plt.close(lp.figure)
        return lp.log
    import ipywidgets as widgets
    from IPython.display import display

    lp.output = widgets.Output()
    label = widgets.Label(lp.status())
    display(widgets.VBox([label, lp.output]))
    updates = 0
    last_growth = time.monotonic()
    try:
        while True:
            if lp.update():
                last_growth = time.monotonic()
            label.value = lp.status()
            updates += 1
            if lp.done() or (max_updates is not None and updates >= max_updates):
                break
            if time.monotonic() - last_growth > idle_stop_s:
                label.value = lp.status() + f" (no new lines for {idle_stop_s:.0f} s: stopped following)"
                break
            time.sleep(interval_s)
    except KeyboardInterrupt:
        label.value = lp.status() + " (stopped)"
    if lp.figure is not None:
        plt.close(lp.figure)
    return lp.log


def _show(fig) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - plain Python
        return
    if get_ipython() is not None:
        display(fig)
