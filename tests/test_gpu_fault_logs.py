"""What real GPU runs printed when they were broken on purpose (``benchmarks/gpu_faults.py`` on a lent
H100), held against the diagnoser; and the trainer's own check of processes against GPUs.

The logs under ``tests/fixtures/gpu/faults/`` are the runs' whole output, unedited; the expected
label of each was written in the scenario before it ran. CPU machines cannot produce CUDA's or
NCCL's wording, so these logs are the only place the suite sees it.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_faults import SCENARIOS
from workshop_lib.errors import UsageError
from workshop_lib.facts.failures import FAILURES_BY_LABEL
from workshop_lib.monitor.diagnose import verdict

REPO = Path(__file__).resolve().parents[1]
FAULTS = REPO / "tests" / "fixtures" / "gpu" / "faults"
RESULTS = json.loads((REPO / "benchmarks" / "results" / "gpu_faults.json").read_text())["scenarios"]
EXPECTED = {s.name: s.expect for s in SCENARIOS}


def _log(name: str) -> str:
    """A scenario's whole log (the largest are kept gzipped)."""
    plain = FAULTS / f"{name}.log"
    if plain.exists():
        return plain.read_text()
    return gzip.decompress((FAULTS / f"{name}.log.gz").read_bytes()).decode()


def test_every_scenario_ran_on_the_gpu_and_kept_its_log():
    kept = {p.name.removesuffix(".gz").removesuffix(".log") for p in FAULTS.iterdir()}
    assert set(RESULTS) == set(EXPECTED) == kept
    for name, expect in EXPECTED.items():
        assert expect == "healthy" or expect in FAILURES_BY_LABEL, name
        assert RESULTS[name]["expect"] == expect and "timed_out" not in RESULTS[name], name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_diagnoser_names_what_the_gpu_run_printed(name):
    """Today's engine on the unedited log, not the figure recorded on the day."""
    v = verdict(_log(name))
    assert (v.primary or "healthy") == EXPECTED[name], [f.label for f in v.findings]
    if EXPECTED[name] == "healthy":
        assert not v.unrecognised, v.unrecognised[:3]
    else:  # the evidence is a line of the log, the one the recorded run named
        assert v.findings[0].line == RESULTS[name]["evidence"]


def test_the_failures_exit_as_failures_and_the_stops_as_stops():
    for name, r in RESULTS.items():
        if name == "nproc_exceeds_gpus":
            assert r["exit"] == 2  # a usage error, before any rank started
        elif EXPECTED[name] != "healthy":
            assert r["exit"] == 1, name
    assert RESULTS["healthy_nccl_info"]["exit"] == 0
    # the first SIGTERM/SIGINT: every rank saved the iteration it was in, and nothing is left on the GPU
    for name, code in (("sigterm_mid_run", 0), ("sigint_mid_run", 130)):
        r = RESULTS[name]
        assert (r["exit"], r["saved_iteration"], r["gpu_processes_after"]) == (code, "4", []), name
        assert r["checkpoint_entries"] == ["iter_0000004", "latest_checkpointed_iteration.txt"]
    # a second SIGTERM stops at once: no marker points at the unfinished folder, no process is left
    r = RESULTS["sigterm_twice"]
    assert (r["exit"], r["saved_iteration"], r["gpu_processes_after"]) == (143, None, [])
    assert "latest_checkpointed_iteration.txt" not in r["checkpoint_entries"]
    # Ctrl-C twice, and Ctrl-C while the rank is still setting up: 130, nothing claimed saved
    for name, last in (
        ("sigint_twice", "workshop train: interrupted by SIGINT"),
        (
            "sigint_during_rank_startup",
            "workshop train: stopped by SIGINT: the ranks exited (nothing new to save)",
        ),
    ):
        r = RESULTS[name]
        assert (r["exit"], r["saved_iteration"], r["gpu_processes_after"]) == (130, None, []), name
        assert r["last_line"] == _log(name).rstrip().splitlines()[-1] == last, name
    # every stop ends in its one line: no traceback from any process (the launcher, agent or rank)
    stops = [s.name for s in SCENARIOS if s.is_stop]
    assert len(stops) == 5
    for name in stops:
        assert RESULTS[name]["tracebacks"] == 0 and "Traceback" not in _log(name), name


def test_the_pod_form_stops_every_rank_at_once():
    """torchrun starting more trainer ranks than GPUs (a pod): each rank says so and exits 2, so none
    waits out torchrun's 30 s in the rendezvous (the first lease's run took 48 s)."""
    log = _log("nproc_exceeds_gpus_in_pod")
    assert "[rank 0] workshop train: error: 2 processes on this node, but it shows 1 GPU(s)" in log
    assert "[rank 1] workshop train: error: 2 processes on this node" in log
    assert "Unable to shutdown process" not in log and RESULTS["nproc_exceeds_gpus_in_pod"]["seconds"] < 30


def test_more_processes_than_gpus_is_one_usage_line(monkeypatch):
    from workshop_lib.train.device import check_local_gpus

    check_local_gpus(8, 8)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1\n$(reboot)")
    with pytest.raises(UsageError) as exc:
        check_local_gpus(8, 2)
    msg = str(exc.value)
    assert "8 processes on this node, but it shows 2 GPU(s)" in msg and "--nproc-per-node 2" in msg
    assert "\n" not in msg and "'0,1\\n$(reboot)'" in msg  # the variable quoted, never raw
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(UsageError, match=r"shows 0 GPU\(s\): start"):
        check_local_gpus(1, 0)


def test_the_rank_counts_its_node_not_only_itself(monkeypatch):
    """Rank 0 of 4 on a 2-GPU node refuses too (torchrun's LOCAL_WORLD_SIZE), instead of waiting."""
    import torch

    from workshop_lib.train import device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", lambda _d: pytest.fail("set_device before the check"))
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    with pytest.raises(UsageError, match="4 processes on this node, but it shows 2 GPU"):
        device.detect()
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    monkeypatch.setenv("LOCAL_RANK", "2")
    with pytest.raises(UsageError, match="3 processes on this node"):
        device.detect()


def test_workshop_train_asks_before_it_starts_a_rank(monkeypatch, tmp_path):
    import torch

    from workshop_lib.train import launcher

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(launcher, "supervise", lambda *a, **k: pytest.fail("a rank was started"))
    with pytest.raises(UsageError, match="2 processes on this node, but it shows 1 GPU"):
        launcher.run_local(2, ["--mock-data", "--train-iters", "1", "--num-layers", "2", "--hidden-size", "64",
                               "--num-attention-heads", "4", "--seq-length", "32", "--max-position-embeddings", "32",
                               "--micro-batch-size", "1", "--global-batch-size", "2", "--lr", "1e-3",
                               "--tokenizer-type", "NullTokenizer", "--vocab-size", "128"])  # fmt: skip
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    launcher.check_gpus(4)  # CPU ranks (gloo): as many as asked for


def test_the_script_skips_without_cuda():
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_faults", "--out", "/nonexistent/never-written"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0 and "no CUDA device here; skipped" in out.stdout, out.stderr[-2000:]


def test_each_scenario_builds_its_command_for_the_machines_gpus():
    """What the device ran, rebuilt here: more ranks than GPUs where the scenario says so, the data
    prefix put in, argument lists only (no shell)."""
    for gpus in (1, 8):
        cmds = {s.name: s.command("/data/p_text_document", gpus) for s in SCENARIOS}
        for name, cmd in cmds.items():
            assert cmd[0] == sys.executable and all(isinstance(a, str) and "{" not in a for a in cmd), name
        ranks = {n: c[c.index("--nproc-per-node") + 1] for n, c in cmds.items()}
        assert ranks["nproc_exceeds_gpus"] == ranks["nproc_exceeds_gpus_in_pod"] == str(gpus + 1)
        assert ranks["raw_duplicate_gpu"] == "2" and ranks["healthy_nccl_info"] == "1"
        assert "/data/p_text_document" in cmds["nproc_exceeds_gpus_in_pod"]


def _loss_scales(log: str) -> list[tuple[int, float, int]]:
    """(iteration, loss scale, skipped) of each iteration line the run printed."""
    import re

    rows = []
    for line in log.splitlines():
        m = re.search(r"iteration +(\d+)/.*loss scale: ([\d.]+) \| .*skipped iterations: +(\d+)", line)
        if m:
            rows.append((int(m[1]), float(m[2]), int(m[3])))
    return rows


def test_fp16_warm_up_is_healthy_and_the_diverged_run_is_named_for_its_cause():
    """The same fp16 loss scale seen on the GPU: halving from 2^32 while the first steps are
    skipped (every fp16 run starts so, and an overflow later halves it once: healthy), and, at
    --lr 1e5, two updates after which every step overflowed. Before the trainer's NaN stop that run
    trained on to the end, the scale at its floor and no loss printed again, with exit 0; the
    diagnoser named it nan_loss (the run diverged: the fix is the learning rate and bf16, not the
    loss scale). Now the NaN loss of its first skipped step stops it there, saving nothing."""
    warm = _loss_scales(_log("fp16_loss_scale_warmup"))
    first = next(i for i, (_, _, skipped) in enumerate(warm) if not skipped)
    assert first >= 10 and all(skipped for _, _, skipped in warm[:first])
    later = [skipped for _, _, skipped in warm[first:]]
    assert sum(later) <= 2 and warm[-1][1] >= 2**16  # an overflow now and then halves it; no collapse
    through = (FAULTS.parent / "fp16_diverged_trained_through.log").read_text()
    diverged = _loss_scales(through)
    updates = [it for it, _, skipped in diverged if not skipped]
    assert updates and all(skipped for it, _, skipped in diverged if it > updates[-1])
    assert diverged[-1][1] == 1.0 and diverged[-1][0] - updates[-1] >= 20
    assert verdict(through).primary == "nan_loss"
    stopped = _log("fp16_diverged")
    rows = _loss_scales(stopped)
    assert rows[-1][0] == updates[-1] + 1 and rows[-1][2] == 1  # the first overflow after the updates
    assert f"error: the run diverged at iteration {rows[-1][0]} (lm loss is nan)" in stopped
    assert RESULTS["fp16_diverged"]["exit"] == 1 and RESULTS["fp16_diverged"]["first_call"]["exit"] == 0


def test_a_process_that_sees_no_gpu_is_named():
    """CUDA_VISIBLE_DEVICES='' (a pod without its nvidia.com/gpu): torch's lazy init says there is
    no GPU; the first lease's engine listed it as an unknown failure."""
    assert "RuntimeError: No CUDA GPUs are available" in _log("no_gpu_visible")
    assert RESULTS["no_gpu_visible"]["diagnosis_on_the_day"] == "unknown"
