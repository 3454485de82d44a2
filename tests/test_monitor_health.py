"""NCCL/EFA verdicts from NCCL INFO lines; GPU utilisation from nvidia-smi output."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from workshop_lib.monitor.gpu import collect_from_pods, gpu_report, gpu_stats, parse_nvidia_smi, plot_gpu
from workshop_lib.monitor.nccl import nccl_health, nccl_health_lines

FIX = Path(__file__).parent / "fixtures"


def test_nccl_efa_healthy():
    h = nccl_health(FIX / "logs" / "healthy_megatron_long.log")
    assert (h.nccl_version, h.aws_ofi_nccl_version, h.libfabric_version) == ("2.21.5", "1.17.2", "1.22")
    assert h.provider == "efa" and h.efa_nics == 4 and h.network == "Libfabric"
    assert h.gpudirect_rdma and h.channels == 8 and h.verdict == "ok"
    assert h.message.startswith("OK: EFA in use via aws-ofi-nccl 1.17.2")


def test_nccl_socket_fallback_is_degraded():
    h = nccl_health(FIX / "logs" / "fail_efa_plugin_missing.log")
    assert h.network == "Socket" and h.plugin_missing and h.socket_interfaces == ["eth0"]
    assert h.verdict == "degraded" and "plugin not found" in h.message


def test_a_missing_infiniband_plugin_is_not_blamed_on_aws_ofi_nccl():
    """NCCL told to load HPC-X's SHARP plugin (an image built for InfiniBand) and not finding it: the
    run is on sockets, but the plugin it wanted was never aws-ofi-nccl's."""
    sockets = "h:1:2 [1] NCCL INFO NET/Socket : Using [0]eth0:10.4.0.102<0>"
    sharp = "h:1:2 [1] NCCL INFO NET/Plugin: Could not find: libnccl-net-/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.so."
    h = nccl_health_lines([sharp, sockets])
    assert (
        h.verdict == "degraded" and not h.plugin_missing and "aws-ofi-nccl plugin not found" not in h.message
    )
    assert nccl_health_lines(
        ["h:1:2 [1] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.", sockets]
    ).plugin_missing


def test_seed_bad_output_and_no_info_lines():
    h = nccl_health_lines(
        ["NET/Plugin: Could not find: libnccl-net-aws-ofi-nccl.so", "NET/Socket: Using [0]eth0:10.1.1.203<0>"]
    )
    assert h.verdict == "degraded"
    assert nccl_health_lines(["iteration 1/ 10 | lm loss: 1.0 |"]).verdict == "unknown"


def test_infiniband_is_ok():
    h = nccl_health_lines(["n:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>",
                           "n:1:1 [0] NCCL INFO Using network IB",
                           "n:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA"])  # fmt: skip
    assert h.verdict == "ok" and h.network == "IB" and h.gpudirect_rdma


def test_dmon_per_gpu_means():
    stats = gpu_stats(parse_nvidia_smi((FIX / "gpu" / "dmon_healthy.txt").read_text()))
    assert [(s.gpu, s.samples, s.sm_mean, s.mem_mean) for s in stats] == [
        (0, 2, 88.0, 63.0), (1, 2, 84.0, 59.0), (2, 2, 89.0, 64.0), (3, 2, 85.0, 60.0)]  # fmt: skip
    assert not any(s.low for s in stats)


def test_dmon_many_columns_two_pods_flags_low_gpus():
    report = gpu_report((FIX / "gpu" / "dmon_low_two_pods.txt").read_text())
    low = [(g["source"], g["gpu"], g["sm_mean"]) for g in report["gpus"] if g["low"]]
    assert low == [("megatron-cpt-techpulse-worker-0", 0, 20.0), ("megatron-cpt-techpulse-worker-0", 1, 34.0)]
    assert report["low_gpus"] == 2 and len(report["likely_causes"]) == 3
    assert any("num-workers" in c for c in report["likely_causes"]) and report["verdict"].startswith("LOW")


def test_query_gpu_csv(tmp_path):
    samples = parse_nvidia_smi((FIX / "gpu" / "query_gpu.csv").read_text())
    assert [(s.gpu, s.sm, s.mem, s.memory_used_mib, s.memory_total_mib) for s in samples][2] == (
        2,
        12.0,
        3.0,
        35190.0,
        40960.0,
    )
    out = tmp_path / "gpu.png"
    plot_gpu(gpu_stats(samples), out)
    assert out.stat().st_size > 1000


def test_collect_from_pods_with_a_fake_api():
    dmon = (FIX / "gpu" / "dmon_healthy.txt").read_text()
    calls = []
    api = SimpleNamespace(
        list_namespaced_pod=lambda ns, label_selector="": SimpleNamespace(items=[
            SimpleNamespace(metadata=SimpleNamespace(name="megatron-cpt-techpulse-master-0"), status=SimpleNamespace(phase="Running")),
            SimpleNamespace(metadata=SimpleNamespace(name="megatron-cpt-techpulse-worker-0"), status=SimpleNamespace(phase="Pending")),
        ]),
        connect_get_namespaced_pod_exec=object(),
    )  # fmt: skip

    def fake_stream(method, name, namespace, **kw):
        calls.append((name, namespace, kw["command"]))
        return dmon

    text = collect_from_pods(
        "megatron-workshop", label_selector="app=megatron", api=api, stream_fn=fake_stream
    )
    assert [c[0] for c in calls] == ["megatron-cpt-techpulse-master-0"] and calls[0][2][:2] == [
        "nvidia-smi",
        "dmon",
    ]
    stats = gpu_stats(parse_nvidia_smi(text))
    assert {s.source for s in stats} == {"megatron-cpt-techpulse-master-0"} and len(stats) == 4


def test_dmon_with_date_and_time_columns():
    stats = gpu_stats(parse_nvidia_smi((FIX / "gpu" / "dmon_with_time.txt").read_text()))
    assert [(s.gpu, s.samples, s.sm_mean, s.mem_mean, s.low) for s in stats] == [
        (0, 2, 43.0, 19.0, True),
        (1, 2, 92.0, 70.5, False),
    ]


def test_real_h100_dmon_and_query_output_from_the_gpu_benchmark():
    """nvidia-smi 580.159.04 on the lent H100 while benchmarks/bench_gpu.py ran (tests/fixtures/gpu/h100_bench_*):
    eleven trainer runs with start-ups between them, so the card idled most of the 5 minutes."""
    dmon = parse_nvidia_smi((FIX / "gpu" / "h100_bench_dmon.txt").read_text())
    assert len(dmon) == 141 and {s.gpu for s in dmon} == {0}
    assert max(s.sm for s in dmon) == 100.0 and sum(s.sm >= 90 for s in dmon) == 15
    query = parse_nvidia_smi((FIX / "gpu" / "h100_bench_query.csv").read_text())
    assert len(query) == 57 and {s.memory_total_mib for s in query} == {81559.0}
    assert max(s.memory_used_mib for s in query) > 40_000  # a 1.2B model's Adam states and activations
    for text in (FIX / "gpu" / "h100_bench_dmon.txt", FIX / "gpu" / "h100_bench_query.csv"):
        report = gpu_report(text.read_text())
        assert report["verdict"].startswith("LOW") and report["low_gpus"] == 1


def test_the_trainers_own_out_of_memory_on_the_h100_reads_back():
    """`workshop train`'s whole output when micro-batch 4 with unfused attention ran out of memory
    on the lent H100 (benchmarks/results/gpu_h100.md): the diagnosis is cuda_oom, nothing else is
    left unexplained, and the one memory report before it parses to the allocator's bytes."""
    from workshop_lib.monitor.diagnose import verdict
    from workshop_lib.monitor.parse import parse_log

    log = FIX / "gpu" / "h100_trainer_mbs4_oom.log"
    v = verdict(log)
    assert v.primary == "cuda_oom" and not v.unrecognised
    parsed = parse_log(log)
    assert [r["iteration"] for r in parsed.records] == [1]
    assert parsed.memory == [{"rank": 0, "iteration": 1, "allocated_bytes": 23105082880,
                              "max_allocated_bytes": 73160713216, "reserved_bytes": 75992399872,
                              "max_reserved_bytes": 75992399872}]  # fmt: skip
    # the launcher's own last line names the same cause
    assert log.read_text().rstrip().splitlines()[-1].startswith("diagnosis: cuda_oom: ")
