"""Break the trainer on a real GPU on purpose, keep what it prints, and ask the diagnoser about it.

``python -m benchmarks.gpu_faults --out DIR`` (on a machine with one CUDA GPU or more) runs each
scenario below as real processes (``workshop train`` or torchrun with NCCL), in parallel, with a
time limit each, writes every log to DIR and ``DIR/results.json`` with each run's exit status,
seconds, and ``workshop monitor diagnose``'s primary label and evidence line against the label
expected. The CPU fault-injection suite (``tests/test_fault_injection.py``) cannot reach these:
CUDA's and NCCL's own wording for a rank without a GPU, two ranks on one GPU, a device-side
assert, NCCL's bootstrap and network-plugin errors, NCCL's INFO output of a healthy run, fp16's
dynamic loss scale (it lives on the GPU), a process that sees no GPU at all, and a SIGTERM or
Ctrl-C (once, twice, or while a rank sets up) that must leave a saved checkpoint or nothing, one
line, and no process on the GPU.

The logs it brought back are kept as fixtures (``tests/fixtures/gpu/faults/``) and held by
``tests/test_gpu_fault_logs.py``; the table is ``benchmarks/results/gpu_faults.md``. Without CUDA
it says so and exits 0. ``--child`` is the torchrun payload of the raw-torch scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.bench_gpu import REPO, TOKENIZER, cli, prep_data

TINY = [
    "--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--ffn-hidden-size", "176",
    "--seq-length", "128", "--max-position-embeddings", "128", "--micro-batch-size", "2",
    "--global-batch-size", "4", "--lr", "1e-3", "--min-lr", "1e-4", "--lr-warmup-iters", "1",
    "--split", "100,0,0", "--log-interval", "1", "--eval-iters", "0", "--seed", "1234", "--bf16",
]  # fmt: skip
HF_TOKENIZER = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(TOKENIZER)]


# A scenario's command, from the data prefix and the GPUs of this machine.
Command = Callable[[str, int], list[str]]


@dataclass
class Scenario:
    name: str
    expect: str  # the primary label the diagnoser should give ("healthy" for none)
    how: str  # what is broken, in words (the results table)
    command: Command
    env: dict[str, str] = field(default_factory=dict)
    stop_after_iteration: int | None = None  # signal the launcher once this iteration is logged
    stop_at_line: str | None = None  # ... or at the first line this pattern finds, whatever iteration
    stop_signal: int = signal.SIGTERM
    stop_twice: bool = False  # a second signal right after the first: stop at once, without saving
    save: bool = False

    @property
    def is_stop(self) -> bool:
        """A run stopped by a signal on purpose (it runs alone: see main)."""
        return self.stop_after_iteration is not None or self.stop_at_line is not None


def train(*flags: str, one_too_many: bool = False, fp16: bool = False) -> Command:
    """``workshop train`` on one GPU, or on one process more than the machine has GPUs; ``fp16``
    swaps TINY's bf16 for fp16 with Megatron's dynamic loss scale (CUDA only: its scaler lives there)."""
    base = [("--fp16" if f == "--bf16" else f) for f in TINY] if fp16 else TINY
    return lambda data, gpus: cli(
        "train", "--nproc-per-node", str(gpus + 1 if one_too_many else 1), "--", *base, "--data-path",
        data, *flags,
    )  # fmt: skip


def torchrun(*target: str, ranks: int | None = None) -> Command:
    """torchrun of ``target`` (``-m module args``) with ``ranks`` processes (default: one more than
    the GPUs), as a pod's command runs it."""
    return lambda data, gpus: [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
        str(ranks or gpus + 1), *(a.replace("{data}", data) for a in target),
    ]  # fmt: skip


CHILDREN = ("set-device", "duplicate-gpu")  # the payloads of child() below


def own_script(kind: str, ranks: int | None = None) -> Command:
    """torchrun of this module's ``--child kind``: a script of one's own doing ``kind`` wrongly."""
    return torchrun("-m", "benchmarks.gpu_faults", "--child", kind, ranks=ranks)


HF_FOUR = (*HF_TOKENIZER, "--train-iters", "4")
TRAINER_IN_POD = ("-m", "workshop_lib.train", *TINY, "--data-path", "{data}", *HF_FOUR)
ENDLESS = (*HF_TOKENIZER, "--train-iters", "100000", "--lr-decay-iters", "1000")

SCENARIOS = [
    Scenario("nproc_exceeds_gpus", "gpu_assignment_invalid",
             "`workshop train --nproc-per-node N+1` on a node with N GPUs", train(*HF_FOUR, one_too_many=True)),
    Scenario("nproc_exceeds_gpus_in_pod", "gpu_assignment_invalid",
             "torchrun N+1 trainer ranks on N GPUs, as in a pod", torchrun(*TRAINER_IN_POD)),
    Scenario("raw_set_device_past_last_gpu", "gpu_assignment_invalid",
             "torchrun N+1 processes, each `torch.cuda.set_device(LOCAL_RANK)`",
             own_script("set-device")),
    Scenario("raw_duplicate_gpu", "gpu_assignment_invalid",
             "torchrun 2 processes both on GPU 0, an NCCL all-reduce",
             own_script("duplicate-gpu", ranks=2),
             env={"NCCL_DEBUG": "WARN"}),
    Scenario("vocab_smaller_than_data", "vocab_mismatch",
             "NullTokenizer --vocab-size 1000 on data with 8,192 token ids (a device-side assert)",
             train("--tokenizer-type", "NullTokenizer", "--vocab-size", "1000", "--train-iters", "4")),
    Scenario("socket_ifname_missing", "socket_ifname_bad", "NCCL_SOCKET_IFNAME=nosuch0",
             train(*HF_FOUR), env={"NCCL_SOCKET_IFNAME": "nosuch0"}),
    Scenario("net_plugin_missing_warn", "nccl_net_unavailable",
             "NCCL_NET='AWS Libfabric' without the plugin, NCCL_DEBUG=WARN", train(*HF_FOUR),
             env={"NCCL_NET": "AWS Libfabric", "NCCL_DEBUG": "WARN"}),
    Scenario("net_ib_forced", "nccl_net_unavailable", "NCCL_NET=IB on a node without InfiniBand",
             train(*HF_FOUR), env={"NCCL_NET": "IB", "NCCL_DEBUG": "WARN"}),
    Scenario("net_plugin_missing", "nccl_net_unavailable",
             "NCCL_NET='AWS Libfabric' where the aws-ofi-nccl plugin is not installed",
             train(*HF_FOUR), env={"NCCL_NET": "AWS Libfabric"}),
    Scenario("healthy_nccl_info", "healthy", "a healthy run with NCCL_DEBUG=INFO",
             train(*HF_TOKENIZER, "--train-iters", "6"), env={"NCCL_DEBUG": "INFO"}),
    # Added in the second lease (2026-11-27); expectations written before the first run.
    Scenario("fp16_loss_scale_warmup", "healthy",
             "fp16 from Megatron's initial loss scale 2^32: the first iterations are skipped, then it trains",
             train(*HF_TOKENIZER, "--train-iters", "40", fp16=True)),
    # Written as skipped_iterations before the first call, where the run trained on to the end and
    # the diagnoser named nan_loss from the loss scale collapsing (the cause, not its symptom); the
    # trainer now stops it at its first NaN loss: see benchmarks/results/gpu_faults.md.
    Scenario("fp16_diverged", "nan_loss",
             "fp16 with --lr 1e5 --clip-grad 0: after its first update every step overflows and is skipped",
             train(*HF_TOKENIZER, "--train-iters", "40", "--lr", "1e5", "--clip-grad", "0", fp16=True)),
    Scenario("no_gpu_visible", "gpu_assignment_invalid",
             "CUDA_VISIBLE_DEVICES='' (a pod without its GPU), the script sets its device",
             own_script("set-device", ranks=1),
             env={"CUDA_VISIBLE_DEVICES": ""}),
    Scenario("healthy_debug_detail", "healthy",
             "a healthy run with TORCH_DISTRIBUTED_DEBUG=DETAIL, TORCH_CPP_LOG_LEVEL=INFO, NCCL_DEBUG=INFO, all subsystems",
             train(*HF_TOKENIZER, "--train-iters", "6"),
             env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO", "NCCL_DEBUG": "INFO",
                  "NCCL_DEBUG_SUBSYS": "ALL"}),
    Scenario("sigterm_mid_run", "healthy", "SIGTERM to `workshop train` after iteration 3, with --save",
             train(*ENDLESS), stop_after_iteration=3, save=True),
    Scenario("sigint_mid_run", "healthy", "SIGINT (Ctrl-C) to `workshop train` after iteration 3, with --save",
             train(*ENDLESS), stop_after_iteration=3, stop_signal=signal.SIGINT, save=True),
    Scenario("sigterm_twice", "healthy", "two SIGTERMs half a second apart (stop at once, no save)",
             train(*ENDLESS), stop_after_iteration=3, stop_twice=True, save=True),
    # Added in the third lease, after `workshop train` began passing a stop request on to its agent
    # as SIGTERM (lifeline.pass_stop_on): a Ctrl-C pressed twice, and one while the rank is still
    # setting up (its process group and NCCL up, the model not yet built), must each end in one
    # line with exit 130, no traceback, nothing claimed saved and nothing left on the GPU.
    Scenario("sigint_twice", "healthy", "two SIGINTs (Ctrl-C pressed twice) half a second apart",
             train(*ENDLESS), stop_after_iteration=3, stop_signal=signal.SIGINT, stop_twice=True, save=True),
    Scenario("sigint_during_rank_startup", "healthy",
             "SIGINT (Ctrl-C) as the rank prints its world size, before the model is built",
             train(*ENDLESS), stop_at_line=r"^> world size", stop_signal=signal.SIGINT, save=True),
]  # fmt: skip


def gpu_processes() -> list[str]:
    """PIDs nvidia-smi lists as compute processes on any GPU (empty when none is left)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"nvidia-smi: {exc}"]
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]


def run(s: Scenario, data: str, out: Path, gpus: int, timeout: float) -> dict[str, Any]:
    log = out / f"{s.name}.log"
    cmd = s.command(data, gpus)
    ckpt = out / f"{s.name}_ckpt"
    if s.save:
        cmd += ["--save", str(ckpt), "--save-interval", "100000"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **s.env}
    start = time.perf_counter()
    result: dict[str, Any] = {"how": s.how, "expect": s.expect, "env": s.env}
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=REPO, env=env, start_new_session=True)  # fmt: skip
        assert proc.stdout is not None
        signalled = False
        for line in proc.stdout:
            fh.write(line)
            m = re.search(r"iteration +(\d+)/", line)
            due = (s.stop_at_line and re.search(s.stop_at_line, line)) or (
                s.stop_after_iteration and m and int(m.group(1)) >= s.stop_after_iteration
            )
            if due and not signalled:
                proc.send_signal(s.stop_signal)  # SIGTERM: what the kubelet sends a pod it stops
                if s.stop_twice:
                    time.sleep(0.5)
                    proc.send_signal(s.stop_signal)
                signalled = True
                result["signalled_at_seconds"] = round(time.perf_counter() - start, 1)
            if time.perf_counter() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                result["timed_out"] = True
                break
        result["exit"] = proc.wait()
    result["seconds"] = round(time.perf_counter() - start, 1)
    if s.save:
        latest = ckpt / "latest_checkpointed_iteration.txt"
        result["saved_iteration"] = latest.read_text().strip() if latest.exists() else None
        result["checkpoint_entries"] = sorted(p.name for p in ckpt.iterdir()) if ckpt.is_dir() else []
        time.sleep(2)  # the driver lists a process until its CUDA context is gone
        result["gpu_processes_after"] = gpu_processes()
        text = log.read_text(errors="replace")
        result["tracebacks"] = text.count("Traceback (most recent call last)")
        result["last_line"] = text.rstrip().splitlines()[-1][:300] if text.strip() else ""
    from workshop_lib.monitor.diagnose import verdict

    v = verdict(log)
    result["diagnosis"] = v.primary or ("unknown" if v.unrecognised else "healthy")
    result["evidence"] = v.findings[0].line if v.primary else None
    result["unrecognised"] = [u["line"][:300] for u in v.unrecognised[:3]]
    result["ok"] = result["diagnosis"] == s.expect
    return result


def child(kind: str) -> int:
    """The torchrun payload: what a script of one's own does with LOCAL_RANK, wrongly."""
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    if kind == "set-device":
        torch.cuda.set_device(local)  # rank N+1 of N GPUs: CUDA's invalid device ordinal
        torch.zeros(1, device="cuda").add_(1)
        return 0
    device = torch.device("cuda", 0)  # a hard-coded device: every rank on GPU 0
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    t = torch.ones(1, device=device)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/gpu_faults", help="folder for logs and results.json")
    ap.add_argument("--only", nargs="*", help="run only these scenarios")
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds for each scenario")
    ap.add_argument("--child", choices=CHILDREN, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    import torch

    if not torch.cuda.is_available():
        print("gpu_faults: no CUDA device here; skipped (run it on a GPU machine)")
        return 0
    gpus = torch.cuda.device_count()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    data = prep_data(out, args.timeout)
    if data is None:
        print(f"gpu_faults: prep-data failed; see {out / 'prep_data.log'}", file=sys.stderr)
        return 1
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    results: dict[str, Any] = {
        "environment": {
            "device": torch.cuda.get_device_name(0), "gpus": gpus, "torch": torch.__version__,
            "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        },
        "scenarios": {},
    }  # fmt: skip
    # The failures run side by side; the stops one at a time after them, so that nvidia-smi's list
    # of processes left on the GPU afterwards holds only what that stop left behind.
    together = [s for s in chosen if not s.is_stop]
    alone = [s for s in chosen if s.is_stop]
    with ThreadPoolExecutor(max_workers=max(1, len(together))) as pool:
        futures = {s.name: pool.submit(run, s, data, out, gpus, args.timeout) for s in together}
        for name, fut in futures.items():
            try:
                results["scenarios"][name] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one broken scenario must not lose the others
                results["scenarios"][name] = {"error": repr(exc)}
            print(f"{name}: {json.dumps(results['scenarios'][name])[:600]}", flush=True)
    for s in alone:
        results["scenarios"][s.name] = run(s, data, out, gpus, args.timeout)
        print(f"{s.name}: {json.dumps(results['scenarios'][s.name])[:600]}", flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
