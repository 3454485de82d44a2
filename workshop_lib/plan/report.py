"""Plain-text views of plans, for the terminal and the notebook (no third-party imports)."""

from __future__ import annotations

from typing import Any

from ..facts.megatron_flags import format_flags

GIB = 1024**3


def _gib(x: float | None) -> str:
    return "-" if x is None else f"{x / GIB:6.1f} GiB"


def _flag(flags: dict[str, Any], name: str, default: str = "1") -> str:
    """A plan flag as a table cell: ``on`` for a bare flag, its value, or ``default`` when absent."""
    value = flags.get(name)
    if value is None or value is False:
        return default
    return "on" if value is True else str(value)


def plan_text(p: dict[str, Any]) -> str:
    lines = []
    d = p.get("details", {})
    par = p["parameters"]
    lines.append(
        f"model {d.get('model', '')}: {_num(par['total'])} parameters "
        f"({_num(par['active'])} active, {_num(par['embedding'])} embedding), "
        f"{_num(par['per_gpu_max'])} on the busiest GPU"
    )
    lines.append(
        f"cluster: {d.get('world_size', '?')} x {d.get('gpu', '?')} ({d.get('instance_type') or 'no instance'})"
    )
    lines.append(
        f"data parallel {p['data_parallel_size']}, micro-batches per iteration (gradient accumulation) "
        f"{p['num_microbatches']}, global batch {d.get('global_batch_size')}"
    )
    mem = p["memory_per_gpu_bytes"]
    lines.append(
        "memory per GPU: "
        + ", ".join(
            f"{k} {_gib(mem[k]).strip()}"
            for k in ("weights", "gradients", "optimizer", "activations", "total")
        )
    )
    lines.append(
        f"fits: {'yes' if p['fits'] else 'NO'} (GPU memory {_gib(d.get('gpu_memory_bytes')).strip()})"
    )
    est = p["estimate"]
    if est["seconds_per_iteration"] is not None:
        lines.append(
            f"pipeline bubble {p['pipeline_bubble_fraction']:.1%}; {p['flops_per_iteration']:.3e} FLOPs "
            f"per iteration; {est['seconds_per_iteration']:.2f} s/iteration, "
            f"{est['tokens_per_second']:,.0f} tokens/s, MFU {est['mfu']:.1%}"
        )
        tr = d.get("training")
        if tr:
            cost = f", ~${tr['cost_usd']:,.0f}" if tr.get("cost_usd") is not None else ""
            lines.append(f"{tr['train_tokens']:.3g} tokens: {tr['days']:.1f} days{cost}")
    lines.append(f"valid: {'yes' if p['valid'] else 'NO'}")
    for e in p["errors"]:
        lines.append(f"  error: {e}")
    for w in p["warnings"]:
        lines.append(f"  warning: {w}")
    for note in d.get("notes", []):
        lines.append(f"  note: {note}")
    lines.append("megatron args: " + " ".join(format_flags(p["flags"])))
    return "\n".join(lines)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.2f}{unit}"
    return str(x)


def search_rows(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for c in configs:
        a = c["flags"]
        rows.append(
            {
                "TP": int(_flag(a, "tensor-model-parallel-size")),
                "PP": int(_flag(a, "pipeline-model-parallel-size")),
                "CP": int(_flag(a, "context-parallel-size")),
                "EP": int(_flag(a, "expert-model-parallel-size")),
                "DP": c["data_parallel_size"],
                "VP layers": _flag(a, "num-layers-per-virtual-pipeline-stage", "-"),
                "MBS": int(_flag(a, "micro-batch-size")),
                "recompute": _flag(a, "recompute-granularity", "-"),
                "distopt": _flag(a, "use-distributed-optimizer", "off"),
                "SP": _flag(a, "sequence-parallel", "off"),
                "memory_GiB": c["memory_per_gpu_bytes"]["total"] / GIB,
                "s_per_iter": c["estimate"]["seconds_per_iteration"],
                "tokens_per_s": c["estimate"]["tokens_per_second"],
                "mfu": c["estimate"]["mfu"],
            }
        )
    return rows


def search_table(configs: list[dict[str, Any]], m: Any = None, cl: Any = None, limit: int = 20) -> str:
    rows = search_rows(configs)
    if not rows:
        return "no valid configuration fits; try more GPUs, a GPU with more memory, or a shorter sequence"
    cols = list(rows[0])
    head = f"{len(rows)} valid configurations that fit, best first (showing {min(limit, len(rows))}):"
    fmt = []
    for r in rows[:limit]:
        fmt.append(
            [
                f"{r[k]:.1f}"
                if k == "memory_GiB"
                else f"{r[k]:.2f}"
                if k == "s_per_iter"
                else f"{r[k]:,.0f}"
                if k == "tokens_per_s"
                else f"{r[k]:.1%}"
                if k == "mfu"
                else str(r[k])
                for k in cols
            ]
        )
    widths = [max(len(c), *(len(f[i]) for f in fmt)) for i, c in enumerate(cols)]
    out = [head, "  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    out += ["  ".join(v.rjust(w) for v, w in zip(f, widths, strict=True)) for f in fmt]
    return "\n".join(out)
