"""A real browser: JupyterLab from .venv, notebook 02 opened in headless Chromium, a widget changed.

This is how a workshop participant meets the calculator, so it is tested the same way: start
JupyterLab on localhost, open ``02_parallelism.ipynb`` in Debian's ``chromium`` (driven by
Playwright with the system browser; nothing is downloaded), run all cells, change the TP size and
check that the memory figure and the error list redraw. A screenshot lands in
``tests/artifacts/`` for people to look at.

It skips, saying why, only where Chromium is not installed (``make test`` installs it with apt
where it can).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium); browser test skipped")
    pytest.importorskip("playwright.sync_api")
    root = tmp_path / "lab"
    root.mkdir()
    shutil.copy(REPO / "notebooks" / "02_parallelism.ipynb", root)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "WORKSHOP_RUN_DIR": str(tmp_path / "run"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
    }
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                log.close()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
    yield base, token, tmp_path
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_calculator_redraws_when_tp_changes(jupyterlab):
    from playwright.sync_api import sync_playwright

    base, token, tmp = jupyterlab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        try:
            page.goto(f"{base}/lab/tree/02_parallelism.ipynb?token={token}")
            page.wait_for_selector(".jp-Notebook", timeout=90_000)
            page.wait_for_function(
                "window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext"
                " && window.jupyterapp.shell.currentWidget.sessionContext.kernelDisplayStatus === 'idle'",
                timeout=120_000,
            )
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            memory = page.locator(".wl-calculator .wl-memory")
            memory.wait_for(timeout=180_000)
            page.wait_for_function(
                "document.querySelector('.wl-calculator .wl-memory').innerText.includes('GiB')",
                timeout=60_000,
            )
            memory.scroll_into_view_if_needed()
            before = memory.inner_text()
            errors_before = page.locator(".wl-calculator .wl-errors").inner_text()

            tp = (
                page.locator(".wl-calculator .widget-inline-hbox", has=page.locator("label", has_text="TP"))
                .locator("input")
                .first
            )
            tp.fill("4")
            tp.press("Enter")
            page.wait_for_function(
                "t => document.querySelector('.wl-calculator .wl-memory').innerText !== t",
                arg=before,
                timeout=30_000,
            )
            after_tp4 = memory.inner_text()
            assert after_tp4 != before

            # 32 heads cannot be split over TP=3: the error list must say so, with a fix.
            tp.fill("3")
            tp.press("Enter")
            page.wait_for_function(
                "t => document.querySelector('.wl-calculator .wl-errors').innerText !== t",
                arg=errors_before,
                timeout=30_000,
            )
            errors = page.locator(".wl-calculator .wl-errors").inner_text()
            assert "3" in errors and "head" in errors.lower(), errors
            page.locator(".wl-calculator").screenshot(path=str(ARTIFACTS / "notebook02_calculator.png"))
        finally:
            page.screenshot(path=str(ARTIFACTS / "notebook02_browser.png"), full_page=False)
            browser.close()
