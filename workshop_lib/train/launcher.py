"""Launching the trainer with torchrun: the command line, the environment, and a supervising runner.

``torchrun_command`` and ``local_env`` are what the launch room's local backend uses;
:func:`run_local` is ``workshop train``. It checks everything it can before a process starts
(flags, ``--save``/``--load`` folders, whose checkpoint ``--load`` would unpickle, whether a resume
matches the checkpoint's schedule): each is one line and exit 2 here instead of a traceback per
rank later. It then runs torchrun through ``train.agent`` (same flags; a stop request reaches the
ranks as "save, then stop") in its own process group, so a Ctrl-C at the terminal reaches only this
process, which passes exactly one request on; a second Ctrl-C stops at once. The ranks' output is
streamed through (and the last lines kept, bounded), so a failed run ends with one
``diagnosis: ...`` line from the monitor's failure table. The agent and the ranks die with this
process (``train.lifeline``), so a ``kill -9`` leaves nothing training.

Nothing here imports torch at module level: the checks and the trainer processes do.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO

from ..errors import UsageError
from . import lifeline

TRAINER_MODULE = "workshop_lib.train"
AGENT_MODULE = "workshop_lib.train.agent"  # torchrun's flags, torchrun's agent, graceful stops
TAIL_LINES = 2000  # the ranks' last lines kept for the diagnosis (bounded memory)
MAX_LINE_BYTES = 64 * 1024  # a longer "line" is cut into pieces of this size


def free_port() -> int:
    """A TCP port that is free on this host now (for a single-node rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_topology(
    nproc_per_node: int, nnodes: int = 1, node_rank: int = 0, master_port: int | None = None
) -> None:
    """One UsageError naming the first bad launch option.

    Runs before the trainer flags are checked: those divide by the world size, so a zero here
    would surface as a ZeroDivisionError traceback instead of a usage line.
    """
    if nproc_per_node < 1:
        raise UsageError(
            f"--nproc-per-node must be >= 1 (got {nproc_per_node}): one process per GPU or CPU rank"
        )
    if nnodes < 1:
        raise UsageError(f"--nnodes must be >= 1 (got {nnodes})")
    if not 0 <= node_rank < nnodes:
        raise UsageError(f"--node-rank must be in 0..{nnodes - 1} for --nnodes {nnodes} (got {node_rank})")
    if master_port is not None and not 1 <= master_port <= 65535:
        raise UsageError(f"--master-port must be a TCP port, 1..65535 (got {master_port})")


def check_gpus(nproc_per_node: int) -> None:
    """On a GPU machine, one UsageError when ``--nproc-per-node`` is more than the GPUs it shows.

    Asked here, before any rank starts, rather than in the ranks (train/device.py asks there too, for
    pods): a rank without a GPU fails at once, but the others then wait 30 s in the rendezvous.
    On a machine without CUDA the ranks run on the CPU (gloo), as many as asked for.
    """
    try:
        import torch
    except ImportError:  # the light install: the ranks will say what is missing
        return
    if torch.cuda.is_available():
        from .device import check_local_gpus

        check_local_gpus(nproc_per_node, torch.cuda.device_count())


def torchrun_command(
    nproc_per_node: int,
    flags: Sequence[str],
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
) -> list[str]:
    """``python -m workshop_lib.train.agent ... -m workshop_lib.train FLAGS`` as an argv list.

    ``train.agent`` takes torchrun's flags and runs torchrun's agent; it differs only in how a
    SIGTERM or SIGINT reaches the ranks (see its docstring).
    """
    check_topology(nproc_per_node, nnodes, node_rank, master_port)
    port = master_port if master_port is not None else free_port()
    return [
        sys.executable,
        "-m",
        AGENT_MODULE,
        f"--nproc-per-node={nproc_per_node}",
        f"--nnodes={nnodes}",
        f"--node-rank={node_rank}",
        f"--master-addr={master_addr}",
        f"--master-port={port}",
        "-m",
        TRAINER_MODULE,
        *flags,
    ]


def local_env(base: Mapping[str, str] | None = None, *, nproc_per_node: int = 2) -> dict[str, str]:
    """The environment for a CPU (gloo) run: one share of the cores per process, no JIT compile.

    Values already in ``base`` (default: this process's environment) are kept, so a user's
    ``OMP_NUM_THREADS`` wins.
    """
    env = dict(os.environ if base is None else base)
    threads = max(1, (os.cpu_count() or 1) // max(1, nproc_per_node))
    env.setdefault("OMP_NUM_THREADS", str(threads))
    env.setdefault("MKL_NUM_THREADS", env["OMP_NUM_THREADS"])
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("TORCHDYNAMO_DISABLE", "1")  # megatron-core's torch.compile'd helpers run eagerly on CPU
    env.setdefault("PYTHONUNBUFFERED", "1")  # log lines appear as they are printed
    env.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "1")  # what Megatron wants on GPUs; harmless on CPU
    return env


def _warn(message: str) -> None:
    print(f"workshop train: warning: {message}", file=sys.stderr, flush=True)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_save_dir(save: str) -> None:
    """``--save``: a directory we can write, or one we can create (one UsageError otherwise)."""
    p = Path(save)
    if p.exists() and not p.is_dir():
        raise UsageError(
            f"--save {save}: exists and is not a directory; give a directory for the checkpoints"
        )
    base = _nearest_existing(p.absolute())
    if not base.is_dir():
        raise UsageError(f"--save {save}: {base} is a file, so the folder cannot be made; give another path")
    if not os.access(base, os.W_OK | os.X_OK):
        what = "is not writable" if base == p.absolute() else f"cannot be created ({base} is not writable)"
        raise UsageError(f"--save {save}: {what} by this user; choose a directory you can write")


def check_load_dir(load: str, save: str | None) -> None:
    """``--load``: an existing directory we can read, with a consistent tracker when it has one.

    A folder without ``latest_checkpointed_iteration.txt`` is fine (the run starts from scratch, as
    Megatron-LM does), and so is a missing ``--load`` that is also the ``--save`` folder (the
    auto-resume idiom: the first run creates it). Loading unpickles files, so they must be ours
    (``train.trust``).
    """
    from .trust import TRACKER, check_checkpoint_trusted

    p = Path(load)
    if not p.exists():
        if save and Path(save).absolute() == p.absolute():
            return
        raise UsageError(
            f"--load {load}: no such directory; give the --save folder of an earlier run "
            f"(the one holding {TRACKER}), or leave --load out to start from scratch"
        )
    if not p.is_dir():
        raise UsageError(f"--load {load}: is not a directory; give the --save folder of an earlier run")
    if not os.access(p, os.R_OK | os.X_OK):
        raise UsageError(f"--load {load}: is not readable by this user")
    check_checkpoint_trusted(load)
    tracker = p / TRACKER
    if tracker.is_file():
        text = tracker.read_text(errors="replace").strip()
        if text != "release" and not text.isdigit():
            raise UsageError(f"{tracker}: expected an iteration number, found {text[:40]!r}")
        if text.isdigit() and not (p / f"iter_{int(text):07d}").is_dir():
            raise UsageError(
                f"{tracker} names iteration {int(text)} but {p / f'iter_{int(text):07d}'} is missing; "
                "point the tracker at an iteration that exists"
            )


def check_resume_schedule(planned: argparse.Namespace) -> None:
    """A resume whose flags give another learning-rate/weight-decay schedule than the checkpoint's.

    megatron-core asserts in every rank when they differ (a different ``--train-iters`` changes the
    weight-decay horizon); this replays its check on the checkpoint's saved scheduler state, with a
    stand-in optimizer, so the answer is one line naming the two ways out.
    """
    if not planned.load or planned.no_load_optim or planned.finetune:
        return
    if planned.override_opt_param_scheduler or planned.use_checkpoint_opt_param_scheduler:
        return
    from .trust import TRACKER

    tracker = Path(planned.load) / TRACKER
    if not tracker.is_file() or not tracker.read_text().strip().isdigit():
        return
    ckpt = Path(planned.load) / f"iter_{int(tracker.read_text().strip()):07d}"
    import warnings

    from .log import ignore_known_warnings

    with warnings.catch_warnings():  # megatron-core: Apex/TE missing is expected on CPU (as in __main__)
        ignore_known_warnings()
        import torch
        from megatron.core import dist_checkpointing
        from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler

        from .trainer import scheduler_kwargs, scheduler_mismatch

    try:
        saved = dist_checkpointing.load_common_state_dict(str(ckpt)).get("opt_param_scheduler")
    except Exception:  # noqa: BLE001 - an unreadable checkpoint is the rank's to report in full
        return
    if not saved:
        return
    stand_in = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=planned.lr or 0.0)
    scheduler = OptimizerParamScheduler(stand_in, **scheduler_kwargs(planned))
    try:
        scheduler.load_state_dict(saved)
    except AssertionError as exc:
        raise scheduler_mismatch(exc, planned.load) or UsageError(
            f"--load {planned.load}: the checkpoint's schedule does not match these flags ({exc})"
        ) from None


def check_flags(flags: Sequence[str], world_size: int, *, data: bool = True) -> argparse.Namespace:
    """Parse and validate the trainer flags for ``world_size`` ranks (raises UsageError).

    With ``data`` it also reads the tokenizer and the dataset index and checks every split can
    deliver samples, checks the ``--save``/``--load`` folders and, for a resume, the checkpoint's
    schedule, so each of these is one line here instead of an error in every rank.
    """
    from . import arguments

    args = arguments.parse_args(flags)  # turns --sequence-parallel off at TP=1, as Megatron-LM does
    if "--sequence-parallel" in flags and args.tensor_model_parallel_size == 1:
        _warn("--sequence-parallel needs --tensor-model-parallel-size > 1; turned off (as Megatron-LM does)")
    planned = copy.copy(args)
    arguments.finalize_parallel(planned, world_size)
    if args.save:
        check_save_dir(args.save)
    if args.load:
        check_load_dir(args.load, args.save)
    if data:
        from .tokenizer import build_tokenizer

        build_tokenizer(planned)
    if data and not args.mock_data:
        from .data import check_split_plan

        check_split_plan(planned)
    if data and args.load:
        check_resume_schedule(planned)
    return args


# ---- the verdict of a failed run ------------------------------------------------------------
_ERROR_LIKE = re.compile(r"\b\w*(?:Error|Exception)\b:|\berror:|\bFAILED\b|\bfatal\b", re.IGNORECASE)


def diagnosis_line(lines: Iterable[str]) -> str:
    """``diagnosis: <label>: <line> -> fix: <fix>`` for a failed run's output.

    The one place ``workshop train`` asks the monitor room for a verdict: today the first finding
    of ``monitor.diagnose.diagnose_lines`` (``findings[0]`` is the primary cause); an output the
    failure table does not know gives the first error-like line.
    """
    from ..monitor.diagnose import diagnose_lines

    lines = list(lines)
    findings = diagnose_lines(lines)
    if findings:
        f = findings[0]
        return f"diagnosis: {f.label}: {f.line.strip()} -> fix: {f.fix}"
    first = next((ln.strip() for ln in lines if _ERROR_LIKE.search(ln) and "Traceback" not in ln), None)
    if first is None:
        return "diagnosis: unrecognised: no error line in the output -> fix: read the output above"
    return (
        f"diagnosis: unrecognised: {first[:400]} -> fix: start from that line; "
        "`workshop monitor diagnose LOG` reads a saved log"
    )


def _pump(src: IO[bytes], dst: IO, tail: deque[str]) -> None:
    """Copy ``src`` to ``dst`` line by line, keeping the last lines in ``tail``; drain to the end."""
    out = getattr(dst, "buffer", None)
    for chunk in iter(lambda: src.readline(MAX_LINE_BYTES), b""):
        try:
            if out is not None:
                out.write(chunk)
                out.flush()
            else:
                dst.write(chunk.decode("utf-8", "replace"))
                dst.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # our own output is gone: keep reading so the ranks never block on a full pipe
        tail.append(chunk.decode("utf-8", "replace").rstrip("\r\n"))
    src.close()


_SAVED = re.compile(r"successfully saved checkpoint from iteration\s+(\d+) to (\S+)")


def supervise(cmd: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the agent in its own process group, pass stop requests on (as SIGTERM), end with one verdict line."""
    received: list[int] = []
    proc: subprocess.Popen | None = None

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        if proc is None:
            raise KeyboardInterrupt  # nothing started yet: the CLI's "interrupted", exit 130
        lifeline.pass_stop_on(proc)

    tail: deque[str] = deque(maxlen=TAIL_LINES)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        proc = subprocess.Popen(
            list(cmd),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,  # a terminal's Ctrl-C reaches this process only; it passes one request on
        )
        pumps = [
            threading.Thread(target=_pump, args=(proc.stdout, sys.stdout, tail), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, sys.stderr, tail), daemon=True),
        ]
        for t in pumps:
            t.start()
        rc = proc.wait()
        for t in pumps:
            t.join(timeout=10)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return _verdict(rc, received, list(tail))


def _verdict(rc: int, received: list[int], tail: list[str]) -> int:
    """The exit status, and the one line that ends ``workshop train`` when it did not just finish."""
    if received:
        sig = received[0]
        name = signal.Signals(sig).name
        if rc == 0:
            saved = [m for m in map(_SAVED.search, tail) if m]
            what = (
                f"saved iteration {int(saved[-1].group(1))} to {saved[-1].group(2)} and exited"
                if saved
                else "exited (nothing new to save)"
            )
            print(f"workshop train: stopped by {name}: the ranks {what}", file=sys.stderr, flush=True)
            return 130 if sig == signal.SIGINT else 0
        print(f"workshop train: interrupted by {name}", file=sys.stderr, flush=True)
        return 130 if sig == signal.SIGINT else 128 + sig
    if rc == 0:
        return 0
    if rc == 2:  # the ranks refused their input: repeat their one line last
        usage = next((ln for ln in tail if "workshop train: error:" in ln), None)
        if usage:
            print(usage[usage.index("workshop train: error:") :], file=sys.stderr, flush=True)
            return 2
    print(diagnosis_line(tail), file=sys.stderr, flush=True)
    return 2 if rc == 2 else 1


def run_local(
    nproc_per_node: int,
    flags: Sequence[str],
    *,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    env: Mapping[str, str] | None = None,
    trust_checkpoint: bool = False,
) -> int:
    """``workshop train``: check, run the trainer under torchrun in the foreground, return the status."""
    from .trust import TRUST_ENV

    check_topology(nproc_per_node, nnodes, node_rank, master_port)
    if trust_checkpoint:
        os.environ[TRUST_ENV] = "1"  # the launcher's own checks and the ranks' (inherited)
    check_flags(flags, nproc_per_node * nnodes)
    check_gpus(nproc_per_node)  # after the flags: a bad flag stays a line without importing torch
    cmd = torchrun_command(
        nproc_per_node,
        flags,
        nnodes=nnodes,
        node_rank=node_rank,
        master_addr=master_addr,
        master_port=master_port,
    )
    child_env = local_env(env, nproc_per_node=nproc_per_node)
    child_env[lifeline.PARENT_ENV] = str(os.getpid())  # the agent dies with this process
    if trust_checkpoint:
        child_env[TRUST_ENV] = "1"
    return supervise(cmd, child_env)
