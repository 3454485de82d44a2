"""Failure diagnosis: every label fires on its fixture, healthy logs stay silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from workshop_lib.facts.failures import CONTRACT_LABELS, FAILURES_BY_LABEL
from workshop_lib.monitor.diagnose import diagnose_log, diagnose_text

LOGS = Path(__file__).parent / "fixtures" / "logs"
ALL_LABELS = sorted(FAILURES_BY_LABEL)


def test_table_covers_the_contract():
    assert set(CONTRACT_LABELS) <= set(FAILURES_BY_LABEL)
    for sig in FAILURES_BY_LABEL.values():
        assert sig.explanation and sig.fix and sig.severity in ("error", "warning")


@pytest.mark.parametrize("label", ALL_LABELS)
def test_each_label_fires_on_its_fixture(label):
    findings = diagnose_log(LOGS / f"fail_{label}.log")
    by_label = {f.label: f for f in findings}
    assert label in by_label, [f.label for f in findings]
    f = by_label[label]
    lines = (LOGS / f"fail_{label}.log").read_text().splitlines()
    assert lines[f.line_number - 1].rstrip() == f.line.rstrip()


@pytest.mark.parametrize("name", ["healthy_megatron_long.log", "healthy_local_trainer.log", "format_legacy.log", "format_prefixes.log",
                                  "format_deepspeed.log", "format_bert_sop.log", "format_multirank.log"])  # fmt: skip
def test_healthy_logs_have_no_findings(name):
    assert diagnose_log(LOGS / name) == []


def test_benign_lines_raise_nothing():
    text = "\n".join([
        "host:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
        "host:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin symbol (>= v5). ncclCollNetPlugin symbols v4 and lower are not supported.",
        "host:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0",
        "host:1:1 [0] NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so.",
        "[W socket.cpp:767] [c10d] The IPv6 network addresses of (master, 29500) cannot be retrieved (gai error: -2 - Name or service not known).",
    ])  # fmt: skip
    assert diagnose_text(text) == []


def test_fp16_skips_at_start_are_benign_but_late_skips_warn():
    line = " iteration {i:>8}/    2000 | lm loss: 9.0E+00 | loss scale: 2147483648.0 | number of skipped iterations: {s:>3} | number of nan iterations:   0 |"
    early = line.format(i=2, s=1)
    assert diagnose_text(early) == []
    # after the warm-up, one skip now and then is the scaler trying a larger scale: nothing
    probing = [line.format(i=i, s=1 if i in (1100, 2100) else 0) for i in range(100, 2200, 100)]
    assert diagnose_text("\n".join([early, *probing])) == []
    # steps that keep overflowing: several reports, a share of the steps
    late = [line.format(i=i, s=s) for i, s in ((500, 12), (600, 30), (700, 41))]
    (f,) = diagnose_text("\n".join([early, *late]))
    assert f.label == "skipped_iterations" and f.severity == "warning" and f.line_number == 2 and f.count == 3


def test_deepspeed_overflow_skips_warn_only_after_the_warm_up():
    """DeepSpeed's OVERFLOW lines carry no iteration: the last Megatron iteration line says when they are."""
    overflow = "[INFO] [stage_1_and_2.py:1644:step] [deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1048576.0, reducing to 524288.0"
    line = " iteration {i}/  159576 | lm loss: 4.3E+00 | loss scale: 1048576.0 | number of skipped iterations:   0 | number of nan iterations:   0 |"
    assert diagnose_text("\n".join([overflow, line.format(i=5), overflow, overflow])) == []  # fp16 warm-up
    # one overflow after the warm-up is the scaler probing; one on every step is a run that keeps overflowing
    assert diagnose_text("\n".join([line.format(i=17062), overflow])) == []
    lines = [line.format(i=17062), overflow, line.format(i=17063), overflow, line.format(i=17064), overflow]
    (f,) = diagnose_text("\n".join(lines))
    assert f.label == "skipped_iterations" and f.severity == "warning" and f.line_number == 2


def test_a_mount_that_failed_once_then_worked_is_not_a_finding():
    events = (LOGS / "fail_volume_mount_failed.log").read_text()
    assert [f.label for f in diagnose_text(events)] == ["volume_mount_failed"]
    started = "  Normal   Started    1m    kubelet    Started container pytorch"
    assert diagnose_text(events + started + "\n") == []


def test_repeated_lines_are_one_finding_with_count():
    (f,) = diagnose_log(LOGS / "fail_nccl_timeout.log")
    assert f.label == "nccl_timeout" and f.line_number == 2 and f.count == 3


def test_plugin_probe_is_not_a_finding_when_efa_loaded():
    text = "\n".join([
        "h:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net-aws-ofi-nccl.so",
        "h:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.17.2",
        "h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    ])  # fmt: skip
    assert diagnose_text(text) == []


def test_aws_ofi_nccl_initialization_failure_is_efa_provider_unavailable():
    findings = diagnose_log(LOGS / "fail_efa_provider_unavailable_ofi_init.log")
    by_label = {f.label: f for f in findings}
    assert "efa_provider_unavailable" in by_label
    f = by_label["efa_provider_unavailable"]
    assert f.line_number == 7 and "Unable to find a protocol that worked" in f.line and f.count == 3
    # each of aws-ofi-nccl's and NCCL's give-up lines is enough on its own
    for line in (
        "h:1:2 [0] nccl_net_ofi_init:1415 NCCL WARN NET/OFI aws-ofi-nccl initialization failed",
        "h:1:2 [0] NCCL INFO Failed to initialize NET plugin Libfabric",
        "h:1:2 [0] NCCL INFO Failed to initialize NET plugin AWS Libfabric",
        "h:1:2 [0] init.cc:99 CCOM WARN OFI plugin initNet() failed is EFA enabled?",
    ):
        assert [x.label for x in diagnose_text(line)] == ["efa_provider_unavailable"], line
    # NCCL's IB plugin failing on an EFA node is not this failure
    assert diagnose_text("h:1:2 [0] NCCL INFO Failed to initialize NET plugin IB") == []
