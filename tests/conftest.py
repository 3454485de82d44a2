"""Shared test helpers: run the ``workshop`` command in-process or as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
