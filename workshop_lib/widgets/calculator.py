"""The parallelism calculator widget of notebook 02.

:class:`Calculator` lays out a model (a preset or its fields), a cluster (instance type and nodes),
the parallel sizes and the batch, and redraws on every change -- in well under 100 ms, as the
planner is pure arithmetic -- a stacked memory bar per GPU (weights, gradients, optimizer states,
activations and the allowance against the GPU's memory line), the batch math, the errors with
their fixes and the time estimate. Its button writes the launch job YAML (``<run>/plan/job.yaml``).

Everything a test or a browser needs is stable: each input's ``description`` ("Model", "TP", "PP",
"CP", "EP", "Micro batch", "Global batch", "Nodes", "Instance", ...), and the output areas' CSS
classes (``wl-memory``, ``wl-batch``, ``wl-errors``, ``wl-time``, ``wl-status``). Without a
browser, drive it with :meth:`Calculator.set` and read :attr:`Calculator.plan`,
:meth:`Calculator.memory_total_bytes` and :meth:`Calculator.errors`.
"""

from __future__ import annotations

import html
import os
import time
from pathlib import Path
from typing import Any

import ipywidgets as w

from ..facts.hardware import GPUS, INSTANCES
from ..facts.models import PRESETS, preset
from ..paths import RunDir
from ..plan.api import plan
from ..plan.config import ClusterConfig, ParallelConfig, model_from_args, normalize_args
from ..plan.jobfile import job_dict, write_job_yaml
from ..plan.layout import RECOMPUTE_CHOICES, layout_flags

GIB = 1024**3
COLORS = {
    "weights": "#4e79a7",
    "gradients": "#f28e2b",
    "optimizer": "#e15759",
    "activations": "#76b7b2",
    "allowance": "#bab0ac",
}
CUSTOM = "custom"

# Model fields: (description, flag).
MODEL_FIELDS = (
    ("Layers", "num-layers"),
    ("Hidden", "hidden-size"),
    ("Heads", "num-attention-heads"),
    ("Query groups", "num-query-groups"),
    ("FFN hidden", "ffn-hidden-size"),
    ("Seq length", "seq-length"),
    ("Vocab", "vocab-size"),
    ("Experts", "num-experts"),
    ("Top-k", "moe-router-topk"),
)
STYLE_FIELDS = (
    ("SwiGLU", "swiglu"),
    ("RMSNorm", "normalization"),
    ("RoPE", "position-embedding-type"),
    ("No biases", "disable-bias-linear"),
    ("Untied", "untie-embeddings-and-output-weights"),
)


def _model_flags_of(name: str) -> dict[str, Any]:
    flags = preset(name)
    m, _ = model_from_args(normalize_args(flags))
    return {
        "num-layers": m.num_layers, "hidden-size": m.hidden_size, "num-attention-heads": m.heads,
        "num-query-groups": m.groups, "ffn-hidden-size": m.ffn, "seq-length": m.seq_length,
        "vocab-size": m.vocab_size, "num-experts": m.num_experts or 0, "moe-router-topk": m.moe_router_topk,
        "swiglu": m.swiglu, "normalization": m.normalization == "RMSNorm",
        "position-embedding-type": m.position_embedding_type == "rope", "disable-bias-linear": not m.add_bias_linear,
        "untie-embeddings-and-output-weights": m.untie_embeddings_and_output_weights,
    }  # fmt: skip


def memory_bar_html(mem: dict[str, float], gpu_bytes: float, label: str, scale_bytes: float) -> str:
    """One stacked horizontal bar (HTML) with the GPU's memory as a red line."""
    width_px = 520
    px = width_px / scale_bytes
    segs = []
    for k in ("weights", "gradients", "optimizer", "activations", "allowance"):
        v = max(0.0, float(mem.get(k, 0.0)))
        segs.append(
            f'<div class="wl-seg wl-seg-{k}" title="{k}: {v / GIB:.1f} GiB" '
            f'style="display:inline-block;height:22px;width:{v * px:.1f}px;background:{COLORS[k]}"></div>'
        )
    line = gpu_bytes * px
    total = sum(float(mem.get(k, 0.0)) for k in COLORS)
    over = total > gpu_bytes
    return (
        f'<div style="margin:2px 0"><span style="display:inline-block;width:110px">{html.escape(label)}</span>'
        f'<div style="position:relative;display:inline-block;width:{width_px}px;height:22px;'
        f'background:#f4f4f4;white-space:nowrap;overflow:hidden;vertical-align:middle">{"".join(segs)}'
        f'<div class="wl-gpu-line" style="position:absolute;top:0;left:{line:.1f}px;width:2px;height:22px;'
        f'background:#d00"></div></div>'
        f'<span class="wl-total" style="margin-left:6px;color:{"#d00" if over else "#080"}">'
        f"{total / GIB:.1f} / {gpu_bytes / GIB:.0f} GiB{' — does not fit' if over else ''}</span></div>"
    )


class Calculator:
    """The calculator's widgets and state; ``widget`` is what the notebook displays."""

    def __init__(
        self,
        *,
        model: str = "techpulse-7b",
        instance_type: str = "p4d.24xlarge",
        nodes: int = 2,
        tp: int = 2,
        pp: int = 1,
        cp: int = 1,
        ep: int = 1,
        vp_layers: int = 0,
        micro_batch_size: int = 1,
        global_batch_size: int = 512,
        recompute: str = "none",
        distributed_optimizer: bool = True,
        sequence_parallel: bool = True,
        fp8: bool = False,
        vocab_size: int | None = None,
        run_dir: str | os.PathLike[str] | None = None,
        backend: str | None = None,
    ):
        self.run_dir = Path(run_dir) if run_dir else None
        self.backend = backend
        self.vocab_override = vocab_size
        self.plan: dict[str, Any] = {}
        self.render_seconds: list[float] = []
        self._suspend = False
        lay = w.Layout(width="230px")
        st = {"description_width": "100px"}

        def it(desc: str, value: int, minimum: int = 0) -> w.BoundedIntText:
            return w.BoundedIntText(
                value=value, min=minimum, max=10**7, description=desc, layout=lay, style=st
            )

        self.model = w.Dropdown(
            options=[*PRESETS, CUSTOM], value=model, description="Model", layout=lay, style=st
        )
        self.fields: dict[str, w.Widget] = {}
        for desc, flag in MODEL_FIELDS:
            self.fields[flag] = it(desc, 1)
        for desc, flag in STYLE_FIELDS:
            self.fields[flag] = w.Checkbox(
                value=False, description=desc, indent=False, layout=w.Layout(width="110px")
            )
        self.instance = w.Dropdown(
            options=list(INSTANCES),
            value=instance_type,
            description="Instance",
            layout=w.Layout(width="330px"),
            style=st,
        )
        self.nodes = it("Nodes", nodes, 1)
        self.tp = it("TP", tp, 1)
        self.pp = it("PP", pp, 1)
        self.cp = it("CP", cp, 1)
        self.ep = it("EP", ep, 1)
        self.vp = it("VP layers", vp_layers, 0)
        self.mbs = it("Micro batch", micro_batch_size, 1)
        self.gbs = it("Global batch", global_batch_size, 1)
        self.recompute = w.Dropdown(
            options=list(RECOMPUTE_CHOICES),
            value=recompute,
            description="Recompute",
            layout=lay,
            style=st,
        )
        self.distopt = w.Checkbox(
            value=distributed_optimizer, description="Distributed optimizer", indent=False
        )
        self.sp = w.Checkbox(value=sequence_parallel, description="Sequence parallel", indent=False)
        self.fp8 = w.Checkbox(value=fp8, description="FP8", indent=False)
        self.memory_out = w.HTML().add_class("wl-memory")
        self.batch_out = w.HTML().add_class("wl-batch")
        self.errors_out = w.HTML().add_class("wl-errors")
        self.time_out = w.HTML().add_class("wl-time")
        self.status_out = w.HTML().add_class("wl-status")
        self.button = w.Button(description="Write job YAML", button_style="primary", icon="save")
        self.button.add_class("wl-write")
        self.button.on_click(lambda _b: self.write_job())
        self._load_preset(model)
        self.inputs: dict[str, w.Widget] = {
            "Model": self.model, "Instance": self.instance, "Nodes": self.nodes, "TP": self.tp, "PP": self.pp,
            "CP": self.cp, "EP": self.ep, "VP layers": self.vp, "Micro batch": self.mbs, "Global batch": self.gbs,
            "Recompute": self.recompute, "Distributed optimizer": self.distopt, "Sequence parallel": self.sp,
            "FP8": self.fp8,
            **{desc: self.fields[flag] for desc, flag in (*MODEL_FIELDS, *STYLE_FIELDS)},
        }  # fmt: skip
        self.model.observe(self._on_model, names="value")
        for name, wid in self.inputs.items():
            if name != "Model":
                wid.observe(self._on_change, names="value")
        model_box = w.VBox([
            self.model,
            w.HBox([w.VBox([self.fields[f] for _, f in MODEL_FIELDS[:5]]),
                    w.VBox([self.fields[f] for _, f in MODEL_FIELDS[5:]])]),
            w.HBox([self.fields[f] for _, f in STYLE_FIELDS]),
        ])  # fmt: skip
        par_box = w.VBox([
            w.HBox([self.instance, self.nodes]),
            w.HBox([w.VBox([self.tp, self.pp, self.cp, self.ep]), w.VBox([self.vp, self.mbs, self.gbs, self.recompute])]),
            w.HBox([self.sp, self.distopt, self.fp8]),
        ])  # fmt: skip
        self.widget = w.VBox(
            [
                w.HBox([model_box, par_box]),
                self.memory_out,
                self.batch_out,
                self.time_out,
                self.errors_out,
                w.HBox([self.button, self.status_out]),
            ]
        )
        self.widget.add_class("wl-calculator")
        self.redraw()

    # ---- state ---------------------------------------------------------------------------------
    def _load_preset(self, name: str) -> None:
        if name == CUSTOM:
            return
        vals = _model_flags_of(name)
        if self.vocab_override:
            vals["vocab-size"] = int(self.vocab_override)
        self._suspend = True
        try:
            for flag, wid in self.fields.items():
                wid.value = vals[flag]
        finally:
            self._suspend = False

    def _on_model(self, change: dict) -> None:
        self._load_preset(change["new"])
        self.redraw()

    def _on_change(self, change: dict) -> None:
        if self._suspend:
            return
        owner = change.get("owner")
        if owner in self.fields.values() and self.model.value != CUSTOM:
            # Editing a field makes the model custom (the fields keep their values).
            self._suspend = True
            self.model.value = CUSTOM
            self._suspend = False
        self.redraw()

    def set(self, **values: Any) -> dict[str, Any]:
        """Set inputs by description (``calc.set(TP=4, **{"Micro batch": 2})``); returns the new plan."""
        for key, value in values.items():
            name = key.replace("_", " ") if key not in self.inputs else key
            if name not in self.inputs:
                raise KeyError(f"no input {key!r}; inputs: {', '.join(self.inputs)}")
            self.inputs[name].value = value
        return self.plan

    def model_args(self) -> dict[str, Any]:
        f = {flag: wid.value for flag, wid in self.fields.items()}
        args: dict[str, Any] = {
            "num-layers": f["num-layers"], "hidden-size": f["hidden-size"],
            "num-attention-heads": f["num-attention-heads"], "ffn-hidden-size": f["ffn-hidden-size"],
            "seq-length": f["seq-length"], "max-position-embeddings": f["seq-length"], "vocab-size": f["vocab-size"],
        }  # fmt: skip
        if f["num-query-groups"] and f["num-query-groups"] != f["num-attention-heads"]:
            args["group-query-attention"] = True
            args["num-query-groups"] = f["num-query-groups"]
        if f["num-experts"]:
            args["num-experts"] = f["num-experts"]
            args["moe-router-topk"] = f["moe-router-topk"]
            args["moe-ffn-hidden-size"] = f["ffn-hidden-size"]
        if f["swiglu"]:
            args["swiglu"] = True
        if f["normalization"]:
            args["normalization"] = "RMSNorm"
        if f["position-embedding-type"]:
            args["position-embedding-type"] = "rope"
        if f["disable-bias-linear"]:
            args["disable-bias-linear"] = True
        if f["untie-embeddings-and-output-weights"]:
            args["untie-embeddings-and-output-weights"] = True
        return args

    def parallel_args(self) -> dict[str, Any]:
        return layout_flags(
            tp=self.tp.value, pp=self.pp.value, cp=self.cp.value, ep=self.ep.value,
            micro_batch_size=self.mbs.value, global_batch_size=self.gbs.value, vp_layers=self.vp.value or None,
            sequence_parallel=self.sp.value, distributed_optimizer=self.distopt.value,
            recompute=self.recompute.value, fp8=self.fp8.value,
        )  # fmt: skip

    def args(self) -> dict[str, Any]:
        """The Megatron flags (job-YAML form) the calculator currently shows."""
        return {**self.model_args(), **self.parallel_args()}

    def cluster(self) -> ClusterConfig:
        inst = INSTANCES[self.instance.value]
        return ClusterConfig(
            gpu=inst.gpu, gpus_per_node=inst.gpus_per_node, nodes=self.nodes.value, instance_type=inst.name
        )

    def state(self) -> dict[str, Any]:
        return {name: wid.value for name, wid in self.inputs.items()}

    def memory_total_bytes(self) -> int | None:
        return self.plan.get("memory_per_gpu_bytes", {}).get("total")

    def errors(self) -> list[str]:
        return list(self.plan.get("errors", []))

    def warnings(self) -> list[str]:
        return list(self.plan.get("warnings", []))

    def stage_memory(self) -> dict[int, dict[str, float]]:
        """Memory of one GPU of the first and the last pipeline stage (one entry without PP)."""
        from ..plan.config import parallel_from_args
        from ..plan.memory import memory_per_gpu
        from ..plan.model import count_params

        norm = normalize_args(self.args())
        m, _ = model_from_args(norm)
        par = parallel_from_args(norm)
        m = m.with_(vocab_pad_tp=par.tp)
        cl = self.cluster()
        n_mb = self.plan.get("num_microbatches")
        counts = count_params(m, par)
        out = {}
        for stage in sorted({0, max(par.pp, 1) - 1}):
            mb = memory_per_gpu(m, par, counts, cl.world_size, n_mb, stage)
            out[stage] = {"weights": mb.weights, "gradients": mb.gradients, "optimizer": mb.optimizer,
                          "activations": mb.activations, "allowance": mb.allowance}  # fmt: skip
        return out

    # ---- drawing -------------------------------------------------------------------------------
    def compute(self) -> dict[str, Any]:
        norm = normalize_args(self.args())
        m, _ = model_from_args(norm)
        from ..plan.config import parallel_from_args

        par: ParallelConfig = parallel_from_args(norm)
        m = m.with_(name=self.model.value)
        return plan(m, par, self.cluster())

    def redraw(self) -> None:
        t0 = time.perf_counter()
        try:
            p = self.compute()
        except Exception as exc:  # noqa: BLE001 - a half-typed value must not break the widget
            self.plan = {"errors": [f"{type(exc).__name__}: {exc}"], "warnings": []}
            self.errors_out.value = f'<div style="color:#b00">{html.escape(str(exc))}</div>'
            return
        self.plan = p
        d = p.get("details", {})
        gpu_bytes = GPUS[self.cluster().gpu].memory_bytes
        mem = p["memory_per_gpu_bytes"]
        if mem["total"] is None:
            self.memory_out.value = "<i>no memory figure: fix the errors below</i>"
        else:
            bars = {"weights": mem["weights"], "gradients": mem["gradients"], "optimizer": mem["optimizer"],
                    "activations": mem["activations"], "allowance": d.get("memory_allowance_bytes", 0)}  # fmt: skip
            scale = max(mem["total"], gpu_bytes) * 1.08
            legend = " ".join(
                f'<span style="display:inline-block;width:10px;height:10px;background:{c}"></span> {k}'
                for k, c in COLORS.items()
            )
            stage = d.get("memory_stage", 0)
            label = "first stage" if stage == 0 else f"stage {stage}"
            rows = [memory_bar_html(bars, gpu_bytes, f"GPU ({label})", scale)]
            for other, mem_o in self.stage_memory().items():
                if other != stage:
                    name = "first stage" if other == 0 else "last stage"
                    rows.append(memory_bar_html(mem_o, gpu_bytes, f"GPU ({name})", scale))
            self.memory_out.value = (
                f"<b>Memory per GPU</b> (busiest GPU: {label}) &nbsp; {legend}"
                + "".join(rows)
                + '<div style="font-size:90%;color:#555">'
                + ", ".join(f"{k} {bars[k] / GIB:.1f} GiB" for k in bars)
                + f" · red line: {gpu_bytes / GIB:.0f} GiB of GPU memory</div>"
            )
        if p.get("data_parallel_size") is not None:
            par_ = p["parameters"]
            self.batch_out.value = (
                f"<b>Batch</b>: {d.get('world_size')} GPUs = TP {self.tp.value} × PP {self.pp.value} × "
                f"CP {self.cp.value} × DP {p['data_parallel_size']} · global batch {self.gbs.value} = "
                f"micro batch {self.mbs.value} × DP {p['data_parallel_size']} × "
                f"{p['num_microbatches'] if p['num_microbatches'] is not None else '?'} micro-batches "
                f"(gradient accumulation) · parameters {par_['total'] / 1e9:.2f} B "
                f"({par_['per_gpu_max'] / 1e9:.2f} B on the busiest GPU)"
            )
            est = p["estimate"]
            tr = d.get("training", {})
            cost = f", ${tr['cost_usd']:,.0f}" if tr.get("cost_usd") is not None else ""
            self.time_out.value = (
                f"<b>Time</b>: {est['seconds_per_iteration']:.2f} s/iteration · "
                f"{est['tokens_per_second']:,.0f} tokens/s · MFU {est['mfu']:.0%} · bubble "
                f"{p['pipeline_bubble_fraction']:.1%} · 1T tokens in {tr.get('days', float('nan')):.0f} days{cost}"
            )
        else:
            self.batch_out.value = ""
            self.time_out.value = ""
        items = [f'<li style="color:#b00">{html.escape(e)}</li>' for e in p["errors"]]
        items += [f'<li style="color:#a60">{html.escape(x)}</li>' for x in p["warnings"]]
        verdict = "valid" if p.get("valid") else "invalid"
        fits = "fits" if p.get("fits") else "does not fit"
        self.errors_out.value = (
            f"<b>{verdict}, {fits}</b><ul>{''.join(items)}</ul>"
            if items
            else (f"<b>{verdict}, {fits}</b>: no errors or warnings")
        )
        self.render_seconds.append(time.perf_counter() - t0)

    # ---- output --------------------------------------------------------------------------------
    def job(self, **kw: Any) -> dict[str, Any]:
        inst = INSTANCES[self.instance.value]
        platform = "aks-ib" if inst.cloud == "azure" else "eks-efa"
        opts = {"instance_type": inst.name, "nodes": self.nodes.value, "platform": platform,
                "backend": self.backend, "run_dir": self.run_dir}  # fmt: skip
        opts.update(kw)
        return job_dict(self.args(), **opts)

    def write_job(self, path: str | os.PathLike[str] | None = None, **kw: Any) -> Path:
        if path:
            out = write_job_yaml(Path(path), self.job(**kw))
        else:  # the run directory every notebook uses (absolute, whatever the kernel's directory)
            run = RunDir.at(self.run_dir)
            out = write_job_yaml(run.job_yaml, self.job(**{"run_dir": run.root, **kw}))
        self.status_out.value = f"wrote <code>{html.escape(str(out))}</code>"
        return out


def calculator(**kw: Any) -> Calculator:
    """Build a :class:`Calculator` (display ``.widget``)."""
    return Calculator(**kw)
