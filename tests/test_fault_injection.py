"""Fault injection: break real runs of the kit's own trainer the ways users do, and diagnose each log.

A participant's first failed run happens on the kit's own path: ``workshop train`` here (torchrun,
gloo, the trainer's checks, megatron-core's datasets and checkpoints) or the same trainer started by
torchrun in the PyTorchJob. Each test below starts that real path (a tiny GPT: 2 layers, hidden 64,
2 CPU ranks, the shipped sample corpus tokenized once by ``workshop prep-data``), breaks it in one
ordinary way, keeps everything it printed (stdout and stderr in one file, as a pod log is), and
hands the file to ``workshop monitor diagnose LOG --json``. The assertion is the one a participant
needs: the primary cause (``primary``, or ``findings[0]`` as docs/cli.md orders them) is the root
cause, not the last symptom, and its evidence line is the line that proves it. Healthy runs (a first
start, a resume, a storm of warnings) must raise nothing.

Faults that need the kernel's help use a private mount namespace (``unshare -m`` and a small tmpfs,
for a full disk and a tiny ``/dev/shm``); they are skipped where that is not allowed (not root).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workshop_lib.facts import failures as failure_table
from workshop_lib.paths import SAMPLE_CORPUS, SAMPLE_TOKENIZER
from workshop_lib.train.launcher import free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # per run; generous, the CPU is shared
HANG_TIMEOUT_MINUTES = 0.2  # gloo's collective timeout in the hang test: 12 s


# --- runs -----------------------------------------------------------------------------------------


def tiny_flags(data_path: str, **over: object) -> list[str]:
    """A run that reaches its first iterations in seconds on two CPU ranks."""
    flags = {
        "num-layers": 2, "hidden-size": 64, "num-attention-heads": 4, "seq-length": 64,
        "max-position-embeddings": 64, "micro-batch-size": 2, "global-batch-size": 4, "train-iters": 4,
        "lr": 3e-3, "data-path": data_path, "split": "98,2,0", "tokenizer-type": "HuggingFaceTokenizer",
        "tokenizer-model": str(SAMPLE_TOKENIZER), "log-interval": 1, "eval-iters": 0, "num-workers": 0,
    }  # fmt: skip
    flags.update(over)
    out: list[str] = []
    for key, value in flags.items():
        if value is False or value is None:
            continue
        out += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return out


def quiet_port() -> int:
    """A free TCP port below the kernel's ephemeral range.

    A port from ``bind(0)`` comes from the range every other process's outgoing connections use, so
    on a busy machine it can be taken between the choice and torchrun's bind (EADDRINUSE, which the
    suite then reads as a fault it did not inject). Ports below the range are only ever taken on
    purpose.
    """
    rng = random.Random(time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(20000, 29000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


def workshop_train(flags: list[str], port: int | None = None) -> list[str]:
    """The local path: ``workshop train`` (its checks, then torchrun)."""
    return [sys.executable, "-m", "workshop_lib.cli", "train", "--nproc-per-node", "2",
            "--master-port", str(port or quiet_port()), "--", *flags]  # fmt: skip


def torchrun(flags: list[str], *launch: str) -> list[str]:
    """The PyTorchJob's container command: torchrun straight into the trainer, no local checks."""
    if not any(a.startswith("--master-port") or a.startswith("--rdzv-endpoint") for a in launch):
        launch = (*launch, f"--master-port={quiet_port()}")
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", *launch,
            "-m", "workshop_lib.train", *flags]  # fmt: skip


class Run:
    """A process whose whole output (stdout + stderr, interleaved) goes to one log file."""

    def __init__(self, cmd: list[str], log: Path, *, env: dict | None = None):
        self.log = log
        self.tag = f"fault-{os.getpid()}-{time.monotonic_ns()}"  # finds this run's ranks in /proc
        self._fh = open(log, "w")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            cmd, stdout=self._fh, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "FAULT_TAG": self.tag, **(env or {})},
        )  # fmt: skip

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern, re.MULTILINE)
        while not rx.search(self.text()):
            assert self.proc.poll() is None, f"ended before {pattern!r}:\n{self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {pattern!r} in {timeout} s:\n{self.text()[-3000:]}"
            time.sleep(0.2)

    def _processes(self) -> list[tuple[int, bytes, dict[bytes, bytes]]]:
        """(pid, command line, environment) of every process this run started, however deep."""
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                env = dict(
                    kv.split(b"=", 1) for kv in (entry / "environ").read_bytes().split(b"\0") if b"=" in kv
                )
            except OSError:
                continue
            if env.get(b"FAULT_TAG") == self.tag.encode():
                out.append((int(entry.name), cmd, env))
        return out

    def rank_pid(self, rank: int) -> int:
        """The pid of the trainer process of ``rank`` (a torchrun worker of this run)."""
        for pid, cmd, env in self._processes():
            if (
                b"workshop_lib.train" in cmd
                and b"torch.distributed.run" not in cmd
                and b"workshop_lib.train.agent" not in cmd
                and env.get(b"RANK") == str(rank).encode()
            ):
                return pid
        raise AssertionError(f"no rank {rank} process of this run")

    def kill(self) -> None:
        """SIGKILL everything this run started (found by its tag, in whatever process group)."""
        for pid, _cmd, _env in self._processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None or exc[0] is not None:
            self.kill()  # a failed test leaves no rank behind (a stopped one would wait forever)
            self.proc.wait()
        self._fh.close()

    def wait(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            raise AssertionError(f"still running after {timeout} s:\n{self.text()[-3000:]}") from None
        finally:
            self._fh.close()


def run(cmd: list[str], log: Path, **kw) -> int:
    with Run(cmd, log, **kw) as r:
        return r.wait()


def diagnose(log: Path) -> dict:
    """``workshop monitor diagnose LOG --json``, as a participant runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", "monitor", "diagnose", str(log), "--json"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def primary(report: dict) -> dict | None:
    """The primary finding: ``findings[0]`` (docs/cli.md orders findings so), checked against
    ``primary`` where the engine already reports it."""
    findings = report["findings"]
    first = findings[0] if findings else None
    if "primary" in report:
        assert report["primary"] == (first["label"] if first else None), report
    return first


def assert_diagnosed(log: Path, label: str, evidence: str) -> dict:
    """The log's primary cause is ``label`` and its line (at its line number) matches ``evidence``."""
    report = diagnose(log)
    first = primary(report)
    summary = [(f["label"], f["line"][:160]) for f in report["findings"]]
    assert first is not None and first["label"] == label, (
        f"{summary}\n--- log tail:\n{log.read_text()[-4000:]}"
    )
    assert re.search(evidence, first["line"]), summary
    lines = log.read_text(errors="replace").splitlines()
    assert lines[first["line_number"] - 1].rstrip().startswith(first["line"].rstrip()[:200])
    assert first["explanation"] and first["fix"]
    return report


def assert_healthy(log: Path) -> None:
    report = diagnose(log)
    assert report["findings"] == [], [(f["label"], f["line"]) for f in report["findings"]]
    assert report.get("primary") is None


def can_mount_tmpfs() -> bool:
    """A private mount namespace with a tmpfs of our own (root, or CAP_SYS_ADMIN)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True, timeout=30,
    )  # fmt: skip
    return probe.returncode == 0


needs_mounts = pytest.mark.skipif(not can_mount_tmpfs(), reason="needs unshare -m and tmpfs mounts (root)")


def in_mount_namespace(mounts: list[tuple[str, str]], cmd: list[str]) -> list[str]:
    """``cmd`` in a private mount namespace where each (size, dir) is a fresh tmpfs."""
    script = " && ".join(f"mount -t tmpfs -o size={size} tmpfs '{where}'" for size, where in mounts)
    return ["unshare", "-m", "sh", "-c", f'{script} && exec "$@"', "sh", *cmd]


# --- data -----------------------------------------------------------------------------------------


def prep(corpus: Path, out: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", "prep-data", "--input", str(corpus), "--output-prefix",
         str(out), "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(SAMPLE_TOKENIZER),
         "--append-eod", "--json"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return f"{out}_text_document"


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """The shipped sample corpus through ``workshop prep-data``, once per module."""
    return prep(SAMPLE_CORPUS, tmp_path_factory.mktemp("data") / "sample")


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> str:
    """The first 20 documents of the sample corpus: too small for a validation split."""
    d = tmp_path_factory.mktemp("small")
    lines = SAMPLE_CORPUS.read_text().splitlines(keepends=True)[:20]
    (d / "small.jsonl").write_text("".join(lines))
    return prep(d / "small.jsonl", d / "small")


def copy_dataset(prefix: str, dest: Path) -> str:
    dest.mkdir(parents=True, exist_ok=True)
    for ext in (".bin", ".idx"):
        shutil.copy(prefix + ext, dest / f"copy{ext}")
    return str(dest / "copy")


# --- the trainer's own refusals and megatron-core's configuration rules --------------------------

CONFIG_CASES = {
    # name: (flag changes, label, evidence)
    "batch": ({"global-batch-size": 6}, "batch_size_not_divisible",
              r"--global-batch-size 6 is not divisible by --micro-batch-size 2 x data-parallel size 2"),
    "world_size": ({"tensor-model-parallel-size": 2, "pipeline-model-parallel-size": 2},
                   "parallelism_config_invalid", r"world size 2 is not divisible by tensor x pipeline"),
    "heads_vs_tp": ({"tensor-model-parallel-size": 2, "num-attention-heads": 3, "hidden-size": 48},
                    "parallelism_config_invalid",
                    r"--num-attention-heads 3 is not divisible by --tensor-model-parallel-size 2"),
    "layers_vs_pp": ({"pipeline-model-parallel-size": 2, "num-layers": 3}, "parallelism_config_invalid",
                     r"--num-layers 3 is not divisible by --pipeline-model-parallel-size 2"),
    "query_groups_vs_tp": ({"tensor-model-parallel-size": 2, "group-query-attention": True,
                            "num-query-groups": 1}, "parallelism_config_invalid",
                           r"--num-query-groups 1 is not divisible by --tensor-model-parallel-size 2"),
    "hidden_vs_heads": ({"hidden-size": 66}, "model_config_invalid",
                        r"--hidden-size 66 is not divisible by --num-attention-heads 4"),
    "heads_vs_groups": ({"group-query-attention": True, "num-query-groups": 3}, "model_config_invalid",
                        r"--num-attention-heads 4 is not divisible by --num-query-groups 3"),
    "seq_vs_positions": ({"seq-length": 128}, "model_config_invalid",
                         r"--seq-length 128 exceeds --max-position-embeddings 64"),
    "not_a_megatron_flag": ({"zero-stage": 2}, "train_flags_invalid",
                            r"unsupported flag --zero-stage: it is a DeepSpeed flag"),
    "train_split_zero": ({"split": "0,100,0"}, "dataset_too_small", r"the train split is 0"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_config_refusal_is_named(case, data, tmp_path):
    """`workshop train` refuses before any rank starts: exit 2, one line, and that line is the verdict."""
    over, label, evidence = CONFIG_CASES[case]
    log = tmp_path / "train.log"
    assert run(workshop_train(tiny_flags(data, **over)), log) == 2, log.read_text()[-2000:]
    assert_diagnosed(log, label, evidence)


def test_stale_attention_switch_in_the_environment_is_named(data, tmp_path):
    """A GPU recipe's `export NVTE_FLASH_ATTN=1` left in the shell: megatron-core would assert inside
    the model's constructor (the CPU path uses the local backend, all switches 0); each rank refuses
    first in one line that names the variable, and that line is the verdict."""
    log = tmp_path / "train.log"
    stale = {"NVTE_FLASH_ATTN": "1"}
    assert run(workshop_train(tiny_flags(data)), log, env=stale) == 2, log.read_text()[-2000:]
    assert "Traceback" not in log.read_text()
    evidence = r"workshop train: error: NVTE_FLASH_ATTN='1' in the environment"
    assert_diagnosed(log, "train_flags_invalid", evidence)


def test_data_refusals_are_named(data, small_data, tmp_path):
    """A missing prefix, a truncated .bin, a corrupt .idx and a corpus too small for its split."""
    truncated = copy_dataset(data, tmp_path / "truncated")
    with open(truncated + ".bin", "r+b") as fh:
        fh.truncate(100_000)  # an interrupted copy
    bad_magic = copy_dataset(data, tmp_path / "magic")
    with open(bad_magic + ".idx", "r+b") as fh:
        fh.write(b"NOT-MMIDX")
    short_idx = copy_dataset(data, tmp_path / "short")
    with open(short_idx + ".idx", "r+b") as fh:
        fh.truncate(20_000)
    cases = [
        (str(tmp_path / "missing_text_document"), {}, "dataset_path_missing",
         r"missing_text_document\.bin not found"),
        (truncated, {}, "dataset_index_corrupt", r"copy\.idx: corrupt index: sequence \d+ ends at byte \d+, past the end"),
        (bad_magic, {}, "dataset_index_corrupt", r"copy\.idx: not a Megatron indexed dataset"),
        (short_idx, {}, "dataset_index_corrupt", r"copy\.idx: truncated or corrupt index"),
        (small_data, {"eval-iters": 2}, "dataset_too_small",
         r"leaves the validation split of \S+ with 0 documents"),
    ]  # fmt: skip
    for i, (prefix, over, label, evidence) in enumerate(cases):
        log = tmp_path / f"data{i}.log"
        assert run(workshop_train(tiny_flags(prefix, **over)), log) == 2, log.read_text()[-2000:]
        assert_diagnosed(log, label, evidence)


def test_pytorchjob_ranks_refuse_with_the_same_verdict(data, tmp_path):
    """In the pod torchrun starts the trainer directly: every rank prints its refusal."""
    log = tmp_path / "pod.log"
    assert run(torchrun(tiny_flags(data, **{"global-batch-size": 6})), log) != 0
    assert_diagnosed(
        log, "batch_size_not_divisible", r"^\[rank \d\] workshop train: error: --global-batch-size 6"
    )


def test_ffn_not_divisible_by_tensor_parallel_is_megatron_cores_assert(data, tmp_path):
    """A rule only megatron-core enforces (the trainer passes the flags on): its bare assertion."""
    log = tmp_path / "train.log"
    flags = tiny_flags(data, **{"tensor-model-parallel-size": 2, "ffn-hidden-size": 99})
    assert run(workshop_train(flags), log) == 1
    assert_diagnosed(log, "parallelism_config_invalid", r"AssertionError: 99 is not divisible by 2")


def test_a_wrong_document_index_is_a_corrupt_index(data, tmp_path):
    """An .idx whose header and size are right but whose document index is wrong. megatron-core's
    IndexedDataset would stop on a bare assert (its wording is in the real-log corpus); the kit's own
    full check of the index refuses it first, in one line naming the file."""
    prefix = copy_dataset(data, tmp_path / "docidx")
    with open(prefix + ".idx", "r+b") as fh:
        fh.seek(-8, os.SEEK_END)
        fh.write((1234).to_bytes(8, "little"))  # the last document boundary
    log = tmp_path / "train.log"
    assert run(workshop_train(tiny_flags(prefix)), log) == 2
    assert_diagnosed(log, "dataset_index_corrupt", r"\.idx: corrupt index: ")


def test_vocabulary_smaller_than_the_data_is_named(data, tmp_path):
    """Data tokenized with the sample tokenizer (8192 ids), a model told the vocabulary is 1000."""
    log = tmp_path / "train.log"
    flags = tiny_flags(
        data, **{"tokenizer-type": "NullTokenizer", "tokenizer-model": None, "vocab-size": 1000}
    )
    assert run(workshop_train(flags), log) == 1
    assert_diagnosed(log, "vocab_mismatch", r"IndexError: index out of range in self")


# --- numerics ---------------------------------------------------------------------------------------


def test_diverging_learning_rate_stops_every_rank_at_the_first_nan_loss(data, tmp_path):
    """Megatron-LM's default: the first NaN loss stops the run, before it is saved; the last rank
    says so in one line, and the newest checkpoint is the last finite one."""
    log, ckpt = tmp_path / "train.log", tmp_path / "ckpt"
    flags = tiny_flags(data, lr=1e5, **{"clip-grad": 0, "train-iters": 8, "save": ckpt, "save-interval": 1})
    assert run(workshop_train(flags), log) == 1
    text = log.read_text()
    m = re.search(
        r"\[rank 1\] workshop train: error: the run diverged at iteration (\d+) \(lm loss is nan", text
    )
    # one rank says so (the launcher's "diagnosis:" summary may quote that line once more)
    stops = re.findall(r"^\[rank \d+\] workshop train: error: the run diverged at iteration", text, re.M)
    assert m and len(stops) == 1, text[-3000:]
    nan_at = int(m[1])
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == str(nan_at - 1)
    assert not (ckpt / f"iter_{nan_at:07d}").exists() and f"iteration {nan_at + 1:>8}/" not in text
    # the evidence is whichever of the two lines the ranks wrote first: rank 0's iteration line with
    # its NaN count, or rank 1's stop line (their order in the shared log is a race)
    assert_diagnosed(
        log,
        "nan_loss",
        rf"iteration +{nan_at}/ +8 \|.*number of nan iterations: +1|the run diverged at iteration {nan_at} \(lm loss is nan",
    )


def test_the_trainers_divergence_line_is_nan_loss_for_a_gradient_norm_too():
    """With --log-interval above 1 the stop's own line may be the only evidence in the log."""
    from workshop_lib.monitor.diagnose import verdict

    line = (
        "[rank 7] workshop train: error: the run diverged at iteration 1200 (grad norm is inf); nothing "
        "of this iteration was saved. Resume from the last checkpoint with a lower --lr"
    )
    assert verdict([line]).primary == "nan_loss"


def test_no_check_for_nan_trains_on_through_nan_loss(data, tmp_path):
    log = tmp_path / "train.log"
    flags = tiny_flags(data, lr=1e5, **{"clip-grad": 0, "no-check-for-nan-in-loss-and-grad": True})
    assert run(workshop_train(flags), log) == 0
    assert "the run diverged" not in log.read_text()
    assert_diagnosed(log, "nan_loss", r"iteration +\d+/ +4 \|.*number of nan iterations: +[1-9]")


# --- checkpoints: a healthy first start and resume, and resumes that cannot work --------------------


@pytest.fixture(scope="module")
def checkpoint(data, tmp_path_factory) -> tuple[Path, str]:
    """A healthy first start (``--load`` of an empty folder, as notebook 03 does) that stops at
    iteration 2 of 4 and saves; its log must raise nothing, warnings and all."""
    d = tmp_path_factory.mktemp("ckpt")
    ckpt, log = d / "ckpt", d / "first.log"
    flags = tiny_flags(data, save=ckpt, load=ckpt, **{"save-interval": 2, "exit-interval": 2})
    # a storm of c10d/gloo debug output that a healthy run may print
    rc = run(
        workshop_train(flags), log, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO"}
    )
    assert rc == 0, log.read_text()[-3000:]
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    return ckpt, str(log)


def test_first_start_and_resume_are_healthy(checkpoint, data, tmp_path):
    ckpt, first_log = checkpoint
    assert "will not load any checkpoints and will start from random" in Path(first_log).read_text()
    assert_healthy(Path(first_log))
    resumed = tmp_path / "ckpt"
    shutil.copytree(ckpt, resumed)
    log = tmp_path / "resume.log"
    assert run(torchrun(tiny_flags(data, save=resumed, load=resumed, **{"save-interval": 2})), log) == 0
    assert "successfully loaded checkpoint" in log.read_text()
    assert_healthy(log)


RESUME_CASES = {
    # megatron-core's load, or the trainer's comparison with the flags saved in the checkpoint
    "hidden_size": ({"hidden-size": 128}, "checkpoint_mismatch",
                    r"CheckpointingException: Global shape mismatch"
                    r"|another model than the checkpoint: --hidden-size 128 here, --hidden-size 64"),
    "gqa_layout": ({"group-query-attention": True, "num-query-groups": 2}, "checkpoint_mismatch",
                   r"Global shape mismatch .* for key decoder\.layers\.self_attention\.linear_qkv\.weight"
                   r"|another model than the checkpoint: --num-query-groups 2 here, --num-query-groups 4"),
    # megatron-core's assert, or the trainer's own check of the saved schedule where it has one
    "train_iters": ({"train-iters": 8}, "lr_schedule_mismatch",
                    r"OptimizerParamScheduler: class input value \d+ and checkpoint ?value \d+"
                    r"|give another learning-rate/weight-decay schedule than the checkpoint's"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RESUME_CASES))
def test_resume_with_changed_flags_is_named(case, checkpoint, data, tmp_path):
    """The pod's resume (torchrun straight into the trainer) with other flags than the first run's."""
    ckpt, _ = checkpoint
    over, label, evidence = RESUME_CASES[case]
    log = tmp_path / "resume.log"
    assert run(torchrun(tiny_flags(data, load=ckpt, **over)), log) != 0
    assert_diagnosed(log, label, evidence)


# --- distributed: a hang, a killed rank, a node that never joins --------------------------------------


def test_stopped_rank_is_a_collective_timeout_not_an_oom(data, tmp_path):
    """Rank 1 is stopped (SIGSTOP) mid-run: rank 0's next collective times out, torchrun SIGTERMs the
    stopped rank and, 30 s later, SIGKILLs it (exitcode -9). The cause is the hang, not memory."""
    log = tmp_path / "train.log"
    flags = tiny_flags(data, **{"train-iters": 100000, "distributed-timeout-minutes": HANG_TIMEOUT_MINUTES})
    with Run(workshop_train(flags), log) as r:
        r.wait_for(r"iteration +2/")
        os.kill(r.rank_pid(1), signal.SIGSTOP)
        assert r.wait() == 1
    text = log.read_text()
    assert re.search(r"exitcode\s*:\s*-9", text)  # torchrun's report of its own SIGKILL
    report = assert_diagnosed(log, "nccl_timeout", r"Timed out waiting \d+ms for (recv|send) operation")
    assert "host_oom_killed" not in {f["label"] for f in report["findings"]}


def test_killed_rank_is_named_as_a_kill(data, tmp_path):
    """Rank 1 is SIGKILLed mid-run (what the kernel's OOM killer does to a pod over its limit):
    the peer's broken connection is a consequence; torchrun's exitcode -9 is the cause."""
    log = tmp_path / "train.log"
    with Run(workshop_train(tiny_flags(data, **{"train-iters": 100000})), log) as r:
        r.wait_for(r"iteration +2/")
        os.kill(r.rank_pid(1), signal.SIGKILL)
        assert r.wait() != 0
    assert_diagnosed(log, "host_oom_killed", r"failed \(exitcode: -9\)")


def test_master_port_in_use_is_named(data, tmp_path):
    """Another process already listens on the master port (an earlier run still going)."""
    port = quiet_port()
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        log = tmp_path / "train.log"
        assert run(workshop_train(tiny_flags(data), port=port), log) != 0
    assert_diagnosed(log, "master_port_in_use", rf"port: {port}, .*EADDRINUSE")


@pytest.fixture(scope="module")
def lone_nodes(data, tmp_path_factory) -> dict[str, Path]:
    """Node 0 of a two-node job whose node 1 never comes: the PyTorchJob's static rendezvous and
    the c10d rendezvous (elastic jobs), both with short timeouts, run side by side (they only wait)."""
    d = tmp_path_factory.mktemp("rdzv")
    flags = tiny_flags(data)
    runs = {
        "static": Run(torchrun(flags, "--nnodes=2", "--node-rank=0", "--master-addr=127.0.0.1",
                               "--rdzv-conf=timeout=5"), d / "static.log"),
        # node 1 of the same job, told a master address that no DNS resolves (RFC 2606's .invalid)
        "unresolved": Run(torchrun(flags, "--nnodes=2", "--node-rank=1", "--master-addr=master.invalid",
                                   "--rdzv-conf=timeout=5"), d / "unresolved.log"),
        "c10d": Run(torchrun(flags, "--nnodes=2", "--rdzv-backend=c10d",
                             f"--rdzv-endpoint=127.0.0.1:{quiet_port()}", "--rdzv-conf=join_timeout=5"),
                    d / "c10d.log"),
    }  # fmt: skip
    try:
        for r in runs.values():
            assert r.wait() != 0
    finally:
        for r in runs.values():
            r.__exit__(None, None, None)
    return {name: r.log for name, r in runs.items()}


def test_node_that_never_joins_is_a_rendezvous_timeout(lone_nodes):
    """The master waits for a worker that never comes: the timeout is the cause here."""
    assert_diagnosed(
        lone_nodes["static"],
        "rendezvous_timeout",
        r"DistStoreError: Timed out after \d+ seconds waiting for clients",
    )
    assert_diagnosed(
        lone_nodes["c10d"],
        "rendezvous_timeout",
        r"^torch\.distributed\.elastic\.rendezvous\.api\.RendezvousTimeoutError",
    )


# --- storage: a full disk while saving, a tiny /dev/shm ------------------------------------------------


@needs_mounts
def test_full_disk_while_saving_is_disk_full(data, tmp_path):
    save = tmp_path / "small_volume"
    save.mkdir()
    log = tmp_path / "train.log"
    flags = tiny_flags(data, save=save / "ckpt", **{"save-interval": 2})
    assert run(in_mount_namespace([("2m", str(save))], workshop_train(flags)), log) != 0
    assert re.search(r"iteration +2/", log.read_text())  # it trained, then the save failed
    # which write hits the end of the volume varies: ENOSPC itself, or torch's zip writer noticing
    assert_diagnosed(log, "disk_full", r"\[Errno 28\] No space left on device|unexpected pos \d+ vs \d+")


SHM_CASES = {
    # /dev/shm size: evidence. 256 KiB holds the DataLoader's semaphores but not its batches;
    # 16 KiB (each POSIX semaphore is a file of one tmpfs page) not even its queues' semaphores.
    "256k": r"unable to (allocate shared memory\(shm\)|write to file) for file </torch_",
    "16k": r"= _multiprocessing\.SemLock\(",
}


@needs_mounts
@pytest.mark.parametrize("size", sorted(SHM_CASES))
def test_tiny_dev_shm_is_named_without_the_word_dev_shm(size, data, tmp_path):
    """DataLoader workers hand batches over in shared memory; in a tiny /dev/shm (the container
    default is 64 MiB; batches here are made big instead) the errors name torch's file or a
    semaphore, never /dev/shm, and the bare ENOSPC must not pass for a full disk."""
    log = tmp_path / "train.log"
    flags = tiny_flags(data, **{"num-workers": 2, "micro-batch-size": 32, "global-batch-size": 64,
                                "seq-length": 128, "max-position-embeddings": 128, "train-iters": 2})  # fmt: skip
    assert run(in_mount_namespace([(size, "/dev/shm")], workshop_train(flags)), log) != 0
    report = assert_diagnosed(log, "shm_too_small", SHM_CASES[size])
    assert "/dev/shm" not in report["findings"][0]["line"]


@pytest.mark.skipif(
    not hasattr(failure_table, "CORROBORATED_SIGNS"),
    reason="needs the diagnose engine's corroborated signs (c10d's IPv6 lookup warning is benign alone)",
)
def test_unresolvable_master_address_is_not_a_rendezvous_timeout(lone_nodes):
    """A worker whose master address does not resolve also times out connecting; the cause is the
    name. torch 2.x looks the name up for IPv6 with v4-mapped answers, so its warning "The IPv6
    network addresses of (H, P) cannot be retrieved (gai error: -2 ...)" means no address at all
    when the connection then fails (alone, on a run that connects, it is harmless)."""
    log = lone_nodes["unresolved"]
    assert "master.invalid" in log.read_text()
    assert_diagnosed(
        log, "master_addr_unresolved", r"network addresses of \(master\.invalid, \d+\) cannot be retrieved"
    )
