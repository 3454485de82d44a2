"""The verdict on real logs: the corpus of public failure excerpts, causal order, numerics, hangs.

``tests/fixtures/diagnose_corpus`` holds short real excerpts (sources in ``SOURCES.tsv``); the file
name says what the verdict must be. The held-out quarter's first measurement is in
``benchmarks/results/diagnose_heldout_first.md``; these tests keep every file right from now on.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import sys
import traceback
import warnings
from datetime import datetime, timezone
from pathlib import Path

import pytest

from workshop_lib.facts.failures import FAILURES_BY_LABEL, NONFINITE_STEP_REPORTS, SKIP_STUCK_REPORTS
from workshop_lib.monitor.diagnose import _ANSI, MAX_LINE_CHARS, _Scan, verdict

CORPUS = Path(__file__).parent / "fixtures" / "diagnose_corpus"
LOGS = Path(__file__).parent / "fixtures" / "logs"
FILES = sorted(CORPUS.glob("*.log"))


def _expected(path: Path) -> str:
    return path.name.split("__", 1)[0]


def _same_line(raw: str, shown: str) -> bool:
    """A verdict quotes the log's line without its colour codes, clipped to MAX_LINE_CHARS with '...'
    when longer."""
    raw, shown = _ANSI.sub("", raw).rstrip(), shown.rstrip()
    return raw == shown or (
        shown.endswith("...") and raw.startswith(shown[:-3]) and len(shown) == MAX_LINE_CHARS
    )


def _log_lines(path: Path) -> list[str]:
    """The lines as the diagnoser numbers them: split at newlines only (a progress bar's carriage
    return stays inside its line, as in `grep -n`)."""
    return path.read_bytes().decode("utf-8", errors="replace").split("\n")


# Where an excerpt may come from: public GitHub threads and files, and (from the hundred-and-first
# batch on) the PyTorch forums' threads.
PUBLIC_SOURCES = ("https://github.com/", "https://discuss.pytorch.org/t/")
# ... and pages a public GitHub repository publishes (GitHub Pages: a project's run reports)
GITHUB_PAGES = re.compile(r"https://[a-z0-9-]+\.github\.io/")


def test_corpus_is_large_and_sourced():
    failures = [p for p in FILES if _expected(p) not in ("healthy", "unknown")]
    healthy = [p for p in FILES if _expected(p) == "healthy"]
    assert len(failures) >= 100 and len(healthy) >= 30
    assert len({_expected(p) for p in failures}) >= 20  # most labels, each in several wordings
    rows = [r.split("\t") for r in (CORPUS / "SOURCES.tsv").read_text().splitlines()[1:]]
    sources = {r[0]: r for r in rows}
    for p in FILES:
        assert p.name in sources, f"{p.name} has no source in SOURCES.tsv"
        name, label, url, *_why = sources[p.name]
        assert label == _expected(p), sources[p.name]
        assert url.startswith(PUBLIC_SOURCES) or GITHUB_PAGES.match(url), sources[p.name]
        assert 0 < len(_log_lines(p)) - 1 <= 40, f"{p.name}: keep excerpts short"  # (ends in a newline)
    for label in {_expected(p) for p in failures}:
        assert label in FAILURES_BY_LABEL, label


def test_heldout_split_follows_the_committed_rule():
    """A quarter by hash, less the files whose out-of-sample miss was fixed (fitted.txt): development."""
    listed = set((CORPUS / "heldout.txt").read_text().split())
    fitted = set((CORPUS / "fitted.txt").read_text().split())
    assert fitted <= {p.name for p in FILES}
    by_hash = {p.name for p in FILES if int(hashlib.sha256(p.name.encode()).hexdigest(), 16) % 4 == 0}
    assert listed == by_hash - fitted and 0.15 < len(listed) / len(FILES) < 0.35


def test_every_out_of_sample_miss_is_either_fitted_or_left_unfixed():
    """A miss recorded at a batch's first measurement was then fixed (its file is development data,
    fitted.txt) or left on purpose (unfixed.txt): never neither, or the held-out split would keep a
    file signatures were written for."""
    record = (Path(__file__).parents[1] / "benchmarks" / "results" / "diagnose_heldout_first.md").read_text()
    missed = {
        name
        for line in record.splitlines()
        if line.startswith("Misses:")
        for name in re.findall(r"\b([a-z_]+__[\w.-]+?\.log)\b", line)
    }
    fitted = set((CORPUS / "fitted.txt").read_text().split())
    unfixed = {line.split("\t", 1)[0] for line in (CORPUS / "unfixed.txt").read_text().splitlines() if line}
    present = {p.name for p in FILES}  # (a few were renamed when relabelled, as the README says)
    assert sorted((missed & present) - fitted - unfixed) == []


# Out-of-sample misses left unfixed on purpose (file, why): a signature for them would misname others.
UNFIXED = dict(
    line.split("\t", 1) for line in (CORPUS / "unfixed.txt").read_text().splitlines() if line.strip()
)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=UNFIXED[p.name]))
        if p.name in UNFIXED
        else p
        for p in FILES
    ],
    ids=[p.stem for p in FILES],
)
def test_corpus_verdict(path):
    v = verdict(path)
    want = _expected(path)
    if want == "healthy":
        assert not v.failed and v.primary is None, v.to_dict()
    elif want == "unknown":
        assert v.primary is None and v.unrecognised, v.to_dict()
        lines = _log_lines(path)
        for u in v.unrecognised:
            assert _same_line(lines[u["line_number"] - 1], u["line"])
    else:
        assert v.primary == want and v.findings[0].label == want, v.to_dict()
        f = v.findings[0]
        lines = _log_lines(path)
        for e in [{"line_number": f.line_number, "line": f.line}, *f.evidence]:
            assert _same_line(lines[e["line_number"] - 1], e["line"])


@pytest.mark.parametrize("path", [*FILES, *sorted(LOGS.glob("*.log"))], ids=lambda p: p.stem)
def test_block_gates_change_nothing(path):
    """The fast path (literal gates per block) gives the verdict of running every check on every line."""
    lines = path.read_text().splitlines()
    slow = _Scan()
    for line in lines:
        slow.feed(line)
    assert verdict(lines).to_dict() == slow.result().to_dict()


NAN_EDGES = [
    "iteration 9 | lm loss: nan | number of nan iterations:   0 |",
    "iteration 9 | lm loss: 2.0 | number of nan iterations:   3 |",
    "iteration 9 | lm loss: 2.0 | number of nan iterations:   0 | grad norm: inf |",
    "iteration 9 | lm loss NAN | number of nan iterations:   0 |",
    "{'loss': nan, 'grad_norm': 1.0}",
    "reduced_train_loss=nan.0",
    " 12  inf",
    "| lm loss: Infinity |",
    "[deepspeed] Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
    "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding.",
]


def test_the_cheap_nan_test_never_hides_a_nan():
    """_may_hold_nan is only a shortcut: wherever nan_loss's patterns match a line, it says True."""
    from workshop_lib.monitor.diagnose import _NAN, _may_hold_nan

    lines = NAN_EDGES + [
        line for path in [*FILES, *sorted(LOGS.glob("*.log"))] for line in path.read_text().splitlines()
    ]
    matched = [line for line in lines if _NAN.search(line)]
    assert len(matched) > 30  # the corpus has many NaN lines of many formats
    assert all(_may_hold_nan(line) for line in matched), [x for x in matched if not _may_hold_nan(x)]
    assert all(_NAN.search(line) for line in NAN_EDGES)
    assert not _may_hold_nan("iteration 9 | lm loss: 2.0 | number of nan iterations:   0 |")


# --- one verdict: the earliest cause, not the last symptom -------------------------------------------
TIMEOUT = "[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."
OOM = "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 5 has a total capacity of 79.10 GiB of which 1.2 GiB is free."
SOCKET = "host:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"  # context (a warning)
PLUGIN = "host:1:1 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file"


def test_oom_after_a_timeout_on_another_rank_is_the_primary():
    v = verdict([TIMEOUT, TIMEOUT.replace("rank0", "rank1"), OOM])
    assert v.primary == "cuda_oom" and [f.label for f in v.findings] == ["cuda_oom", "nccl_timeout"]
    assert v.findings[0].line_number == 3 and v.findings[1].count == 2


def test_context_beats_symptom_and_errors_beat_warnings():
    v = verdict([SOCKET, TIMEOUT, PLUGIN])
    assert [f.label for f in v.findings] == ["efa_plugin_missing", "nccl_timeout", "nccl_socket_fallback"]
    assert v.primary == "efa_plugin_missing"
    # a warning alone is the answer when there is nothing else
    assert verdict([SOCKET]).primary == "nccl_socket_fallback" and not verdict([SOCKET]).failed


def test_evidence_is_one_line_per_rank_first():
    lines = [TIMEOUT.replace("rank0", f"rank{r}") for r in (0, 0, 0, 1, 2)]
    (f,) = verdict(lines).findings
    assert [e["line_number"] for e in f.evidence] == [1, 4, 5] and f.count == 5


def test_unknown_failure_lists_first_error_lines_of_each_rank():
    lines = ["training ..."]
    lines += [f"[rank{r}]: Traceback (most recent call last):" for r in (0, 1)]
    lines += [
        f"[rank{r}]: my_trainer.WeirdError: the flux capacitor is empty ({i})"
        for r in (0, 1)
        for i in range(5)
    ]
    v = verdict(lines)
    assert v.primary is None and v.findings == [] and v.failed
    assert [u["line_number"] for u in v.unrecognised] == [4, 5, 6, 9, 10, 11]  # the first 3 of each rank
    assert v.one_line().startswith(
        "diagnosis: no known signature; the failure looks like line 4: [rank0]: my_trainer"
    )


def test_an_unknown_error_is_not_hidden_behind_a_warning():
    v = verdict([SOCKET, "[rank0]: RuntimeError: something nobody has seen before"])
    assert v.primary is None and [u["line_number"] for u in v.unrecognised] == [2]
    assert [f.label for f in v.findings] == ["nccl_socket_fallback"]


def test_one_line_names_label_line_and_fix():
    one = verdict(["ok", OOM]).one_line()
    assert one.startswith(
        "diagnosis: cuda_oom at line 2: [rank5]: torch.OutOfMemoryError: CUDA out of memory"
    )
    fix = FAILURES_BY_LABEL["cuda_oom"].fix
    first = fix.split(". ")[0].rstrip(".") + "."  # the fix's first sentence
    assert one.endswith("-- fix: " + first) and "\n" not in one
    assert verdict(["all good"]).one_line() == "diagnosis: no known failure signature"


def test_text_lines_and_path_give_the_same_verdict(tmp_path):
    text = "\n".join(["start", TIMEOUT, OOM, "end"]) + "\n"
    plain, packed = tmp_path / "a.log", tmp_path / "a.log.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    want = verdict(text).to_dict()
    assert verdict(text.splitlines()).to_dict() == want
    assert verdict(plain).to_dict() == want and verdict(packed).to_dict() == want
    assert verdict(str(plain)).to_dict() == want  # a path given as a str is read, not diagnosed as text


# --- numerics in every iteration-line format -----------------------------------------------------------
def _it(i, cells):
    return f" iteration {i:8d}/   10000 | consumed samples: {i * 8:10d} | {cells} |"


@pytest.mark.parametrize(
    "cells",
    [
        "lm loss: nan | loss scale: 1.0 | grad norm: 1.0",
        "lm loss: 2.1E+00 | loss scale: 1.0 | grad norm: nan",  # NaN only in the grad norm
        "lm loss: 2.1E+00 | mtp_1 loss: inf | loss scale: 1.0",  # any loss column
        "lm loss: 2.1E+00 | number of nan iterations:   3",
    ],
)
def test_nan_in_any_column(cells):
    v = verdict([_it(10, "lm loss: 2.2E+00 | loss scale: 1.0 | grad norm: 1.0"), _it(20, cells)])
    assert v.primary == "nan_loss" and v.findings[0].line_number == 2


def test_a_loss_that_vanishes_from_the_line_is_nan_but_fp16_warmup_is_not():
    ok = _it(100, "lm loss: 2.2E+00 | loss scale: 1.0 | number of skipped iterations:   0")
    gone = _it(110, "loss scale: 1.0 | number of skipped iterations:   0")
    assert verdict([ok, gone]).primary == "nan_loss"
    # the first lines of an fp16 run skip every step: no loss to print, not a NaN
    warm = _it(10, "loss scale: 8388608.0 | number of skipped iterations:  10")
    assert verdict([warm, _it(20, "lm loss: 9.9E+00 | loss scale: 32768.0")]).findings == []


def test_loss_scale_collapse_megatron_and_deepspeed():
    fp16 = [_it(i, f"lm loss: 5.0E+00 | loss scale: {s} | number of skipped iterations:   {k}")
            for i, s, k in ((200, "65536.0", 0), (210, "1024.0", 3), (220, "4.0", 9))]  # fmt: skip
    v = verdict(fp16)
    assert v.primary == "nan_loss" and v.findings[0].line_number == 3
    bf16 = [
        _it(i, "lm loss: 5.0E+00 | loss scale: 1.0 | number of skipped iterations:   0") for i in (200, 210)
    ]
    assert verdict(bf16).findings == []  # bf16 prints a constant scale of 1.0
    ds = "[2023-06-07 22:16:00,018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {a}, reducing to {b}"
    assert verdict([ds.format(a=65536, b=32768), ds.format(a=32768, b=16384)]).findings == []  # warm-up
    assert verdict([ds.format(a=16, b=8)]).primary == "nan_loss"


@pytest.mark.parametrize(
    "line",
    [
        " iteration      300/   10000 | lm loss NAN | loss scale 1.0 |",  # older format, no colons
        "Training: 2023-03-14 09:08:43,293-Speed 2178.40 samples/sec   Loss nan   LearningRate 0.001000",
        "10/30 22:19:57 - mmengine - INFO - Epoch(train) [1][240/735]  loss: 2.5128  grad_norm: nan",
        "{'loss': nan, 'grad_norm': 219.7, 'learning_rate': 0.0, 'epoch': 0.0}",
        # any snake_case loss key (Lightning/NeMo progress bars and loggers)
        "Epoch 2:  41%|####  | 410/1000 [12:01<17:18, v_num=3, val_loss=inf, global_step=410.0]",
        "step 1200 | train_loss: NaN | lr 3e-4",
    ],
)
def test_nan_in_other_formats(line):
    assert verdict([line]).primary == "nan_loss"


def test_a_megatron_line_born_without_its_loss_is_nan():
    """The first line already lacks the loss (Megatron drops a NaN average), unless steps were skipped."""
    assert (
        verdict([_it(5, "loss scale: 1.0 | grad norm: 0.9 | number of skipped iterations:   0")]).primary
        == "nan_loss"
    )
    assert verdict([_it(5, "loss scale: 65536.0 | number of skipped iterations:   5")]).findings == []
    assert (
        verdict([_it(5, "lm loss: 3.1E+00")]).findings == []
    )  # no loss-scale column: not Megatron's full form


@pytest.mark.parametrize(
    ("line", "collapsed"),
    [
        ("[2022-03-01 10:00:00,000] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic loss scale from 2048.0 to 1024.0", False),
        ("[2022-03-01 10:00:00,000] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic loss scale from 16.0 to 8.0", True),
        ("[2022-03-01 10:00:00,000] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted loss scale: 4.0, reducing to 2.0", True),
    ],
)  # fmt: skip
def test_loss_scale_collapse_in_older_deepspeed_wordings(line, collapsed):
    assert (verdict([line]).primary == "nan_loss") is collapsed


@pytest.mark.parametrize(
    ("lines", "label"),
    [
        # the heartbeat monitor: the watchdog thread itself is stuck (wrapped by a terminal at any column)
        (["[rank3]:[E1010 01:02:03.4 ProcessGroupNCCL.cpp:1400] [PG 0 Rank 3] ProcessGroupNCCL's watchd",
          "og got stuck for 600 seconds without making progress in monitoring enqueued collectives."], "nccl_timeout"),
        # errno 98 per address, the message split over lines; Python's own wording
        (["RuntimeError: The server socket has failed to listen on any local network address. The server",
          "socket has failed to bind to [::]:6000 (errno: 98 - Address already in use)."], "master_port_in_use"),
        (["OSError: [Errno 98] Address already in use"], "master_port_in_use"),
        (["ip-10-0-0-1:77:91 [3] include/alloc.h:103 NCCL WARN Cuda failure 2 'out of memory'"], "cuda_oom"),
        (["AssertionError: num_layers (30) must be divisible by the pipeline-model-parallel size (4)"],
         "parallelism_config_invalid"),
        (['Error from server (BadRequest): container "main" in pod "job-0" is waiting to start: '
          "image can't be pulled"], "image_pull_error"),
        (["  File \"/opt/app/train.py\", line 12, in <module>",
          "ValueError: total num_samples: 0 after filtering"], "dataset_too_small"),  # an empty dataset
        (["subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 137."],
         "host_oom_killed"),
        (["[Tue Nov 18 02:11:09 2025] Memory cgroup out of memory: Killed process 4121 (pt_main_thread) "
          "total-vm:912345kB, anon-rss:81234567kB"], "host_oom_killed"),
        # seventh batch's families, in wordings that are not in the corpus: InfiniBand verbs/completion
        # errors (old NCCL's "with error 12", a failed memory registration)
        (["node3:11:22 [1] transport/net_ib.cc:1107 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
          "len 0, vendor err 129"], "ib_transport_error"),
        (["gpu7:9:9 [2] misc/ibvwrap.cc:120 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"],
         "ib_transport_error"),
        # DeepSpeed refusing its config: pydantic v2's report, the config error class
        (["pydantic_core._pydantic_core.ValidationError: 2 validation errors for DeepSpeedConfigModel"],
         "deepspeed_config_invalid"),
        (["deepspeed.runtime.config.DeepSpeedConfigError: 'zero_optimization.stage' must be 0, 1, 2 or 3"],
         "deepspeed_config_invalid"),
        # megatron-core's "a multiple of" wording, rules between two parallel settings, micro-batches
        (["ValueError: num_attention_heads (14) must be a multiple of tensor_model_parallel_size (4)."],
         "parallelism_config_invalid"),
        (["[rank3]: ValueError: Cannot use sequence parallelism without tensor parallelism"],
         "parallelism_config_invalid"),
        (["RuntimeError: number of microbatches (6) is not divisible by pipeline-parallel size (4) when using "
          "interleaved schedule"], "parallelism_config_invalid"),
        # the model's own sizes: megatron-core's check, and the reshape error without it
        (["ValueError: num_attention_heads (32) must be divisible by num_query_groups (5)"], "model_config_invalid"),
        (["[rank0]: RuntimeError: shape '[4096, 2, 7, 128]' is invalid for input of size 1048576"],
         "model_config_invalid"),
        # the NCCL watchdog aborting, seen only from its frames or from rank 0's dump signal
        (["frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
          "std::ratio<1l, 1000l> > >) + 0x2b4 (0x7f83a09fec74 in libtorch_cuda.so)"], "nccl_timeout"),
        (["[rank0]:[E1121 01:02:03.4 ProcessGroupNCCL.cpp:1900] [PG ID 0 Rank 0] Received a dump signal due to a "
          "collective timeout from rank 5 and we will try our best to dump the debug info."], "nccl_timeout"),
        # the DataLoader's shared-memory message, wrapped at another column
        (["Exception in worker thread: It is possible that dataloader's workers are out of sh",
          "ared memory. Please try to raise your shared mem", "ory limit."], "shm_too_small"),
        # aws-ofi-nccl unable to create its objects on the EFA device, and the driver's side of it
        (["ip-10-1-2-3:77:88 [0] nccl_net_ofi_rdma_init:1234 NCCL WARN NET/OFI Unable to allocate endpoint: "
          "Cannot allocate memory"], "efa_provider_unavailable"),
        (["[  812.120001] infiniband efa_3: Failed to process command CREATE_QP (opcode 1) comp_status 7 err -12"],
         "efa_provider_unavailable"),
    ],
)  # fmt: skip
def test_wording_families(lines, label):
    assert verdict(lines).primary == label


def test_a_watchdog_abort_for_another_error_is_not_a_timeout():
    lines = [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group watchdog thread terminated with "
        "exception: CUDA error: an illegal memory access was encountered",
        "frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f83a0a01 in libtorch_cuda.so)",
    ]
    v = verdict(lines)
    assert v.primary is None and v.unrecognised


def test_a_failed_dmabuf_registration_is_an_infiniband_fault():
    """NCCL (2.13 on) probes DMA-BUF support with an unchecked call that prints nothing; its warning
    comes from registering a buffer, which fails the transport (NVIDIA/nccl#778). Until the 143rd
    batch this line was read as the probe and left out."""
    v = verdict(["h:1:2 [0] misc/ibvwrap.cc:201 NCCL WARN Call to ibv_reg_dmabuf_mr failed"])
    assert v.primary == "ib_transport_error"


NO_PLUGIN = "h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"


def test_no_net_plugin_on_an_infiniband_cluster_is_not_a_missing_efa_plugin():
    """NCCL prints 'no plugin' on every node without one; on InfiniBand its own transport is used."""
    ib = "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>"
    assert [f.label for f in verdict([NO_PLUGIN, ib, TIMEOUT]).findings] == ["nccl_timeout"]
    ipoib = "h:1:1 [0] NCCL INFO Bootstrap : Using ib0:10.1.0.5<0>"
    later = "h:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."
    assert verdict([ipoib, later]).findings == []
    assert verdict([NO_PLUGIN, TIMEOUT]).primary == "efa_plugin_missing"  # no sign of another fabric


def test_a_single_process_run_needs_no_network_transport():
    sock = "h:1:5 [0] NCCL INFO Using network Socket"
    solo = "h:1:5 [0] NCCL INFO comm 0x55d rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE"
    assert verdict([NO_PLUGIN, sock, solo]).findings == []
    many = solo.replace("nranks 1 ", "nranks 16 ")
    assert verdict([NO_PLUGIN, sock, many]).primary == "efa_plugin_missing"
    # a communicator of one (a TP group of 1) inside a job with a larger one is not a solo run
    assert verdict([NO_PLUGIN, sock, solo, many]).primary == "efa_plugin_missing"


# --- a run that stops logging ---------------------------------------------------------------------------
def _timed(i, minute, second=0):
    return (
        f"[2025-11-21 10:{minute:02d}:{second:02d}] " + _it(i, "lm loss: 3.0E+00 | loss scale: 1.0").lstrip()
    )


def test_hang_from_the_logs_own_clock():
    hang = verdict((LOGS / "fail_training_hang.log").read_text())
    (f,) = hang.findings
    assert (
        f.label == "training_hang"
        and f.line_number == 4
        and f.explanation.startswith("No iteration logged for 2403 s")
    )
    assert f.evidence[-1]["line_number"] == 5  # the later line that shows the clock moved on


def test_hang_against_the_callers_clock():
    lines = [_timed(i, i) for i in range(1, 6)]  # one iteration a minute, 10:01 .. 10:05
    last = datetime(2025, 11, 21, 10, 5)
    assert verdict(lines).findings == []  # the log itself ends right after the last iteration
    assert verdict(lines, now=last.replace(minute=9)).findings == []  # 4 min: a checkpoint save, maybe
    late = verdict(lines, now=last.replace(hour=11))  # a naive datetime is UTC, like the log
    assert late.primary == "training_hang" and late.findings[0].line_number == 5
    assert late.findings[0].explanation.startswith("No iteration logged for 3600 s after iteration 5")
    aware = verdict(lines, now=datetime(2025, 11, 21, 12, 0, tzinfo=timezone.utc))
    assert aware.primary == "training_hang"
    untimed = [_it(i, "lm loss: 3.0E+00") for i in range(5)]
    assert verdict(untimed, now=datetime(2030, 1, 1)).findings == []  # no timestamps: no claim


def test_hang_with_a_collectors_timestamps():
    """CloudWatch / Python logging put the stamp before the line: the hang check reads it there too."""
    lines = [f"2025-05-16T16:{m:02d}:00.000-07:00 |" + _it(m, "lm loss: 3.0E+00") for m in range(1, 6)]
    lines.append("2025-05-16T17:30:00.000-07:00 | still here")
    (f,) = verdict(lines).findings
    assert f.label == "training_hang" and f.line_number == 5


def test_glog_stamps_take_the_year_of_the_clock():
    lines = [_timed(i, i) for i in range(1, 6)]
    watchdog = "[rank0]:[E1121 10:06:00.1 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout"
    # the glog line (no year) is one minute after the last iteration, in the same year: no hang claim
    assert [f.label for f in verdict([*lines, watchdog]).findings] == ["nccl_timeout"]
    late = watchdog.replace("E1121 10:06", "E1121 11:06")
    assert [f.label for f in verdict([*lines, late]).findings] == [
        "training_hang",
        "nccl_timeout",
    ]  # both symptoms: the earlier first


def test_stuck_triton_lock_needs_the_clock_to_move_on():
    wait = "[RANK 0] 2026-01-25 08:13:10,742 [DEBUG] (filelock) Attempting to acquire lock 1396 on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock"
    got = "[RANK 0] 2026-01-25 08:13:10,743 [DEBUG] (filelock) Lock 1396 acquired on /root/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock"
    later = "[RANK 1] 2026-01-25 08:25:00,000 [INFO] still waiting for rank 0"
    assert verdict([wait, got, later]).findings == []
    assert verdict([wait]).findings == []  # no later timestamp: cannot tell a wait from a truncated log
    v = verdict([wait, later])
    assert v.primary == "triton_cache_hang" and v.findings[0].line_number == 1


def test_a_finished_log_that_ends_with_processes_waiting_on_one_triton_lock():
    lock = "/home/u/.triton/autotune/Fp16Matmul_2d_kernel.pickle.lock"
    waits = [
        f"2024-02-27 15:56:22,42{i} - filelock/_api.py[line:254] - DEBUG: Attempting to acquire lock 14019{i} on {lock}"
        for i in range(3)
    ]
    v = verdict(["iteration 1 ok", *waits, ""])
    assert v.primary == "triton_cache_hang" and v.findings[0].line_number == 2
    assert v.findings[0].explanation.startswith(f"3 processes were waiting for {lock} when the log ended.")
    # the run went on after them, one of them got the lock, one waiter alone, a live tail: no claim
    assert verdict([*waits, "iteration 2 ok"]).findings == []
    got = f"Lock 140191 acquired on {lock}"
    assert verdict([*waits[:2], got, waits[2]]).findings == []
    assert verdict(waits[:1]).findings == []
    assert verdict(waits, now=datetime(2024, 2, 27, 15, 57, tzinfo=timezone.utc)).findings == []
    # waiters on different locks are not a queue on one
    other = waits[1].replace("2d_kernel", "4d_kernel")
    assert verdict([waits[0], other]).findings == []


def test_scheduler_checks_on_resume_in_both_of_megatrons_names():
    """megatron-core's OptimizerParamScheduler and its 2019-2022 name, AnnealingLR, with and without values."""
    for line in (
        "AssertionError: OptimizerParamScheduler: class input value 1000 and checkpoint value 500 for total number of iterations do not match",
        "AssertionError: AnnealingLR: class input value 5600000.0 and checkpointvalue 11040000.0",
        "AssertionError: AnnealingLR: class input valueand checkpoint values for warmup iterations do not match",
    ):
        assert verdict([line]).primary == "lr_schedule_mismatch", line
    assert verdict(["AssertionError: class input value 3 differs"]).primary is None


def test_ipv6_lookup_warning_is_benign_unless_connections_fail():
    ipv6 = "[W socket.cpp:767] [c10d] The IPv6 network addresses of (job-1.internal, 50745) cannot be retrieved (gai error: -2 - Name or service not known)."
    assert verdict([ipv6, "iteration ok"]).findings == []
    failed = "[W socket.cpp:767] [c10d] The client socket has failed to connect to [job-1.internal]:50745 (errno: 22 - Invalid argument)."
    assert verdict([ipv6, failed]).primary == "master_addr_unresolved"


def test_a_huge_line_is_read_only_up_to_its_start():
    junk = "x" * 3_000_000
    v = verdict(
        ["[rank0]: torch.OutOfMemoryError: CUDA out of memory. " + junk, "y" * 2_000_000 + " lm loss: nan"]
    )
    assert v.primary == "cuda_oom" and len(v.findings[0].line) == MAX_LINE_CHARS
    assert [f.label for f in v.findings] == ["cuda_oom"]  # the NaN sits past MAX_SCAN_CHARS: not read


def test_a_trainers_repeated_stall_reports_are_a_hang():
    """Horovod's stall inspector checks once a minute: one report is a slow start, several a stop."""

    def report(minute: int) -> str:
        return (
            f"[1,0]<stderr>:[2020-01-14 13:{minute:02d}:07.704032: W horovod/common/stall_inspector.cc:105] "
            "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks "
            "and are waiting for remainder of ranks for more than 60 seconds."
        )

    v = verdict([report(48), "[1,0]<stderr>:Stalled ranks:", report(49), report(50)])
    assert v.primary == "training_hang" and v.findings[0].line_number == 1
    assert v.findings[0].explanation.startswith(
        "The trainer reported ranks waiting on a collective at 3 checks"
    )
    assert verdict([report(48)]).findings == []  # one check: a rank still loading
    step = "iteration      100/    1000 | lm loss: 2.000000E+00 |"
    assert verdict([report(48), step, report(49)]).findings == []  # a step came after the first report
    untimed = report(48).replace("[2020-01-14 13:48:07.704032: ", "[")
    assert verdict([untimed, untimed]).findings == []  # no clock: nothing says the checks were apart
    same_check = "[1,0]<stderr>:[2019-04-13 13:53:31.851588: W horovod/common/operations.cc:588] conv2d [missing ranks: 1]"
    assert verdict([same_check, same_check.replace("conv2d", "dense")]).findings == []


def test_gloo_tells_a_missing_interface_from_an_unresolved_host():
    iface = "what():  [enforce fail at gloo/transport/tcp/device.cc:88] ifa != nullptr. Unable to find address for: eth0"
    host = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:127] rp != nullptr. Unable to find address for: dgx-1.ai"
    assert verdict([iface]).primary == "socket_ifname_bad"
    assert verdict([host]).primary == "master_addr_unresolved"
    assert verdict(["[rank1]: OSError: Invalid network interface: eth"]).primary == "socket_ifname_bad"


def test_an_hca_that_cannot_be_opened_then_sockets_is_a_fallback_not_a_transport_error():
    opened = [
        "misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
        "transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx5_bond_0",
        "NCCL INFO NET/IB : No device found.",
    ]
    plugin = "NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"
    sockets = ["NCCL INFO NET/Socket : Using [0]bond0:200.1.93.2<0>", "NCCL INFO Using network Socket"]
    v = verdict([*opened, *sockets, plugin, "NCCL INFO comm 0x1 rank 0 nranks 16 - Init COMPLETE"])
    assert [f.label for f in v.findings] == ["nccl_socket_fallback"]  # a Mellanox node: no EFA plugin to miss
    assert "ulimit -l" in v.findings[0].fix and "Using network IB" in v.findings[0].fix
    # no fallback in the log: an HCA NCCL cannot open it skips (it uses the others, or sockets), so
    # the lines are listed as an unknown failure, not named a transport error; after a run's success
    # report they are nothing
    v = verdict(opened)
    assert v.primary is None and len(v.unrecognised) == 2
    success = ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}'
    v = verdict([*opened[:2], success])
    assert v.findings == [] and v.unrecognised == []


def test_a_traceback_source_line_counts_with_the_exception_that_follows():
    divides = "    val_score /= len(dataloaders['val'].dataset)"
    assert verdict([divides, "ZeroDivisionError: float division by zero"]).primary == "dataset_too_small"
    assert verdict([divides, "KeyError: 'val'"]).primary is None  # another exception: not an empty split
    asserts = "    assert args.batch_size % len(devices) == 0"
    assert verdict([asserts, "AssertionError"]).primary == "batch_size_not_divisible"
    assert verdict([asserts]).findings == []


def test_other_trainers_refusals_that_name_a_flag_or_a_data_file():
    flag = "AssertionError: Provide the argument --vocab-extra-ids 100 to the script"
    assert verdict([flag]).primary == "train_flags_invalid"
    assert (
        verdict(["[rank5]: ValueError: File data/mllm_dome.json not found."]).primary
        == "dataset_path_missing"
    )
    make = "make: *** No targets specified and no makefile found.  Stop."
    v = verdict(["building helpers", make])
    assert v.primary is None and v.unrecognised[0]["line"] == make


def test_the_eighteenth_batchs_wording_families():
    """Kubelet memory evictions, DeepSpeed's SIGKILLed rank, contained GPU faults, FM's usage banner."""
    evicted = "4m11s  Warning  Evicted  pod/egg-1  The node was low on resource: memory. Container egg was using 5053216Ki."
    assert verdict([evicted]).primary == "host_oom_killed"
    disk = (
        "Warning  Evicted  pod/x  The node was low on resource: ephemeral-storage. Container t was using 6Gi."
    )
    assert verdict([disk]).primary == "disk_full"
    ds = "dev-worker-0: [2024-10-12 06:35:03,642] [ERROR] [launch.py:325:sigkill_handler] ['python', 'train.py'] exits with return code = -9"
    timeout = "dev-worker-1: [rank12]:[E ProcessGroupNCCL.cpp:550] [Rank 12] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5) ran for 1800252 milliseconds before timing out."
    assert [f.label for f in verdict([ds, timeout]).findings] == ["host_oom_killed", "nccl_timeout"]
    assert verdict(["exits with return code = -90"]).primary is None
    contained = "torch.AcceleratorError: CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error"
    assert verdict([contained]).primary == "gpu_xid_error"
    usage = "Usage: /usr/bin/nvidia-fabricmanager-start.sh [script options] --args [arguments to run fabric manager]"
    assert (
        verdict(["Starting NVIDIA fabric manager daemon for NVLink5+...", usage]).primary
        == "fabric_manager_not_running"
    )
    assert verdict(["Starting NVIDIA fabric manager daemon for NVLink5+..."]).findings == []


def test_a_sharded_save_that_fails_its_own_integrity_check_is_no_checkpoint_mismatch():
    save = "CheckpointingException: Flattened ranges dont cover the whole shard ShardedTensor(key='optimizer.state.exp_avg') of size 2880."
    v = verdict([save])
    assert v.primary is None and v.unrecognised  # listed as an unknown failure with its line
    load = "megatron.core.dist_checkpointing.core.CheckpointingException: Global shape mismatch for loaded (1024, 768) and expected (512, 768)"
    assert verdict([load]).primary == "checkpoint_mismatch"


def test_glog_error_lines_are_error_like_but_not_absls_early_notice():
    err = 'E0221 02:33:18.782974       1 controller.go:266] error syncing tfjob: admission webhook "validatepod.volcano.sh" denied the request'
    v = verdict([err])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [err]
    absl = "E0000 00:00:1727000000.123456   12345 common_lib.cc:818] Could not set metric server port"
    assert verdict([absl]).unrecognised == []


def test_every_pattern_has_a_literal_gate():
    """A pattern without literal text of 3+ characters runs on every line of every log (the 1 GB
    benchmark in benchmarks/results/diagnose.md): give it one (e.g. spell out the alternatives)."""
    from workshop_lib.monitor import diagnose

    assert not diagnose._UNGATED, diagnose._UNGATED


def test_the_benchmarks_healthy_lines_reach_no_more_signature_tables():
    """Each line runs only the signature tables whose literal gates it holds. A new pattern whose
    gate is a word of every healthy line ("Warning" of each UserWarning; "requested number of",
    which merges into the gate "umber of" that every Megatron iteration line holds) makes the 1 GB
    benchmark 1.2-1.5x slower, and no verdict changes to show it. Raise a budget only knowingly."""
    from benchmarks.bench_diagnose import LINE, NOISE
    from workshop_lib.monitor import diagnose

    lines = [x.format(n=1, r=3) for x in NOISE] + [LINE.format(h=1, m=2, s=3, i=10, n=100, c=2560, loss=2.5)]
    hits = diagnose._block_targets(lines, "\n".join(lines))
    tables = [sum(kind == "sig" for kind, _ in hits.get(k, ())) for k in range(len(lines))]
    budget = [0, 1, 4, 0, 0, 0, 0, 4, 0, 3]  # the iteration line is the last
    over = [(n, b, line[:80]) for n, b, line in zip(tables, budget, lines, strict=True) if n > b]
    assert not over, over
    # ... nor more checks of any kind: a gate merged into one those lines hold (Hugging Face's
    # "'train_samples_per_second'" into "samples", which every iteration line holds) made the
    # iteration line try every signature's healthy counterpart, 1.2x slower on the benchmark's log
    checks = [len(hits.get(k, ())) for k in range(len(lines))]
    budget = [1, 4, 7, 1, 0, 0, 0, 13, 0, 5]
    over = [(n, b, line[:80]) for n, b, line in zip(checks, budget, lines, strict=True) if n > b]
    assert not over, over


def test_every_short_gate_is_one_reviewed():
    """A gate shorter than nine characters is found on many lines, and a new pattern gets one without
    anyone writing it: gates that contain one another, or share their first seven characters, are
    merged ("cannot find valid a data system" beside "cannot read" became "cannot "), and the
    benchmark's noise lines above hold only some words. A new short gate: check that healthy logs do
    not say it everywhere (or rewrite the pattern so its gate is its own words), then list it here."""
    from workshop_lib.monitor import diagnose

    short = {gate for gate, _ in diagnose._GATE_LIST if len(gate) < 9}
    reviewed = {
        '  Rank ', ' Killed', ' bytes ', ' failed ', ' process', '"level":', '()  ???:', '.cpp:', '.error:',
        '.go:', '/triton/', ': *** ', ': E ', ': F ', 'Aborted', 'CUDA ', 'Call to ', 'Cannot ', 'ERROR',
        'Error', 'Error: ', 'FAILED', 'FATAL', 'FasTrak', 'Fatal', 'Inf', 'Invalid ', 'Killed', 'Memory ',
        'NAN', 'NAN loss', 'NET/OFI ', 'NaN', 'NaN loss', 'PANIC', 'Please c', 'Reason:', 'SIGBUS', 'Timeout',
        'Using [', 'WARN ', 'Warning', '[E ', '[Errno ', '_epoch', 'assert', 'bash: ', 'code', 'code=802',
        'dataset', 'diverged', 'error', 'error: ', 'errors.', 'exitcode', 'failed ', 'gIB', 'grad',
        'hipError', 'in load_', 'inf', 'infinite', 'len(', 'm loss', 'mount.', 'mpirun ', 'nNodes ', 'nan',
        'nan loss', 'nranks ', 'os.path.', 'oss', 'oss is ', 'panic: ', 'parallel', 'pyxis: ', 'rror',
        'rror 802', 'rror(', 'samples', 'status', 'train: [', 'ulysses_', 'valid: [', 'waiting', 'while c',
        'xception', '已杀死',
    }  # fmt: skip
    assert short - reviewed == set(), "new short gates"
    assert reviewed - short == set(), "short gates no longer made: drop them from the list"


def test_no_efa_provider_is_context_and_a_socket_fallback_names_it():
    """aws-ofi-nccl finding no EFA is a degraded set-up: a later fault of its own is the cause, and
    NCCL that went on over TCP sockets is slow, not broken."""
    ofi = "algo-2:78:78 [6] find_ofi_provider:543 NCCL WARN NET/OFI Couldn't find any optimal provider"
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 6; 15.78 GiB total capacity)"
    assert [f.label for f in verdict([ofi, oom]).findings] == ["cuda_oom", "efa_provider_unavailable"]
    socket = [
        "algo-2:678:678 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.175.185<0>",
        "NCCL INFO Using network Socket",
    ]
    v = verdict([ofi, *socket, "NCCL INFO comm 0x1 rank 8 nranks 16 - Init COMPLETE"])
    assert [f.label for f in v.findings] == ["nccl_socket_fallback"]
    assert verdict([ofi]).primary == "efa_provider_unavailable"


def test_the_nineteenth_batchs_wording_families():
    cases = {
        "CUDA error: 2": "cuda_oom",
        "FATAL:   while building SIF from layers: error writing layer: write /users/x/.singularity/cache/blob: disk quota exceeded": "disk_full",
        "  Warning  ProvisioningFailed  2s (x4 over 9s)  fsx.csi.aws.com  failed to provision volume": "volume_mount_failed",
        "[rank0]: ValueError: Invalid reshard_after_forward_policy: invalid.": "train_flags_invalid",
        "AssertionError: Currently, the compatibility between 'autotp' and 'zero_stage = 3' has not been validated": "deepspeed_config_invalid",
        "nid006365:180142:180163 [0] net.cc:626 NCCL WARN Error: network AWS Libfabric not found.": "efa_plugin_missing",
        "AssertionError: dp_degree is inconsistent before and after checkpoint, DataLoader resharding is not supported yet.": "checkpoint_mismatch",
    }
    _assert_named(cases)
    for line in ("CUDA error: 20", "CUDA error: 2.5 s", "ValueError: Invalid shape: (3, 4)"):
        assert verdict([line]).primary != "cuda_oom" and verdict([line]).primary != "train_flags_invalid", (
            line
        )
    _assert_benign(
        [" 5: [compute-gpu-1:77189] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168"]
    )


def _assert_named(cases: dict[str, str]) -> None:
    """Each line alone gets its label as the primary cause."""
    for line, label in cases.items():
        assert verdict([line]).primary == label, line


def _assert_benign(lines: list[str]) -> None:
    for line in lines:
        v = verdict([line])
        assert v.findings == [] and v.unrecognised == [], line


def _assert_unknown(lines: list[str]) -> None:
    """Each line alone is an unknown failure that the verdict lists, not a silent log."""
    for line in lines:
        v = verdict([line])
        assert v.primary is None and [u["line"] for u in v.unrecognised] == [line], line


def test_the_twentieth_batchs_wording_families():
    cases = {
        "MemoryError": "host_oom_killed",
        "[rank3]: MemoryError: std::bad_alloc": "host_oom_killed",
        "(ActorModelRayActor pid=8249) Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.": "host_oom_killed",
        'AssertionError: You are using an untested ZeRO Optimizer. Please add <"zero_allow_untested_optimizer": true> in the configuration file to use it.': "deepspeed_config_invalid",
        "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error": "gpu_xid_error",
        "  Warning  Pending  4m23s  kueue-admission  couldn't assign flavors to pod set job: resource cpu unavailable in ClusterQueue": "pod_pending_insufficient_resources",
        "finetune.py: error: unrecognized arguments: --DDP-impl local": "train_flags_invalid",
        "torchrun: error: the following arguments are required: training_script": "train_flags_invalid",
        "pretrain_gpt.py: error: argument --tensor-model-parallel-size: invalid int value: 'two'": "train_flags_invalid",
        "RuntimeError: Empty dataset!": "dataset_too_small",
        '    raise RuntimeError("Empty dataset!")': "dataset_too_small",
        "ValueError: Error occurred while packing the dataset. Make sure that your dataset has enough samples to at least yield one packed sequence.": "dataset_too_small",
    }
    _assert_named(cases)
    # the GPU's own out-of-memory errors are not host memory
    for line in (
        "torch.OutOfMemoryError: CUDA out of memory.",
        "torch.cuda.OutOfMemoryError: CUDA out of memory.",
    ):
        assert verdict([line]).primary == "cuda_oom", line
    # a Kubernetes event of a failure reason is error-like: an unknown failure, not a silent log
    event = '  Warning  FailedCreate  2m52s (x17 over 4m4s)  statefulset-controller  create Pod w-0 failed error: Pod "w-0" is invalid'
    v = verdict([event])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [event]
    assert verdict(["  Normal   Created  12s  kubelet  Created container pytorch"]).unrecognised == []
    # NCCL probing for InfiniBand in an image without rdma-core: no finding, no unknown error
    ibv = "h0913n:12877:12877 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"
    assert verdict([ibv]).findings == [] and verdict([ibv]).unrecognised == []


def test_a_run_on_one_node_needs_no_network_transport():
    """NCCL's node count and nccl-tests' device table tell a single-node run, where the network
    plugin and the socket transport carry nothing; two nodes, or two hosts, cancel it."""
    sock = "h:1:5 [0] NCCL INFO Using network Socket"
    one = "h:1:5 [0] NCCL INFO comm 0x4089 rank 6 nRanks 8 nNodes 1 localRanks 8 localRank 6 MNNVL 0"
    assert verdict([NO_PLUGIN, sock, one]).findings == []
    two = one.replace("nNodes 1 localRanks 8", "nNodes 2 localRanks 8").replace("nRanks 8", "nRanks 16")
    assert verdict([NO_PLUGIN, sock, one, two]).primary == "efa_plugin_missing"
    table = [
        f"#  Rank {r:2d} Group  0 Pid  12877 on h0913n-ubuntu device {r:2d} [0x0e] NVIDIA A100"
        for r in range(4)
    ]
    old_table = [
        f"#   Rank {r:2d} Pid  12877 on h0913n-ubuntu device {r:2d} [0x0e] GeForce GTX 1080 Ti"
        for r in range(2)
    ]
    assert verdict([*table, NO_PLUGIN, sock]).findings == []
    assert verdict([*old_table, NO_PLUGIN, sock]).findings == []
    other_host = table[-1].replace("h0913n-ubuntu", "h0914n-ubuntu")
    assert verdict([*table, other_host, NO_PLUGIN, sock]).primary == "efa_plugin_missing"


def test_a_log_that_ends_in_a_stack_dump_of_live_processes_is_a_hang():
    steps = [_timed(i, i) for i in range(1, 4)]
    py_spy = [
        "Process 2391: python train.py",
        'Thread 0x7FA6E7C01740 (idle): "MainThread"',
        "    wait (threading.py:302)",
        "    get (queue.py:170)",
    ]
    v = verdict([*steps, *py_spy])
    assert v.primary == "training_hang" and v.findings[0].line_number == 5
    assert "stack dump" in v.findings[0].explanation
    frames = ["    synchronize (torch/cuda/__init__.py:721)", "    stop (nemo/utils/timers.py:115)"]
    assert verdict([*steps, *frames]).primary is None  # two frames: not yet a dump
    assert (
        verdict([*steps, *frames, "    fit (pytorch_lightning/trainer/trainer.py:532)"]).primary
        == "training_hang"
    )
    gdb = [
        "(gdb) py-bt",
        "Traceback (most recent call first):",
        "  <built-in method allreduce of PyCapsule object>",
    ]
    assert verdict([*steps, *gdb]).primary == "training_hang"
    # the run went on after the dump, or the dump belongs to a crash: no hang
    assert verdict([*py_spy, *steps]).primary is None
    crash = [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f (most recent call first):",
    ]
    v = verdict([*steps, *crash])
    assert v.primary is None and v.unrecognised


def test_the_twenty_first_batchs_wording_families():
    cases = {
        'Jul 20 16:15:36 edge-1:  Kernel module "ib_umad" has not been loaded, fabric manager cannot be started': "fabric_manager_not_running",
        "failed to get nvlink remote pci info: failed to get nvlink state: GPU is lost,": "gpu_xid_error",
        "[rank1]: ValueError: The global train batch size (7 x 1) must be evenly divisible by the number of generations per prompt (8).": "batch_size_not_divisible",
        "ValueError: When using `deepspeed_config_file`, the following accelerate config variables will be ignored: ['gradient_accumulation_steps',": "deepspeed_config_invalid",
        'Thu Jun 11 08:06:32 UTC 2020 ERROR: { "status": "Failure", "message": "Failed to mount device /dev/ at /var/lib/kubelet/pods/56e9/volumes/azure~blobfuse/pv, accountname:x': "volume_mount_failed",
    }
    _assert_named(cases)
    # error-like: nccl-tests' NCCL check, the API server refusing an object
    _assert_unknown(
        [
            "NCCL failure all_reduce.cu:95 'unhandled cuda error'",
            'The CustomResourceDefinition "mpijobs.kubeflow.org" is invalid: status.storedVersions[0]: Invalid value: "v2beta1": must appear in spec.versions',
            'Error from server (NotFound): pytorchjobs.kubeflow.org "llama" not found',
        ]
    )
    # torch.compile falling back to eager: dynamo logs the compiler's error as a warning
    dynamo = "[rank0]:W0618 21:57:02.561000 1489278 torch/_dynamo/convert_frame.py:1277] torch._inductor.exc.InductorError: CalledProcessError: Command '['cc']' returned non-zero exit status 1."
    assert verdict([dynamo]).unrecognised == []


def test_one_stall_report_after_training_was_stepping_is_a_hang():
    steps = [
        f"INFO:root:[step {i}]  mlm_loss=1.41  nsp_loss= 0.02   throughput=16.2K tks/s"
        for i in (20998, 20999)
    ]
    report = "[1,0]<stderr>:[2019-10-09 05:33:38.249493: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be reduced"
    v = verdict([*steps, report, "[1,0]<stderr>:Stalled ranks:"])
    assert v.primary == "training_hang" and v.findings[0].line_number == 3
    assert "after training had been stepping" in v.findings[0].explanation
    # one report at the start (a rank still loading), or a step after it: no hang
    assert verdict([report, "[1,0]<stderr>:Stalled ranks:"]).primary is None
    assert verdict([steps[0], report, steps[1]]).primary is None


def test_the_twenty_second_batchs_wording_families():
    cases = {
        "FileNotFoundError: /fs/fast/u1/data/github/github-train.jsonl not found": "dataset_path_missing",
        "FileNotFoundError: Unable to find '/root/data/gsm8k/train.parquet'": "dataset_path_missing",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/pile/train.jsonl.zst'": "dataset_path_missing",
        "NCCL INFO Could not find: aws-ofi libnccl-net-aws-ofi.so": "efa_plugin_missing",
        "# Command terminated by signal 9": "host_oom_killed",
        "slurmstepd: error: pyxis: failed to import docker image": "image_pull_error",
        "| Error                     | GPU 3 has uncorrectable memory errors and row  |": "gpu_xid_error",
    }
    _assert_named(cases)
    # a missing JSON file is as often a config as data: one whose name says config is not
    # dataset_path_missing but a flag naming a file that is not there
    assert (
        verdict(["FileNotFoundError: [Errno 2] No such file or directory: 'ds_config.json'"]).primary
        == "train_flags_invalid"
    )
    # benign: NCCL's RAS port, aws-ofi-nccl's version probe, the elastic agents' keep-alive at shutdown
    _assert_benign(
        [
            "[rank0]:[2025-07-31 14:11:12] devvm:1655756:1706127 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use",
            "algo-2:183:360 [3] configure_nvls_option:287 NCCL WARN NET/OFI Could not find ncclGetVersion symbol",
            "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'n1_78331_0' has failed to send a keep-alive heartbeat to the rendezvous '2092' due to an error of type RendezvousTimeoutError.",
        ]
    )
    assert (
        verdict(["torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"]).primary
        == "rendezvous_timeout"
    )


def test_colour_codes_do_not_hide_an_error():
    """A notebook's (or Ray's, or rich's) coloured traceback: the words are read without the escapes,
    in the block pass and line by line alike, and quoted without them."""
    coloured = (
        "\x1b[0;31mTypeError\x1b[0m: embedding(): argument 'indices' (position 2) must be Tensor, not list"
    )
    v = verdict(["\x1b[0;31m-----\x1b[0m", coloured])
    assert [u["line"] for u in v.unrecognised] == [
        "TypeError: embedding(): argument 'indices' (position 2) must be Tensor, not list"
    ]
    oom = "\x1b[36m(Worker pid=3)\x1b[0m torch.\x1b[1mOutOfMemoryError\x1b[0m: CUDA out of memory."
    assert verdict([oom]).primary == "cuda_oom"
    scan = _Scan()
    scan.feed(oom)
    assert scan.result().primary == "cuda_oom"


def test_the_twenty_third_batchs_wording_families():
    cases = {
        # (the expandable-segment warning alone is no longer one: the sixty-first batch's test)
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62": "cuda_oom",
        "Warning: Detected a GPU pending row remap for GPU ID 7, please re-boot this node": "gpu_xid_error",
        "    message: 'couldn''t assign flavors to pod set main: insufficient quota for cpu": "pod_pending_insufficient_resources",
        "    Message:               max cluster limit reached, nodepools out of resources: default-nodepool (cpu, memory)": "pod_pending_insufficient_resources",
        "[rank0]: ValueError: FlexAttention is not compatible with selective AC yet. See https://github.com/pytorch/pytorch/issues/147879": "train_flags_invalid",
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.": "parallelism_config_invalid",
        "ValueError: Requested token count exceeds the model's maximum context length of 32768 tokens.": "model_config_invalid",
        "[Sat Mar  4 04:10:52 2023] INFO: task python:280058 blocked for more than 120 seconds.": "training_hang",
    }
    _assert_named(cases)
    assert verdict(["INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds."]).primary is None
    # error-like: an event whose reason is an error; glog's error level after a prefix
    _assert_unknown(
        [
            "  Warning  UnexpectedAdmissionError  13s   kubelet   Allocate failed due to rpc error",
            "   52 E0218 16:32:31.384758   11849 job_controller_handler.go:188] Failed to update Pod <default/w-0>: duplicated pod",
        ]
    )


def test_a_run_that_reported_success_has_no_unknown_failure_and_no_teardown_symptoms():
    """Error-like lines of a run that said it succeeded did not stop it; symptoms after the report
    are its teardown; a cause after it (the final save) is still a failure."""
    stop = ':::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}'
    plugin = "ERROR:2026-02-06 17:06:48,122:jax._src.xla_bridge:487: Jax plugin configuration error"
    proxy = "0: GPU-94:2767293:2769466 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable"
    v = verdict([plugin, stop, proxy])
    assert v.primary is None and not v.failed
    assert verdict([plugin, proxy]).unrecognised  # without the report both are listed
    timeout = "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out."
    assert verdict(["Training is finished", timeout]).primary is None
    assert verdict([timeout, "Training is finished"]).primary == "nccl_timeout"  # before the report
    full = "OSError: [Errno 28] No space left on device"
    assert verdict(["Training completed. Do not forget to share your model", full]).primary == "disk_full"
    # the agents' shutdown of a finished rendezvous is not an unresolved master
    gai = "[W socket.cpp:663] [c10d] The IPv6 network addresses of (w-0, 23456) cannot be retrieved (gai error: -2 - Name or service not known)."
    shutdown = "[WARNING] The node 'm-0_7_0' has failed to shutdown the rendezvous 'none' due to an error of type RendezvousConnectionError."
    assert verdict([gai, shutdown]).primary is None


def test_the_twenty_fourth_batchs_wording_families():
    cases = {
        "  what():  CUDA error: uncorrectable NVLink error detected during the execution": "gpu_xid_error",
        "RuntimeError: DataLoader worker (pid 4161) is killed by signal: Killed.": "host_oom_killed",
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 2.0237e-320": "nan_loss",
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 8.0": "nan_loss",
    }
    _assert_named(cases)
    # Apex's early overflows while the scale settles are fp16's warm-up, not a collapse
    apex = "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {}"
    warmup = [apex.format(s) for s in (1024.0, 512.0)]
    assert verdict(warmup).primary is None and not verdict(warmup).failed
    # Megatron's scheduler refusing its flags: the assert's own source line, then a bare AssertionError
    frame = '  File "megatron/core/optimizer_param_scheduler.py", line 156, in __init__'
    for check in ("assert self.lr_decay_steps > 0", "assert self.warmup_steps < self.decay_steps"):
        assert verdict([frame, f"    {check}", "AssertionError"]).primary == "train_flags_invalid"
        assert verdict([frame, f"    {check}"]).primary is None  # the source line alone raised nothing
    # error-like: an exception class from a module of errors; the CUDA samples' failed runtime call
    _assert_unknown(
        [
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 126978, Hardware limit: 101376.",
            "Failed to allocate device vector A (error code forward compatibility was attempted on non supported HW)!",
        ]
    )


def test_the_twenty_fifth_batchs_wording_families():
    cases = {
        "  NCCL INFO NET/Plugin: Could not find: ofi": "efa_plugin_missing",
        "NCCL INFO NET/Plugin: libnccl-net-ofi.so: /usr/lib/libibverbs.so.1: version `IBVERBS_PRIVATE_34' not found": "efa_plugin_missing",
        "/var/spool/job_scripts/10505862: line 18: 16348 Killed                  python3 consolidate.py --save-prefix /groups/opt": "host_oom_killed",
        "[rank5]: AssertionError: World size 8 is not divisible by tp_size 1 * pp_size 3": "parallelism_config_invalid",
        "[default2]:[rank2]: AssertionError: Tokenizer path must be specified.": "train_flags_invalid",
        "AssertionError: You must have a training stage starting at 1 in the config's data_stages": "train_flags_invalid",
        "b'mount.nfs4: Connection timed out'": "volume_mount_failed",
        'E0503 08:47:46.370467       1 driver.go:106] GRPC error: rpc error: code = Internal desc = Could not mount "fs-0:/" at "/var/lib/kubelet/pods/8/volumes/kubernetes.io~csi/pvc-2/mount": mount failed: exit status 32': "volume_mount_failed",
        "slurmstepd: error: pyxis:     enroot-mount: failed to mount: /home/u/coco2017 at /tmp/enroot-data/user-0/pyxis_od/data: Permission denied": "volume_mount_failed",
    }
    _assert_named(cases)
    # a device-side assert out of the embedding lookup: a token id past the vocabulary
    assert_line = "RuntimeError: CUDA error: device-side assert triggered"
    lookup = "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)"
    assert verdict([lookup, assert_line]).primary == "vocab_mismatch"
    assert verdict([assert_line]).primary is None  # anywhere else it says nothing of the vocabulary
    # Google Cloud's own net plugin missing is not aws-ofi-nccl: listed as an unknown failure
    gib = [
        "h:565:565 [7] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
        "h:562:562 [5] net.cc:579 NCCL WARN Error: network gIB not found.",
    ]
    v = verdict(gib)
    assert v.primary is None and v.unrecognised and verdict(gib[:1]).primary == "efa_plugin_missing"
    # enroot failing on the node before any pull is not the image
    pyxis = [
        "slurmstepd: error: pyxis: failed to import docker image",
        "slurmstepd: error: pyxis:     mkdir: cannot create directory '/run/enroot': Permission denied",
    ]
    assert verdict(pyxis[:1]).primary == "image_pull_error" and verdict(pyxis).primary is None
    _assert_unknown(
        [
            "(head, rank=0, pid=1113) bash: torchrun: command not found",
            "sh: 1: Leader_Node_Address: not found",
        ]
    )


def test_a_nan_only_in_validation_with_training_going_on_is_not_a_diverging_run():
    """A validation loss of NaN while training steps log a finite loss after it is evaluation's own
    fault: listed as an unknown failure, not nan_loss (whose advice is about diverging)."""
    step = "2026-03-04 18:53:57 | INFO | root | step {} | epoch 0 | loss {} | grad_norm 7.5 | lr 5.00e-06"
    val = "2026-03-04 18:59:15 | INFO | root | [val] step 3 | epoch 0 | loss nan | lr 5.00e-06"
    v = verdict([step.format(2, 1.97), val, step.format(4, 1.82)])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [val]
    assert verdict([step.format(2, 1.97), val]).primary == "nan_loss"  # nothing after it: may diverge
    assert verdict([val, step.format(4, "nan")]).primary == "nan_loss"  # training's own loss is NaN
    megatron = " validation loss at iteration 100 | lm loss value: nan | lm loss PPL: nan |"
    assert verdict([megatron, step.format(101, 1.8)]).primary is None


def test_the_twenty_sixth_batchs_wording_families():
    cases = {
        "RuntimeError: [enforce fail at event_gpu.cc:17] error == cudaSuccess. 2 vs 0. Error at: /home/sd/pytorch/caffe2/core/event_gpu.cc:17: out of memory ": "cuda_oom",
        'RuntimeError: [/opt/dali/dali/util/std_file.cc:29] Assert on "fp_ != nullptr" failed: Could not open file /data/train.rec: No such file or directory': "dataset_path_missing",
        '        "reason": "NVIDIA-H100-80GB-HBM3 checked fabric state; fabric manager found but not active",': "fabric_manager_not_running",
        "[f8107735c673549d7acd-n0-0] terminated with exit code (137). Reason [Error]. Message: ": "host_oom_killed",
        "RuntimeError: [enforce fail at CPUAllocator.cpp:71] . DefaultCPUAllocator: can't allocate memory: you tried to allocate 244470272 bytes. Error code 12 (Cannot allocate memory)": "host_oom_killed",
        "(skyrl_entrypoint pid=819281, ip=172.25.105.154) OSError: [Errno 12] Cannot allocate memory": "host_oom_killed",
        # (fairseq512's second halving below 1: its first, 0.25, is where a healthy wav2vec 2.0
        # fine-tune of the hundred-and-fortieth batch stopped and trained on)
        "| WARNING: overflow detected, setting loss scale to: 0.125": "nan_loss",
        "2025-10-09 20:16:32,652    WARNING services.py:2159 -- WARNING: The object store is using /tmp instead": "shm_too_small",
    }
    _assert_named(cases)
    # fairseq trains at a loss scale of 1 and more (a warm-up may dip to 0.25): only a scale below
    # 0.25 is a collapse there
    note = "2021-03-08 18:06:56 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: {}"
    assert verdict([note.format(2.0), note.format(1.0)]).primary is None
    # Open MPI's HCOLL without an HCA, RCCL's optional MSCCL++: healthy starts
    _assert_benign(
        [
            "[ubuntu:2879955] Error: coll_hcoll_module.c:310 - mca_coll_hcoll_comm_query() Hcol library init failed",
            "ai3:155:942 [4] init.cc:1954 NCCL WARN MSCCL++: Cannot enable MSCCL++; environment is not MSCCL compatible",
        ]
    )
    # error-like: TensorFlow's error form, the dynamic loader's refusal
    _assert_unknown(
        [
            "UnknownError (see above for traceback): ncclAllReduce failed: invalid data type",
            "> gpud: symbol lookup error: gpud: undefined symbol: nvmlDeviceGetGpuFabricInfoV",
        ]
    )


def test_a_traceback_reported_as_handled_is_not_a_failure():
    """NeMo's safe_import logs the traceback of an optional symbol a Megatron release lacks and goes
    on: the exception that ends it (on that rank, soon after) is not a failure; a later one is."""
    handled = [
        " 2: Import of quick_gelu from megatron.core.fusions.fused_bias_geglu failed with: Traceback (most recent call last):",
        ' 2:   File "/workspace/NeMo/nemo/utils/import_utils.py", line 319, in safe_import_from',
        " 2: AttributeError: module 'megatron.core.fusions.fused_bias_geglu' has no attribute 'quick_gelu'",
    ]
    assert not verdict(handled).failed
    later = " 2: RuntimeError: shapes cannot be multiplied"
    assert [u["line"] for u in verdict([*handled, later]).unrecognised] == [later]
    other_rank = (
        " 3: AttributeError: module 'megatron.core.fusions.fused_bias_geglu' has no attribute 'quick_gelu'"
    )
    assert verdict([handled[0], other_rank]).unrecognised  # another rank's exception is its own


def test_the_twenty_seventh_batchs_wording_families():
    cases = {
        "19:11:09  [autoscaler] Launching instances failed: ... api error InsufficientInstanceCapacity:": "pod_pending_insufficient_resources",
        "2024-04-19 02:49:08 Pending - Training job failed for insufficient capacity": "pod_pending_insufficient_resources",
        "MisconfigurationException: `Trainer(strategy='ddp')` or `Trainer(accelerator='ddp')` is not compatible with an interactive environment. Run your code as a script": "train_flags_invalid",
    }
    _assert_named(cases)
    # the kubelet's first start on a node, at error level, is healthy
    _assert_benign(
        [
            'Jun 03 12:14:39 kind-worker kubelet[228]: E0603 12:14:39.248618     228 manager.go:525] "Failed to read data from checkpoint" err="checkpoint is not found" checkpoint="kubelet_internal_checkpoint"',
            'Jun 03 12:14:39 kind-worker kubelet[228]: E0603 12:14:39.255797     228 eviction_manager.go:272] "eviction manager: failed to check if we have separate container filesystem. Ignoring." err="no imagefs label for configured runtime"',
            r'Jun 03 12:14:39 kind-worker kubelet[228]: E0603 12:14:39.256437     228 eviction_manager.go:297] "Eviction manager: failed to get summary stats" err="failed to get node info: node \"kind-worker\" not found"',
        ]
    )
    # zap's DPANIC in an operator's log is error-like
    _assert_unknown(["2021-08-23T13:43:50.931Z        DPANIC  controllers.ClusterPolicy"])
    # "peer access is not supported" is a GPU pair without P2P (PCIe L4/L40S), not an NVLS set-up:
    # listed as an unknown failure; NVLS's own lines come from transport/nvls.cc
    p2p = [
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Cuda failure 217 'peer access is not supported between these two devices'",
    ]
    v = verdict(p2p)
    assert v.primary is None and v.unrecognised
    nvls = "node2:242431:242474 [0] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'"
    assert verdict([nvls]).primary == "nvls_peer_access"


def test_the_twenty_eighth_batchs_wording_families():
    cases = {
        # other accelerators' device-memory exhaustion
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of 191.98 GiB": "cuda_oom",
        "RuntimeError: [Rank:3] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::1073741824 (1024)MB": "cuda_oom",
        "ERROR  TDRV:copy_and_stage_mr                       Failed to reserve one tmpbuf memory": "cuda_oom",
        # ROCm's counterpart of an Xid
        "HW Exception by GPU node-2 (Agent handle: 0x55d0c8a1b2c0) reason :GPU Hang": "gpu_xid_error",
        # Go's lowercase ENOSPC (containerd unpacking a layer, the kubelet) is a full disk; on /dev/shm
        # it is shared memory
        "Error pulling nvcr.io/nvidia/nemo:25.02: failed to register layer: write /usr/lib/libcudnn.so.9: no space left on device": "disk_full",
        "failed to write /dev/shm/nccl-AbCdEf: no space left on device": "shm_too_small",
        # gloo's report of a peer that went away
        "RuntimeError: [/opt/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection reset by peer [10.1.2.3]:4211": "nccl_peer_connection_closed",
        # accelerate given a --deepspeed path that does not exist: DeepSpeed's configuration is
        # missing, whatever flag named it (train_flags_invalid until the 143rd batch brought three
        # more threads of it, labelled deepspeed_config_invalid)
        "ValueError: Expected a string path to an existing deepspeed config, or a dictionary, or a base64 encoded string. Received: configs/ds_z3.json": "deepspeed_config_invalid",
    }
    _assert_named(cases)
    # a c10 backtrace's frames ("c10::Error::Error(") are not errors of their own: the message above
    # the trace says what happened (here a warning of a retried TCPStore read, healthy)
    _assert_benign(
        [
            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x80 (0x7f3a2c869c10 in /usr/lib/python3/torch/lib/libc10.so)",
            "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:679 (most recent call first):",
        ]
    )
    assert verdict(["RuntimeError::run failed"]).unrecognised == []  # a C++ scope, not "RuntimeError: ..."
    # ProcessGroupNCCL's watchdog seeing its own shutdown prints a c10 backtrace: that is no stack dump
    # of a stopped run; faulthandler's dump at the end of a log still is
    shutdown = [
        "I0228 14:05:56.114109 1619334 ProcessGroupNCCL.cpp:484] [Rank 3] found async exception when checking for NCCL errors: NCCL communicator encountered error set by ProcessGroupNCCL: Process Group shutdown on rank 3",
        "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1729 (most recent call first):",
        "# 0  c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&)",
        "# 1  c10d::ProcessGroupNCCL::ncclCommWatchdog()",
    ]
    v = verdict(shutdown)
    assert v.primary is None and v.findings == [] and v.unrecognised == [], v.to_dict()
    dump = [
        "Current thread 0x00007f3b5c9ff740 (most recent call first):",
        '  File "/usr/lib/python3/torch/distributed/distributed_c10d.py", line 2050 in all_reduce',
        '  File "/workspace/train.py", line 88 in train_step',
    ]
    assert verdict(dump).primary == "training_hang"


def test_the_twenty_ninth_batchs_wording_families():
    cases = {
        # the shell's report of a SIGKILLed foreground command, alone or after a progress bar
        "Killed": "host_oom_killed",
        "Loading checkpoint shards:  67%|██████▋   | 2/3 [01:02<00:31, 31.2s/it]Killed": "host_oom_killed",
        "  0%|          | 0/2 [00:00<?, ?it/s]已杀死": "host_oom_killed",
        # SkyPilot without capacity for the GPUs asked for
        "sky.exceptions.ResourcesUnavailableError: Failed to provision all possible launchable resources. Relax the task's resource requirements: 1x AWS(p5.48xlarge)": "pod_pending_insufficient_resources",
    }
    _assert_named(cases)
    # "killed" inside prose, a word before "Killed" that is not the shell's, a status column: not a kill
    for line in ("the process was killed by the user", "Status: Killed by admin request"):
        assert verdict([line]).primary != "host_oom_killed", line
    # enroot filling /run/pyxis while it builds the squashfs, quoted in pyxis' printout: the disk, not
    # the image (pyxis' own summary line alone still means the image)
    pyxis = [
        "slurmstepd: error: pyxis: failed to import docker image",
        "slurmstepd: error: pyxis: printing contents of log file ...",
        "slurmstepd: error: pyxis:     Write failed because No space left on device",
    ]
    assert verdict(pyxis).primary == "disk_full"
    assert verdict(pyxis[:1]).primary == "image_pull_error"
    # DeepSpeed's launcher killing its ranks is a failure (what it means alone: the thirty-second batch)
    assert verdict(
        ["[2024-01-22 16:50:49,553] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1080504"]
    ).failed


def test_the_thirtieth_batchs_wording_families():
    cases = {
        # XLA's device allocator (JAX, TensorFlow on GPUs)
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 bytes.": "cuda_oom",
        # JAX's coordination service: processes that never registered, and a task that died
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. Timed out task names:": "rendezvous_timeout",
        "Original error: DEADLINE_EXCEEDED: Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0.": "rendezvous_timeout",
        "F1002 08:11:02.000001  4242 client.h:77] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs": "nccl_peer_connection_closed",
        # a Slurm hostlist given as the master address; a plain host name's IPv6 warning stays benign
        "[W socket.cpp:653] [c10d] The IPv6 network addresses of (gpu-[001-004], 29500) cannot be retrieved (gai error: -2 - Name or service not known).": "master_addr_unresolved",
        # llm.c's shard smaller than one batch of every process
        "train_gpt2cu: llmc/dataloader.h:186: void dataloader_init(DataLoader*, const char*, size_t, size_t, int, int, int): Assertion `shard_ntok >= (int64_t) (num_processes * B * T + 1)' failed.": "dataset_too_small",
        # Fabric Manager's service failing to start
        "Dec 01 09:00:01 gpu7 systemd[1]: nvidia-fabricmanager.service: Main process exited, code=exited, status=1/FAILURE": "fabric_manager_not_running",
        "gpu7 nv-fabricmanager[2211]: fabric manager NVIDIA GPU driver interface version 535.161.08 don't match with driver version 535.183.01. Please update": "fabric_manager_not_running",
        # pyxis refusing a mount entry; enroot finding no manifest for the tag
        "srun: error: pyxis: could not add mount entry: data/tokens:/workspace/data": "volume_mount_failed",
        "slurmstepd: error: pyxis:     [ERROR] URL https://nvcr.io/v2/nvidia/nemo/manifests/25.13 returned error code: 404 Not Found": "image_pull_error",
        # a YAML config that does not parse
        "yaml.scanner.ScannerError: while scanning for the next token": "train_flags_invalid",
        "ruamel.yaml.constructor.DuplicateKeyError: while constructing a mapping": "train_flags_invalid",
    }
    _assert_named(cases)
    _assert_benign(
        [
            "[W socket.cpp:767] [c10d] The IPv6 network addresses of (trainer-master-0, 29500) cannot be retrieved (gai error: -2 - Name or service not known)."
        ]
    )


def test_the_thirty_first_batchs_wording_families():
    _assert_named({"MODEL DIVERGED": "nan_loss", "12: Model diverged at epoch 310, stopping": "nan_loss"})
    # a Go program's panic, bash's `set -u` on an unset variable, an MLPerf run stopped short of its
    # target: failures the verdict lists when nothing names them
    _assert_unknown(
        [
            "panic: runtime error: invalid memory address or nil pointer dereference",
            "./run_with_docker.sh: line 25: DATADIR: unbound variable",
            ':::MLLOG {"namespace": "", "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "aborted"}}',
        ]
    )
    assert (
        verdict(['{"key": "run_stop", "value": null, "metadata": {"status": "success"}}']).unrecognised == []
    )
    # SHARP finding its aggregation tree taken goes on with the low-latency tree
    _assert_benign([" 7: [luna-0022:0:4111422 - comm.c:364] ERROR Failed to lock SAT tree. ret:0x4"])


def test_the_thirty_second_batchs_wording_families():
    _assert_named(
        {
            # PaddlePaddle's allocator; accelerate checking its port; SpeechBrain giving up on the loss;
            # verl splitting a batch over workers it does not divide by
            "Out of memory error on GPU 0. Cannot allocate 172.000000MB memory on GPU 0, 23.486572GB memory has been allocated and available memory is only 167.062500MB.": "cuda_oom",
            "ConnectionError: Tried to launch distributed communication on port `29500`, but another process is utilizing it. Please specify a different port": "master_port_in_use",
            "ValueError: Loss is not finite and patience is exhausted. To debug, wrap `fit()` with autograd's `detect_anomaly()`, e.g.": "nan_loss",
            "AssertionError: only support equal chunk. Got size of DataProto 60 and chunk 8.": "batch_size_not_divisible",
        }
    )
    # a finiteness check that passed, or the word in prose, is no NaN
    _assert_benign(["checking that the loss is finite before the first step", "all gradients finite: True"])
    # a CLI that caught its subcommand's exception and printed it as a warning: listed, not silent
    _assert_unknown(
        ["04/02 11:50:24 - mmengine - WARNING - WARNING: command error: 'No module named 'xtuner.parallel''!"]
    )


def test_a_launcher_kill_with_nothing_before_it_is_a_silent_death():
    """DeepSpeed's launcher kills the ranks after one exited non-zero; if no rank said why, it died by
    a signal (the OOM killer, most often): host_oom_killed, with that reasoning in the explanation."""
    kill = [
        "[2023-11-21 20:42:18,931] [INFO] [comm.py:637:init_distributed] cdb=None",
        "[2023-11-21 20:42:22,682] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 156890",
        "[2023-11-21 20:42:22,704] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 156891",
    ]
    v = verdict(kill)
    assert v.primary == "host_oom_killed" and v.findings[0].line_number == 2
    assert "died without a word" in v.findings[0].explanation
    # a rank's own error before the kill is the failure (an unknown one here, listed), not a silent death
    error = ["KeyError: 'input_ids'"]
    v = verdict(error + kill)
    assert v.primary is None and v.unrecognised[0]["line"] == error[0]
    # ... and after it too (a rank's traceback can reach the log after the launcher's lines)
    assert verdict(kill + error).primary is None
    # a known cause before the kill stays the primary
    assert (
        verdict(["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", *kill]).primary
        == "cuda_oom"
    )
    # the same lines in a run that reported success (a kill at teardown) are nothing
    assert not verdict([*kill, "Training completed."]).failed


def test_the_thirty_third_batchs_wording_families():
    _assert_named(
        {
            # device memory in MXNet's, TensorFlow's, Neuron's and Gaudi's words
            "mxnet.base.MXNetError: [11:41:11] src/storage/./pooled_storage_manager.h:108: cudaMalloc failed: out of memory": "cuda_oom",
            "ResourceExhaustedError (see above for traceback): OOM when allocating tensor with shape[128,128,109,109] and type float on /job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc": "cuda_oom",
            "2024-Oct-15 18:01:17.728750  3882:3882  ERROR  TDRV:dmem_alloc_internal                     Failed to alloc DEVICE memory: 180355072": "cuda_oom",
            "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_SYNHELPER workspace Allocation of size ::6450192384 failed!": "cuda_oom",
            # detectron2's anomaly check; TRL's batch check wrapped by a terminal inside "divisible by"
            "FloatingPointError: Loss became infinite or NaN at iteration=1029!": "nan_loss",
            "ValueError: The global train batch size (1 x 1) must be evenly divisible                  by the number of generations per prompt (16).": "batch_size_not_divisible",
            # OmegaConf refusing an interpolation, and its "full_key:" line under any of its errors
            "OlmoConfigurationError: FileNotFoundError raised while resolving interpolation: no_exist/checkpoints, /results": "train_flags_invalid",
            "    full_key: trainer.max_steps": "train_flags_invalid",
        }
    )
    # TensorFlow's memory on the host is not the GPU's
    assert (
        verdict(
            [
                "OOM when allocating tensor with shape[1024,1024] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"
            ]
        ).primary
        != "cuda_oom"
    )
    # oneCCL's and TensorFlow's error levels are listed when nothing names them
    _assert_unknown(
        [
            "2024:01:15-03:36:29:(1980058) |CCL_ERROR| global.cpp:150 getenv_local_coord: condition global_data::env().ze_ipc_exchange == ccl::ze::ipc_exchange_mode::sockets failed",
            "2019-07-07 06:48:49.161736: E tensorflow/core/common_runtime/ring_alg.cc:279] Aborting RingReduce with Out of range: [_Derived_]End of sequence",
        ]
    )
    # ... but not TensorFlow's error-level noise of healthy runs, nor NCCL 2.1 probing for verbs
    _assert_benign(
        [
            "2023-03-01 10:00:00.000001: E tensorflow/compiler/xla/stream_executor/cuda/cuda_blas.cc:2981] Unable to register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered",
            "2021-06-01 10:00:00.000001: E tensorflow/core/grappler/optimizers/meta_optimizer.cc:801] layout failed: Invalid argument: Size of values 0 does not match size of permutation 4 @ fanin shape inmodel/dropout/SelectV2-1-TransposeNHWCToNCHW-LayoutOptimizer",
            "062fc37504b7:350:457 [0] misc/ibvwrap.cu:60 WARN Failed to open libibverbs.so[.1]",
        ]
    )


def test_a_context_does_not_outrank_error_lines_it_does_not_explain():
    """A missing EFA plugin (a context: the run goes on over sockets) beside an error it does not
    explain: the verdict lists that error as the failure and the plugin beside it, not the plugin."""
    plugin = "node-1:176:176 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"
    odd = "node-1:174:239 [0] enqueue.cc:802 NCCL WARN Cuda failure 'API call is not supported in the installed CUDA driver'"
    v = verdict([plugin, odd])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [odd]
    assert [f.label for f in v.findings] == ["efa_plugin_missing"]
    # two ranks on one GPU (gpu_assignment_invalid since the GPU lease) is a cause: it comes first
    dup = "node-1:176:194 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1cb00000"
    assert [f.label for f in verdict([plugin, dup]).findings] == [
        "gpu_assignment_invalid",
        "efa_plugin_missing",
    ]
    # alone, the context is still the verdict; and a cause beside it still comes first
    assert verdict([plugin]).primary == "efa_plugin_missing"
    assert verdict([plugin, "torch.OutOfMemoryError: CUDA out of memory."]).primary == "cuda_oom"


def test_the_thirty_fourth_batchs_wording_families():
    # tyro's refusal of an option it does not know
    _assert_named(
        {
            "[rank0]:│ Unrecognized options: false                                                  │": "train_flags_invalid"
        }
    )
    # aws-ofi-nccl's v6 entry point giving up is its provider failing: on one node, nothing at all
    one_node = [
        "ip-1:35113:35467 [0] ncclResult_t nccl_net_ofi_init_v6(ncclDebugLogger_t):162 NCCL WARN NET/OFI Initializing plugin failed",
        "ip-1:35113:35467 [0] NCCL INFO Using network Socket",
        "ip-1:35113:35467 [0] NCCL INFO comm 0x55d7869cef50 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0",
    ]
    assert not verdict(one_node).findings and not verdict(one_node).failed
    # UCX's inotify watch limit is no full disk
    _assert_benign(
        [
            "[1734935704.354551] [job-0:1362491:f]        vfs_fuse.c:281  UCX  ERROR inotify_add_watch(/tmp) failed: No space left on device"
        ]
    )
    # /dev/shm that refuses a segment for its permissions is not too small: listed, not named
    denied = [
        "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied",
        "node08:27106:27302 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-b7948f403864987a-0-3-0 (size 4460544)",
    ]
    v = verdict(denied)
    assert v.primary is None and v.unrecognised
    assert verdict(denied[1:]).primary == "shm_too_small"


def test_the_thirty_fifth_batchs_wording_families():
    _assert_named(
        {
            # a missing file or folder whose path names training data by a component of its own
            "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/data_phase2'": "dataset_path_missing",
            "FileNotFoundError: [Errno 2] No such file or directory: '/root/software/data/pytorch/imagenet/ILSVRC2012/train'": "dataset_path_missing",
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/object_detection/annotations/instances_val2017.json'": "dataset_path_missing",
            # Ray's object store spilling to a full local disk; a tokenizer's vocabulary not at its path
            "ray.exceptions.OutOfDiskError: Local disk is full": "disk_full",
            "ValueError: Can't find a vocabulary file at path '/data/bert_base/bert-base-uncased-vocab.txt'. To load the vocabulary from a Google pretrained model use": "train_flags_invalid",
        }
    )
    # ... not a checkpoint, output or tokenizer that happens to live under a data folder (a cache
    # there is the data as the run reads it: test_the_seventy_fourth_batchs_wording_families)
    for path in (
        "/data/ckpt/checkpoint-81",
        "/data/run1/results.jsonl.tmp",
        "/data/models/llama/tokenizer.model",
    ):
        v = verdict([f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"])
        assert v.primary != "dataset_path_missing", path
    # SHARP without its Aggregation Manager, Open MPI's UCX declining MPI_THREAD_MULTIPLE: runs go on
    _assert_benign(
        [
            " 0: [ha-1:0:3156565 - context.c:705] ERROR sharp_create_job failed: Failed to connect to Aggregation Manager (sharp_am)(-53)",
            "[gx2570-01:26542] pml_ucx.c:226 Error: UCP worker does not support MPI_THREAD_MULTIPLE",
        ]
    )


def test_the_thirty_sixth_batchs_wording_families():
    _assert_named(
        {
            # DALI's file reader; the Lustre client refusing a mount; aws-ofi-nccl requiring GDR
            '[/opt/dali/dali/operators/reader/loader/file_loader.cc:59] Assert on "dir != nullptr" failed: Directory /data/imagenet/train could not be opened.': "dataset_path_missing",
            "[640442.335581] LustreError: 2525281:0:(super25.c:187:lustre_fill_super()) llite: Unable to mount <unknown>: rc = -22": "volume_mount_failed",
            "available. Cannot run workload without GDR support": "efa_provider_unavailable",
        }
    )
    # torchx's and DeepLearningExamples' reports of a run's end clear the noise before them
    for success in ("torchx 2022-06-20 23:58:16 INFO     Job finished: SUCCEEDED", "Experiment ended"):
        assert not verdict(["RuntimeError: Connection reset by peer", success]).failed, success


def test_the_thirty_seventh_batchs_wording_families():
    _assert_named(
        {
            # the CUDA libraries' allocation statuses; Volcano's gang scheduler short of resources
            'Error in thread 1: [/opt/dali/dali/operators/decoder/nvjpeg/decoupled_api/nvjpeg_decoder_decoupled_api.h:809] NVJPEG error "5" : NVJPEG_STATUS_ALLOCATOR_FAILURE a.JPEG': "cuda_oom",
            "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED": "cuda_oom",
            "      message: '2/1 tasks in gang unschedulable: pod group is not ready, 1 Running,": "pod_pending_insufficient_resources",
            "      reason: NotEnoughResources": "pod_pending_insufficient_resources",
        }
    )
    # nvidia-smi without a driver and Slurm daemons' own error level are failures no label names
    for line in (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
        "[2019-09-24T10:10:06.901] [321.0] error: pyxis: couldn't mkdir /run/pyxis/100005: No such file or directory",
        "[2024-01-02T03:04:05] error: spank: required plugin spank_pyxis.so: init_post_opt() failed with rc=-1",
    ):
        v = verdict([line])
        assert v.primary is None and v.unrecognised, line
    # ... and not a Slurm daemon's other levels, nor a line that only mentions "error:" later on
    for line in (
        "[2019-09-24T10:10:06.901] [321.0] debug:  spank: opening plugin stack /etc/slurm/plugstack.conf",
        "[2019-09-24T10:10:06.901] launch task StepId=321.0 request from UID:1000 (no error: all well)",
    ):
        assert not verdict([line]).unrecognised, line


def test_the_thirty_eighth_batchs_wording_families():
    _assert_named(
        {
            # icefall's (k2 recipes') grad-scaler checks; a rank that waited past the timeout for
            # rank 0 to publish the NCCL id (rank 0 still busy with the data)
            "2024-01-14 01:03:00,826 WARNING [train.py:1057] (2/4) Grad scale is small: 1.2924697071141057e-26": "nan_loss",
            "RuntimeError: grad_scale is too small, exiting: 2.3283064365386963e-10": "nan_loss",
            "RuntimeError: [2] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout": "nccl_timeout",
        }
    )
    # a best-so-far sentinel in a trainer's start-up configuration is no divergence ...
    for line in (
        "INFO [train.py:461] {'exp_dir': 'tdnn/exp', 'best_train_loss': inf, 'best_valid_loss': inf, 'best_train_epoch': -1}",
        "best_loss=inf patience=3",
        "  min_loss: inf",
    ):
        assert not verdict([line]).failed, line
    # ... but the losses themselves still are, whatever their key
    for line in (
        "{'loss': inf, 'grad_norm': nan, 'learning_rate': 1e-05}",
        "train_loss=inf",
        "'valid_loss': inf",
    ):
        assert verdict([line]).primary == "nan_loss", line


def test_the_thirty_ninth_batchs_wording_families():
    _assert_named(
        {
            # a TPU's HBM (torch_xla's XRT, newer XLA), Azure ML's blobfuse mount, clouds' GPU quotas
            "RESOURCE_EXHAUSTED: Attempting to reserve 10.51G at the bottom of memory. That was not possible. There are 8.97G free, 0B reserved, and 8.97G reservable.": "cuda_oom",
            "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 17.46G of 15.48G hbm.": "cuda_oom",
            "BFSMountError: Unable to mount blob fuse file system": "volume_mount_failed",
            "E           ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob operation: The account-level service limit for training-job/ml.p4d.24xlarge is 0 Instances": "pod_pending_insufficient_resources",
            '    "message": "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus",': "pod_pending_insufficient_resources",
            "ERROR: (gcloud.compute.instances.create) Could not fetch resource: - Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 0.0 in region us-central1.": "pod_pending_insufficient_resources",
        }
    )
    # Open MPI refusing to start under srun without PMI: a failure no label names
    v = verdict(['The application appears to have been direct launched using "srun",',
                 "but OMPI was not built with SLURM's PMI support and therefore cannot"])  # fmt: skip
    assert v.primary is None and v.unrecognised
    # Vertex AI marks every stderr line ERROR: a progress bar there is nothing, an exception still is
    bar = "ERROR   2022-01-26 14:19:34 +1100       workerpool0-0    31%|###       | 5974/19120 [31:21<59:25,  3.69it/s]"
    assert not verdict([bar]).failed and not verdict([bar]).unrecognised
    crash = "ERROR   2022-01-26 14:20:02 +1100       workerpool0-0   RuntimeError: CUDA error: an illegal memory access was encountered"
    assert verdict([crash]).failed


def test_the_forty_first_batchs_wording_families():
    _assert_named(
        {
            # the kubelet refusing a placed pod: its reason, its event, the device plugin's admission
            "Reason:         OutOfalpha.kubernetes.io/nvidia-gpu": "pod_pending_insufficient_resources",
            "Reason:         OutOfnvidia.com/gpu": "pod_pending_insufficient_resources",
            "  Warning  OutOfnvidia.com/gpu  12s   kubelet  Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 8, capacity: 8": "pod_pending_insufficient_resources",
            "  Warning  UnexpectedAdmissionError  5s  kubelet  Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected": "pod_pending_insufficient_resources",
            # UCX's shared-memory transport on a small /dev/shm, new and old wordings
            "mm_iface failed to allocate receive FIFO": "shm_too_small",
            "[1475682365.444036] [pod9:11912:0]       mm_posix.c:88   UCX  ERROR Not enough memory to write total of 4208440835 bytes. Please check that /dev/shm or the directory you specified has more available memory.": "shm_too_small",
            # torch inductor's code cache shared by the ranks: a rename another rank got to first
            "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/torchinductor_u/hb/chb.py.1571306751' -> '/tmp/torchinductor_u/hb/chb.py'": "triton_cache_shared_fs",
        }
    )
    # a pod status of OOM-killed is host memory, not the kubelet's admission ("OutOf" + a resource)
    assert verdict(["    Reason:       OOMKilled", "    Exit Code:    137"]).primary == "host_oom_killed"
    # NCCL's proxy service thread at a communicator's destroy or abort is teardown noise ...
    teardown = [
        "7d3a:444:1100 [0] proxy.cc:1497 NCCL WARN [Service thread] Could not receive type from localRank 0, res=3, closed=0",
        "7d3a:444:1100 [0] proxy.cc:1521 NCCL WARN [Proxy Service 0] Failed to execute operation Close from rank 0, retcode 3",
        "7d3a:444:629 [0] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Success",
        "7d3a:444:1422 [0] NCCL INFO comm 0x5636008f1170 rank 0 nranks 1 cudaDev 0 busId 1000 - Abort COMPLETE",
    ]
    assert not verdict(teardown).failed and not verdict(teardown).unrecognised
    # ... but a peer that went away mid-run is still named by its peers' own lines
    closed = "7d3a:445:1100 [1] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by remote peer 10.0.0.2<4212>"
    assert verdict([*teardown, closed]).primary == "nccl_peer_connection_closed"


def test_the_forty_second_batchs_wording_families():
    _assert_named(
        {
            # a trainer's running mean refusing a non-finite loss (yolact's MovingAverage)
            "Warning: Moving average ignored a value of nan": "nan_loss",
            "Warning: Moving average ignored a value of inf": "nan_loss",
            # NVSHMEM's NVLS team set-up, and the driver's reason in dmesg
            "/src/host/team/team_internal_nvls.cpp:254: non-zero status: 401 cuMemMap failed to map 274877906944 bytes handle at address: 0x1320000000 offset 0 on device 7": "nvls_peer_access",
            "/src/host/team/team_internal.cpp:786: non-zero status: 7 Mapping multicast groups for UC heap failed for pe 7 team ID 1": "nvls_peer_access",
            "[1891044.581319] NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync [NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from status @ mem_multicast_fabric.c:2917": "nvls_peer_access",
        }
    )
    # a moving average that ignored nothing is no divergence
    assert not verdict(["Warning: Moving average ignored a value of 0.5 (outlier)"]).failed
    # NVSHMEM's other checked calls are error-like lines of an unknown failure, not NVLS
    v = verdict(["/src/host/init/init.cu:1007: non-zero status: 7 nvshmem setup heap failed"])
    assert v.primary is None and v.unrecognised


def test_the_forty_third_batchs_wording_families():
    _assert_named(
        {
            # tf_cnn_benchmarks' step table, whose last column is the loss
            "1\timages/sec: 2022.2 +/- 0.0 (jitter = 0.0)\tnan": "nan_loss",
            "100  images/sec: 2025.7 +/- 1.1 (jitter = 8.3)  inf": "nan_loss",
            # dstack's offers that all failed for want of capacity
            "Errors: p5.48xlarge in aws/us-west-1: NoCapacityError.": "pod_pending_insufficient_resources",
        }
    )
    # the same table with a finite loss is a healthy benchmark
    assert not verdict(["10\timages/sec: 2018.2 +/- 7.0 (jitter = 8.5)\t7.316"]).failed


def test_the_forty_fourth_batchs_wording_families():
    """Ray Train retrying a worker group whose start timed out while the autoscaler added GPU nodes:
    the failed attempt's lines are no failure once a later attempt's workers set up their process
    group; without that sign (a job that never gets its GPUs) they stay listed."""
    retried = [
        "(TrainController pid=5760) Attempting to start training worker group of size 2 with the following resources: [{'GPU': 1}] * 2",
        "(TrainController pid=5760) Retrying training worker group startup. The previous attempt encountered the following failure:",
        "(TrainController pid=5760)     raise WorkerGroupStartupTimeoutError(",
        "(TrainController pid=5760) ray.train.v2._internal.exceptions.WorkerGroupStartupTimeoutError: The worker group startup timed out after 30.0 seconds waiting for 2 workers.",
        "(autoscaler +4m4s) [autoscaler] Cluster upscaled to {12 CPU, 2 GPU}.",
    ]
    started = "(RayTrainWorker pid=2283, ip=10.0.21.161) Setting up process group for: env:// [rank=0, world_size=2]"
    v = verdict([*retried, started])
    assert not v.failed and not v.unrecognised
    assert verdict(retried).unrecognised  # no attempt got its workers: the lines are the failure
    # a failure after the workers started is still one
    oom = "(RayTrainWorker pid=2283) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert verdict([*retried, started, oom]).primary == "cuda_oom"
    crash = "(RayTrainWorker pid=2283) ValueError: unknown model type"
    assert [u["line"] for u in verdict([*retried, started, crash]).unrecognised] == [crash]


def test_nccl_hops_within_one_node_make_sockets_harmless():
    """Older NCCLs print no node count; channel hops only over P2P or shared memory are one node."""
    lines = [
        "82fe:163:195 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "82fe:163:195 [0] NCCL INFO NET/Socket : Using [0]eth0:172.17.0.2<0>",
        "82fe:163:195 [0] NCCL INFO Using network Socket",
        "82fe:163:195 [0] NCCL INFO Channel 00 : 0[3000] -> 1[4000] via P2P/IPC",
        "82fe:164:194 [1] NCCL INFO Channel 01 : 1[4000] -> 0[3000] via direct shared memory",
    ]
    assert not verdict(lines).findings
    # one hop through the network is another node: the missing plugin and the sockets are findings
    net = "82fe:163:195 [0] NCCL INFO Channel 00/02 : 1[4000] -> 2[3000] [send] via NET/Socket/0"
    assert verdict([*lines, net]).primary == "efa_plugin_missing"
    # an EFA provider that failed with no socket fallback is the cause of what follows, not a context
    # that unexplained lines outrank
    gdr = [
        "64655:64655 [29] init.cc:868 NCCL WARN Device with GDR support not",
        "available. Cannot run workload without GDR support",
        "64655:64655 ERROR   ENC:enc_init_global_comm [nec_dev 5] failed to create",
    ]
    assert verdict(gdr).primary == "efa_provider_unavailable"


def _megatron_core_attention_assertion(monkeypatch) -> str:
    """The assertion megatron-core itself raises for a stale NVTE switch (not a copy of its text)."""
    from types import SimpleNamespace

    pytest.importorskip("megatron.core")
    from megatron.core.models.common.language_module.language_module import LanguageModule
    from megatron.core.transformer.enums import AttnBackend

    for name in ("NVTE_FLASH_ATTN", "NVTE_UNFUSED_ATTN"):  # megatron-core sets them in os.environ:
        monkeypatch.setenv(name, "")  # set here first, so that monkeypatch restores the original
        monkeypatch.delenv(name)
    monkeypatch.setenv("NVTE_FUSED_ATTN", "0")
    fake = SimpleNamespace(config=SimpleNamespace(attention_backend=AttnBackend.auto))
    with pytest.raises(AssertionError) as err:
        LanguageModule._set_attention_backend(fake)
    return f"[rank3]: AssertionError: {err.value}"


def test_the_forty_sixth_batchs_wording_families(monkeypatch):
    _assert_named(
        {
            # megatron-core's check of Transformer Engine's attention switches against the backend
            _megatron_core_attention_assertion(monkeypatch): "train_flags_invalid",
            # accelerate unable to fill the ds_config's "auto" micro batch size
            "ValueError: When using DeepSpeed, `accelerate.prepare()` requires you to pass at least one of "
            "training or evaluation dataloaders with `batch_size` attribute returning an integer value "
            "or alternatively set an integer value in `train_micro_batch_size_per_gpu`": "deepspeed_config_invalid",
            # Horovod's Gloo rendezvous store
            "[1]<stderr>:  what():  [horovod/common/gloo/http_store.cc:88] Wait timeout for key(s): 7": "rendezvous_timeout",
        }
    )
    # Open MPI's openib probe of an HCA (ENOSPC from ibv_query_device) is no full disk ...
    openib = (
        "[node1][[31817,1],0][btl_openib_component.c:1704:init_one_device] error obtaining device "
        "attributes for mlx5_0 errno says No space left on device"
    )
    assert not verdict([openib, "NCCL version 2.26.6+cuda12.9"]).failed
    # ... and a full disk after it still is one
    full = "OSError: [Errno 28] No space left on device: '/fsx/ckpt/iter_0000200/__0_0.distcp'"
    assert verdict([openib, full]).primary == "disk_full"


def test_the_forty_seventh_batchs_wording_families():
    _assert_named(
        {
            # SageMaker's training job that could not pull its image
            "UnexpectedStatusException: Error for Training job pt-ddp-2024-05-01: Failed. Reason: "
            "ClientError: Cannot pull algorithm container. Either the image does not exist or its "
            "permissions are incorrect.": "image_pull_error",
            # the AI Platform / Vertex AI training API's accelerator quota
            '"message": "Quota failure for project my-proj. The request for 8 NVIDIA_TESLA_A100 '
            'accelerators exceeds the allowed maximum of 0 A100, 4 T4 accelerators."': "pod_pending_insufficient_resources",
            # torchrun given Slurm's compressed tasks-per-node
            "ValueError: Unsupported nproc_per_node value: 8(x4)": "train_flags_invalid",
        }
    )
    # the kernel refusing a user-space driver of another version is listed as the failure
    nvrm = "kernel: NVRM: API mismatch: the client has the version 535.161.08, but"
    v = verdict(["Starting training job", nvrm, "NVRM: this kernel module has the version 535.129.03."])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [nvrm]


def test_the_forty_eighth_batchs_wording_families():
    _assert_named(
        {
            # FP8 GEMMs and dimensions that are not whole tiles: Transformer Engine's wordings
            # (transformer_engine/pytorch/utils.py, module/linear.py) and PyTorch's _scaled_mm
            "ValueError: FP8 execution requires the product of all dimensions except the last to be "
            "divisible by 8 and the last dimension to be divisible by 16, but got tensor with "
            "dims=[4100, 4096] (product of leading dims = 4100, last dim = 4096)": "model_config_invalid",
            "RuntimeError: FP8 execution requires out_features to be divisible by 16": "model_config_invalid",
            "AssertionError: Tensor dimensions are not compatible for FP8 execution: "
            "(torch.Size([12, 768]) % 8 != 0) or (torch.Size([12, 768]) % 16 != 0)": "model_config_invalid",
            "[rank1]: RuntimeError: mat2 shape (4096x50 must be divisible by 16": "model_config_invalid",
            # a YAML config the flag names that is not there
            "FileNotFoundError: [Errno 2] No such file or directory: 'recipes/llama3_8b_sft.yml'": "train_flags_invalid",
        }
    )


def _torch_env_rendezvous_error(monkeypatch) -> str:
    """What torch.distributed itself raises for an env:// start without a launcher's variables."""
    import torch.distributed as dist

    for name in ("MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError) as err:
        next(dist.rendezvous("env://", rank=0, world_size=1))
    return f"ValueError: {err.value}"


def test_the_forty_ninth_batchs_wording_families(monkeypatch):
    _assert_named(
        {
            # a script started with python instead of torchrun
            _torch_env_rendezvous_error(monkeypatch): "train_flags_invalid",
            # a trainer asking for an input file it was not given
            "ValueError: Must provide a tuning search space JSON file when using external tuning.": "train_flags_invalid",
            "AssertionError: You must specify a tokenizer model path": "train_flags_invalid",
        }
    )
    # TensorFlow's profiler without CUPTI: an error-level line of a healthy run
    cupti = (
        "2020-08-26 21:39:39.568529: E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1441] function "
        "cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)failed with error "
        "CUPTI could not be loaded or symbol could not be found."
    )
    v = verdict(
        [cupti, "I0826 21:42:23.001036 140540494919424 keras_utils.py:133] TimeHistory: 161.68 seconds"]
    )
    assert not v.failed and not v.unrecognised
    # another error-level line of TensorFlow's is still listed
    other = (
        "2020-08-26 21:40:01.000001: E tensorflow/core/common_runtime/ring_alg.cc:279] Aborting RingReduce"
    )
    assert [u["line"] for u in verdict([cupti, other]).unrecognised] == [other]


def test_the_fiftieth_batchs_wording_families():
    """slurmstepd resolving its own controller is no master address; the job's lookups still are."""
    slurm = "slurmstepd: error: _xgetaddrinfo: getaddrinfo(ctl01:6817) failed: Temporary failure in name resolution"
    v = verdict(["[launcher][ERROR] Script not found: /var/spool/slurm/job1/run.sh", slurm])
    assert v.primary is None and v.unrecognised
    master = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node-07]:29500 "
        "(errno: -3 - Temporary failure in name resolution)."
    )
    assert verdict([slurm, master]).primary == "master_addr_unresolved"


def test_the_fifty_first_batchs_wording_families():
    """The kernel's OOM-killer header, mpirun's SIGKILLed rank, containerd's pull error, NCCL's shm
    warning wrapped after "Error", a bus error inside ncclShmOpen, and mount.lustre's module hint."""
    oom = "[2612362.231458] trainer invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), order=0, oom_score_adj=0"
    assert verdict([oom]).primary == "host_oom_killed"
    mpi = "mpirun noticed that process rank 3 with PID 41 on node w-1 exited on signal 9 (Killed)."
    assert verdict([mpi]).primary == "host_oom_killed"
    assert (
        verdict(
            [
                "mpirun noticed that process rank 0 with PID 7 on node n exited on signal 11 (Segmentation fault)."
            ]
        ).primary
        != "host_oom_killed"
    )
    pull = ('Error: failed to create containerd container: failed to pull and unpack image "registry.example/t:1": '
            'failed to resolve reference "registry.example/t:1": not found')  # fmt: skip
    assert verdict([pull]).primary == "image_pull_error"
    wrapped = [
        "failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error. Last NCCL warning 'Error ",
        "while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888), error: No space",
        "left on device (28)'.",
    ]
    assert verdict(wrapped).primary == "shm_too_small"
    frame = "#0 0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) ()"
    assert verdict(['Thread 9 "train" received signal SIGBUS, Bus error.', frame]).primary == "shm_too_small"
    assert verdict([frame]).primary is None  # a frame alone (a stack dump of a live process) is no failure
    lustre = [
        "mount.lustre: mount fs-1@tcp:/x at /mnt failed: No such device",
        "Are the lustre modules loaded?",
    ]
    assert verdict(lustre).primary == "volume_mount_failed"
    assert (
        verdict(["/mount failed: No such device", "Are the lustre modules loaded?"]).primary
        == "volume_mount_failed"
    )


def test_the_fifty_second_batchs_wording_families():
    """A batch-size assert over the world size, transformers' ZeRO-3/low_cpu_mem_usage refusal, a
    SIGKILLed subprocess, hidden size vs heads in other wordings, HfArgumentParser's unused flags,
    JAX's coordination-service registration timing out, and a stale NFS handle inside Triton."""
    batch = [
        "    assert batch_size == batch_gpu * num_accumulation_rounds * dist.get_world_size()",
        "AssertionError",
    ]
    assert verdict(batch).primary == "batch_size_not_divisible"
    assert verdict(batch[:1]).primary is None  # the source line alone is no failure
    ds = "ValueError: DeepSpeed Zero-3 is not compatible with `low_cpu_mem_usage=True` or with passing a `device_map`."
    assert verdict([ds]).primary == "deepspeed_config_invalid"
    killed = (
        "subprocess.CalledProcessError: Command '['python3', '-m', 'train']' died with <Signals.SIGKILL: 9>."
    )
    assert verdict([killed]).primary == "host_oom_killed"
    assert verdict(["Command '['python3']' died with <Signals.SIGSEGV: 11>."]).primary != "host_oom_killed"
    for line in (
        "[rank0]: ValueError: Hidden size 4096 must be divisible by num_heads 48",
        "AssertionError: embed_dim must be divisible by num_heads",
    ):
        assert verdict([line]).primary == "model_config_invalid", line
    hf = "ValueError: Some specified arguments are not used by the HfArgumentParser: ['--fsdp_layer', 'X']"
    assert verdict([hf]).primary == "train_flags_invalid"
    jax = [
        "Additional GRPC error information from remote target unknown_target_for_coordination_leader while calling /tensorflow.CoordinationService/RegisterTask:",
        ':{"created":"@1712965181.656280441","description":"Deadline Exceeded","grpc_status":4}',
    ]
    assert verdict(jax).primary == "rendezvous_timeout"
    stale = "OSError: [Errno 116] Stale file handle"
    frame = '  File "/usr/lib/python3.12/dist-packages/triton/compiler/compiler.py", line 424, in __init__'
    assert verdict([frame, stale]).primary == "triton_cache_shared_fs"
    dataset = '  File "/usr/lib/python3.10/dist-packages/datasets/arrow_dataset.py", line 4101, in _select'
    assert verdict([dataset, stale]).primary != "triton_cache_shared_fs"  # a stale handle elsewhere


def test_the_fifty_third_batchs_wording_families():
    """RCCL's iommu=pt advice and NCCL's unloaded-verbs wrapper are benign; cuInit's 802 as a driver
    probe reports it is the fabric manager; torchrun's agent stopped from outside is shown."""
    iommu = ('host:40032:40032 [0] /src/rccl/hipify/src/init.cc:178 NCCL WARN Missing "iommu=pt" from kernel '
             "command line which can lead to system instablity or hang!")  # fmt: skip
    verbs = "[rank0]:host:29:29 [0] misc/ibvwrap.cc:185 (wrap_ibv_alloc_pd) NCCL WARN lib wrapper not initialized."
    for line in (iommu, verbs):
        v = verdict([line, "RESULT world_size=4 step_s=0.0806 tokens_per_s=203167"])
        assert v.primary is None and not v.unrecognised, line
    fm = ["calling cuInit", "cuInit err: 802"]
    assert verdict(fm).primary == "fabric_manager_not_running"
    for stop in (
        "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
        "W1126 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGHUP death signal, shutting down workers",
    ):
        v = verdict([" 12%|#         | 2905/25120 [2:12:37<17:37:09,  2.86s/it]", stop])
        assert v.primary is None and v.unrecognised, stop


def test_the_fifty_fifth_batchs_wording_families():
    """A Kubeflow job its operator reports succeeded outlived its scheduling, pull and mount events;
    an exception no signature knows, raised before a symptom, is shown as what came first."""
    events = [
        "    Reason:                PyTorchJobSucceeded",
        "  Warning  Unschedulable  12m (x2 over 13m)  pytorchjob-controller  Error pod job-worker-1 condition "
        "message: 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    ]
    assert verdict(events[1:]).primary == "pod_pending_insufficient_resources"
    assert verdict(events).primary is None and not verdict(events).unrecognised
    mount = '  Warning  FailedMount  2m  kubelet  MountVolume.SetUp failed for volume "fsx" : rpc error: code = Internal'
    assert verdict([mount]).primary == "volume_mount_failed"
    assert verdict([mount, "MPIJob default/bert successfully completed."]).primary is None
    assert verdict([mount, "TFJob mnist is successfully completed."]).primary is None
    assert verdict([mount, "PyTorchJob default/bert is running."]).primary == "volume_mount_failed"

    missing = (
        "node2: [rank8]: FileNotFoundError: [Errno 2] No such file or directory: '/opt/hooks/on_start.sh'"
    )
    timeout = ("node1: [rank0]:[E410 17:25:53.848 ProcessGroupNCCL.cpp:683] [Rank 0] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
               "ran for 600010 milliseconds before timing out.")  # fmt: skip
    v = verdict([missing, timeout])
    assert v.primary == "nccl_timeout" and [e["line_number"] for e in v.earlier] == [1]
    assert "came first, line 1: node2: [rank8]: FileNotFoundError" in v.one_line()
    assert "came first" in v.render() and v.to_dict()["earlier"] == v.earlier
    assert verdict([timeout, missing]).earlier == []  # after the symptom: not what came first
    assert verdict([timeout]).earlier == []
    abort = "terminate called after throwing an instance of 'c10::DistBackendError'"
    assert verdict([abort, timeout]).earlier == []  # the symptom's own abort is no exception message
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert verdict([missing, oom, timeout]).primary == "cuda_oom"
    assert verdict([missing, oom, timeout]).earlier == []  # a cause is named: nothing to add


def test_the_fifty_sixth_batchs_wording_families():
    """transformers' Trainer finding no sample to train on is dataset_too_small; a bus error in a
    stripped NCCL's frames is /dev/shm, as it was in ncclShmOpen's."""
    dry = ("[WARNING|trainer.py:2013] 2023-05-01 >> There seems to be not a single sample in your epoch_iterator, "
           "stopping training at step 0! This is expected if you're using an IterableDataset and set num_steps (X) "
           "higher than the number of available samples.")  # fmt: skip
    assert verdict([dry]).primary == "dataset_too_small"
    bus = "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)"
    frames = [
        " 2 0x000000000007587d ncclGroupEnd()  ???:0",
        " 5 0x00000000000489b1 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0",
    ]
    assert verdict([bus, "==== backtrace (tid:   3095) ====", *frames]).primary == "shm_too_small"
    for frame in frames:
        assert verdict([bus, frame]).primary == "shm_too_small", frame
        assert verdict([frame]).primary is None  # a frame alone is no failure
    assert verdict([bus, " 2 0x000000000007587d cblas_dgemm()  ???:0"]).primary != "shm_too_small"


def test_the_fifty_seventh_batchs_wording_families():
    """megatron-core's "num_layers=N should be divisible by" is a layout error; SHARP's missing
    Aggregation Manager in its other wordings and FastSocket's retries are benign; torch's UserWarning
    that the driver is too old is an unknown failure, not a warning to pass over."""
    pp = "AssertionError: num_layers=60 should be divisible by config.pipeline_model_parallel_size=8"
    assert verdict([pp]).primary == "parallelism_config_invalid"
    for line in (
        " 0: [ip-0A23040D:0:3917 unique id 0] ERROR No Aggregation Manager (sharp_am) detected in sharp_create_job.",
        "40: ip-0A230414:52763:53428 [0] sharp_plugin.c:288 NCCL WARN NET/IB :SHARP coll init error: Cannot create SHArP job(-11)",
        "16: ip-0A230410:53245:53899 [0] transport.cc:253 NCCL WARN Cannot initialize CollNet, using point-to-point network instead",
        "full-debug2-test-1:4024:4048 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.",
        "full-debug2-test-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.",
    ):
        v = verdict([line, "iteration 10/100 | lm loss: 2.5"])
        assert v.primary is None and not v.unrecognised, line
    old = ("/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA initialization: "
           "The NVIDIA driver on your system is too old (found version 11000). Please update your GPU driver")  # fmt: skip
    v = verdict([old])
    assert v.primary is None and v.unrecognised
    other = "/usr/lib/python3.10/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: Found no NVIDIA driver"
    assert not verdict([other]).unrecognised  # other UserWarnings stay warnings


def test_the_fifty_eighth_batchs_wording_families():
    """torchtitan's parallel-dims check, an indented usage error, megatron-core's CUDA-graph flag
    checks and NeMo-RL's stall detector are named; Triton's shared-memory limit is no GPU OOM, and
    max-autotune skipping a config for it is benign."""
    named = {
        "AssertionError: Invalid parallel dims: dp(1) * sp(2) * pp(3) != WORLD_SIZE(8)": "parallelism_config_invalid",
        "    setup_experiment.py: error: argument -a/--account: expected one argument": "train_flags_invalid",
        "  AssertionError: Transformer engine's RNG tracker is required for cudagraphs": "train_flags_invalid",
        "  AssertionError: full recompute is only supported with full iteration CUDA graph": "train_flags_invalid",
        "    WARNING: rollout stall -- no rollout committed and no train step completed": "training_hang",
    }
    for line, label in named.items():
        assert verdict([line]).primary == label, line
    limit = "OutOfMemoryError: out of resource: triton_flex_attention Required: 263168 Hardware limit:232448"
    assert verdict([limit]).primary != "cuda_oom"
    assert verdict(["torch.OutOfMemoryError: CUDA out of memory."]).primary == "cuda_oom"
    autotune = [
        "[rank0]:Runtime error during autotuning: ",
        f"[rank0]:No valid triton configs. {limit} Reducing block sizes or `num_stages` may help.. ",
        "[rank0]:Ignoring this choice.",
        "[rank0]:[titan] 2025-07-21 15:57:48,090 - root - INFO - Training completed",
    ]
    v = verdict(autotune)
    assert v.primary is None and not v.unrecognised


def test_the_fifty_ninth_batchs_wording_families():
    """mpirun's rank tags all naming one host mean one node; Python's "Exception ignored in" marks a
    handled traceback; NCCL's retried connect and CUPTI's thread warning are benign."""
    one_host = [
        f"[1,{r}]<stdout>:algo-1:3{r}:3{r} [{r}] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so)."
        for r in range(4)
    ]
    assert verdict(one_host[:1]).primary == "efa_plugin_missing"  # one rank: nothing says one node
    assert verdict(one_host).primary is None
    ofi = "[1,mpirank:2,algo-1]<stdout>:algo-1:32:32 [2] find_ofi_provider:550 NCCL WARN NET/OFI Couldn't find any optimal provider"
    assert verdict([ofi]).primary == "efa_provider_unavailable"
    assert verdict([ofi, ofi.replace(":2,", ":3,").replace("[2]", "[3]")]).primary is None
    two_hosts = [
        *one_host,
        "[1,4]<stdout>:algo-2:30:30 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).",
    ]
    assert verdict(two_hosts).primary == "efa_plugin_missing"
    net_hop = "[1,3]<stdout>:algo-1:153:691 [3] NCCL INFO Ring 01 : 3 -> 10 [send] via NET/AWS Libfabric/1"
    assert verdict([*one_host, net_hop]).primary == "efa_plugin_missing"  # a hop between nodes

    ignored = [
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f6caf3773b0>",
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f6caf3773b0>",
        "Traceback (most recent call last):",
        "    assert self._parent_pid == os.getpid(), 'can only test a child process'",
        "AssertionError: can only test a child process",
        "AssertionError: can only test a child process",
    ]
    v = verdict(ignored)
    assert v.primary is None and not v.unrecognised
    assert verdict(
        ["Traceback (most recent call last):", "AssertionError: can only test a child process"]
    ).unrecognised
    late = [ignored[0], *["iteration 1 | lm loss: 2.5"] * 60, "AssertionError: can only test a child process"]
    assert verdict(late).unrecognised  # an exception far after the notice is not the one it announced
    again = [*late[:-1], ignored[0], "AssertionError: can only test a child process"]
    assert not verdict(again).unrecognised  # the stale notice neither covers nor hides the fresh one
    for line in (
        "[misc/socket.cc:602] [s11gn1268:pid=3987720] NCCL WARN socketPollConnect poll() failed, ret 1, error "
        "Connection timed out, revents 8, connect to 172.16.30.229:39953",
        "(RayTrainWorker pid=13196, ip=10.0.175.234) ERROR: External init callback must run in same thread as "
        "registerClient (322958912 != -1404328128)",
    ):
        v = verdict([line])
        assert v.primary is None and not v.unrecognised, line


def test_the_sixtieth_batchs_wording_families():
    """OmegaConf refusing a key its schema lacks is a flags error; the gIB script's missing lspci is
    benign, while another script's missing command still is not."""
    key = "2025-11-26T16:57:01Z omegaconf.errors.ConfigKeyError: Key 'max_new_tokens' not in 'NormConfig'"
    assert verdict([key]).primary == "train_flags_invalid"
    gib = "/usr/local/gib/scripts/set_nccl_env.sh: line 16: lspci: command not found"
    v = verdict([gib])
    assert v.primary is None and not v.unrecognised
    assert verdict(["/opt/run.sh: line 3: torchrun: command not found"]).unrecognised


def test_the_sixty_first_batchs_wording_families():
    """The allocator's expandable-segment warning is memory trouble only when the process then dies;
    the driver API's out-of-memory and 'X is incompatible with Y' are named; Ray's missing metrics
    agent is benign; a traceback that is a logging record's message was handled."""
    warn = (
        "[rank0]:[rank0]:[W519 17:21:25.778978657 CUDACachingAllocator.cpp:495] expandable_segments: memory "
        "mapping failed with OOM on device 0 while trying to map 20971520 bytes (free: 16318464, total: 191503138816)."
    )
    step = (
        "[rank0]:[titan] 2026-05-19 17:21:38,192 - root - INFO - step: 10  loss: 10.01193  grad_norm: 28.6250"
    )
    done = "[rank0]:[titan] 2026-05-19 17:21:40,192 - root - INFO - Training completed"
    v = verdict([warn, warn, step, done])
    assert v.primary is None and not v.unrecognised
    died = "  traceback : Signal 6 (SIGABRT) received by PID 1005501"
    v = verdict([warn, step, died])
    assert v.primary == "cuda_oom" and v.findings[0].line_number == 1
    v = verdict(
        [
            warn,
            "[rank0]:[E519 19:52:14] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
        ]
    )
    assert v.primary == "cuda_oom"
    _assert_named(
        {
            "[rank0]:[rank0]: RuntimeError: CUDA driver error: out of memory": "cuda_oom",
            "ValueError: Unsloth is incompatible with DeepSpeed ZeRO-3": "train_flags_invalid",
        }
    )
    # "incompatible" in another exception is not a flags refusal
    other = verdict(["RuntimeError: this CUDA driver version is incompatible with the CUDA runtime version"])
    assert other.primary != "train_flags_invalid"
    _assert_benign(
        [
            '(RegistryActor pid=1683939) {"asctime":"2026-02-13 02:47:02,310","levelname":"E","message":"Failed to '
            "establish connection to the metrics exporter agent. Metrics will not be exported. Exporter agent status: "
            'RpcError: Running out of retries to initialize the metrics agent. rpc_code: 14","filename":"core_worker_process.cc","lineno":825}'
        ]
    )
    logged = [
        "(Worker pid=1) ERROR:2025-11-19 19:14:17,826:Traceback (most recent call last):",
        '(Worker pid=1)   File "/app/env.py", line 266, in extract',
        "(Worker pid=1)     raise ValueError(f'step {i} - extract action failed')",
        "(Worker pid=1) ValueError: step 3 - extract action failed",
    ]
    v = verdict(logged)
    assert v.primary is None and not v.unrecognised
    # the same traceback printed by Python itself (uncaught) is a failure
    plain = [line.replace("ERROR:2025-11-19 19:14:17,826:", "") for line in logged]
    assert verdict(plain).unrecognised


def test_the_sixty_second_batchs_wording_families():
    """Megatron's check_checkpoint_args traceback cut before its message is a checkpoint mismatch;
    Ray's raylet warning of a nearly full disk is disk_full only when the Ray job then fails."""
    frames = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 804, in load_checkpoint',
        "[rank0]:     check_checkpoint_args(checkpoint_args)",
        '[rank0]:   File "/workspace/Megatron-LM/megatron/training/checkpointing.py", line 78, in check_checkpoint_args',
        "[rank0]:     _compare('add_position_embedding', default=True)",
    ]
    assert verdict(frames).primary == "checkpoint_mismatch"
    # the call site alone (a frame *calling* it, as in load_checkpoint above) is not enough
    assert verdict(frames[:3]).primary != "checkpoint_mismatch"
    full = (
        "(raylet) [2025-05-12 21:22:29,122 E 47346 47378] file_system_monitor.cc:116: /tmp/ray/session_x is over "
        "95% full, available space: 1.09616 GB; capacity: 1984.68 GB. Object creation will fail if spilling is required."
    )
    failed = "Status message: Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):"
    assert verdict([failed, full]).primary == "disk_full"
    alone = verdict([full, "(RayTrainWorker pid=1) step: 12 loss: 2.31"])
    assert alone.primary is None and not alone.unrecognised


def test_the_sixty_third_batchs_wording_families():
    """NCCL's failed device calloc is out of GPU memory; Hydra's missing config and a value outside a
    config Enum are flags errors (but not any ValueError that says 'is not a valid')."""
    _assert_named(
        {
            "localhost: [rank0]: Failed to CUDA calloc async 4 bytes": "cuda_oom",
            "hydra.errors.MissingConfigException: In 'gsm8k_multiturn_grpo': Could not load 'ppo_trainer'.": (
                "train_flags_invalid"
            ),
            "[rank0]:[rank0]: ValueError: 'mxfp8_cublas' is not a valid MXFP8TrainingRecipe": "train_flags_invalid",
        }
    )
    assert verdict(["ValueError: 'abc' is not a valid path on this node, see the docs"]).primary != (
        "train_flags_invalid"
    )


def test_the_sixty_fourth_batchs_wording_families():
    """A collective that "raised the following async exception: ... remote process exited" names its
    timeout only as a parameter ("Timeout(ms)=60000"): it failed because a peer died, not because it
    timed out; a watchdog that reports a collective that really timed out stays nccl_timeout."""
    peer_gone = (
        "[rank0]:[E722 08:55:15.721744728 ProcessGroupNCCL.cpp:542] [Rank 0] Collective WorkNCCL(SeqNum=7, "
        "OpType=ALLREDUCE, NumelIn=64, NumelOut=64, Timeout(ms)=60000) raised the following async "
        "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"
    )
    assert verdict([peer_gone]).primary == "nccl_peer_connection_closed"
    timed_out = (
        "[rank3]:[E1022 03:18:42.078 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=34, OpType=ALLGATHER, Timeout(ms)=600000) ran for 600050 milliseconds "
        "before timing out."
    )
    assert verdict([timed_out]).primary == "nccl_timeout"
    store = "[E ProcessGroupNCCL.cpp:475] [Rank 1] Timed out waiting for the NCCL store"
    assert verdict([store]).primary == "nccl_timeout"


def test_the_sixty_fifth_batchs_wording_families():
    """c10d's EADDRINUSE fields on a wrapped line, megatron-core's "data_parallel_size (1) is not
    divisible by expert_model_parallel_size", and a bare assert on a flag in validate_args. A weak
    line is corroborated only by its own pair's other line: an assert on a flag with a message (an
    unknown failure in the corpus) is not made train_flags_invalid by the bare-AssertionError rule
    of the learning-rate scheduler's pair."""
    _assert_named(
        {
            "local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE,": "master_port_in_use",
            "RuntimeError: data_parallel_size (1) is not divisible by expert_model_parallel_size ": (
                "parallelism_config_invalid"
            ),
        }
    )
    frame = '  File "/w/Megatron-LM/megatron/training/arguments.py", line 282, in validate_args'
    assert verdict([frame, "    assert not args.bf16", "AssertionError"]).primary == "train_flags_invalid"
    with_message = [
        '  File "/w/Megatron-DeepSpeed/megatron/training.py", line 842, in build_train_valid_test',
        "    assert args.train_samples is None, \\",
        "AssertionError: only backward compatiblity support for iteration-based training",
    ]
    assert verdict(with_message).primary != "train_flags_invalid"
    parallel = [frame, "    assert args.pipeline_model_parallel_size > 1", "AssertionError"]
    assert verdict(parallel).primary != "train_flags_invalid"


def test_the_sixty_seventh_batchs_wording_families():
    """transformers' ExplicitEnum refusing a flag's value (unquoted, then the choices) is a flags
    error, like the quoted form the sixty-third batch brought."""
    line = (
        " ValueError: fsdp2 is not a valid FSDPOption, please select one of ['full_shard', "
        "'shard_grad_op', 'no_shard', 'hybrid_shard', 'hybrid_shard_zero2', 'offload', 'auto_wrap']"
    )
    assert verdict([line]).primary == "train_flags_invalid"
    assert (
        verdict(["ValueError: x is not a valid Path, please check the docs"]).primary != "train_flags_invalid"
    )


def test_the_sixty_eighth_batchs_wording_families():
    """HAMi's vGPU quota refusing an allocation is a GPU out of memory; the source line of Megatron's
    layers-per-stage assert is a parallel layout error when the message line is cut off (a batch-size
    assert against a parallel size is not); Ray's "Worker exit type: SYSTEM_ERROR" is shown as a
    failure, not named, since Ray lists three possible causes itself."""
    hami = "[HAMI-core ERROR (pid:30 thread=140382094939712 allocator.c:53)]: Device 0 OOM 3171158016 / 3145728000"
    layers = "[rank14]:     assert num_layers % args.transformer_pipeline_model_parallel_size == 0, \\"
    _assert_named({hami: "cuda_oom", layers: "parallelism_config_invalid"})
    batch = "    assert args.global_batch_size % args.data_parallel_size == 0"
    assert verdict([batch]).primary != "parallelism_config_invalid"
    _assert_unknown(
        [
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
            "detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some "
            "potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage."
        ]
    )
    _assert_benign(
        [
            "[HAMI-core Msg(30:140387636202368:libvgpu.c:855)]: Initialized",
            "Worker exit type: INTENDED_USER_EXIT Worker exit detail: Worker exits by an user request.",
        ]
    )


def test_the_sixty_ninth_batchs_wording_families():
    """Azure's allocator out of capacity for a GPU VM size is a scheduling failure for want of GPUs;
    JAX's GPU backend failing to start is shown as a failure (it goes on on the CPU), not passed as
    healthy."""
    azure = (
        '10:23:28          "message": "Allocation failed. We do not have sufficient capacity for the requested '
        'VM size in this region. Read more about improving likelihood of allocation success at http://aka.ms/x"'
    )
    _assert_named({azure: "pod_pending_insufficient_resources"})
    _assert_unknown(
        [
            "CUDA backend failed to initialize: jaxlib/cuda/versions_helpers.cc:90: operation gpuDeviceGetAttribute("
            " &major, GPU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) failed: CUDA_ERROR_NOT_INITIALIZED"
        ]
    )


def test_the_seventieth_batchs_wording_families():
    """DeepSpeed's refusals (ZeRO with its pipeline engine; a config path that is no file on this
    node, read as base64), a check naming the environment variable an option needs, icefall's
    pre-training OOM check, and NCCL 2.4's "Ring" hop lines, which say a run stayed on one node."""
    _assert_named(
        {
            "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism": "deepspeed_config_invalid",
            "[rank13]:     config_decoded = base64.urlsafe_b64decode(config).decode('utf-8')": "deepspeed_config_invalid",
            "RuntimeError: Using async gradient all reduce requires setting the environment variable "
            "CUDA_DEVICE_MAX_CONNECTIONS to 1": "train_flags_invalid",
            "2024-12-19 16:58:57,481 ERROR [train.py:1345] Your GPU ran out of memory with the current "
            "max_duration setting. We recommend decreasing max_duration and trying again.": "cuda_oom",
        }
    )
    fallback = [
        "lufee:19773:20233 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "lufee:19773:20233 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:172.17.0.5<0>",
    ]
    assert verdict(fallback).primary == "nccl_socket_fallback"
    one_node = "lufee:19773:20233 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via direct shared memory"
    assert verdict([*fallback, one_node]).primary is None
    across = "node1:1:1 [0] NCCL INFO Ring 00 : 3[3] -> 4[0] [send] via NET/Socket/0"
    assert verdict([*fallback, one_node, across]).primary == "nccl_socket_fallback"


def test_the_seventy_first_batchs_wording_families():
    """transformers' ZeRO inference check, a config field asked for in backquotes, a batch checked
    against the world size, argparse's refusal after a `kubectl logs --timestamps` stamp, and
    aws-ofi-nccl's "No eligible providers", which its SENDRECV fallback may follow with a provider."""
    _assert_named(
        {
            "[rank0]: ValueError: ZeRO inference only makes sense with ZeRO Stage 3 - please adjust "
            "your config": "deepspeed_config_invalid",
            "ValueError: Please provide `model_name_or_path`.": "train_flags_invalid",
            "2025-11-21T20:33:52.327595606Z [rank0]: ValueError: batch size(8) must be divisible by "
            "world_size(3)!": "batch_size_not_divisible",
            "2025-11-21T23:05:13.867590928Z launch_server.py: error: argument --attention-backend: "
            "invalid choice: 'flashattn' (choose from triton, torch_native)": "train_flags_invalid",
        }
    )
    # the stamp may precede the program's name, not a sentence quoting argparse's words
    quoted = "2025-11-21T23:05:13Z the launcher said: error: argument --foo"
    assert verdict([quoted]).primary != "train_flags_invalid"
    found = [
        "NET/OFI No eligible providers were found",
        "NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)",
        "NET/OFI Using transport protocol SENDRECV",
        "Using network Libfabric",
    ]
    assert verdict(found).findings == []
    # ... but when SENDRECV finds none either, the plugin's give-up lines name it
    gave_up = [found[0], "NCCL WARN NET/OFI Unable to find a protocol that worked.  Failing initialization."]
    assert verdict(gave_up).primary == "efa_provider_unavailable"


def test_the_seventy_second_batchs_wording_families():
    """Transformer Engine's NVTE_*_ATTN assertion cut by a wrapped quote, and a data path that
    carries literal quotes of its own (quoted twice in a script or config)."""
    _assert_named(
        {
            "  AssertionError: NVTE_FUSED_ATTN set to 0, but expected 1 for attention": "train_flags_invalid",
            "FileNotFoundError: [Errno 2] No such file or directory: "
            "'\"/leonardo_work/MNRVA_bench/datasets/ShareGPT_V3_unfiltered_cleaned_split.json\"'": "dataset_path_missing",
        }
    )
    # the doubled quote does not lift the exclusions: a quoted checkpoint path is no data path
    quoted_ckpt = "FileNotFoundError: [Errno 2] No such file or directory: '\"/data/checkpoints/iter_100\"'"
    assert verdict([quoted_ckpt]).primary != "dataset_path_missing"


def test_the_seventy_third_batchs_wording_families():
    """Old Megatron-LM's interleaved-schedule layer check, Hydra's override parser, Accelerate's
    refusal on RTX 3090/40-series without P2P, and W&B's client retrying an API call while training
    goes on."""
    _assert_named(
        {
            "AssertionError: number of layers per pipeline stage must be divisible number of layers "
            "per virtual pipeline stage": "parallelism_config_invalid",
            "Ambiguous value for argument 'model.data.splits_string=980,10,10'": "train_flags_invalid",
            "Could not override 'trainer.max_stpes'.": "train_flags_invalid",
            "NotImplementedError: Using RTX 3090 or 4000 series doesn't support faster communication "
            'broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"` and `NCCL_IB_DISABLE="1" or use '
            "`accelerate launch` which will do this automatically.": "train_flags_invalid",
        }
    )
    _assert_benign(
        [
            "wandb: ERROR Error while calling W&B API: An internal error occurred. Please contact "
            "support. (<Response [500]>)",
            "wandb: Network error (ReadTimeout), entering retry loop.",
        ]
    )
    # a W&B failure that stops the run still shows as one
    crash = "wandb.errors.CommError: Run initialization has timed out after 90.0 sec."
    assert verdict([crash]).unrecognised != []


def test_the_seventy_fourth_batchs_wording_families():
    """A cache under a data folder is the data as the run reads it: a preprocessed file, or
    Megatron's index cache that a second node cannot see; the fix names both ways such a cache goes
    missing. Energon's check of a folder `energon prepare` never indexed."""
    _assert_named(
        {
            "FileNotFoundError: [Errno 2] No such file or directory: "
            "'/data/ncf/cache/ml-20m/test_negatives.pt'": "dataset_path_missing",
            "192.168.205.202: [rank4]: FileNotFoundError: [Errno 2] No such file or directory: "
            "'/home/sd/Megatron-DeepSpeed/data/index-cache/e1ad5b6b7b1f8b8a660d6fe8355c7bdd_doc_idx.npy'": "dataset_path_missing",
            "Unexpected error: Path NeMo/butterfly_webdataset does not contain a .nv-meta/.info.yaml "
            "file. Did you forget to prepare the dataset?": "train_flags_invalid",
        }
    )
    cache = "No such file or directory: '/work/dataset/index-cache/43d5bc14_doc_idx.npy'"
    fix = verdict([cache]).findings[0].fix
    assert "--data-cache-path" in fix and "before the multi-node launch" in fix
    # a cache outside any data folder (a compiler's, a hub's) is not the data
    assert verdict(
        ["FileNotFoundError: [Errno 2] No such file or directory: '/root/.cache/triton/x.json'"]
    ).primary != ("dataset_path_missing")


def test_the_seventy_fifth_batchs_wording_families():
    """A NaN loss as autograd's tensor or as a perplexity; an asserted path that a frame names as a
    data split's file; a shell's syntax error in a Chinese locale; and noise of runs that went on:
    libsharp out of SHARP resources, multiprocessing's queue feeder losing its reader, Ctrl-C."""
    _assert_named(
        {
            "pass 2 tensor(nan, device='cuda:0', grad_fn=<CopyBackwards>)": "nan_loss",
            "Step at 4 with Perplexity: nan": "nan_loss",
        }
    )
    assert_line = "[rank4]:     assert os.path.exists(path)"
    frame = "[rank4]:     self.vocab.count_file(os.path.join(path, 'train.txt'))"
    assert verdict([frame, assert_line, "[rank4]: AssertionError"]).primary == "dataset_path_missing"
    # without a frame naming a data file, the asserted path could be a checkpoint's: listed, unnamed
    v = verdict([assert_line, "[rank4]: AssertionError"])
    assert v.primary is None and v.unrecognised
    _assert_unknown(["server22: bash: -c: 行 0: 未预期的符号“(”附近有语法错误"])
    _assert_benign(
        [
            "[luna-0021:0:4050140 - context.c:621] ERROR SHArP Job init error: No resource",
            "[luna-0021:0:4050140 - context.c:610] ERROR sharp_get_job_data_len failed: Job error(-35)",
            "[luna-0021:0:4050140 unique id 13] ERROR Job error in sharp_get_job_data_len.",
            "WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers",
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 47832 got signal: 2",
        ]
    )
    # SIGTERM (a scheduler's or the kubelet's) is still listed
    _assert_unknown(
        ["torch.distributed.elastic.multiprocessing.api.SignalException: Process 47832 got signal: 15"]
    )
    feeder = [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.6/multiprocessing/queues.py", line 240, in _feed',
        "    send_bytes(obj)",
        "BrokenPipeError: [Errno 32] Broken pipe",
    ]
    assert verdict(feeder).findings == [] and verdict(feeder).unrecognised == []
    # a broken pipe with no feeder frame above it is still an error
    assert verdict(["Traceback (most recent call last):", feeder[-1]]).unrecognised


def test_the_seventy_sixth_batchs_wording_families():
    """A warning the program itself takes back (XLA's rendezvous watchdog, then "Thread is unstuck!
    Warning above was a false-positive"), and an assert's source line behind srun's --label prefix."""
    stuck = (
        "2024-02-14 03:00:37.726633: E external/xla/xla/service/rendezvous.cc:31] This thread has been "
        "waiting for 10 seconds and may be stuck:"
    )
    unstuck = (
        "2024-02-14 03:00:40.506108: E external/xla/xla/service/rendezvous.cc:36] Thread is unstuck! "
        "Warning above was a false-positive. Perhaps the timeout is too short."
    )
    v = verdict([stuck, unstuck])
    assert v.findings == [] and v.unrecognised == []
    # never taken back (a thread that stays stuck), it stays listed; a retraction before it takes nothing back
    assert [u["line"] for u in verdict([stuck]).unrecognised] == [stuck]
    assert [u["line"] for u in verdict([unstuck, stuck]).unrecognised] == [stuck]
    # taken-back warnings give their rank's places back: a real error after them is still listed
    error = "RuntimeError: something else broke"
    assert [u["line"] for u in verdict([stuck, stuck, stuck, unstuck, error]).unrecognised] == [error]
    # the same line by line (every check on every line, not only the gated ones)
    scan = _Scan(None)
    for line in (stuck, "I0214 step 1", unstuck):
        scan.feed(line)
    assert scan.result().unrecognised == []
    # a launcher's kill after warnings that were all taken back is still a silent death; a warning
    # left standing explains it no less than before
    kill = "[2024-01-22 16:50:49,553] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1080504"
    assert verdict([stuck, unstuck, kill]).primary == verdict([kill]).primary == "host_oom_killed"
    assert verdict([stuck, kill]).primary is None
    assert verdict([stuck, unstuck, stuck, kill]).primary is None
    lr = [
        "0: [default0]:[rank0]:     assert self.lr_warmup_steps < self.lr_decay_steps",
        "0: [default0]:[rank0]: AssertionError",
    ]
    assert verdict(lr).primary == "train_flags_invalid"


def test_the_seventy_seventh_batchs_wording_families():
    """FSDP failing to clone() one tensor of a full state dict (an OOM in its warning's message, the
    save going on), and a metric whose name ends in "Error"; an exception named the same way still
    counts."""
    clone = (
        "/opt/conda/lib/python3.9/site-packages/torch/distributed/fsdp/fully_sharded_data_parallel.py:2224: "
        "UserWarning: Failed to clone() tensor with name gpt_neox.layers.9.attention.query_key_value.weight. "
        "This may mean that this state_dict entry could point to invalid memory regions after returning from "
        "state_dict() call if this parameter is managed by FSDP. Please check clone implementation of "
        "gpt_neox.layers.9.attention.query_key_value.weight. Error: CUDA out of memory. Tried to allocate "
        "432.00 MiB (GPU 4; 39.56 GiB total capacity; 36.19 GiB already allocated)"
    )
    _assert_benign([clone, "  • Generation KL Error: 0.0004", "Mean Squared Error: 2.5e-03"])
    _assert_unknown(["KeyError: 0", "[rank0]: ZeroDivisionError: 3"])


def test_a_cut_traceback_lists_a_raised_message_that_lost_its_exception_name():
    """Interleaved stderr (the hundred-and-twenty-fourth batch's Accelerate log) dropped the
    "ValueError: " before the message of a "raise ValueError(" frame, and the log ends inside a second
    rank's traceback: the listing leads with the message, which says what failed, then the last
    source line, which only says where."""
    raised = [
        '  File "/site-packages/accelerate/accelerator.py", line 1300, in prepare',
        "    raise ValueError(",
        "You can't train a model that has been loaded with `device_map='auto'` in any distributed mode.",
    ]
    cut = ['  File "training_swanlab.py", line 257, in <module>', "    main()"]
    v = verdict([*raised, *cut])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [raised[2], cut[1]]
    # only the line right after a source line that raises, and never a chained traceback's heading
    call = [raised[0], "    return inner_training_loop(", raised[2]]
    assert [u["line"] for u in verdict([*call, *cut]).unrecognised] == [cut[1]]
    for heading in ("During handling of the above exception, another exception occurred:",
                    "Traceback (most recent call last):"):  # fmt: skip
        assert [u["line"] for u in verdict([*raised[:2], heading, *cut]).unrecognised] == [cut[1]], heading
    tagged = [f"[rank1]:{line}" for line in raised]
    assert [u["line"] for u in verdict([*tagged, *cut]).unrecognised] == [tagged[2], cut[1]]


def test_lightnings_slurm_environment_refuses_a_trainer_that_disagrees_with_the_allocation():
    """Lightning's SLURMEnvironment (its validate_settings, worded as in its source and in a batch
    script's note on the error): devices or num_nodes against the allocation's tasks per node or
    nodes, and --ntasks asked for instead of --ntasks-per-node."""
    _assert_named({
        "ValueError: You set `devices=2` in Lightning, but the number of tasks per node configured in SLURM "
        "`--ntasks-per-node=1` does not match. HINT: Set `devices=1`.": "train_flags_invalid",
        "[rank: 0] ValueError: You set `num_nodes=2` in Lightning, but the number of nodes configured in SLURM "
        "`--nodes=1` does not match. HINT: Set `num_nodes=1`.": "train_flags_invalid",
        "RuntimeError: You set `--ntasks=8` in your SLURM bash script, but this variable is not supported. "
        "HINT: Use `--ntasks-per-node=8` instead.": "train_flags_invalid",
    })  # fmt: skip


def test_the_seventy_eighth_batchs_wording_families():
    """torch 1.x's "invalid device ordinal"; a ds_config "auto" that no trainer argument fills; a log
    that ends inside a traceback, its exception line lost (not a healthy log)."""
    _assert_named({
        "RuntimeError: cuda runtime error (10) : invalid device ordinal at /pytorch/torch/csrc/cuda/Module.cpp:33": "gpu_assignment_invalid",
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid device ordinal": "gpu_assignment_invalid",
        "ValueError: `zero_optimization.prefetch_bucket_size` not found in kwargs. Please specify "
        "`zero_optimization.prefetch_bucket_size` without `auto` (set to correct value) in the DeepSpeed "
        "config file or pass it in kwargs.": "deepspeed_config_invalid",
    })  # fmt: skip
    # NCCL's own wording of a driver too old for its build is not a rank without a GPU
    _assert_unknown(
        ["[1,0]<stdout>:8470dd07de42:174:239 [0] init.cc:895 NCCL WARN Cuda failure 'invalid device ordinal'"]
    )
    cut = [
        '  File "/opt/Megatron-Bridge/src/megatron/bridge/training/config.py", line 1087, in validate',
        "    assert self.model.seq_length == data_seq_length, (",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ]
    v = verdict(cut)
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [cut[1]]
    tagged = [
        '[rank3]:   File "/x/trainer.py", line 3157, in _save_checkpoint',
        "[rank3]:     os.renames(a, b)",
    ]
    assert [u["line"] for u in verdict(tagged).unrecognised] == [tagged[1]]
    # the marks under a source line are never the line listed, tagged or not, ending in ^ or ~
    assert [u["line"] for u in verdict([*tagged, "[rank3]:     ^^^^^^^~~~~~~"]).unrecognised] == [tagged[1]]
    # ... but a traceback that reaches its exception line, or iterations logged after it, is judged as before
    for end in ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 1 got signal: 2",
                "[rank0]: KeyboardInterrupt", " iteration       10/     100 | lm loss: 2.5E+00 |"):  # fmt: skip
        assert cut[1] not in [u["line"] for u in verdict([*cut, end]).unrecognised], end


def test_the_eightieth_batchs_wording_families():
    """A C++ CHECK that aborts the process (glog/absl, XLA's GPU compiler) is a failure the verdict
    lists; WebDataset's refusal of a multi-node pipeline without a node splitter is a refused input."""
    check = "F0105 23:50:34.026692   34204 nccl_all_reduce_thunk.cc:175] Check failed: reduction_kind.has_value() "
    v = verdict(
        [
            check,
            "*** Check failure stack trace: ***",
            "    @     0x7f16cadf093d  absl::LogMessageFatal::~LogMessageFatal()",
        ]
    )
    assert v.primary is None and v.unrecognised[0]["line"] == check.rstrip()  # quoted without trailing blanks
    _assert_unknown(["*** Check failure stack trace: ***"])
    _assert_named({
        "ValueError: you need to add an explicit nodesplitter to your input pipeline for multi-node training": "train_flags_invalid",
    })  # fmt: skip
    _assert_benign(["I0105 23:50:34.026692 34204 gpu_compiler.cc:175] Checking whether the module fits"])


def test_the_eighty_first_batchs_wording_families():
    """A CUDA device-side assert on its own (wrapped before its closing backquote, too) is a failure
    the verdict lists, and so is Transformer Engine left with no attention backend."""
    wrapped = [
        "Assertion `idx_dim >= 0 && idx_dim < index_size &&",
        '           "scatter gather kernel index out of bounds"` failed.',
    ]
    assert [u["line"] for u in verdict(wrapped).unrecognised] == [wrapped[0]]
    _assert_unknown([
        "/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): block: [0,0,0], thread: "
        "[0,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && \"index out of bounds\"` failed.",
        "DEBUG:DotProductAttention:Selected backend = NoBackend",
    ])  # fmt: skip
    _assert_benign(["DEBUG:DotProductAttention:Selected backend = FlashAttention (version 2.7.4)"])


def test_the_eighty_second_batchs_wording_families():
    """A process that sees no GPU at all, and SageMaker model parallel asked for more processes than
    the instance's GPUs, are a rank without a GPU of its own (gpu_assignment_invalid)."""
    _assert_named({
        "RuntimeError: No CUDA GPUs are available": "gpu_assignment_invalid",
        "RuntimeError: CUDA error: no CUDA-capable device is detected": "gpu_assignment_invalid",
        "[1,2]<stderr>:RuntimeError: The number of node-local MPI processes 8cannot be larger than the "
        "device count 4": "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign(["torch.cuda.device_count() = 8; the number of node-local MPI processes is 8"])


def test_the_eighty_third_batchs_wording_families():
    """nanoGPT's assert that its gradient-accumulation steps (the global batch in micro-batches)
    divide by the world size is the batch arithmetic failing, over a bare AssertionError."""
    for source in (
        "    assert gradient_accumulation_steps % world_size == 0",
        "    assert gradient_accumulation_steps % ddp_world_size == 0",
        "    assert grad_acc_steps % dp_size == 0",
    ):
        assert verdict([source, "AssertionError"]).primary == "batch_size_not_divisible", source
    assert verdict(["    assert gradient_accumulation_steps > 0", "AssertionError"]).primary is None


def test_the_eighty_fourth_batchs_wording_families():
    """Megatron-LM's older validate_args refusing the interleaved schedule with too few pipeline
    stages is a parallel layout the model cannot take."""
    _assert_named({
        "AssertionError: pipeline-model-parallel size should be greater than 2 with interleaved schedule":
            "parallelism_config_invalid",
    })  # fmt: skip
    _assert_benign(["pipeline-model-parallel size: 4, with interleaved schedule (2 virtual stages)"])


def test_the_eighty_fifth_batchs_wording_families():
    """A rank's death that the launcher reports only by its exit code is a failure the verdict lists:
    DeepSpeed's sigkill_handler whatever its prefix, and torch elastic's ProcessFailure repr."""
    _assert_unknown([
        "deepspeed [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'main.py', '--local_rank=7'] "
        "exits with return code = -7",
        "The worker fails with {0: ProcessFailure(local_rank=0, pid=54, exitcode=-7, error_file='<N/A>', "
        "timestamp=1711419}",
    ])  # fmt: skip
    _assert_benign(["ProcessFailure(local_rank=0, pid=54, exitcode=0)", "all ranks exit with return code 0"])


def test_the_eighty_eighth_batchs_wording_families():
    """TensorRT-LLM's heads-over-TP assert (its source line over a bare AssertionError) is a parallel
    layout the model cannot take; verl's PPO mini-batch divided down to zero over its ranks is the
    batch arithmetic; Gaudi's older graph-workspace allocation failure is device memory."""
    for source in (
        "    assert self.num_heads % tp_size == 0",
        "    assert self.num_kv_heads % self.tp_size == 0",
        "    assert config.num_attention_heads % tensor_parallel_size == 0",
    ):
        assert verdict([source]).primary == "parallelism_config_invalid", source
    assert verdict(["    assert self.num_heads % 2 == 0", "AssertionError"]).primary is None
    _assert_named({
        "AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization":
            "batch_size_not_divisible",
        "RuntimeError: FATAL ERROR :: MODULE:SYNHELPER workspace Allocation of size ::14493510400 failed!":
            "cuda_oom",
    })  # fmt: skip
    _assert_benign(["ppo_mini_batch_size 64 after normalization", "SYNHELPER workspace size 1048576"])


def test_the_eighty_ninth_batchs_wording_families():
    """Megatron's unwritable data cache is a refused input; its loader's KeyError for a virtual
    pipeline chunk is a checkpoint of another layout (with load_checkpoint in the traceback, not
    alone); Open MPI's lost daemon and torchft's caught exceptions are failures the verdict lists."""
    _assert_named({
        "There was an error trying to create the data cache directory (/data/index-cache)": "train_flags_invalid",
    })  # fmt: skip
    frame = "    model[i].load_state_dict(state_dict['model%d' % i], strict=strict)"
    assert verdict([frame, "KeyError: 'model0'"]).primary == "checkpoint_mismatch"
    assert (
        verdict(
            ['  File "megatron/checkpointing.py", line 596, in load_checkpoint', "KeyError: 'model1'"]
        ).primary
        == "checkpoint_mismatch"
    )
    assert verdict(["KeyError: 'model0'"]).primary is None
    _assert_unknown([
        "ORTE has lost communication with a remote daemon.",
        "[train_ddp_0:63b4/0 - step 0] got exception in pg configure: module 'torch._C._distributed_c10d' "
        "has no attribute '_reset_fr_recording_nccl'",
    ])  # fmt: skip
    _assert_benign(["data cache directory: /data/index-cache", "ORTE daemons started on 2 nodes"])


def test_the_ninetieth_batchs_wording_families():
    """kohya's "No data found. Please verify arguments" is a refused input; any KeyError with a
    checkpoint or optimizer loader in the traceback is a checkpoint of another layout."""
    _assert_named({
        "No data found. Please verify arguments (train_data_dir must be the parent of folders with images)":
            "train_flags_invalid",
    })  # fmt: skip
    frame = '  File "/home/nanotron/src/nanotron/serialize/optimizer.py", line 222, in load_optimizer'
    assert verdict([frame, "KeyError: None"]).primary == "checkpoint_mismatch"
    assert verdict(['  File "train.py", line 9, in collate', "KeyError: None"]).primary is None
    _assert_benign(["No data found for split 'test'; skipping evaluation"])


def test_the_ninety_first_batchs_wording_families():
    """A ZeRO stage refusing an option it cannot combine with is DeepSpeed refusing its config."""
    _assert_named({
        "NotImplementedError: ZeRO-3 does not yet support checkpointing with NVMe offloading, please disable for now.":
            "deepspeed_config_invalid",
    })  # fmt: skip
    _assert_benign(["ZeRO-3 supports NVMe offloading of parameters and optimizer states"])


def test_the_ninety_second_batchs_wording_families():
    """A finalizer's traceback that multiprocessing prints and ignores (its temporary folder's
    clean-up) is no failure; the same exception raised by the program is one."""
    tb = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/multiprocessing/util.py", line 300, in _run_finalizers',
        "    finalizer()",
        '  File "/usr/lib/python3.11/shutil.py", line 736, in rmtree',
        "    os.rmdir(path, dir_fd=dir_fd)",
        "OSError: [Errno 39] Directory not empty: '/tmp/pymp-_82xusl_'",
    ]
    v = verdict([*tb, "Epoch 0:  54%| 1000/1867 [25:21<21:59, 1.52s/it, train/loss=3.170]"])
    assert v.findings == [] and v.unrecognised == []
    raised = [tb[0], '  File "train.py", line 9, in <module>', *tb[3:]]
    assert [u["line"] for u in verdict(raised).unrecognised] == [tb[-1]]


def test_the_ninety_third_batchs_wording_families():
    """The CUDA driver API's invalid-device error (XLA's wording) is a rank without its GPU; Ray's
    autoscaler finding no node type that fits is a job that cannot be placed; Apptainer's failed bind
    mount is a volume that did not mount; a missing HPC-X SHARP plugin is not aws-ofi-nccl; and a Ray
    Tune attempt that errored, then was retried and got its workers, leaves no unknown failure."""
    _assert_named({
        "W platform_util.cc:199] unable to create StreamExecutor for CUDA:1: failed initializing "
        "StreamExecutor for CUDA device ordinal 1: INTERNAL: Failed call to cuDeviceGet: "
        "CUDA_ERROR_INVALID_DEVICE: invalid device ordinal": "gpu_assignment_invalid",
        "(autoscaler +34s) Error: No available node types can fulfill resource request "
        "defaultdict(<class 'float'>, {'CPU': 8.0, 'GPU': 8.0}). Add suitable node types to this cluster "
        "to resolve this issue.": "pod_pending_insufficient_resources",
        "FATAL:   container creation failed: mount hook function failure: mount /data->/data error: while "
        "mounting /data: mount source /data doesn't exist": "volume_mount_failed",
    })  # fmt: skip
    _assert_benign([
        "Resources requested: 8.0/8 CPUs, 1.0/1 GPUs",
        "INFO:    Converting SIF file to temporary sandbox...",
        "CUDA_VISIBLE_DEVICES=0,1 (ordinal 0 and 1 visible)",
    ])  # fmt: skip
    sharp = "h:1:2 [1] NCCL INFO NET/Plugin: Could not find: libnccl-net-/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.so."
    sockets = [
        "h:1:2 [1] NCCL INFO Using network Socket",
        "h:1:2 [0] NCCL INFO comm 0x1 rank 1 nRanks 3 nNodes 2",
    ]
    assert verdict([sharp, *sockets]).primary == "nccl_socket_fallback"
    plain = "h:1:2 [1] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."
    assert verdict([plain, *sockets]).primary == "efa_plugin_missing"
    failed = [
        '(TunerInternal pid=1) botocore.exceptions.ConnectTimeoutError: Connect timeout on endpoint URL: "http://minio:9000/a"',
        "(TunerInternal pid=1) Training errored after 0 iterations at 2023-11-22 07:46:48. Total running time: 1min 2s",
    ]  # fmt: skip
    retried = "(RayTrainWorker pid=3) Setting up process group for: env:// [rank=0, world_size=2]"
    assert verdict([*failed, retried]).unrecognised == []
    assert [u["line"] for u in verdict(failed).unrecognised] == [failed[0]]  # no later attempt
    # the last attempt failing after its workers' sign: its own lines stay listed
    last = [*failed, retried, failed[0], failed[1]]
    assert [u["line_number"] for u in verdict(last).unrecognised] == [4]


def test_the_ninety_sixth_batchs_wording_families():
    """Transformer Engine's Userbuffers giving up on a peer's flag is a hang; a traceback of one of
    wandb's status threads (its service gone at the run's end) is no failure, while the same
    exception raised in the program's own code still is."""
    _assert_named({
        "[userbuffers.cu:userbuffers_fp16_sum_inplace_gpu_rr_rs_oop_fp8:797] [6] Reduce-scatter: SM 18 [2]: "
        "expecting 1 got 0": "training_hang",
    })  # fmt: skip
    _assert_benign(["UB_TIMEOUT is set to 110 sec, 155100000000 cycles, freq: 1410000khz"])
    thread = [
        "Exception in thread NetStatThr:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 975, in run',
        "    self._target(*self._args, **self._kwargs)",
        '  File "/usr/local/lib/python3.11/dist-packages/wandb/sdk/wandb_run.py", line 257, in check_network_status',
        "    self._loop_check_status(",
        '  File "/usr/local/lib/python3.11/dist-packages/wandb/sdk/lib/sock_client.py", line 130, in _send',
        "    sent = self._sock.send(data)",
        "BrokenPipeError: [Errno 32] Broken pipe",
    ]
    assert verdict(thread).unrecognised == [] and verdict(thread).primary is None
    own = [thread[1], '  File "train.py", line 9, in <module>', *thread[-2:]]
    assert [u["line"] for u in verdict(own).unrecognised] == [thread[-1]]


def test_the_ninety_seventh_batchs_wording_families():
    """Megatron's refusal of Transformer Engine without FP32 softmax and a trainer refusing
    padding-free batches are refused flags; the old distributed optimizer's bucket check is a
    data-parallel size the layout cannot take."""
    _assert_named({
        "AssertionError: TransformerEngine only supports softmax compute in FP32.": "train_flags_invalid",
        "[rank1]: ValueError: Template `gemma4` does not support padding free or packing.": "train_flags_invalid",
        "AssertionError: Each bucket's buffer size should be divisible by 6": "parallelism_config_invalid",
    })  # fmt: skip
    _assert_benign([
        "attention_softmax_in_fp32 ...................... True",
        "padding_free: true, packing: false",
        "Each bucket holds 40000000 elements",
    ])  # fmt: skip


def test_the_ninety_eighth_batchs_wording_families():
    """HCCL's collective wait that timed out is Ascend's collective timeout; einops unable to split
    an axis over a sequence-parallel group is a layout the input cannot take, and only with that
    group's size named in the log."""
    _assert_named({
        "EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
        "Reason: The Notify register has not received the Notify record from remote rank [unknown].": "nccl_timeout",
    })  # fmt: skip
    split = "einops.EinopsError:  Shape mismatch, can't divide axis of length 20 in chunks of 8"
    frame = "[rank3]:                         n=sp_world_size).contiguous()"
    assert verdict([frame, split]).primary == "parallelism_config_invalid"
    assert verdict(['  File "model.py", line 9, in forward', split]).primary is None
    _assert_benign(["sp_world_size: 8", "HCCL notify wait time: 1800 s"])


def test_the_ninety_ninth_batchs_wording_families():
    """accelerate's loader running out of an iterable dataset before the expected step count is a
    dataset too small for the run; vLLM refusing a context beyond the model's positions is the
    model's configuration."""
    _assert_named({
        "ValueError: Batch does not contain any data (`None`). At the end of all iterable data available "
        "before expected stop iteration.": "dataset_too_small",
        "ValueError: User-specified max_model_len (37192) is greater than the derived max_model_len "
        "(max_position_embeddings=32768 or model_max_length=None in model's config.json).": "model_config_invalid",
    })  # fmt: skip
    _assert_benign(["max_model_len: 32768", "iterable dataset: 100 batches per rank"])


def test_the_hundred_and_first_batchs_wording_families():
    """TensorFlow's "Dst tensor is not initialized" is its copy to a GPU that got no memory for the
    destination: a GPU out of memory, in whichever error class the version wraps it."""
    _assert_named({
        "  (0) Internal: Dst tensor is not initialized.": "cuda_oom",
        "tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not initialized. "
        "[Op:Cast]": "cuda_oom",
    })  # fmt: skip
    _assert_benign(["dst tensor: initialized from the checkpoint", "Destination tensor is ready"])


def test_the_hundred_and_second_batchs_wording_families():
    """ps-lite's scheduler unable to bind its rendezvous port is the master port taken; glog's CHECK
    of a CUDA call failing with error 10 is a GPU number the node does not have; an IPython
    traceback's header is a failure even when the excerpt ends before its message."""
    _assert_named({
        "[07:48:18] 3rdparty/ps-lite/include/dmlc/logging.h:276: [07:48:18] src/./zmq_van.h:121: Reached max retry "
        "for bind: Address already in use. errno = 98": "master_port_in_use",
        "F0707 18:28:31.445760 14913 parallel.cpp:130] Check failed: error == cudaSuccess (10 vs. 0)  invalid device "
        "ordinal": "gpu_assignment_invalid",
        "F0312 09:01:02.000001  2211 syncedmem.cpp:56] Check failed: error == cudaSuccess (10 vs. 0)  invalid device "
        "ordinal": "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_unknown([
        "ResourceExhaustedError                    Traceback (most recent call last)",
        "KeyboardInterrupt                         Traceback (most recent call last)",
    ])  # fmt: skip
    _assert_benign([
        "[07:48:18] src/postoffice.cc:25: Creating Van: zmq",
        "I0707 18:28:31.445760 14913 solver.cpp:99] Iteration 100, loss = 0.3 (10 vs. 0)",
        "Traceback printing is on; errors go to stderr",
    ])  # fmt: skip


def test_the_hundred_and_fifth_batchs_wording_families():
    """fms-acceleration's ScatterMoE checks: a world size or an expert count that does not split
    over the expert-parallel degree is a parallel layout the job cannot take, with or without "is"."""
    _assert_named({
        "AssertionError: world size (2) not divisible by ep_size (4).": "parallelism_config_invalid",
        "AssertionError: world size (6) is not divisible by ep_size (4).": "parallelism_config_invalid",
        "AssertionError: moe num experts (62) not divisible by ep_shard_factor (4).": "parallelism_config_invalid",
        "ValueError: num experts (60) is not divisible by expert_parallel_size (8)": "parallelism_config_invalid",
    })  # fmt: skip
    _assert_benign(["moe num experts (64), ep_shard_factor (4)", "world size (8), ep_size (4)"])


def test_the_hundred_and_sixth_batchs_wording_families():
    """A rank asking for a GPU the process does not see, as CuPy's runtime error names it and as
    PyTorch Lightning's device check refuses it (its GPU list on the next line)."""
    _assert_named({
        "cupy.cuda.runtime.CUDARuntimeError: cudaErrorInvalidDevice: invalid device ordinal": "gpu_assignment_invalid",
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested GPUs: [0, 1]":
            "gpu_assignment_invalid",
        "lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [1]":
            "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign([
        "GPU available: True (cuda), used: True",
        "You requested GPUs: 8 via Trainer(devices=8)",
        "cudaErrorInvalidDevice is returned when the ordinal is out of range",
    ])  # fmt: skip


def test_the_hundred_and_seventh_batchs_wording_families():
    """torch's internal check of a device index against the GPUs it counted is a rank asking for a
    GPU the process does not see, as CUDA's invalid device ordinal is."""
    _assert_named({
        'RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/'
        'CUDAContext.cpp":49, please report a bug to PyTorch. device=7, num_gpus=4': "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign(["torch.cuda.device_count() = 8, num_gpus = 8", "assert device >= 0"])


def test_the_hundred_and_tenth_batchs_wording_families():
    """TensorFlow's session config asking for a GPU index the process does not see (Horovod's
    local-rank pinning under a CUDA_VISIBLE_DEVICES that left one GPU) is a rank without its GPU,
    in TF 1's wording and TF 2's."""
    _assert_named({
        "2017-11-15 01:21:03.972724: E tensorflow/core/common_runtime/direct_session.cc:138] Invalid "
        "argument: 'visible_device_list' listed an invalid GPU id '6' but visible device count is 1":
            "gpu_assignment_invalid",
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: 'visible_device_list' listed an "
        "invalid Device id '3' but visible device count is 2": "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign(["config.gpu_options.visible_device_list = str(hvd.local_rank())"])


def test_the_hundred_and_thirteenth_batchs_wording_families():
    """An OOM that the trainer catches and survives is still an OOM: torch 0.x's THC check of the
    failed allocation, and fairseq dropping the batch (its 2018 wording and its later ones)."""
    _assert_named({
        "| epoch 001:   0%| | 315/72115 [01:24<5:21:16,  3.72it/s, loss=11.45, oom=0]THCudaCheck FAIL "
        "file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=58 error=2 : out of memory": "cuda_oom",
        "| WARNING: ran out of memory on GPU #2, skipping batch": "cuda_oom",
        "2021-03-02 10:11:12 | WARNING | fairseq.trainer | attempting to recover from OOM in "
        "forward/backward pass": "cuda_oom",
        "| WARNING: OOM in all workers, skipping update": "cuda_oom",
        # the same THC check failing with another error is that error, not an OOM
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid device "
        "ordinal": "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign(["| epoch 001 | loss 4.123 | ppl 17.43 | wps 6799 | ups 1.2 | wpb 5476 | oom 0 | wall 84"])


def test_torch_1xs_raised_thc_out_of_memory_is_an_oom():
    """torch 0.4-1.x raised the same THC failure as a RuntimeError in its other wording ("cuda runtime
    error (2) : out of memory at .../THCCachingAllocator.cpp:510"), the twin of the "cuda runtime
    error (10) : invalid device ordinal" that gpu_assignment_invalid already reads; Caffe's glog CHECK
    says the same error as "(2 vs. 0)  out of memory"."""
    _assert_named({
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/pytorch/aten/src/THC/THCCachingAllocator.cpp:510": "cuda_oom",
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/opt/conda/conda-bld/pytorch_1524586445097/work/aten/src/THC/generic/THCStorage.cu:58": "cuda_oom",
        "RuntimeError: cuda runtime error (10) : invalid device ordinal at "
        "/pytorch/torch/csrc/cuda/Module.cpp:33": "gpu_assignment_invalid",
        # Caffe's glog CHECK of the same allocation (caffe train -gpu all)
        "F0409 20:04:50.702540 14581 syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out "
        "of memory": "cuda_oom",
    })  # fmt: skip


def test_the_hundred_and_sixteenth_batchs_wording_families():
    """CUDA 10.1 renumbered cudaErrorInvalidDevice from 10 to 101, so torch 1.x's THC check of a rank
    asking for a GPU past the last one says "error=101" (and "cuda runtime error (101)"); and a trainer
    asserting that one option only goes with another is a flag error, the twin of "X is not supported
    with Y"."""
    _assert_named({
        "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=37 error=101 : invalid device "
        "ordinal": "gpu_assignment_invalid",
        "RuntimeError: cuda runtime error (101) : invalid device ordinal at "
        "/pytorch/torch/csrc/cuda/Module.cpp:59": "gpu_assignment_invalid",
        "F0312 10:11:12.123456  4242 common.cpp:152] Check failed: error == cudaSuccess (101 vs. 0)  "
        "invalid device ordinal": "gpu_assignment_invalid",
        "[rank5]: AssertionError: pretrained image towers currently only supported for timm models":
            "train_flags_invalid",
        "ValueError: sequence packing is only supported with flash attention 2": "train_flags_invalid",
    })  # fmt: skip
    # the same words in a warning the run goes on after are no failure
    _assert_benign([
        "UserWarning: Set timeout is now only supported for either nccl or gloo.",
        "[rank0]:W0403 13:00:48.719015 727535 AllReduce.cc:24] ctring algo currently only supported for "
        "nLocalRanks=1 for ctranAllReduce, falling back to baseline",
    ])  # fmt: skip


def test_no_cuda_device_in_torch_1xs_thc_wordings():
    """A process that sees no GPU at all, as torch 1.x's THC check says it under both numbers that
    cudaErrorNoDevice has had (38, then 100 from CUDA 10.1), and as Caffe's glog CHECK says it: the
    twins of "CUDA error: no CUDA-capable device is detected"."""
    _assert_named({
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=51 error=38 : no CUDA-capable "
        "device is detected": "gpu_assignment_invalid",
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=100 : no CUDA-capable "
        "device is detected": "gpu_assignment_invalid",
        "RuntimeError: cuda runtime error (38) : no CUDA-capable device is detected at "
        "/pytorch/aten/src/THC/THCGeneral.cpp:51": "gpu_assignment_invalid",
        "RuntimeError: cuda runtime error (100) : no CUDA-capable device is detected at "
        "/pytorch/aten/src/THC/THCGeneral.cpp:50": "gpu_assignment_invalid",
        "F0223 08:15:30.722712  2135 common.cpp:158] Check failed: error == cudaSuccess (100 vs. 0)  no "
        "CUDA-capable device is detected": "gpu_assignment_invalid",
    })  # fmt: skip


def test_the_hundred_and_seventeenth_batchs_wording_families():
    """verl's check of the rollout's sequence against the model's context is a model size that does
    not fit; torch's C++ log at error level ("[E0329 ... ProcessGroupGloo.cpp:143] ...") is a failure
    to show even when no signature knows it; and srun reporting the tasks it killed itself after
    another task exited ("tasks 1-3: Killed") is no OOM kill."""
    _assert_named({
        "(main_task pid=57880) AssertionError: model context length should be greater than total "
        "sequence length": "model_config_invalid",
    })  # fmt: skip
    _assert_unknown([
        "[rank12]:[E329 10:59:19.863283463 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with "
        "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        "[E ProcessGroupGloo.cpp:138] Gloo connectFullMesh failed with [/opt/gloo/transport/tcp/pair.cc:144]",
    ])  # fmt: skip
    v = verdict([
        "wandb.errors.errors.CommError: Run initialization has timed out after 90.0 sec.",
        "srun: error: g3060: task 0: Exited with exit code 1",
        "srun: Terminating StepId=25036072.0",
        "srun: error: g3060: tasks 1-3: Killed",
    ])  # fmt: skip
    assert v.primary is None and v.unrecognised, v
    # the shell's own "Killed" after a progress bar is still the OOM killer's
    _assert_named(
        {"Loading checkpoint shards:  38%|███  | 3/8 [00:02<00:03,  1.28it/s]Killed": "host_oom_killed"}
    )


def test_the_hundred_and_eighteenth_batchs_wording_families():
    """Horovod's examples pin each process to the GPU at its local rank in the list TensorFlow shows
    it (`gpus[hvd.local_rank()]`): with more processes than GPUs the list is too short, and the rank
    dies of an IndexError on that line. The IndexError alone is any bug; with that source line in
    the traceback it is a rank without a GPU of its own."""
    frames = ["Traceback (most recent call last):", '  File "train.py", line 40, in <module>']
    cases = {
        "    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')": "gpu_assignment_invalid",
        "    torch.cuda.set_device(devices[args.local_rank])": "gpu_assignment_invalid",
        # the same IndexError in another line of code is not about GPUs
        "    return batch[idx]": None,
    }
    for source, label in cases.items():
        v = verdict([*frames, source, "IndexError: list index out of range"])
        assert v.primary == label and (label or v.unrecognised), (source, v)


def test_nccl_228s_named_work_completion_status():
    """NCCL 2.28 reports a failed InfiniBand work completion in two lines of its own: "Got CQE with
    error" from the function that polled it, then the completion with the status *named* and its
    number in brackets (older NCCL printed "status=12" or "error 12"). Either line alone is the
    transport failing."""
    cqe = (
        "ubuntu4:250415:250528 [1] transport/net_ib/p2p.cc:783 NCCL WARN NET/IB: ncclIbTest: Got CQE with "
        "error (devIndex=0, req=0x7fccfc04e028, comm=0x7fccfc04e000 (recv), wr_id=0, qp_num=26257)"
    )
    completion = (
        "ubuntu2:319733:319761 [1] transport/net_ib/p2p.cc:648 NCCL WARN NET/IB: Got completion from peer "
        "10.153.235.13<40554> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV_RDMA_WITH_IMM(129) "
        "vendor_err=129 localGid ::ffff:1.1.2.2 remoteGids::ffff:1.1.1.4 hca mlx5_1"
    )
    _assert_named({cqe: "ib_transport_error", completion: "ib_transport_error"})


def test_a_rank_without_a_gpu_in_rocms_wording():
    """torch built for ROCm raises the same two errors as on NVIDIA GPUs with HIP in CUDA's place
    (the class is torch.AcceleratorError from torch 2.8): a rank asking for a device past the ones
    HIP_VISIBLE_DEVICES leaves it, and a process that sees none at all."""
    _assert_named({
        "torch.AcceleratorError: HIP error: invalid device ordinal": "gpu_assignment_invalid",
        "RuntimeError: HIP error: invalid device ordinal": "gpu_assignment_invalid",
        "RuntimeError: No HIP GPUs are available": "gpu_assignment_invalid",
    })  # fmt: skip


def _refusal(**config: object) -> list[str]:
    """The traceback that megatron-core's own TransformerConfig prints when it refuses ``config``,
    each rank's lines tagged as torchrun's --tee does ("[rank0]: ...")."""
    # (no Transformer Engine or Apex here, and defaults it fills in: megatron-core warns of both)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.transformer.transformer_config import TransformerConfig

        try:
            TransformerConfig(**{"num_layers": 8, "hidden_size": 256, "num_attention_heads": 8, **config})
        except (ValueError, AssertionError) as exc:
            text = "".join(traceback.format_exception(exc))
        else:
            raise AssertionError(f"megatron-core accepted {config}")
    return ["[rank0]: " + line for line in text.splitlines()]


@pytest.mark.parametrize(
    ("config", "label"),
    [
        ({"fp16": True, "bf16": True}, "train_flags_invalid"),
        ({"fp8_param": True}, "train_flags_invalid"),
        ({"pipeline_model_parallel_size": 2}, "train_flags_invalid"),  # no pipeline_dtype
        (
            {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
             "distribute_saved_activations": True, "sequence_parallel": True, "tensor_model_parallel_size": 2},
            "train_flags_invalid",
        ),
        ({"num_moe_experts": 8, "moe_router_num_groups": 3, "moe_router_group_topk": 2}, "train_flags_invalid"),
        # a rule between the model's heads and the parallel sizes keeps its own, more precise label
        ({"num_attention_heads": 6, "tensor_model_parallel_size": 4}, "parallelism_config_invalid"),
    ],
)  # fmt: skip
def test_megatron_cores_config_refusals_are_named_from_its_own_traceback(config, label):
    """megatron-core checks a TransformerConfig's values when it is built (``__post_init__``) and
    raises a ValueError (or an assert) whose message names the options. The message alone could be
    any ValueError; the ``__post_init__`` frame above it makes it a configuration the trainer
    refused before training. The tracebacks are megatron-core's own, from the installed package."""
    lines = _refusal(**config)
    v = verdict(lines)
    assert v.primary == label, (config, lines[-1], v)
    evidence = v.findings[0].line
    assert "Error: " in evidence and "raise " not in evidence, evidence


def test_a_valueerror_outside_a_config_check_stays_unknown():
    """The same ValueError raised from ordinary code (no ``__post_init__`` frame) is no flag refusal."""
    v = verdict([
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 88, in collate',
        "    raise ValueError(",
        "ValueError: When using pipeline parallelism, pipeline_dtype must be specified",
    ])  # fmt: skip
    assert v.primary is None and v.unrecognised, v


def test_the_hundred_and_nineteenth_batchs_wording_families():
    """PaddlePaddle's wordings: its GPU out-of-memory reaches Python as a MemoryError whose message
    begins on the next line (the ResourceExhaustedError summary below it says GPU), which is not
    host memory; a rank asking for a CUDAPlace past the GPUs it counted; 1.x's allocator enforce; and
    1.x's EnforceNotMet, an exception without "Error" in its name, is a failure to show. (NumPy's
    MemoryError subclass, met on the way, is the host's.)"""
    paddle_oom = [
        "    qk_mat = qk_mat + mask",
        "MemoryError: ",
        "",
        "--------------------------------------",
        "C++ Traceback (most recent call last):",
        "--------------------------------------",
        "0   add_ad_func(paddle::Tensor const&, paddle::Tensor const&)",
        "----------------------",
        "Error Message Summary:",
        "----------------------",
        "ResourceExhaustedError: ",
        "",
        "Out of memory error on GPU 1. Cannot allocate 4.882812GB memory on GPU 1, 19.911926GB memory has "
        "been allocated and available memory is only 3.730957GB.",
    ]  # fmt: skip
    assert verdict(paddle_oom).primary == "cuda_oom"
    _assert_named({
        # Python's own MemoryError, bare or with its message on the line, is still the host's
        "MemoryError": "host_oom_killed",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape "
        "(429496729,) and data type float64": "host_oom_killed",
        "MemoryError: Unable to allocate 3.20 GiB for an array with shape (429496729,)": "host_oom_killed",
        "paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, 10238983668 > 9509207808":
            "cuda_oom",
        "E0808 11:06:01.542135 1538951 pybind.cc:1584] Invalid CUDAPlace(3), must inside [0, 2), because GPU "
        "number on your machine is 2": "gpu_assignment_invalid",
        "ValueError: (InvalidArgument) Can not copy Tensor to Invalid CUDAPlace(1), device id must inside [0, 1)":
            "gpu_assignment_invalid",
        # ... Paddle 2.x's report of a failed CUDA call, and MindSpore's device check, the same families
        "OSError: (External) CUDA error(2), out of memory.": "cuda_oom",
        "[ERROR] DEVICE [mindspore/ccsrc/runtime/device/gpu/cuda_driver.cc:245] SetDevice] SetDevice for id:7 "
        "failed, ret[101], invalid device ordinal. Please make sure that the 'device_id' set in context is in "
        "the range:[0, total number of GPU).": "gpu_assignment_invalid",
        # MindSpore's memory pool on the device, and on the host
        "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
        "Default/network-WithLossCell/_backbone-Net/Conv2D-op1, alloc size: 1073741824B.": "cuda_oom",
        "RuntimeError: Memory isn't enough and alloc failed, kernel name: Default/Add-op1, alloc size: 1024B.":
            "host_oom_killed",
    })  # fmt: skip
    _assert_unknown([
        "paddle.fluid.core.EnforceNotMet: unhandled cuda error at "
        "[/workspace/agent/work/62dea99fa81a5ba4/paddle/fluid/platform/nccl_helper.h:93]",
        "ABORT!!! Out of all 8 trainers, the trainer process with rank=[2, 3] was aborted. Please check its log.",
    ])  # fmt: skip


def test_autograds_anomaly_mode_stopping_at_a_nan_gradient():
    """A run debugged with torch.autograd.detect_anomaly() stops at the first backward function whose
    gradient came out NaN. The log is the one real torch prints (its warnings and traceback), made by
    a backward pass through sqrt at 0 (an infinite slope times zero)."""
    script = (
        "import torch\n"
        "x = torch.zeros(1, requires_grad=True)\n"
        "with torch.autograd.detect_anomaly():\n"
        "    (torch.sqrt(x) * 0).sum().backward()\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    lines = ["[rank0]: " + line for line in run.stderr.splitlines()]
    assert any("returned nan values" in line for line in lines), run.stderr[-2000:]
    assert verdict(lines).primary == "nan_loss"


def test_the_hundred_and_twenty_first_batchs_wording_families():
    """A settings file the command line names and that is not there is a refused flag, in each config
    loader's words: detectron2's merge_from_file, mmengine's Config.fromfile (the wording of a real
    mmfashion paste), and a plain open() of a JSON whose name says settings (AlgoPerf's
    --tuning_search_space, whose folder is named after its ImageNet workload). A missing data file,
    JSON too, is still the data's."""
    _assert_named({
        "AssertionError: Config file './configs/COCO/dh/dh_r50_fpn_COCO_train.yaml' does not exist!":
            "train_flags_invalid",
        'FileNotFoundError: file "/DL/ProjFashion/mmfashion-master/configs/attribute_predict/'
        'global_predictor_vgg_attr.py" does not exist': "train_flags_invalid",
        "FileNotFoundError: [Errno 2] No such file or directory: 'reference_algorithms/target_setting_"
        "algorithms/imagenet_resnet_large_bn_init/tuning_search_space.json'": "train_flags_invalid",
        "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/ds_config_zero3.json'":
            "train_flags_invalid",
        # the data's own files keep their label
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/coco/annotations/instances_train2017.json'":
            "dataset_path_missing",
        "FileNotFoundError: [Errno 2] No such file or directory: '/workspace/data/train_configs_v2/part-0.jsonl'":
            "dataset_path_missing",
    })  # fmt: skip


def test_a_model_folder_that_is_not_one():
    """The model folder a fine-tuning or conversion run names is not a Hugging Face model folder: a
    wrong path or an unfinished copy. transformers says the folder lacks config.json; huggingface_hub,
    given a local path that does not exist, refuses it as a Hub repo id (the wordings of real pastes).
    "Can't load the configuration of", printed for a wrong path and for an unreachable Hub alike, and
    a transformers too old for the architecture, stay unknown."""
    _assert_named({
        "OSError: ./models/clara-e2e does not appear to have a file named config.json": "train_flags_invalid",
        "HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
        "'/kaggle/input/robertamodel0524/'. Use `repo_type` argument if needed.": "train_flags_invalid",
    })  # fmt: skip
    _assert_unknown([
        "OSError: Can't load the configuration of '/models/llama'. If you were trying to load it from "
        "'https://huggingface.co/models', make sure you don't have a local directory with the same name.",
        "ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not "
        "recognize this architecture.",
        # a Hub id in the right form is not a path
        "HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
        "'meta-llama/Llama-2-7b/extra'. Use `repo_type` argument if needed.",
    ])  # fmt: skip


def _dcp_refusal(folder: Path, saved: dict, wanted: dict) -> list[str]:
    """The traceback torch.distributed.checkpoint prints when it refuses to load ``saved`` (written
    to ``folder``) into a model whose state dict is ``wanted`` (one process, no process group)."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.api import CheckpointException

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DCP warns that it runs without a process group
        dcp.save({"model": {k: torch.zeros(shape) for k, shape in saved.items()}}, checkpoint_id=folder)
        try:
            dcp.load({"model": {k: torch.zeros(shape) for k, shape in wanted.items()}}, checkpoint_id=folder)
        except CheckpointException as exc:  # each rank's error, wrapped (a BaseException, not an Exception)
            return ["[rank0]: " + line for line in "".join(traceback.format_exception(exc)).splitlines()]
    raise AssertionError(f"torch.distributed.checkpoint loaded {saved} into {wanted}")


@pytest.mark.parametrize(
    "wanted",
    [{"layers.0.weight": (2, 2), "layers.1.weight": (2, 2)}, {"layers.0.weight": (4, 2)}],
    ids=["a_layer_more", "a_wider_layer"],
)
def test_torch_dcps_own_refusals_of_another_models_checkpoint(wanted, tmp_path):
    """torchtitan, FSDP2 and Megatron-Bridge's torch_dcp format load through torch's DCP planner: a
    model with a layer the checkpoint lacks, or a tensor of another shape, is refused in the planner's
    words, read here from the traceback torch itself prints."""
    lines = _dcp_refusal(tmp_path, {"layers.0.weight": (2, 2)}, wanted)
    assert verdict(lines).primary == "checkpoint_mismatch"


def test_a_size_mismatch_in_the_optimizers_state_alone_is_not_another_model():
    """DCP reshards on load, so another model's checkpoint fails first on a weight; a size mismatch
    only in the optimizer's state is a sharded layout the loader does not expect (Megatron-LM#4129)."""
    _assert_unknown([
        "ValueError: Size mismatch between saved torch.Size([6561, 512]) and current: torch.Size([5533, 512]) "
        "for optimizer.state.module.module.module.embedding.word_embeddings.weight.exp_avg",
    ])  # fmt: skip


def test_kubernetes_own_refusals_of_a_training_pod():
    """Kubernetes' own words for a node whose disk is nearly full (the kubelet's DiskPressure
    eviction and admission refusal, beside its MemoryPressure twin) and for a namespace whose
    ResourceQuota is spent (the job controller cannot create the pod), as real event listings and
    pod statuses print them."""
    _assert_named({
        "  Warning  Evicted    50s   kubelet            The node had condition: [DiskPressure].": "disk_full",
        "Pod was rejected: The node had condition: [DiskPressure]. ": "disk_full",
        "  Warning  FailedCreate  5m54s                replicaset-controller  Error creating: pods "
        '"restricteddeploy-869775475b-264wg" is forbidden: exceeded quota: mylimits, requested: memory=2G, '
        "used: memory=0, limited: memory=1G": "pod_pending_insufficient_resources",
        'Error from server (Forbidden): error when creating "pytorchjob.yaml": pods "train-worker-0" is '
        "forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=8, used: "
        "requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8": "pod_pending_insufficient_resources",
    })  # fmt: skip


def test_batch_systems_own_words_for_memory_and_an_impossible_request():
    """Slurm's older memory enforcement, PBS's and LSF's kills over a job's memory request (as real
    job outputs print them), Slurm refusing a request no node can hold, and sbatch's own errors as
    failures to show."""
    _assert_named({
        "slurmstepd: error: Job 8430179 exceeded memory limit (10442128 > 10240000), being killed": "host_oom_killed",
        "slurmstepd: error: Step 14366338.0 exceeded memory limit (8485688 > 8388608), being killed": "host_oom_killed",
        "slurmstepd: error: Exceeded job memory limit": "host_oom_killed",
        "=>> PBS: job killed: mem 2097152kb exceeded limit 1048576kb": "host_oom_killed",
        "=>> PBS: job killed: mem job total 4323312 kb exceeded limit 3145728 kb": "host_oom_killed",
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.": "host_oom_killed",
        "sbatch: error: Batch job submission failed: Requested node configuration is not available":
            "pod_pending_insufficient_resources",
        "srun: error: Unable to allocate resources: Requested node configuration is not available":
            "pod_pending_insufficient_resources",
    })  # fmt: skip
    _assert_unknown(["sbatch: error: Invalid generic resource (gres) specification"])
    # a job's walltime is not a failure of the run
    assert verdict(["=>> PBS: job killed: walltime 3650 exceeded limit 3600"]).primary is None


def test_jaxs_coordinator_saying_a_task_died_in_each_of_its_wordings():
    """XLA's distributed client ends a JAX process with a fatal log line when the coordination service
    says another task died. Its wording changed over the years (XLA's client.h: "the coordinator
    detected missing heartbeats", "missing heartbeat response from the coordinator" when the
    coordinator itself died, and the later "the JAX distributed service detected fatal errors"); each
    is the consequence of a dead peer, not a healthy log."""
    _assert_named({
        "F0301 12:00:00.000000 4242 client.h:88] Terminating process because the coordinator detected missing "
        "heartbeats. This most likely indicates that another task died; see the other task logs for more "
        "details.":
            "nccl_peer_connection_closed",
        "F0301 12:00:00.000000 4242 client.h:95] Terminating process because of missing heartbeat response from "
        "the coordinator. This most likely indicates that the coordinator task died; see the coordinator's task "
        "logs for more details.":
            "nccl_peer_connection_closed",
        "F0929 17:42:48.594200 1044529 client.h:77] Terminating process because the JAX distributed service "
        "detected fatal errors. This most likely indicates that another task died; see the other task logs for "
        "more details.": "nccl_peer_connection_closed",
    })  # fmt: skip


def test_mxnets_pooled_storage_giving_up_after_its_retry():
    """MXNet's pooled storage manager frees its pool and calls cudaMalloc once more before it gives
    up; that second failure is worded "cudaMalloc retry failed" (MXNet 1.x's pooled_storage_manager.h,
    as a Jenkins-built wheel prints it, and in the FFI traceback of later builds)."""
    _assert_named({
        "mxnet.base.MXNetError: [23:54:01] c:\\jenkins\\workspace\\mxnet-tag\\mxnet\\src\\storage\\./pooled_"
        "storage_manager.h:161: cudaMalloc retry failed: out of memory": "cuda_oom",
        "MXNetError: cudaMalloc retry failed: out of memory": "cuda_oom",
    })  # fmt: skip


def test_deepspeeds_own_checks_that_it_was_given_a_configuration():
    """deepspeed.initialize() asserts that a configuration reached it, and older engines that the
    --deepspeed_config path is a file (their assert messages, as DeepSpeed's source words them): the
    configuration DeepSpeed needs is missing, beside the base64 form of a path not on this node."""
    _assert_named({
        "AssertionError: DeepSpeed requires --deepspeed_config to specify configuration file":
            "deepspeed_config_invalid",
        "AssertionError: DeepSpeed configuration file: configs/ds_zero2.json is not an existing file":
            "deepspeed_config_invalid",
    })  # fmt: skip


def test_a_container_that_never_ran_or_never_got_its_volume():
    """Two ways a worker pod never starts its training, in the wordings of real kubectl output: a
    ReadWriteOnce volume already attached to another node (the attach/detach controller's
    Multi-Attach event) is the volume's failure; an image built for another CPU architecture, which
    runc refuses in its older and newer words, is an unknown failure to list, never a healthy log."""
    _assert_named({
        '  Warning  FailedAttachVolume  34s   attachdetach-controller  Multi-Attach error for volume "pvc-9dbdb7f1-'
        '850d-4553-97cf-90f88ead73ca" Volume is already exclusively attached to one node and can\'t be attached to '
        "another": "volume_mount_failed",
    })  # fmt: skip
    _assert_unknown(
        [
            "standard_init_linux.go:228: exec user process caused: exec format error",
            "exec /usr/local/bin/torchrun: exec format error",
        ]
    )


def test_a_trainer_that_counted_zero_steps_in_an_epoch():
    """A dataset smaller than one global batch gives zero steps per epoch, and the trainer's next
    division by that count raises ZeroDivisionError: verl's SFT trainer prints the count first, and
    the traceback's own source line divides by the steps per epoch. A ZeroDivisionError elsewhere
    stays an unknown failure, and the count alone (no error after it) is no finding."""
    zero = "ZeroDivisionError: integer division or modulo by zero"
    assert (
        verdict(["Number of steps/epoch 0, number of epochs 6, total number of steps 0", zero]).primary
        == "dataset_too_small"
    )
    assert (
        verdict(["    start_epoch = global_step // self.steps_per_epoch", zero]).primary
        == "dataset_too_small"
    )
    assert verdict(["    lr = base_lr * step // warmup", zero]).primary is None
    assert verdict(["    lr = base_lr * step // warmup", zero]).unrecognised
    assert not verdict(["Number of steps/epoch 0, number of epochs 6, total number of steps 0"]).failed


def test_the_hundred_and_twenty_seventh_batchs_wording_families():
    """The misses of the hundred-and-twenty-seventh batch, fixed by family: NumPy 1.x's dotted
    MemoryError, older Lightning's GPU check with its message on the next lines, a script's own "N
    GPUs, but only M" check, a missing medical image volume or annotation file, Coqui's per-optimizer
    losses and a trainer's own "nan loss" exception, Hydra's failure banner, and DeepSpeed's warning of
    a Triton cache on NFS in a run whose training loop ended."""
    _assert_named({
        "numpy.core._exceptions.MemoryError: Unable to allocate 502. MiB for an array with shape "
        "(512, 512, 251) and data type float64": "host_oom_killed",
        "            But your machine only has: []": "gpu_assignment_invalid",
        "ValueError: require 2 GPUs, but only 1 GPUs available ": "gpu_assignment_invalid",
        "RuntimeError: Requested 8 GPUs, but only 4 are visible. Check CUDA_VISIBLE_DEVICES.": "gpu_assignment_invalid",
        "FileNotFoundError: No such file or no access: 'BraTS2020_TrainingData/MICCAI_BraTS2020_TrainingData/"
        "BraTS20_Training_085/BraTS20_Training_085_flair.nii'": "dataset_path_missing",
        "FileNotFoundError: [Errno 2] No such file or directory: '/scratch/case_00012/imaging.nii.gz'": "dataset_path_missing",
        "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: 'ANNOTATION_PATH'": "dataset_path_missing",
        "     | > loss_0: nan  (nan)": "nan_loss",
        "ValueError:  [x] nan loss": "nan_loss",
    })  # fmt: skip
    # the same GPU words in a warning go on with fewer GPUs; a checkpoint that is missing is no data
    _assert_benign(["Warning: Requested 8 GPUs, but only 4 are available."])
    ckpt = "FileNotFoundError: [Errno 2] No such file or directory: 'ckpt/annotation_model.pt'"
    assert verdict([ckpt]).primary is None
    # a per-language metric of a healthy run, NaN when the batch held none of that language
    _assert_benign(["step=10 loss=11.55 loss/en=11.55 loss/cn=nan loss/code=nan"])
    hydra = [
        "Error executing job with overrides: ['+seed=0', 'dataset=SpeechCommands-16k', 'model=Cnn10']",
        "Error in call to target 'autrainer.datasets.speech_commands.SpeechCommands':",
        "ValueError(\"Directory features_subdir='log_mel_16k' does not exist in '/mimer/data'.\")",
        "",
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
    ]
    v = verdict(hydra)
    assert v.primary is None and [u["line"] for u in v.unrecognised] == hydra[:3]
    nfs = (
        "Warning: The cache directory for DeepSpeed Triton autotune, /root/.triton/autotune, appears to be on "
        "an NFS system. While this is generally acceptable, if you experience slowdowns or hanging when "
        "DeepSpeed exits, it is recommended to set the TRITON_CACHE_DIR environment variable to a non-NFS path."
    )
    assert verdict([nfs]).primary == "triton_cache_shared_fs"
    ended = (
        "{'train_runtime': 21142.8256, 'train_samples_per_second': 0.005, 'train_steps_per_second': 0.005}"
    )
    assert verdict([nfs, ended]).findings == []


def test_the_hundred_and_twenty_eighth_batchs_wording_families():
    """The misses of the hundred-and-twenty-eighth batch, fixed by family: host memory in Ray's and
    Dask's words, GPU memory in the BFC allocator's and CuPy's, GPUs a program asked for but does not
    have (XGBoost, Keras, TensorFlow's placer), gRPC's bind failure, DeepXDE's NaN rows, Azure ML's
    empty data path and Hugging Face's zero steps in an epoch."""
    _assert_named({
        "(pid=737) ray._private.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node "
        "ip-172-31-7-2 is used (7.12 / 7.49 GB). The top 10 memory consumers are:": "host_oom_killed",
        "distributed.nanny - INFO - Worker process 9018 was killed by signal 9": "host_oom_killed",
        # Dask's memory manager, in the wordings of its source since 2018
        "distributed.nanny - WARNING - Worker exceeded 95% memory budget.  Restarting": "host_oom_killed",
        "distributed.nanny.memory - WARNING - Worker tcp://10.0.0.5:40123 (pid=812) exceeded 95% memory "
        "budget. Restarting...": "host_oom_killed",
        "2025-09-29 17:12:11.556856: W external/xla/xla/tsl/framework/bfc_allocator.cc:501] Allocator "
        "(GPU_0_bfc) ran out of memory trying to allocate 1.86GiB (rounded to 1999872000)requested by op ": "cuda_oom",
        "Exception in main training loop: out of memory to allocate 205520896 bytes (total 16068929536 bytes)": "cuda_oom",
        "  Check failed: n_uniques == world (1 vs. 4) : Multiple processes within communication group running on "
        "same CUDA device is not supported": "gpu_assignment_invalid",
        "ValueError: To call `multi_gpu_model` with `gpus=8`, we expect the following devices to be available: "
        "['/cpu:0', '/gpu:0', '/gpu:1']. However this machine only has: ['/cpu:0', '/gpu:0']. Try reducing "
        "`gpus`.": "gpu_assignment_invalid",
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation "
        "'dummy_queue_1_Close_1': Operation was explicitly assigned to /job:ps/task:0/device:GPU:1 but "
        "available devices are [ /job:ps/replica:0/task:0/device:CPU:0 ]": "gpu_assignment_invalid",
        'E0512 14:47:28.171308000 server_chttp2.c:159] {"description":"OS Error","errno":48,'
        '"os_error":"Address already in use","syscall":"bind"}]}],"target_address":"ipv6:[::]:12223"}': "master_port_in_use",
        "2000      [nan]         [nan]         [nan]": "nan_loss",
        "\tMessage: Cannot load any data from the specified path. Make sure the path is accessible and "
        "contains data.": "dataset_path_missing",
    })  # fmt: skip
    # the allocator's retry warning says it is no failure; an op with no GPU kernel is no missing GPU
    _assert_benign([
        "distributed.worker - WARNING - Worker is at 80% memory usage. Pausing worker.  Process memory: 3.2 GiB",
        "2020-05-13 05:27:54.654933: W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator "
        "(GPU_0_bfc) ran out of memory trying to allocate 2.52GiB with freed_by_count=0. The caller indicates "
        "that this is not a failure, but may mean that there could be performance gains if more memory were "
        "available.",
        "2000      [1.23e-02]    [2.10e-02]    [1.00e+00]",
    ])  # fmt: skip
    kernel = (
        "InvalidArgumentError: Cannot assign a device for operation 'x': Could not satisfy explicit device "
        "specification '/device:GPU:0' because no supported kernel for GPU devices is available."
    )
    assert verdict([kernel]).primary is None
    # Hugging Face's Trainer dividing by the steps it counted in an epoch
    zero = [
        "self.state.epoch = epoch + (step + 1 + steps_skipped) / steps_in_epoch",
        "ZeroDivisionError: division by zero",
    ]
    assert verdict(zero).primary == "dataset_too_small"
    assert verdict(zero[:1]).findings == []


def test_the_hundred_and_twenty_ninth_batchs_wording_families():
    """The misses of the hundred-and-twenty-ninth batch, fixed by family: the CUDA samples' GPUassert
    idiom out of memory (Marian), and a trainer that throws away steps whose gradient norm or loss is
    NaN, named only once it keeps doing so (ESPnet's two trainers)."""
    _assert_named({"GPUassert: out of memory marian-dev/src/tensors/device_gpu.cu 32": "cuda_oom"})
    espnet2 = "[host:0/8] 2022-02-21 11:42:05,031 (trainer:617) WARNING: The grad norm is nan. Skipping updating the model."
    espnet1 = "2018-05-23 13:05:04,260 (e2e_asr_attctc:88) WARNING: loss (=nan) is not correct"
    chainer = "2018-05-23 13:05:13,682 (asr_chainer:132) WARNING: grad norm is nan. Do not update model."
    # one or two bad utterances are routine in CTC training; the third skipped step names the run
    assert verdict([espnet2, espnet2]).findings == []
    v = verdict([espnet2] * NONFINITE_STEP_REPORTS)
    assert v.primary == "nan_loss" and v.findings[0].count == NONFINITE_STEP_REPORTS
    assert verdict([espnet1, chainer, espnet1]).primary == "nan_loss"
    # an infinite norm is the AMP grad scaler's own overflow probing, as fp16 skips are
    inf = espnet2.replace("is nan.", "is inf.")
    assert verdict([inf] * 10).findings == []


def test_the_hundred_and_thirtieth_batchs_wording_families():
    """The misses of the hundred-and-thirtieth batch, fixed by family: torch_memory_saver's check of a
    driver call out of memory (slime), fairseq's epoch record with its loss quoted as "nan", and a
    Megatron run skipping step after step at a loss scale that never comes down (a fixed scale)."""
    _assert_named({
        "[torch_memory_saver.cpp] CUresult error: 2 (out of memory) file=csrc/utils.h func=cu_mem_create "
        "line=187": "cuda_oom",
        '2020-10-01 10:25:50 | INFO | train | {"epoch": 73, "train_loss": "nan", "train_ntokens": "15558.8", '
        '"train_nll_loss": "nan", "train_gnorm": "nan"}': "nan_loss",
    })  # fmt: skip
    # the same check failing otherwise is a failure the verdict lists; a finite quoted loss is none
    _assert_unknown(
        ["[torch_memory_saver.cpp] CUresult error: 1 (invalid argument) file=csrc/core.cpp func=free line=66"]
    )
    _assert_benign(
        ['2020-10-01 10:25:50 | INFO | train | {"epoch": 73, "train_loss": "4.312", "train_gnorm": "0.871"}']
    )

    def line(i: int, scale: float, skipped: int = 1) -> str:
        loss = "" if skipped else "lm loss: 2.315E+00 | "  # Megatron prints no loss for a skipped step
        return (f" iteration {i:>8}/ 2753818 | consumed samples: {8 * i:>12} | elapsed time per iteration (ms): "
                f"1152.3 | learning rate: 1.000E-07 | global batch size:     8 | {loss}loss scale: {scale:.1f} | "
                f"number of skipped iterations: {skipped:>3} | number of nan iterations:   0 |")  # fmt: skip

    stuck = [line(i, 16384.0) for i in range(1, SKIP_STUCK_REPORTS + 1)]
    v = verdict(stuck)
    assert v.primary == "skipped_iterations" and v.findings[0].count == SKIP_STUCK_REPORTS
    assert verdict(stuck[:-1]).findings == []  # the scaler's hysteresis: two overflows at one scale
    # a longer run keeps its first reports as the evidence, however many follow
    assert verdict([line(i, 16384.0) for i in range(1, 50)]).findings[0].count == SKIP_STUCK_REPORTS
    # a dynamic scaler's warm-up halves the scale on each overflow; a step that went through resets the run
    assert verdict([line(i, 2.0**32 / 2**i) for i in range(1, 8)]).findings == []
    assert verdict([*stuck[:2], line(3, 16384.0, 0), line(4, 16384.0), line(5, 16384.0)]).findings == []
    # skipping at a collapsed scale is the loss scale's floor, named nan_loss, not a fixed scale
    floor = [line(1, 65536.0, 0)] + [line(i, 1.0) for i in range(2, 6)]
    assert verdict(floor).primary == "nan_loss"


def test_the_hundred_and_thirty_first_batchs_wording_families():
    """The miss of the hundred-and-thirty-first batch that the lines can show: aws-ofi-nccl refusing a
    connection whose ends report different numbers of EFA rails is a failure the verdict lists."""
    _assert_unknown([
        "NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2",
        "algo-1:412:530 [0] nccl_net_ofi_rdma.cpp:5121 NCCL WARN NET/OFI Unexpected number of remote control "
        "rails for dev 4. Expected 1 but got 2",
    ])  # fmt: skip


def test_the_communicator_id_wait_in_each_torch_wording():
    """A rank that waited past the timeout for rank 0 to publish the NCCL communicator's id, in the
    wordings torch has printed: "retreiving" (its spelling until 2.0; nccl#708, nccl#845), the store's
    timeout as "Timeout waiting for key" (pytorch#82091) and "wait timeout after ...ms" (torch >= 2.3,
    NeMo#14399), and "got exception" (pytorch#68597). Each is the collective timeout's symptom."""
    head = "is setting up NCCL communicator and {} ncclUniqueId from [0] via c10d key-value store by key '0', but "
    _assert_named({
        "RuntimeError: [1] " + head.format("retreiving") + "store->get('0') got error: Timeout waiting for key: "
        "default_pg/0/0 after 1800000 ms": "nccl_timeout",
        "RuntimeError: [3] " + head.format("retreiving") + "store->get('0') got exception: Socket Timeout": "nccl_timeout",
        "B-nemo-ft3/0 [default1]:[rank1]: torch.distributed.DistBackendError: [1] " + head.format("retrieving")
        + "store->get('0') got error: wait timeout after 600000ms, keys: /default_pg/0//cuda//0": "nccl_timeout",
    })  # fmt: skip


def test_the_tpu_runtimes_buffer_allocation_failure():
    """XLA:TPU's runtime allocator out of HBM (OpenXLA's E0100, RuntimeBufferAllocationFailure), in
    the one-line form its docs show and the newer form that leads with the code and wraps (Levanter)."""
    _assert_named({
        "ValueError: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00M. That "
        "was not possible. There are 6.43M free.; (0x0x1_HBM0)": "cuda_oom",
        "RESOURCE_EXHAUSTED: E0100: RuntimeBufferAllocationFailure:": "cuda_oom",
    })  # fmt: skip


def test_the_rocm_runtimes_own_failure_lines():
    """ROCm's words for what CUDA's lines already say: torch for ROCm's "HIP error: out of memory" is
    an OOM, and the HSA runtime's abort on a GPU's bad memory access and HIP finding no kernel for the
    GPU's architecture are the lines the verdict lists when nothing else is known."""
    _assert_named({"torch.AcceleratorError: HIP error: out of memory": "cuda_oom"})
    for line in (
        "Memory access fault by GPU node-1 (Agent handle: 0x55e92f082620) on address (nil). Reason: Page not "
        "present or supervisor privilege.",
        '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
    ):  # fmt: skip
        _assert_unknown([line])


def test_the_mpi_launchers_own_failure_lines():
    """What Open MPI, MPICH and Intel MPI print when a rank calls MPI_Abort or dies under them: the MPI
    twins of torchrun's ChildFailedError, listed when nothing else is known (a run that had already
    reported its own success keeps its healthy verdict: the CASIA ResNet file in the corpus)."""
    for lines in (
        ["MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD", "with errorcode 1."],
        ["application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0"],
        ["=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"],
        ["Primary job  terminated normally, but 1 process returned",
         "a non-zero exit code. Per user-direction, the job has been aborted."],
        ["mpirun detected that one or more processes exited with non-zero status, thus causing",
         "the job to be terminated. The first process to do so was:"],
    ):  # fmt: skip
        v = verdict(lines)
        assert v.primary is None and [u["line"] for u in v.unrecognised] == lines[:1], lines


def test_the_hundred_and_thirty_second_batchs_wording_families():
    """The misses of the hundred-and-thirty-second batch, fixed by family: XLA:GPU's executable denied
    its temp buffer, torch on Apple's GPU out of memory, TensorFlow Datasets finding no dataset of the
    name, DeepSpeed's Megatron loader finding fewer model-parallel files than were saved, the HF
    Trainer refusing a streamed train set without max_steps, verl skipping NaN-norm updates on every
    rank, and the training-operator unable to create a Volcano PodGroup."""
    _assert_named({
        "2024-08-15 00:19:52.347184: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2593] Execution of "
        "replica 0 failed: RESOURCE_EXHAUSTED: Failed to allocate request for 108.03GiB (116000729080B) on device "
        "ordinal 5": "cuda_oom",
        "BufferAssignment OOM Debugging.": "cuda_oom",
        "RuntimeError: MPS backend out of memory (MPS allocated: 8.45 GiB, other allocations: 10.73 MiB, max "
        "allowed: 9.07 GiB). Tried to allocate 768.00 MiB on private pool.": "cuda_oom",
        "tensorflow_datasets.core.registered.DatasetNotFoundError: Dataset aloha_game not found.":
            "dataset_path_missing",
        "AssertionError: checkpoint count 1 is different from saved mp_world_size 2": "checkpoint_mismatch",
        "ValueError: The train_dataset does not implement __len__, max_steps has to be specified. The number of "
        "steps needs to be known in advance for the learning rate scheduler.": "train_flags_invalid",
        "ValueError: The train_dataset does not implement __len__, so the number of training steps cannot be "
        "inferred; max_steps has to be specified.": "train_flags_invalid",
        "ValueError: args.max_steps must be set to a positive value if dataloader does not have a length, was -1":
            "train_flags_invalid",
    })  # fmt: skip
    verl = "(WorkerDict pid=9092) WARN: grad_norm is not finite: nan"
    assert verdict([verl] * 2).findings == []  # one skipped update on two ranks is no diverged run
    assert verdict([verl] * NONFINITE_STEP_REPORTS).primary == "nan_loss"
    assert verdict([verl.replace("nan", "inf")] * 8).findings == []
    _assert_unknown([
        'time="2023-06-13T03:24:07Z" level=warning msg="Sync PodGroup kubeflow/pytorch-dist-mnist-gloo: unable to '
        'create PodGroup: unable to create PodGroup: the server could not find the requested resource (post '
        'podgroups.scheduling.volcano.sh)"'
    ])  # fmt: skip


def test_the_hundred_and_thirty_third_batchs_wording_families():
    """The misses and false alarms of the hundred-and-thirty-third batch, fixed by family: parallel
    layouts that do not fit the devices (openpi, Paddle fleet), TensorFlow handed another rank's GPU,
    OmegaConf's missing interpolation key, Lightning's invalid strategy, LLaMA-Factory asking to enable
    an option, big_vision's loader missing a subtree; and three healthy logs: mmcv's non-strict load
    that warns of a head it skips, an abort while the CUDA driver unloads at exit, an AzureML
    driver's options naming its TrackUserError context manager."""
    _assert_named({
        "ValueError: Number of devices 4 must be divisible by the number of FSDP devices 8.":
            "parallelism_config_invalid",
        "AssertionError: global work size [8], mp_degree [1], sharding_degree [2], pp_degree [1], dp_degree [2].":
            "parallelism_config_invalid",
        "[1,1]<stderr>:tensorflow.python.framework.errors_impl.InvalidArgumentError: GPU:1 unknown device.":
            "gpu_assignment_invalid",
        "omegaconf.errors.InterpolationKeyError: Interpolation key 'dataloader.read_group_size' not found":
            "train_flags_invalid",
        "ValueError: You selected an invalid strategy name: `strategy=None`. It must be either a string or an "
        "instance of `pytorch_lightning.strategies.Strategy`.": "train_flags_invalid",
        "[rank0]: ValueError: Please enable `predict_with_generate` to save model predictions.": "train_flags_invalid",
    })  # fmt: skip
    load = [
        '  File "/ML_final/big_vision/utils.py", line 222, in load_params',
        "    params = tree_get(params, key)",
        "KeyError: img",
    ]
    assert verdict(load).primary == "checkpoint_mismatch"
    assert verdict([load[-1]]).primary is None  # a KeyError alone says nothing of a checkpoint
    mismatch = (
        "size mismatch for decode_head.cls_embed.weight: copying a param with shape torch.Size([172, 1024]) from "
        "checkpoint, the shape in current model is torch.Size([151, 1024])."
    )
    warned = (
        "2022-10-29 11:06:55,054 - mmseg - WARNING - The model and loaded state dict do not match exactly"
    )
    quiet = verdict(
        [warned, "", mismatch, "2022-10-29 11:06:55,507 - mmseg - INFO - Start running, host: w-0"]
    )
    assert quiet.findings == [] and quiet.unrecognised == []
    strict = ["RuntimeError: The model and loaded state dict do not match exactly", "", mismatch]
    assert verdict(strict).primary == "checkpoint_mismatch"  # strict=True raises the same text
    abort = "          terminate called after throwing an instance of 'c10::CUDAError'"
    exit_noise = verdict([abort, "            what():  CUDA error: driver shutting down", "Exception raised from "
                          "query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):"])  # fmt: skip
    assert exit_noise.findings == [] and exit_noise.unrecognised == []
    other = [abort, "  what():  CUDA error: an illegal memory access was encountered"]
    assert verdict(other).primary is None and verdict(other).unrecognised
    _assert_benign([
        "[context_manager_injector.py] Command line Options: Namespace(inject=['ProjectPythonPath:context_managers."
        "ProjectPythonPath', 'RunHistory:context_managers.RunHistory', 'TrackUserError:context_managers."
        "TrackUserError'], invocation=['train.py', '--C', '0.01'])"
    ])  # fmt: skip


def test_the_hundred_and_thirty_fourth_batchs_wording_families():
    """The misses of the hundred-and-thirty-fourth batch that the lines can show: JAX's CUDA plugin
    seeing no GPU, OLMo's configuration refusal (not its refusal to overwrite a saved checkpoint), an
    image a sample names that is not there, and a job script whose launcher is missing, so that the
    shell runs the launch line's first flag as a command."""
    _assert_named({
        "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices. (you may "
        "need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)":
            "gpu_assignment_invalid",
        "olmo.exceptions.OLMoConfigurationError: DDP does not work with init_device set to anything other than "
        "`cuda`.": "train_flags_invalid",
        "FileNotFoundError: [Errno 2] No such file or directory: 'images/example_1.png'": "dataset_path_missing",
    })  # fmt: skip
    _assert_unknown(
        ["OLMoConfigurationError: Checkpoint for step 0 already exists, use --save_overwrite to overwrite it"]
    )
    _assert_unknown(["/var/spool/slurmd/job02859/slurm_script: line 42: --standalone: command not found"])
    _assert_benign(["/usr/local/gib/scripts/set_nccl_env.sh: line 16: lspci: command not found"])


def test_the_hundred_and_thirty_fifth_batchs_wording_families(tmp_path):
    """The misses of the hundred-and-thirty-fifth batch that the lines can show: torch's allocator on
    Ascend NPUs and Intel XPUs, CANN refusing a device id past the last NPU, an empty tensor that no
    model size explains, Open MPI's fatal-error handler, an admission webhook the API server could
    not call, Go controllers' error-level records, ssh refusing an MPI launcher's key; and a wrapped
    XLA out-of-memory line read from a file, whose newline had kept the two halves apart."""
    _assert_named({
        "RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB "
        "already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch)":
            "cuda_oom",
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 192.00 MiB.": "cuda_oom",
        "EE1001: The argument is invalid.Reason: Set device failed, invalid device, set device=8, valid device "
        "range is [0, 8)": "gpu_assignment_invalid",
        "The argument is invalid.Reason: Invalid device ID 8. Set drv devId to 8. The valid device range is [0, 7).":
            "gpu_assignment_invalid",
        "[rank0]: RuntimeError: shape '[2, -1, 7168]' is invalid for input of size 7000": "model_config_invalid",
    })  # fmt: skip
    _assert_unknown(["[rank11]: RuntimeError: shape '[2048, 1, 4096]' is invalid for input of size 0"])
    _assert_unknown(["*** An error occurred in MPI_Init_thread"])
    _assert_unknown([
        '  "error": "Internal error occurred: failed calling webhook \\"mjobset.kb.io\\": failed to call webhook: '
        'Post \\"https://jobset-webhook-service.kubeflow-system.svc:443/mutate?timeout=10s\\": context deadline '
        'exceeded"'
    ])  # fmt: skip
    _assert_unknown(['  "level": "error",'])
    _assert_unknown(['{"level":"error","ts":1707726642.02,"msg":"Handling job with no workload"}'])
    _assert_unknown(['time="2024-02-12T08:30:42Z" level=error msg="failed to reconcile"'])
    _assert_unknown(["root@w-0.tf-bench-worker: Permission denied (publickey,password)."])
    _assert_benign(['{"level":"info","ts":1707726642.02,"msg":"Reconciling","error-count":0}'])
    wrapped = (
        "2023-04-06 07:42:51.278258: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/pjrt_stream_execut"
        "or_client.cc:2153] Execution of replica 0 failed: RE\n"
        "SOURCE_EXHAUSTED: Failed to allocate request for 625.00MiB (655360000B) on device ordinal 7\n"
    )
    log = tmp_path / "tpu.log"
    log.write_text(wrapped)
    assert verdict(wrapped).primary == "cuda_oom"
    assert verdict(log).primary == "cuda_oom"  # the same lines from a file, each with its newline


def test_a_log_gets_one_verdict_whether_read_from_its_file_or_passed_as_text():
    """`workshop monitor diagnose` reads a file (each line with its newline) while the live paths
    pass text: both must give the same primary, findings, counts and line numbers. The corpus
    files with a carriage return (progress bars redrawn in place) are where the two differed: text
    was split at every "\\r" too, so its line numbers were not the file's."""
    files = [p for p in sorted(CORPUS.glob("*.log")) if b"\r" in p.read_bytes()]
    assert len(files) >= 100

    def shape(v):
        found = [(f.label, f.line_number, f.count) for f in v.findings]
        return v.primary, found, [u["line_number"] for u in v.unrecognised]

    for p in files:
        text = p.read_bytes().decode("utf-8", errors="replace")
        assert shape(verdict(p)) == shape(verdict(text)), p.name
    assert verdict("a\rb\nc\n").lines == verdict(["a\rb", "c"]).lines == 2


def test_the_hundred_and_thirty_sixth_batchs_wording_families():
    """The misses of the hundred-and-thirty-sixth batch that the lines can show: DeepSpeed Ulysses
    splitting attention heads by a sequence-parallel size that does not divide them, the collective
    timeout raised in the waiting rank under torch 1.x's blocking wait, Horovod's rendezvous (its
    Gloo key store's newer wording and its driver waiting for the workers), click's and optparse's
    refusal of an unknown flag, and torch 1.x's failed CUDA check listed whatever its error."""
    _assert_named({
        "0: [rank3]: ValueError: Attention head count 28 is not divisible by SP size 8": "parallelism_config_invalid",
        "RuntimeError: [Rank 1] Caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, "
        "TensorShape=[], Timeout(ms)=10800000) ran for 10800031 milliseconds before timing out.": "nccl_timeout",
        "  what():  [/tmp/horovod/common/gloo/http_store.cc:57] [/tmp/horovod/common/gloo/http_store.cc:57] Wait "
        "timeout after 30 seconds for key(s): 0": "rendezvous_timeout",
        "Exception: Timed out waiting for tasks to start. Please check connectivity between servers. You may need "
        "to increase the --start-timeout parameter if you have too many servers. Timeout after 30 seconds.":
            "rendezvous_timeout",
        "Error: No such option: --qm9dataset_remove_h (Possible options: --qm9dataset_charge_norm)":
            "train_flags_invalid",
        "train.py: error: no such option: --lr": "train_flags_invalid",
    })  # fmt: skip
    _assert_unknown(
        ["> THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorRandom.cu line=25 error=46 : all CUDA-capable "
         "devices are busy or unavailable"]
    )  # fmt: skip
    _assert_benign(["completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191"])


def test_the_hundred_and_thirty_seventh_batchs_wording_families():
    """The miss of the hundred-and-thirty-seventh batch that the lines can show: a resume that hands
    an optimizer one entry of the loaded file, which the file does not hold (a KeyError under that
    source line is a checkpoint without what the resume expects; alone it is any KeyError)."""
    resume = [
        '  File "train.py", line 132, in main_worker',
        "    optimizer.load_state_dict(utils_state_dict['optimizer'])",
        "KeyError: 'optimizer'",
    ]
    assert verdict(resume).primary == "checkpoint_mismatch"
    assert verdict([resume[0], "    lr = config['optimizer']", resume[2]]).primary is None
    _assert_unknown([resume[-1]])


def test_the_hundred_and_thirty_eighth_batchs_wording_families():
    """The misses of the hundred-and-thirty-eighth batch: a missing file in a traceback that runs
    through the run's dataset set-up (whatever the file's name says), and Ray marking a node dead
    mid-run, listed as a failure line; a missing file alone, or under other frames, is no data path."""
    bias = [
        '[rank1]:   File "/glade/work/u/PanguWeather/v2.0/train.py", line 438, in get_dataset',
        "[rank1]:     self.clim_bias = self.long_valid_dataset._load_bias()",
        '[rank1]:   File "/glade/work/u/PanguWeather/v2.0/utils/data_loader_multifiles.py", line 679, in _load_bias',
        "[rank1]:     data = np.load(bias_file)",
        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/scratch/u/E3SM/bias/T_4.71_bias.npy'",
    ]
    assert verdict(bias).primary == "dataset_path_missing"
    assert verdict(bias[2:]).primary == "dataset_path_missing"
    other = ['  File "/w/train.py", line 90, in save_results', "    open(path, 'w')", bias[-1]]
    elsewhere = verdict(other)
    assert elsewhere.primary is None and elsewhere.unrecognised
    _assert_unknown([
        "2023-03-03 05:15:30,774 WARNING worker.py:1866 -- The node with node id: 9426f445 and address: "
        "10.130.0.113 and node name: 10.130.0.113 has been marked dead because the detector has missed too "
        "many heartbeats from it. This can happen when a \\t(1) raylet crashes unexpectedly (OOM, etc.)"
    ])  # fmt: skip


def test_the_hundred_and_thirty_ninth_batchs_wording_families():
    """The hundred-and-thirty-ninth batch: open_lm's shard planner running out of shards is a dataset
    too small for the run, and the CUDA error of a rank that aborted before the others' watchdog
    timeout is shown as what came first (the timeout stays the label, a symptom)."""
    _assert_named({
        "2024-01-03,15:18:27 | ERROR | Number of shards requested for a single epoch is more than the "
        "number of shards available. This means that the amount of data requested to train on is more "
        "than the dataloader can serve.": "dataset_too_small",
        "ValueError: Multiple passes over the dataset did not allow for a valid shard string to be "
        "created. Try decreasing the number of tokens between checkpoints.": "dataset_too_small",
    })  # fmt: skip
    aborted = [
        "[rank15]:[W CUDAGuardImpl.h:115] Warning: CUDA warning: unspecified launch failure (function destroyEvent)",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: unspecified launch failure",
        "[rank12]:[E ProcessGroupNCCL.cpp:754] [Rank 12] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2203, OpType=ALLREDUCE, NumelIn=6912000, NumelOut=6912000, Timeout(ms)=1800000) "
        "ran for 1800902 milliseconds before timing out.",
    ]  # fmt: skip
    v = verdict(aborted)
    assert v.primary == "nccl_timeout"
    assert [e["line_number"] for e in v.earlier] == [3]


def test_the_hundred_and_fortieth_batchs_wording_families():
    """The hundred-and-fortieth batch: transformers' underflow/overflow debugger finding an inf/nan,
    its bitsandbytes quantizers finding no GPU room for the model, an exception class a C extension
    names in lower case (cv2.error), and fairseq's fp16 scale dipping to 0.25 at warm-up (a healthy
    wav2vec 2.0 fine-tune) while a scale that keeps halving below it is still a collapse."""
    _assert_named({
        "Detected inf/nan during batch_number=0": "nan_loss",
        "[rank0]: Detected inf/nan during batch_number=3": "nan_loss",
        "ValueError: DebugUnderflowOverflow: inf/nan detected, aborting as there is no point running "
        "further. Please scroll up above this traceback to see the activation values prior to this "
        "event.": "nan_loss",
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have enough GPU "
        "RAM to fit the quantized model.": "cuda_oom",
    })  # fmt: skip
    _assert_unknown([
        "cv2.error: OpenCV(4.12.0) /io/opencv/modules/imgproc/src/color.simd_helpers.hpp:92: error: "
        "(-15:Bad number of channels) in function 'cv::impl::CvtHelper'"
    ])  # fmt: skip
    _assert_benign(["[INFO] cv2.error handling enabled", "warning: struct.error was caught and ignored"])
    scale = (
        "[2020-12-19 17:33:23,955][fairseq.trainer][INFO] - NOTE: overflow detected, setting loss scale to: "
    )
    warmup = [scale + s for s in ("2.0", "1.0", "0.5", "0.25")]
    settled = verdict(warmup)
    assert settled.primary is None and not settled.findings
    assert verdict([*warmup, scale + "0.125"]).primary == "nan_loss"


def test_the_hundred_and_forty_first_batchs_wording_families():
    """The hundred-and-forty-first batch: XLA's allocator failing with the status code as TensorFlow
    1.x spells it, and OneFlow's check of cudaSetDevice finding an invalid device ordinal."""
    _assert_named({
        "(0) Resource exhausted: Out of memory while trying to allocate 22927360 bytes.": "cuda_oom",
        "F1012 13:03:52.656618 38455 cuda_util.cpp:173] Check failed: cudaSetDevice(dev_id) : invalid device "
        "ordinal (101)": "gpu_assignment_invalid",
    })  # fmt: skip
    _assert_benign(["(0) Resource exhausted is a status code of TensorFlow"])


def test_the_hundred_and_forty_second_batchs_wording_families():
    """The hundred-and-forty-second batch's false alarm: Environment Modules failing a job script's
    `module load` is no failure line, as Lmod's unknown module is not (the script goes on)."""
    _assert_benign([
        "ERROR: Unable to locate a modulefile for 'anaconda'",
        "ModuleCmd_Load.c(213):ERROR:105: Unable to locate a modulefile for 'cuda/11.8'",
    ])  # fmt: skip
    _assert_unknown(["ERROR: Unable to locate the checkpoint for 'step_1000'"])


def test_the_hundred_and_forty_third_batchs_wording_families():
    """The hundred-and-forty-third batch: a ds_config path with no file behind it (accelerate's
    refusal, also as the raise's source line), NCCL registering a buffer through DMA-BUF, Flax
    handed parameters of another shape, a wrapped "size mismatch for", JAX's debug_nans, Lightning
    with no training batches, and dynamo's fallback warnings under a site-packages path."""
    _assert_named({
        "ValueError: Expected a string path to an existing deepspeed config, or a dictionary, or a "
        "base64 encoded string. Received: deepspeed.json": "deepspeed_config_invalid",
        'f"Expected a string path to an existing deepspeed config, or a dictionary, or a base64 encoded '
        'string. Received: {config_file_or_dict}"': "deepspeed_config_invalid",
        'config_decoded = base64.urlsafe_b64decode(config_file_or_dict).decode("utf-8")': "deepspeed_config_invalid",
        "misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Operation not supported": "ib_transport_error",
        "flax.errors.ScopeParamShapeError: Initializer expected to generate shape (8, 4096) but got shape "
        '(32, 4096) instead for parameter "embedding" in "/transformer/dte".': "checkpoint_mismatch",
        '"message": "invalid value (nan) encountered in jit(compiled_train_step). Because '
        'jax_config.debug_nans.value and/or config.jax_debug_infs is set",': "nan_loss",
        "FloatingPointError: invalid value (inf) encountered in pjit(train_step)": "nan_loss",
        "`Trainer.fit` stopped: No training batches.": "dataset_too_small",
    })  # fmt: skip
    wrapped = ["        size mismatch for", "lora_unet_input_blocks_4_1.lora_up.weight:", "copying a param",
               "with shape torch.Size([5120, 8]) from checkpoint, the shape in current"]  # fmt: skip
    assert verdict(wrapped).primary == "checkpoint_mismatch"
    _assert_benign([
        "RuntimeWarning: invalid value encountered in scalar divide",
        "W0530 14:48:43.150000 2622492 site-packages/torch/_dynamo/convert_frame.py:1233] SystemError: "
        "PY_SSIZE_T_CLEAN macro must be defined for '#' formats",
    ])  # fmt: skip
    # an HCA NCCL cannot open is still no transport error (it uses the others, or sockets)
    assert verdict(["NCCL WARN Call to ibv_open_device failed"]).primary != "ib_transport_error"


def test_a_nan_gradient_norm_that_a_later_sound_step_follows_is_an_fp16_skip():
    """fp16's scaler meets an overflow: the step's gradient norm is NaN while its loss is finite, and
    the step is skipped; a later step with a finite norm shows it was (a NaN gradient applied would
    leave NaN weights). That log is healthy; one whose NaN norms go on, or whose loss is NaN, is not."""
    mmcv = "Epoch [1][{}/62598]\tlr: 1.000e-03, time: 0.539, loss_ce: 1.2757, loss: {}, grad_norm: {}"
    skipped = mmcv.format(100, "1.9091", "nan")
    sound = mmcv.format(200, "0.9186", "3.9772")
    v = verdict([skipped, sound])
    assert v.primary is None and not v.findings and not v.unrecognised
    assert verdict([sound, skipped]).primary == "nan_loss"  # nothing sound after it
    assert verdict([skipped, mmcv.format(200, "0.9186", "nan")]).primary == "nan_loss"
    assert verdict([mmcv.format(100, "nan", "nan"), sound]).primary == "nan_loss"  # the loss itself
    hf = "{'loss': %s, 'grad_norm': %s, 'learning_rate': 2e-05, 'epoch': 0.01}"
    assert verdict([hf % ("2.31", "nan"), hf % ("2.29", "1.7")]).primary is None
    assert verdict([hf % ("2.31", "nan"), hf % ("nan", "nan")]).primary == "nan_loss"


def test_the_hundred_and_forty_fourth_batchs_wording_families():
    """The hundred-and-forty-fourth batch's false alarms: mmengine's non-strict load warning with its
    level coloured (in a notebook's JSON too) or printed alone without a logger; the strict load's
    RuntimeError of the same words is still a checkpoint mismatch."""
    mismatch = (
        "size mismatch for cls_head.fc_cls.weight: copying a param with shape torch.Size([400, 2048]) "
        "from checkpoint, the shape in current model is torch.Size([2, 2048])."
    )
    for warning in (
        '      "01/31 10:55:37 - mmengine - \\u001b[5m\\u001b[4m\\u001b[33mWARNING\\u001b[0m - The model and '
        'loaded state dict do not match exactly\\n",',
        "The model and loaded state dict do not match exactly",
    ):
        assert verdict([warning, "", mismatch]).findings == [], warning
    strict = "RuntimeError: The model and loaded state dict do not match exactly"
    assert verdict([strict, "", mismatch]).primary == "checkpoint_mismatch"


def test_the_hundred_and_forty_fifth_batchs_wording_families():
    """The hundred-and-forty-fifth batch: Graphcore's Poplar running out of IPU tile memory, a TPU
    another process holds, and two false alarms: peft's offline lookup that it says it ignores, and
    TensorFlow's TPU rewrite listing unused ops at error level."""
    _assert_named({
        "    terminate called after throwing an instance of 'poplar::graph_memory_allocation_error'": "cuda_oom",
        "    what():  Out of memory: Cannot fit all variable data onto one or more tiles. Profile saved to: "
        "./report_OOM/profile.pop": "cuda_oom",
        # the master's name not resolving is still that, whatever library says it
        "socket.gaierror: [Errno -3] Temporary failure in name resolution": "master_addr_unresolved",
    })  # fmt: skip
    _assert_unknown([
        'I0000 00:00:1648534265.148743  625905 tpu_initializer_helper.cc:94] libtpu.so already in use by '
        'another process. Run "$ sudo lsof -w /dev/accel0" to figure out which process is using the TPU.'
    ])  # fmt: skip
    _assert_benign([
        "/opt/venv/lib/python3.12/site-packages/peft/utils/other.py:1394: UserWarning: Unable to fetch remote "
        "file due to the following error [Errno -3] Temporary failure in name resolution - silently ignoring "
        "the lookup for the file config.json in unsloth/gemma-4-E2B-it.",
        "ERROR:tensorflow:Operation of type Placeholder (module_apply_tokens/input_ids) is not supported on "
        "the TPU. Execution will fail if this op is used in the graph.",
    ])  # fmt: skip


def test_the_hundred_and_forty_sixth_batchs_wording_families():
    """The hundred-and-forty-sixth batch's false alarm: logging's QueueListener thread dying of an
    EOFError when the processes feeding it have exited, after training finished; and a frame's bare
    raise statement is not listed beside the exception line that says the same."""
    listener = [
        "Exception in thread Thread-1:",
        "Traceback (most recent call last):",
        '  File "/home/pai/lib/python3.6/logging/handlers.py", line 1476, in _monitor',
        "    record = self.dequeue(True)",
        '  File "/home/pai/lib/python3.6/multiprocessing/connection.py", line 383, in _recv',
        "    raise EOFError",
        "EOFError",
    ]
    v = verdict(listener)
    assert v.findings == [] and v.unrecognised == []
    raised = ['  File "/x/reward_score/__init__.py", line 37, in _default_compute_score', "    raise NotImplementedError", "NotImplementedError"]  # fmt: skip
    assert [u["line"] for u in verdict(raised).unrecognised] == ["NotImplementedError"]


def test_the_hundred_and_forty_seventh_batchs_wording_families():
    """The hundred-and-forty-seventh batch: a SIGKILL passed on through a Python wrapper as exit
    status 247; fast.ai's course printing each epoch's loss first in a list; a notebook file's
    traceback with its colour codes in JSON's spelling; JAX's sharding check (a code bug, not a flag
    refused); and ModelScope's logged 404 that the caller catches before training."""
    _assert_named({
        "[f35a2cc1] 172.31.36.1: [ERROR] [launch.py:184:sigkill_handler] ['python3', '-m', "
        "'determined.exec.harness', 'model_def:CIFARTrial'] exits with return code = 247": "host_oom_killed",
        "[f35a2cc1] pdsh@ip-172-31-36-1: 172.31.42.141: ssh exited with exit code 247": "host_oom_killed",
        '      "train: [nan, tensor(0.0986, device=\'cuda:0\')]\\n",': "nan_loss",
        # a flag refused beside another is still that
        "ValueError: FlexAttention is not compatible with selective AC yet": "train_flags_invalid",
    })  # fmt: skip
    assert verdict(["exits with return code = 248"]).primary != "host_oom_killed"
    assert verdict(["train: [0.2913, tensor(0.9114, device='cuda:0')]"]).findings == []
    coloured = (
        "      \"\\u001b[0;31mAttributeError\\u001b[0m: 'TensorDataset' object has no attribute 'loss_func'\""
    )
    v = verdict([coloured])
    assert v.primary is None and [u["line"] for u in v.unrecognised] == [
        "      \"AttributeError: 'TensorDataset' object has no attribute 'loss_func'\""
    ]
    _assert_unknown([
        "ValueError: One of with_sharding_constraint arguments is incompatible with its sharding annotation "
        "NamedSharding(mesh=Mesh('fsdp': 2, 'tp': 2), spec=P('fsdp', 'tp', None)): Sharding ... is only valid "
        "for values of rank at least 3, but was applied to a value of rank 2.",
        # a lookup nobody catches ends in the raise's own line
        "requests.exceptions.HTTPError: The request model: Qwen/Qwen2___5-0___5B-Instruct does not exist!",
    ])  # fmt: skip
    _assert_benign([
        '      "[ERROR:modelscope] The request model: Qwen/Qwen2___5-0___5B-Instruct does not exist!\\n",',
    ])  # fmt: skip


def test_the_hundred_and_forty_eighth_batchs_wording_families():
    """The hundred-and-forty-eighth batch: a dataset missing under Kaggle's mount point, DeePMD-kit
    finding no training system at its configured paths, and Hydra's override grammar refusing a bare
    argument; a model or config file missing under /kaggle/input stays none of them."""
    _assert_named({
        "FileNotFoundError: [Errno 2] No such file or directory: '/kaggle/input/vesuvius-challenge-ink-detection/test'":
            "dataset_path_missing",
        "OSError: [Error cannot find valid a data system] Please check your setting for data systems":
            "dataset_path_missing",
        "hydra.errors.OverrideParseException: Error parsing override 'config.yaml'": "train_flags_invalid",
    })  # fmt: skip
    model = "FileNotFoundError: [Errno 2] No such file or directory: '/kaggle/input/deberta-v3-large/model.safetensors'"
    assert verdict([model]).primary != "dataset_path_missing"


def test_the_hundred_and_forty_ninth_batchs_wording_families():
    """The hundred-and-forty-ninth batch: PaddleSeg finding no dataset at its root, verl's weight sync
    refusing a tensor larger than its configured bucket, and torch's warning that the GPU is newer
    than every architecture its build holds kernels for (a UserWarning, but nothing runs there)."""
    _assert_named({
        "ValueError: The dataset is not Found or the folder structure is nonconfoumance.": "dataset_path_missing",
        "   AssertionError: Weight model.embed_tokens.weight(torch.Size([151936, 4096]), torch.float32) is too "
        "large to fit in the bucket.": "train_flags_invalid",
    })  # fmt: skip
    newer = "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation."
    _assert_unknown([newer])
    same_line = "/x/torch/cuda/__init__.py:235: UserWarning: " + newer
    assert [u["line"] for u in verdict([same_line]).unrecognised] == [same_line]
    # torch's other UserWarnings stay quiet
    _assert_benign(["/x/torch/cuda/__init__.py:104: UserWarning: TypedStorage is deprecated."])


def test_the_hundred_and_fiftieth_batchs_wording_families():
    """The hundred-and-fiftieth batch: nnabla's allocator giving up after its retry, the GSP driver's
    GPU that needs a reset, torch's optimizer state of other parameter groups, a model's width not
    divisible by its heads as a bare assert, and TensorFlow's or XLA's cuDNN older than the build."""
    _assert_named({
        "Failed to allocate again.": "cuda_oom",
        " [Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
        "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874 ": "gpu_xid_error",
        "ValueError: loaded state dict contains a parameter group that doesn't match the size of "
        "optimizer's group": "checkpoint_mismatch",
    })  # fmt: skip
    # the allocator's first failure is a retry, not the end
    assert verdict(["Failed to allocate. Freeing memory cache and retrying."]).primary is None
    frames = [
        '  File "/x/models/Transformer/attention.py", line 56, in __init__',
        "    assert d_model % n_heads == 0",
    ]
    assert verdict([*frames, "AssertionError"]).primary == "model_config_invalid"
    assert verdict(frames).primary is None  # the source line alone raised nothing
    # heads against a parallel size stays the parallel layout's
    tp = ["    assert self.num_heads % tp_size == 0", "AssertionError"]
    assert verdict(tp).primary == "parallelism_config_invalid"
    _assert_unknown([
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:319] Loaded runtime CuDNN library: 7.4.1 but source was "
        "compiled with: 7.6.4.  CuDNN library major and minor version needs to match or have higher minor "
        "version in case of CuDNN 7.0 or later version.",
        "2023-07-31 01:53:45.016563: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:427] Loaded runtime "
        "CuDNN library: 8.5.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major "
        "version and equal or higher minor version.",
    ])  # fmt: skip


def test_the_hundred_and_fifty_second_batchs_wording_families():
    """The hundred-and-fifty-second batch: Hugging Face datasets' missing data file with the message
    on a line of its own (a Ray actor's traceback), torch 0.4's CPU embedding lookup past its rows,
    OneFlow's glog checks of the batch and the data parts against the devices, and TensorFlow's S3
    file system logging each 404 of an existence probe at level E."""
    _assert_named({
        "Unable to find '/workspace/verl/data/train.parquet'": "dataset_path_missing",
        "F1014 10:31:02.191896  1754 ofrecord_reader_op.cpp:38] Check failed: (batch_size % parallel_num) == (0) "
        "(4 vs 0)": "batch_size_not_divisible",
        "F1013 11:54:44.578474  8836 ofrecord_dataset.h:73] Check failed: parallel_num_ <= data_part_num_ "
        "(2 vs. 1) ": "train_flags_invalid",
    })  # fmt: skip
    # the same words about a file that is not data are no dataset path
    assert verdict(["Unable to find 'configs/model.yaml'"]).primary is None
    lookup = [
        "-> 1076     return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)",
        "RuntimeError: index out of range at /opt/conda/conda-bld/pytorch/work/aten/src/TH/generic/THTensorMath.c:343",
    ]
    assert verdict(lookup).primary == "vocab_mismatch"
    assert verdict(lookup[1:]).primary is None  # an index_select elsewhere: any bug
    _assert_benign([
        "2019-08-29 00:35:37.978201: E tensorflow/core/platform/s3/aws_logging.cc:60] No response body. "
        "Response code: 404",
    ])  # fmt: skip
    # ... but not the S3 client's other errors
    _assert_unknown([
        "2019-08-29 00:35:37.978201: E tensorflow/core/platform/s3/aws_logging.cc:60] No response body. "
        "Response code: 403",
    ])  # fmt: skip


def test_the_hundred_and_fifty_third_batchs_wording_families():
    """The hundred-and-fifty-third batch: DGL's CUDA check with the runtime's out-of-memory words,
    argparse's refusal from a parser whose program name has spaces, and three things that are no
    failure: Ultralytics redoing an assignment on the CPU after catching an OOM, wandb giving up on
    syncing part of a run, ClassyVision's warning that carries a traceback."""
    _assert_named({
        "DGLError: [09:17:32] C:\\dgl\\src\\runtime\\cuda\\cuda_device_api.cc:117: Check failed: e == cudaSuccess "
        "|| e == cudaErrorCudartUnloading: CUDA: out of memory": "cuda_oom",
        "BERT pretraining.: error: unrecognized arguments: --log_dir log": "train_flags_invalid",
    })  # fmt: skip
    _assert_benign([
        "WARNING: CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU",
        "wandb: WARNING Fatal error while uploading data. Some run data will not be synced, but it will still "
        "be written to disk. Use `wandb sync` at the end of the run to try uploading.",
    ])  # fmt: skip
    # torch's own OutOfMemoryError is still one
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert verdict([oom]).primary == "cuda_oom"
    flops = [
        "WARNING:root:Model contains unsupported modules:",
        "            Could not compute FLOPs for model forward pass. Exception:",
        "Traceback (most recent call last):",
        '  File "/x/classy_vision/models/classy_model.py", line 260, in input_shape',
        "    raise NotImplementedError",
        "NotImplementedError",
    ]
    v = verdict(flops)
    assert v.primary is None and v.unrecognised == []
    # ... the same traceback without the hook's warning is an unknown failure
    assert verdict(flops[2:]).unrecognised
