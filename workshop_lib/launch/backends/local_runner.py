"""Holds one detached local run: starts the command in the state file, records how it ended.

``python -m workshop_lib.launch.backends.local_runner STATE.json`` is what ``LocalBackend.submit``
starts in its own session. The trainer's stdout and stderr go to the log file named in the state;
the state file moves Pending -> Running -> Succeeded | Failed (``delete`` marks it Deleted).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ...fsutil import atomic_write_text


def main(state_path: str) -> int:
    path = Path(state_path)
    state = json.loads(path.read_text())
    log = Path(state["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            state["command"], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

        def forward(signum, _frame):  # delete's SIGTERM reaches the group; make sure torchrun gets it
            proc.send_signal(signum)

        signal.signal(signal.SIGTERM, forward)
        state.update(state="Running", pid=os.getpid(), trainer_pid=proc.pid)
        atomic_write_text(path, json.dumps(state, indent=2))
        rc = proc.wait()
    state = json.loads(path.read_text())
    if state.get("state") != "Deleted":
        state.update(state="Succeeded" if rc == 0 else "Failed", returncode=rc, finished=time.time())
        if rc != 0:
            state["reason"] = f"trainer exited with status {rc}; see {log}"
        atomic_write_text(path, json.dumps(state, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
