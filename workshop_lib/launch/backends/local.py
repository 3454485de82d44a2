"""The local backend: the job's trainer under torchrun on this machine, scaled to a tiny CPU model.

The job keeps its optimizer and architecture style flags; its size becomes a model that trains in
seconds on two CPU processes (2 layers, hidden 64, 4 heads, sequence 128, world size 2 with TP<=2),
reading the dataset notebook 01 wrote (``<run>/data/dataset.json``) and saving to
``<run>/train/checkpoints``. The run is detached (``local_runner`` holds it), so ``workshop apply``
returns at once and ``status``/``logs``/``delete`` find it again from ``<run>/train/local_job.json``.
The trainer's output goes to ``<run>/train/train.log``, which ``logs`` streams.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import WorkshopError
from ...fsutil import atomic_write_text
from ...paths import DEFAULT_RUN_DIR, RunDir
from ..jobspec import flag_tokens
from .base import LineSink

NPROC = 2
DEFAULT_TRAIN_ITERS = 30
# The tiny model every local run trains, whatever size the job asks for.
TINY: dict[str, Any] = {
    "num-layers": 2,
    "hidden-size": 64,
    "num-attention-heads": 4,
    "seq-length": 128,
    "max-position-embeddings": 128,
    "micro-batch-size": 2,
    "global-batch-size": 8,
    "lr": 1.0e-3,  # a tiny model learns at a larger rate than a 7B one
    "min-lr": 1.0e-4,
    "pipeline-model-parallel-size": 1,
    "transformer-impl": "local",
}
# Flags carried over from the job: optimizer, schedule shape and architecture style, not size.
KEEP = (
    "lr-decay-style", "weight-decay", "clip-grad", "adam-beta1", "adam-beta2", "adam-eps",
    "init-method-std", "seed", "position-embedding-type", "normalization", "swiglu",
    "disable-bias-linear", "untie-embeddings-and-output-weights",
)  # fmt: skip


def read_dataset_info(run: RunDir) -> dict[str, Any]:
    """dataset.json through its owner's checked reader (a corrupt file is one UsageError line)."""
    from ...data.dataset_info import read_dataset_info as read_checked

    return read_checked(run, required=("data_path", "tokenizer_model"))


def local_args(
    job_args: Mapping[str, Any], dataset: Mapping[str, Any], run: RunDir, train_iters: int
) -> dict[str, Any]:
    """The job's flags scaled to the tiny local run (pure; a dict in job-YAML form)."""
    args: dict[str, Any] = {k: job_args[k] for k in KEEP if k in job_args}
    args.update(TINY)
    tp = 2 if int(job_args.get("tensor-model-parallel-size", 1) or 1) >= 2 else 1
    args["tensor-model-parallel-size"] = tp
    if tp > 1 and job_args.get("sequence-parallel"):
        args["sequence-parallel"] = True
    args.update(
        {
            "train-iters": train_iters,
            "lr-decay-iters": train_iters,
            "lr-warmup-iters": max(1, train_iters // 10),
            "log-interval": 1,
            "eval-interval": max(1, train_iters // 2),
            "eval-iters": 2,
            "split": "90,10,0",
            "data-path": dataset["data_path"],
            "tokenizer-type": dataset.get("tokenizer_type", "HuggingFaceTokenizer"),
            "tokenizer-model": dataset["tokenizer_model"],
            "save": str(run.checkpoints),
            "save-interval": train_iters,
        }
    )
    return args


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this very process counts as gone.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


class LocalBackend:
    name = "local"

    def __init__(self, run_dir: Path | None = None, train_iters: int | None = None, nproc: int = NPROC):
        self.run = RunDir(Path(run_dir) if run_dir else DEFAULT_RUN_DIR)
        self.train_iters = train_iters or DEFAULT_TRAIN_ITERS
        self.nproc = nproc

    # ---- the pieces, pure enough to test without running anything -------------------------------
    @property
    def state_file(self) -> Path:
        return self.run.train / "local_job.json"

    def command(self, job: Any) -> list[str]:
        """The argv: the train room's torchrun command with the scaled flags."""
        from ...train.launcher import torchrun_command

        flags = flag_tokens(local_args(job.args, read_dataset_info(self.run), self.run, self.train_iters))
        return torchrun_command(self.nproc, flags)

    def environment(self) -> dict[str, str]:
        """The CPU/gloo environment of the train room (thread caps, unbuffered output)."""
        from ...train.launcher import local_env

        return local_env(os.environ, nproc_per_node=self.nproc)

    def _state(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    # ---- the interface ---------------------------------------------------------------------------
    def submit(self, job: Any, *, replace: bool = False) -> dict[str, Any]:
        st = self._state()
        if st and st.get("state") == "Running" and _alive(st["pid"]):
            if not replace:
                raise WorkshopError(
                    f"a local run is already going (pid {st['pid']}); wait for it, `workshop delete`, or pass --replace"
                )
            self.delete(job, wait=True)
        cmd = self.command(job)
        self.run.train.mkdir(parents=True, exist_ok=True)
        state = {
            "name": job.name,
            "state": "Pending",
            "command": cmd,
            "log": str(self.run.train_log),
            "started": time.time(),
        }
        atomic_write_text(self.state_file, json.dumps(state, indent=2))
        proc = subprocess.Popen(
            [sys.executable, "-m", "workshop_lib.launch.backends.local_runner", str(self.state_file)],
            env=self.environment(),
            start_new_session=True,  # its own process group: delete stops torchrun and every rank
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._proc = proc  # keep the handle: the runner is reaped (not a zombie) while this process lives
        deadline = time.time() + 10
        while (
            (self._state() or {}).get("state") == "Pending" and time.time() < deadline and proc.poll() is None
        ):
            time.sleep(0.05)
        return {
            "name": job.name,
            "namespace": getattr(job, "namespace", "default"),
            "backend": self.name,
            "pid": proc.pid,
            "command": cmd,
            "log": str(self.run.train_log),
            "message": f"started the local run of {job.name} ({self.nproc} processes, {self.train_iters} iterations); "
            f"logs: {self.run.train_log}",
        }

    def status(self, job: Any) -> dict[str, Any]:
        st = self._state() or {}
        phase = st.get("state", "NotFound")
        if phase == "Running" and not _alive(st["pid"]):
            phase, st["reason"] = "Failed", "the local run stopped without recording how it ended"
        elif phase == "Pending" and time.time() - st.get("started", 0) > 60:
            phase, st["reason"] = "Failed", f"the local runner never started; see {self.state_file}"
        pods = []
        if st:
            pods = [
                {
                    "name": "local-0",
                    "phase": phase,
                    "restarts": 0,
                    "reason": st.get("reason"),
                    "node": os.uname().nodename,
                }
            ]
        return {
            "name": getattr(job, "name", st.get("name")),
            "namespace": getattr(job, "namespace", "default"),
            "backend": self.name,
            "phase": phase,
            "returncode": st.get("returncode"),
            "conditions": [],
            "pods": pods,
            "events": [],
            "log": st.get("log", str(self.run.train_log)),
        }

    def logs(
        self,
        job: Any,
        *,
        follow: bool = False,
        all_ranks: bool = False,
        out: Path | None = None,
        sink: LineSink | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        log = self.run.train_log
        copy = open(out, "w", encoding="utf-8") if out and Path(out).resolve() != log.resolve() else None  # noqa: SIM115
        deadline = time.time() + timeout if timeout else None
        n = 0
        try:
            while follow and not log.exists() and self.status(job)["phase"] in ("Pending", "Running"):
                time.sleep(0.1)
            if not log.exists():
                raise WorkshopError(f"{log}: no log yet; start the run with `workshop apply` first")
            with open(log, encoding="utf-8", errors="replace") as fh:
                held: list[str] = []  # an unterminated line's pieces, joined once (linear, not quadratic)
                while True:
                    chunk = fh.readline()
                    if chunk:
                        held.append(chunk)
                        if chunk.endswith("\n"):
                            line = "".join(held).rstrip("\n")
                            held = []
                            n += 1
                            if sink:
                                sink(line)
                            if copy:
                                copy.write(line + "\n")
                        continue
                    if not follow or (deadline and time.time() > deadline):
                        break
                    if self.status(job)["phase"] not in ("Pending", "Running"):
                        rest = fh.read()
                        for line in ("".join(held) + rest).splitlines():
                            n += 1
                            if sink:
                                sink(line)
                            if copy:
                                copy.write(line + "\n")
                        break
                    time.sleep(0.1)
        finally:
            if copy:
                copy.close()
        return {"out": str(out or log), "lines": n, "pods": ["local-0"], "phase": self.status(job)["phase"]}

    def delete(self, job: Any, *, wait: bool = False, timeout: float = 300.0) -> dict[str, Any]:
        st = self._state()
        name = getattr(job, "name", None)
        if not st:
            raise WorkshopError(f"no local run of {name} under {self.run.root}")
        pid = st.get("pid")
        stopped = False
        if st.get("state") in ("Pending", "Running") and pid and _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGTERM)
            stopped = True
            deadline = time.time() + (timeout if wait else 5)
            while _alive(pid) and time.time() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            st.update(state="Deleted", finished=time.time())
            atomic_write_text(self.state_file, json.dumps(st, indent=2))
        msg = (
            f"stopped the local run of {name}"
            if stopped
            else f"the local run of {name} was not running ({st.get('state')})"
        )
        return {"name": name, "backend": self.name, "deleted": stopped, "message": msg}
