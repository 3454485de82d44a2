"""Holds one detached local run: starts the command in the state file, records how it ended.

``python -m workshop_lib.launch.backends.local_runner STATE.json`` is what ``LocalBackend.submit``
starts in its own session. The trainer's stdout and stderr go to the log file named in the state;
the state file moves Pending -> Running -> Succeeded | Failed (``delete`` marks it Deleted).

The runner records who it is (pid, start time, command line, from /proc) so ``delete`` signals
it only while that same process holds the pid. The trainer (``train.agent``) runs in its own
process group and dies with the runner; a SIGTERM or SIGINT to the runner is passed on once (the
ranks save, then stop), a second one too (they stop at once). The log is created fresh under a
temporary name and renamed into place, so a link planted at its path is replaced, not followed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ...fsutil import atomic_write_text, open_fresh
from ...train import lifeline


def main(state_path: str) -> int:
    path = Path(state_path)
    state = json.loads(path.read_text())
    log = Path(state["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    with open_fresh(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            state["command"],
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, lifeline.PARENT_ENV: str(os.getpid())},  # it dies with this runner
            process_group=0,  # a signal to this runner's group is passed on once, by the handler below
        )

        def forward(_signum, _frame):
            lifeline.pass_stop_on(proc)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        state.update(
            state="Running",
            pid=os.getpid(),
            trainer_pid=proc.pid,
            runner=lifeline.identity(os.getpid()),
            trainer=lifeline.identity(proc.pid),
        )
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
