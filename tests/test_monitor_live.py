"""The live plot redraws only when the log grew, and headless mode draws once."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from workshop_lib.widgets.live import LivePlot, live_plot  # noqa: E402

LOGS = Path(__file__).parent / "fixtures" / "logs"


def test_live_plot_follows_a_growing_log(tmp_path):
    lines = (LOGS / "format_prefixes.log").read_text().splitlines(keepends=True)
    log = tmp_path / "train.log"
    log.write_text("".join(lines[:2]))
    png = tmp_path / "live.png"
    lp = LivePlot(log, out_png=png)
    assert lp.update() and lp.redraws == 1 and png.exists()
    assert not lp.update()  # nothing new: no redraw
    with open(log, "a") as fh:
        fh.write("".join(lines[2:]))
    assert lp.update() and lp.redraws == 2
    assert [r["iteration"] for r in lp.log.records] == [10, 20, 30, 40, 50]
    assert lp.status().startswith("iteration 50/200") and not lp.done()


def test_headless_draws_once(tmp_path):
    png = tmp_path / "once.png"
    parsed = live_plot(LOGS / "format_current.log", live=False, out_png=png)
    assert len(parsed.records) == 3 and png.stat().st_size > 1000
