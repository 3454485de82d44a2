"""Process lifetimes for a training run: stop requests, parent death, and knowing our own processes.

Three faults share one cause, a process outliving or misreading the process that owns it:

* a rank must die when its launcher dies, however it died (``kill -9`` of ``workshop train``'s
  process group used to leave the ranks training as orphans that kept writing checkpoints a
  later ``--load`` raced with): :func:`die_with_parent` asks the kernel (``PR_SET_PDEATHSIG``)
  to kill this process when its parent exits, and closes the race where the parent died before
  the request was made;
* a stop request (SIGTERM from a kubelet, Ctrl-C) can arrive while a rank is still importing
  torch or building its model: :func:`install_stop_handler` records it from the first line of
  the process, so the request is honoured at the trainer's next agreement point instead of
  killing the rank half-way;
* a pid written to a file is only a number: :func:`identity` and :func:`same_process` compare a
  process's start time and command line (from ``/proc``) with what was recorded when we started
  it, so a stale pid reused by someone else is never signalled.

Standard library only: ranks import this before torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the ranks import this module first thing: subprocess only where it runs
    import subprocess

PR_SET_PDEATHSIG = 1
# The environment variable through which a parent names itself to the child it starts: the
# child compares it with getppid() after asking for PDEATHSIG (the parent may already be gone).
PARENT_ENV = "WORKSHOP_PARENT_PID"
AGENT_ENV = "WORKSHOP_AGENT_PID"


def die_with_parent(expected_parent: int | None = None, sig: int = signal.SIGKILL) -> bool:
    """Have the kernel send ``sig`` to this process when its parent exits (Linux).

    ``expected_parent`` is the pid the parent announced; if the parent is already gone (we were
    re-parented before the request took effect), exit at once. Returns whether the request was
    made (False off Linux, where there is no such request).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if expected_parent and os.getppid() != expected_parent:
        os._exit(128 + int(sig))  # the parent died before we could ask: follow it now
    return True


def parent_from_env(name: str) -> int | None:
    """The pid a parent announced in ``name`` (None when absent or not a number)."""
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() and int(value) > 1 else None


# ---- stop requests --------------------------------------------------------------------------
_STOP: dict[str, Any] = {"signal": None, "installed": False}


def _record_stop(signum: int, _frame: object) -> None:
    _STOP["signal"] = signum


def install_stop_handler() -> None:
    """Record SIGTERM and SIGINT instead of dying (idempotent); read them with :func:`stop_signal`."""
    if _STOP["installed"]:
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _record_stop)
    _STOP["installed"] = True


def stop_signal() -> int | None:
    """The stop signal received so far (SIGTERM or SIGINT), or None."""
    return _STOP["signal"]


def quiet_worker() -> None:
    """For helper processes of a rank (DataLoader workers): ignore Ctrl-C, die with the rank.

    The rank decides when to stop; a terminal's SIGINT to a whole process group must not kill its
    helpers under it. SIGTERM keeps its default: it is how multiprocessing ends daemonic helpers
    when the rank exits (ignoring it would hang that exit). Stop requests reach the rank alone
    (``train.agent`` signals the rank's pid, never its process group).
    """
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()


def dataloader_worker_init(_worker_id: int) -> None:
    """``worker_init_fn`` for the trainer's DataLoaders (see :func:`quiet_worker`)."""
    quiet_worker()


# ---- our own processes ----------------------------------------------------------------------
def _has_proc() -> bool:
    return Path("/proc/self/stat").exists()


def _ps(*args: str) -> str:
    """``ps`` output, for systems without /proc (macOS); empty when ps is unavailable."""
    import subprocess

    try:
        return subprocess.run(["ps", *args], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc, or ``ps`` where there is none)."""
    if not _has_proc():
        rows = (line.split() for line in _ps("-A", "-o", "pid=,ppid=").splitlines())
        return [int(r[0]) for r in rows if len(r) == 2 and r[1] == str(pid) and r[0].isdigit()]
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(pid):
            out.append(int(entry.name))
    return out


def identity(pid: int) -> dict[str, Any] | None:
    """What identifies process ``pid`` beyond its number: start time (clock ticks after boot) and
    argv, from /proc (from ``ps`` where there is none); None when there is no such process."""
    if not _has_proc():
        out = _ps("-o", "stat=,lstart=,command=", "-p", str(pid)).strip()
        if not out or out[0] in "ZX":
            return None
        _state, rest = out.split(None, 1)
        return {"pid": pid, "start_time": rest[:24], "argv": rest[24:].split()}
    for _ in range(50):  # a process caught inside exec() shows an empty command line for a moment
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        if cmdline:
            break
        time.sleep(0.01)
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    # fields[0] is the state (field 3 of stat(5)); the start time is field 22.
    if fields[0] in ("Z", "X"):
        return None  # a zombie is not running anything
    argv = [a.decode("utf-8", "replace") for a in cmdline.split(b"\0") if a]
    return {"pid": pid, "start_time": int(fields[19]), "argv": argv}


def same_process(recorded: dict[str, Any] | None) -> bool:
    """Whether the process recorded by :func:`identity` is still the one running under its pid."""
    if not recorded or not isinstance(recorded.get("pid"), int) or recorded["pid"] <= 1:
        return False
    now = identity(recorded["pid"])
    return bool(
        now and now["start_time"] == recorded.get("start_time") and now["argv"] == recorded.get("argv")
    )


def pass_stop_on(agent: subprocess.Popen) -> None:
    """Pass a stop request (SIGTERM or SIGINT, whichever came) on to the ``agent`` as SIGTERM.

    The agent treats the two alike once it runs (the ranks save; a second request stops at once).
    The difference is before its handler exists: an agent still importing dies of a SIGTERM without
    a word, where a SIGINT there is a KeyboardInterrupt in the middle of ``site`` ("Fatal Python
    error: init_import_site" and a traceback). Used by ``workshop train`` and the detached runner.
    """
    with contextlib.suppress(ProcessLookupError):
        agent.send_signal(signal.SIGTERM)  # not once it is reaped: its pid may be another's by then


def signal_group(pids: Sequence[int], sig: int) -> None:
    """Send ``sig`` to each pid's process group when it leads one, else to the pid; never pid <= 1."""
    for pid in pids:
        if pid <= 1:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
