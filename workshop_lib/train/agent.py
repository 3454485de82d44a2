"""``python -m workshop_lib.train.agent [torchrun flags] -m workshop_lib.train FLAGS``: torchrun that lets
the ranks save before they stop.

Stock torchrun answers SIGTERM or SIGINT by killing every rank's process group and waiting a fixed
30 s: the ranks' DataLoader workers die first, the ranks fail with "DataLoader worker is killed
by signal" before they reach the checkpoint the trainer promised, and torchrun exits 1 with a
traceback per process. That is exactly a pod eviction, where torchrun is the container's main
process and the kubelet sends it SIGTERM. This front takes the same flags as torchrun and runs
torchrun's own agent, with one change in how a stop request travels:

* the first SIGTERM or SIGINT is passed on as one SIGTERM to each rank process (not to its
  process group); every rank's trainer agrees on it at the end of the iteration, saves a complete
  checkpoint and exits 0, and the agent then ends as it does for a finished run (exit 0, no
  traceback). The agent keeps waiting: the time limit is the caller's (the pod's
  ``terminationGracePeriodSeconds``; a second Ctrl-C here);
* a second SIGTERM or SIGINT kills every rank's process group at once and exits 128+signal;
* torchrun's own handling stays for SIGHUP and SIGQUIT (``PET_SIGNALS_TO_HANDLE``).

When started by ``workshop train`` (which names itself in ``WORKSHOP_PARENT_PID``) the agent dies
with it; the ranks die with the agent (``lifeline.die_with_parent`` in ``__main__``), so a
``kill -9`` anywhere above leaves no rank training on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from . import lifeline

# Signals torchrun itself keeps handling (its default list minus the two handled here).
TORCHRUN_SIGNALS = "SIGHUP,SIGQUIT"


class GracefulStop:
    """The agent's SIGTERM/SIGINT handler: pass the first on to the ranks, make the second final."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum: int, _frame: object) -> None:
        self.count += 1
        ranks = lifeline.children(os.getpid())
        name = signal.Signals(signum).name
        if self.count == 1 and ranks:
            print(
                f"workshop agent: {name}: asking {len(ranks)} rank(s) to save a checkpoint and stop "
                "(send it again to stop at once, without saving)",
                file=sys.stderr,
                flush=True,
            )
            for pid in ranks:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            return
        # A second request, or one before any rank started (nothing to save): stop now.
        lifeline.signal_group(ranks, signal.SIGKILL)
        print(f"workshop agent: {name}: stopped at once, no checkpoint saved", file=sys.stderr, flush=True)
        os._exit(128 + signum)


def signals_for_torchrun(current: str | None) -> str:
    """torchrun's signal list without SIGTERM and SIGINT, which this front handles itself.

    Given to torchrun through ``PET_SIGNALS_TO_HANDLE`` (the environment form of its
    ``--signals-to-handle``), so its command line is passed through untouched; an explicit
    ``--signals-to-handle`` flag still wins (for whoever really wants torchrun's own handling).
    """
    kept = [
        s.strip() for s in (current or "").split(",") if s.strip() and s.strip() not in ("SIGTERM", "SIGINT")
    ]
    return ",".join(kept) or TORCHRUN_SIGNALS


def main(argv: Sequence[str] | None = None) -> int:
    """Run torchrun's agent with the stop handling above; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parent = lifeline.parent_from_env(lifeline.PARENT_ENV)
    if parent:
        lifeline.die_with_parent(parent)
    os.environ[lifeline.AGENT_ENV] = str(os.getpid())  # the ranks check they still have this parent
    os.environ.pop(lifeline.PARENT_ENV, None)  # the ranks' parent is this agent, not our caller
    os.environ["PET_SIGNALS_TO_HANDLE"] = signals_for_torchrun(os.environ.get("PET_SIGNALS_TO_HANDLE"))
    stop = GracefulStop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)

    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun_main

    try:
        torchrun_main(argv)
    except ChildFailedError as exc:
        if stop.count and all(f.exitcode < 0 for f in exc.failures.values()):
            # asked to stop, and the ranks died of the signal before they could record the request
            print("workshop agent: the ranks stopped before they could save", file=sys.stderr, flush=True)
            return 128 + signal.SIGTERM
        # torchrun's summary of which rank failed how, without the agent's own traceback.
        print(exc.format_msg(), file=sys.stderr, flush=True)
        _rank, first = exc.get_first_failure()  # the root cause; the others were stopped after it
        return 2 if first.exitcode == 2 else 1  # a rank refused its input: a usage error
    except SignalException as exc:  # SIGHUP/SIGQUIT: torchrun has already stopped the ranks
        print(f"workshop agent: stopped by {exc.sigval.name}", file=sys.stderr, flush=True)
        return 128 + int(exc.sigval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
