"""GPU use from ``nvidia-smi``: parse ``dmon`` and ``--query-gpu --format=csv`` output, flag idle GPUs.

Two inputs, both plain text (saved to a file, or collected from pods with :func:`collect_from_pods`):

* ``nvidia-smi dmon -s u -d 5`` (any ``-s`` set: columns are read from the ``# gpu ...`` header;
  values may carry ``%``; ``-`` is "not available");
* ``nvidia-smi --query-gpu=index,utilization.gpu,utilization.memory,memory.used,memory.total
  --format=csv`` (with or without units, with the header line).

Lines may carry a source prefix such as kubectl's ``[pod/NAME/CONTAINER]`` or ``NAME:``, which
becomes the ``source`` of the sample, so several pods' output can be concatenated in one file.
A GPU whose mean SM utilisation is under :data:`~workshop_lib.facts.failures.LOW_GPU_UTIL_PERCENT`
is flagged with the EKS launch guide's likely causes (docs/sources.md).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..facts.failures import LOW_GPU_UTIL_CAUSES, LOW_GPU_UTIL_PERCENT

_PREFIX = re.compile(r"^\s*(?:\[(?:pod/)?([^\]/\s]+)(?:/[^\]]*)?\]\s*|([\w.-]+-\d+):\s+)")
_CSV_FIELDS = {
    "index": "gpu",
    "utilization.gpu": "sm",
    "utilization.memory": "mem",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "name": "name",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
}
_DMON_FIELDS = {"gpu": "gpu", "idx": "gpu", "sm": "sm", "mem": "mem", "pwr": "power_w", "gtemp": "temperature_c",
                "fb": "memory_used_mib"}  # fmt: skip


@dataclass
class GpuSample:
    source: str
    gpu: int
    sm: float | None = None  # percent
    mem: float | None = None  # memory-controller utilisation, percent
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None


@dataclass
class GpuStat:
    source: str
    gpu: int
    samples: int
    sm_mean: float | None
    mem_mean: float | None
    memory_used_mib: float | None
    low: bool
    causes: list[str] = field(default_factory=list)


def _value(text: str) -> float | None:
    text = text.strip().rstrip("%").replace("MiB", "").replace("W", "").replace("%", "").strip()
    if text in ("", "-", "N/A", "[N/A]", "[Not Supported]"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _split_prefix(line: str) -> tuple[str, str]:
    m = _PREFIX.match(line)
    if not m:
        return "", line
    return (m.group(1) or m.group(2) or ""), line[m.end() :]


# Readings nvidia-smi can print: utilisation is a percentage; memory in MiB below 16 TiB.
_RANGES = {"sm": (0.0, 100.0), "mem": (0.0, 100.0), "memory_used_mib": (0.0, 16.0 * 2**20),
           "memory_total_mib": (0.0, 16.0 * 2**20)}  # fmt: skip


def _check_reading(rec: dict[str, Any], source_name: str, lineno: int, raw: str) -> None:
    """Refuse an impossible reading (2e21 % SM, -5 %, nan) with one line naming file and line.

    A corrupted or hand-edited file must not yield an "OK" verdict computed from garbage.
    """
    for key, (lo, hi) in _RANGES.items():
        v = rec.get(key)
        if v is not None and not lo <= v <= hi:
            raise UsageError(
                f"{source_name}:{lineno}: {key} reading {v:g} is impossible (expected {lo:g} to {hi:g}); "
                f"the line is {raw.strip()[:80]!r}: fix or remove it"
            )


def parse_nvidia_smi(text: str, source_name: str = "<nvidia-smi output>") -> list[GpuSample]:
    """Samples from ``nvidia-smi dmon`` and/or ``--query-gpu ... --format=csv`` output."""
    samples: list[GpuSample] = []
    dmon_cols: dict[str, list[str]] = {}
    csv_cols: dict[str, list[str]] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        source, line = _split_prefix(raw)
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            cols = stripped.lstrip("#").split()
            if "gpu" in cols:  # the header; the units line below it says "Idx" instead
                dmon_cols[source] = [c.lower() for c in cols]
            continue
        if "," in stripped and ("utilization" in stripped or "index" in stripped):
            csv_cols[source] = [c.strip().split(" [")[0] for c in stripped.split(",")]
            continue
        if source in csv_cols and "," in stripped:
            cells = [c.strip() for c in stripped.split(",")]
            rec: dict[str, Any] = {}
            for name, cell in zip(csv_cols[source], cells, strict=False):
                key = _CSV_FIELDS.get(name)
                if key and key != "name":
                    rec[key] = _value(cell)
            if rec.get("gpu") is not None:
                _check_reading(rec, source_name, lineno, raw)
                samples.append(GpuSample(source, int(rec.pop("gpu")), rec.get("sm"), rec.get("mem"),
                                         rec.get("memory_used_mib"), rec.get("memory_total_mib")))  # fmt: skip
            continue
        if source in dmon_cols:
            cells = stripped.split()
            cols = dmon_cols[source]
            gpu_at = cols.index("gpu")
            if len(cells) < len(cols) or not cells[gpu_at].isdigit():
                continue
            rec = {}
            for name, cell in zip(cols, cells, strict=False):
                key = _DMON_FIELDS.get(name)
                if key:
                    rec[key] = _value(cell)
            _check_reading(rec, source_name, lineno, raw)
            samples.append(
                GpuSample(
                    source, int(cells[gpu_at]), rec.get("sm"), rec.get("mem"), rec.get("memory_used_mib")
                )
            )
    return samples


def gpu_stats(samples: list[GpuSample], threshold: float = LOW_GPU_UTIL_PERCENT) -> list[GpuStat]:
    """Per GPU (and source): mean SM and memory utilisation, flagged when SM is under ``threshold``."""
    groups: dict[tuple[str, int], list[GpuSample]] = defaultdict(list)
    for s in samples:
        groups[(s.source, s.gpu)].append(s)
    out = []
    for (source, gpu), ss in sorted(groups.items()):
        sm = [s.sm for s in ss if s.sm is not None]
        mem = [s.mem for s in ss if s.mem is not None]
        used = [s.memory_used_mib for s in ss if s.memory_used_mib is not None]
        sm_mean = sum(sm) / len(sm) if sm else None
        low = sm_mean is not None and sm_mean < threshold
        out.append(GpuStat(source, gpu, len(ss), sm_mean, sum(mem) / len(mem) if mem else None,
                           max(used) if used else None, low, list(LOW_GPU_UTIL_CAUSES) if low else []))  # fmt: skip
    return out


def gpu_report(
    text: str, threshold: float = LOW_GPU_UTIL_PERCENT, source_name: str = "<nvidia-smi output>"
) -> dict[str, Any]:
    """The ``workshop monitor gpu --json`` object."""
    if not 0 <= threshold <= 100:
        raise UsageError(f"--threshold {threshold}: use an SM utilisation percentage from 0 to 100")
    samples = parse_nvidia_smi(text, source_name)
    stats = gpu_stats(samples, threshold)
    low = [s for s in stats if s.low]
    if not stats:
        verdict = "UNKNOWN: no nvidia-smi dmon or --format=csv samples found."
    elif low:
        names = ", ".join(f"{s.source + ':' if s.source else ''}GPU{s.gpu} ({s.sm_mean:.0f}%)" for s in low)
        verdict = f"LOW: {len(low)} of {len(stats)} GPUs under {threshold:.0f}% SM utilisation: {names}."
    else:
        mean = sum(s.sm_mean for s in stats if s.sm_mean is not None) / max(
            1, sum(s.sm_mean is not None for s in stats)
        )
        verdict = f"OK: {len(stats)} GPUs, mean SM utilisation {mean:.0f}% (healthy training is 70-95%)."
    return {
        "gpus": [asdict(s) for s in stats],
        "samples": len(samples),
        "threshold_percent": threshold,
        "low_gpus": len(low),
        "likely_causes": list(LOW_GPU_UTIL_CAUSES) if low else [],
        "verdict": verdict,
    }


def read_gpu_file(path: str | os.PathLike[str]) -> str:
    p = Path(path)
    if p.is_dir():  # "no such file" for a directory sends people looking for a typo that is not there
        raise UsageError(f"{p}: is a directory; pass the saved nvidia-smi output file inside it")
    if not p.exists():
        raise UsageError(
            f"{p}: no such file; save `nvidia-smi dmon -s u -c 12` or `nvidia-smi --query-gpu=index,utilization.gpu,utilization.memory,memory.used,memory.total --format=csv` output to it"
        )
    from .parse import check_log_path

    check_log_path(p)  # a device or FIFO has no end: refused by name
    if p.stat().st_size > MAX_GPU_FILE_BYTES:
        raise UsageError(
            f"{p}: {p.stat().st_size:,} bytes is not a saved nvidia-smi sample (at most "
            f"{MAX_GPU_FILE_BYTES:,}); save a few minutes of `nvidia-smi dmon -s u` output"
        )
    return p.read_text(encoding="utf-8", errors="replace")


MAX_GPU_FILE_BYTES = 256 << 20  # a day of dmon for 64 GPUs is ~100 MB: more is not a sample


def plot_gpu(
    stats: list[GpuStat], out: str | os.PathLike[str] | None = None, threshold: float = LOW_GPU_UTIL_PERCENT
):
    """Bar chart of SM and memory utilisation per GPU; returns the matplotlib Figure."""
    if out is not None:
        from .plot import check_plot_out

        check_plot_out(out)  # before drawing: a bad --out is a usage error, not a matplotlib one
    import matplotlib

    if out is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(stats) + 2), 3.5))
    labels = [f"{s.source + ':' if s.source else ''}{s.gpu}" for s in stats]
    xs = range(len(stats))
    ax.bar([x - 0.2 for x in xs], [s.sm_mean or 0 for s in stats], width=0.4, label="SM %",
           color=["tab:red" if s.low else "tab:green" for s in stats])  # fmt: skip
    ax.bar(
        [x + 0.2 for x in xs], [s.mem_mean or 0 for s in stats], width=0.4, label="memory %", color="tab:blue"
    )
    ax.axhline(threshold, color="grey", linestyle="--", linewidth=1, label=f"{threshold:.0f}% threshold")
    ax.set_xticks(list(xs), labels, rotation=45 if len(stats) > 8 else 0)
    ax.set_ylim(0, 100)
    ax.set_ylabel("utilisation (%)")
    ax.set_title("GPU utilisation (nvidia-smi)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    if out is not None:
        from .plot import save_figure

        save_figure(fig, out, dpi=100)
        plt.close(fig)
    return fig


DMON_COMMAND = ["nvidia-smi", "dmon", "-s", "u", "-c", "5"]
QUERY_COMMAND = ["nvidia-smi", "--query-gpu=index,utilization.gpu,utilization.memory,memory.used,memory.total",
                 "--format=csv"]  # fmt: skip


def collect_from_pods(
    namespace: str,
    *,
    pods: list[str] | None = None,
    label_selector: str | None = None,
    command: list[str] | None = None,
    container: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    api: Any = None,
    stream_fn: Any = None,
) -> str:
    """Run ``nvidia-smi`` in each pod through the Kubernetes exec API; output prefixed ``[pod/NAME]``.

    The kubernetes client is imported here, only when used. ``api`` (a ``CoreV1Api``) may be passed
    in, e.g. a fake in tests, with ``stream_fn`` standing in for ``kubernetes.stream.stream``.
    """
    if api is None:
        from kubernetes import client, config

        try:
            config.load_kube_config(config_file=kubeconfig, context=context)
        except Exception:  # noqa: BLE001 - inside a pod, fall back to the service account
            config.load_incluster_config()
        api = client.CoreV1Api()
    if pods is None:
        listed = api.list_namespaced_pod(namespace, label_selector=label_selector or "")
        pods = [p.metadata.name for p in listed.items if getattr(p.status, "phase", "Running") == "Running"]
    if stream_fn is None:
        from kubernetes.stream import stream as stream_fn

    chunks = []
    for name in pods:
        kwargs = {
            "command": command or DMON_COMMAND,
            "stderr": True,
            "stdin": False,
            "stdout": True,
            "tty": False,
        }
        if container:
            kwargs["container"] = container
        out = stream_fn(api.connect_get_namespaced_pod_exec, name, namespace, **kwargs)
        chunks.extend(f"[pod/{name}] {line}" for line in str(out).splitlines())
    return "\n".join(chunks) + "\n"
