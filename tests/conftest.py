"""Shared test helpers: run the ``workshop`` command in-process or as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _ctrl_c_raises_keyboard_interrupt():
    """Python turns SIGINT into KeyboardInterrupt only when it started with SIGINT not ignored, and a
    test run started as a background job of a non-interactive shell (``make test &``, a CI step under
    ``nohup``) inherits SIGINT ignored: the Ctrl-C tests then see nothing happen. They act as a user's
    terminal does, so for them SIGINT gets Python's own handler back; nothing changes otherwise."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run ``workshop ARGS`` in-process (fast); returns exit code, stdout and stderr."""
    from workshop_lib.cli import main

    def run(*args: str) -> Result:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors and --help
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def ctrl_c_at(monkeypatch):
    """``ctrl_c_at(owner, name, nth)``: the ``nth`` call of ``owner.name`` first receives a real SIGINT,
    as a terminal sends it (Python runs the handler before ``signal.raise_signal`` returns)."""
    import signal

    def arm(owner, name: str, nth: int = 1) -> None:
        real = getattr(owner, name)
        calls = {"n": 0}

        def hooked(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == nth:
                signal.raise_signal(signal.SIGINT)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, hooked)

    return arm


@pytest.fixture
def cli_proc():
    """Run ``workshop ARGS`` as a separate process, as users and CI do."""

    def run(*args: str, timeout: float = 600, env: dict | None = None, cwd: Path | None = None) -> Result:
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "workshop_lib.cli", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            cwd=cwd or REPO,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run
