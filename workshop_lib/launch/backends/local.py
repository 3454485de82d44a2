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

from ...errors import UsageError, WorkshopError
from ...fsutil import atomic_write_text, open_fresh
from ...paths import RunDir
from ...train import lifeline
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
# The learning rate of a local continued pre-training of the imported base model.
CPT_LR: dict[str, Any] = {"lr": 5.0e-4, "min-lr": 5.0e-5}
# Flags carried over from the job: optimizer, schedule shape and architecture style, not size.
KEEP = (
    "lr-decay-style", "weight-decay", "clip-grad", "adam-beta1", "adam-beta2", "adam-eps",
    "init-method-std", "seed", "position-embedding-type", "normalization", "swiglu",
    "disable-bias-linear", "untie-embeddings-and-output-weights",
)  # fmt: skip


def read_dataset_info(run: RunDir) -> dict[str, Any]:
    """dataset.json through its one checked reader (a corrupt file is one UsageError line)."""
    from ...handover import read_dataset_info as read_checked

    return read_checked(run, required=("data_path", "tokenizer_model"))


# Flags of an imported base model that do not fix its shape: the local run keeps its own for these.
_BASE_SKIP = ("seq-length", "micro-batch-size", "global-batch-size", "tensor-model-parallel-size",
              "pipeline-model-parallel-size", "expert-model-parallel-size")  # fmt: skip


def base_model_args(run: RunDir) -> dict[str, Any] | None:
    """The imported base model's flags (``<run>/base/workshop_model.json``), in job-YAML form, or None.

    Continued pre-training must train exactly the model it starts from, so when notebook 03 has
    imported a base model these flags replace the tiny model's size (and the job's architecture flags).
    """
    from ...facts.megatron_flags import parse_argv

    meta = run.base_model_json
    if not meta.is_file():
        return None
    try:
        tokens = json.loads(meta.read_text(encoding="utf-8"))["megatron_flags"]
        if not isinstance(tokens, list):
            raise TypeError("megatron_flags is not a list of command-line tokens")
        # argv tokens ("--num-layers", "4", "--swiglu") -> job-YAML form, typed by the flag table
        flags = parse_argv(map(str, tokens))
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{meta}: not a model description ({exc}); re-run workshop import-hf") from None
    return {k: v for k, v in flags.items() if k not in _BASE_SKIP}


def local_args(
    job_args: Mapping[str, Any],
    dataset: Mapping[str, Any],
    run: RunDir,
    train_iters: int,
    base: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The job's flags scaled to the tiny local run (pure; a dict in job-YAML form).

    With ``base`` (:func:`base_model_args`), the run continues pre-training that model: its flags
    set the model, ``--pretrained-checkpoint`` points at ``<run>/base``, and the sequence fits the
    model's positions.
    """
    args: dict[str, Any] = {k: job_args[k] for k in KEEP if k in job_args}
    args.update(TINY)
    if base:
        for key in ("num-layers", "hidden-size", "num-attention-heads", "max-position-embeddings"):
            args.pop(key, None)
        for key in KEEP:
            if key in ("position-embedding-type", "normalization", "swiglu", "disable-bias-linear",
                       "untie-embeddings-and-output-weights", "init-method-std"):  # fmt: skip
                args.pop(key, None)
        args.update(base)
        args["seq-length"] = min(int(TINY["seq-length"]), int(base.get("max-position-embeddings") or 1 << 30))
        args["pretrained-checkpoint"] = str(run.base)
        # Continued pre-training runs below the base's own peak rate (3e-3 for the workshop's base):
        # a third of it learned the domain with the least forgetting (benchmarks/results/cpt.md).
        args.update(CPT_LR)
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
            "data-path": dataset.get("blend") or dataset["data_path"],
            "tokenizer-type": dataset.get("tokenizer_type", "HuggingFaceTokenizer"),
            "tokenizer-model": dataset["tokenizer_model"],
            "save": str(run.checkpoints),
            "save-interval": train_iters,
        }
    )
    return args


def _running(st: Mapping[str, Any] | None) -> bool:
    """Whether the runner named in the state file still runs: the same pid, start time and command.

    A pid alone is only a number: after the runner ends it can belong to anyone (pid 1 would mean
    every process to ``killpg``). The runner records its identity from /proc when it starts; a
    state file without it (older, or hand-written) names no process we may signal.
    """
    return bool(st) and lifeline.same_process(st.get("runner"))


class LocalBackend:
    name = "local"

    def __init__(self, run_dir: Path | None = None, train_iters: int | None = None, nproc: int = NPROC):
        self.run = RunDir.at(run_dir)
        self.train_iters = train_iters or DEFAULT_TRAIN_ITERS
        self.nproc = nproc

    # ---- the pieces, pure enough to test without running anything -------------------------------
    @property
    def state_file(self) -> Path:
        return self.run.local_job

    def command(self, job: Any) -> list[str]:
        """The argv: the train room's torchrun command with the scaled flags."""
        from ...train.launcher import torchrun_command

        flags = flag_tokens(
            local_args(
                job.args, read_dataset_info(self.run), self.run, self.train_iters, base_model_args(self.run)
            )
        )
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
        if st and st.get("state") == "Running" and _running(st):
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
        if phase == "Running" and not _running(st):
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
        copy = None
        if out and Path(out).resolve() != log.resolve():
            try:  # a fresh file: a link planted at --out is replaced, its target left alone
                copy = open_fresh(out, "w", encoding="utf-8")
            except (IsADirectoryError, NotADirectoryError, PermissionError, FileNotFoundError) as exc:
                raise UsageError(
                    f"--out {out}: cannot write there ({exc.__class__.__name__}); give a file in a writable directory"
                ) from None
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
        """Ask the run to stop (SIGTERM: the ranks save, then exit); with ``wait``, wait for it and
        kill what is left after ``timeout``. Only a process that is provably the recorded runner is
        signalled, and never pid 0 or 1."""
        st = self._state()
        name = getattr(job, "name", None)
        if not st:
            raise WorkshopError(f"no local run of {name} under {self.run.root}")
        pid = st.get("pid")
        stopped = False
        if st.get("state") in ("Pending", "Running") and _running(st) and isinstance(pid, int) and pid > 1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # the runner passes it on once: save, then stop
            stopped = True
            if wait:
                deadline = time.time() + timeout
                while _running(st) and time.time() < deadline:
                    time.sleep(0.1)
                if _running(st):  # still the same process: stop it; the trainer dies with it
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            st.update(state="Deleted", finished=time.time())
            atomic_write_text(self.state_file, json.dumps(st, indent=2))
        elif st.get("state") in ("Pending", "Running"):
            st.update(
                state="Failed", reason="the recorded process is gone or is not this run's; nothing signalled"
            )
            atomic_write_text(self.state_file, json.dumps(st, indent=2))
        if stopped:
            msg = f"stopped the local run of {name}" if wait else f"asked the local run of {name} to stop"
        else:
            msg = f"the local run of {name} was not running ({st.get('state')})"
        return {"name": name, "backend": self.name, "deleted": stopped, "message": msg}
