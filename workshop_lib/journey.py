"""The workshop end to end: run the four notebooks in order, headless, and summarise the run.

This is what ``make workshop`` and ``workshop run-notebooks`` do for instructors and CI. The
notebooks hand each other files under one run directory (see :mod:`workshop_lib.paths`), so they
are executed with papermill in order, each with the same ``run_dir`` parameter; notebook 03 also
gets the ``backend`` parameter (``local`` runs the trainer here with torchrun on the CPU).

Executed notebooks and an HTML export of each land in ``<output>/executed/``; the summary (dataset
tokens, chosen parallel config and memory, final loss, diagnosis verdict) is read back from the
files the notebooks wrote, not from their outputs, so it says what really happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError, WorkshopError
from .paths import REPO_ROOT, RunDir

NOTEBOOK_DIR = REPO_ROOT / "notebooks"

# In order; each entry is (file name, what it hands on). Their minutes: tests/test_notebooks.py.
NOTEBOOKS: tuple[tuple[str, str], ...] = (
    ("01_data_prep.ipynb", "indexed dataset + dataset.json"),
    ("02_parallelism.ipynb", "plan/job.yaml"),
    ("03_launch.ipynb", "train/train.log + checkpoints"),
    ("04_monitor.ipynb", "plots and diagnosis"),
)
BACKENDS = ("local", "kubernetes")


@dataclass
class NotebookRun:
    name: str
    seconds: float
    executed: Path
    html: Path | None


@dataclass
class JourneyResult:
    run_dir: Path
    notebooks: list[NotebookRun] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def parameters_for(notebook: str, run_dir: Path, backend: str) -> dict[str, Any]:
    """The papermill parameters each notebook receives."""
    params: dict[str, Any] = {"run_dir": str(run_dir)}
    if notebook.startswith("03_"):
        params["backend"] = backend
    return params


def _export_html(executed: Path) -> Path:
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
    html = executed.with_suffix(".html")
    html.write_text(body, encoding="utf-8")
    return html


def run_notebooks(
    output_dir: Path,
    *,
    run_dir: Path | None = None,
    backend: str = "local",
    only: Sequence[str] | None = None,
    html: bool = True,
    kernel_name: str | None = None,
    log: Callable[[str], None] = print,
) -> JourneyResult:
    """Execute the notebooks in order with papermill; raise WorkshopError naming the failing one."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    import papermill as pm

    from .journey_engine import execute_notebook

    output_dir = Path(output_dir).resolve()
    run_dir = Path(run_dir).resolve() if run_dir else output_dir
    executed_dir = output_dir / "executed"
    executed_dir.mkdir(parents=True, exist_ok=True)
    names = [n for n, _ in NOTEBOOKS]
    if only:
        unknown = [o for o in only if not any(n.startswith(o) for n in names)]
        if unknown:
            raise UsageError(f"--only: unknown notebook(s) {', '.join(unknown)}; use 01, 02, 03 or 04")
        names = [n for n in names if any(n.startswith(o) for o in only)]
    result = JourneyResult(run_dir=run_dir)
    for name in names:
        source = NOTEBOOK_DIR / name
        if not source.exists():
            raise WorkshopError(f"{source} is missing from this checkout")
        executed = executed_dir / name
        log(f"[run-notebooks] {name} ...")
        start = time.perf_counter()
        try:
            execute_notebook(
                source,
                executed,
                parameters=parameters_for(name, run_dir, backend),
                cwd=NOTEBOOK_DIR,
                kernel_name=kernel_name,
            )
        except pm.PapermillExecutionError as exc:
            raise WorkshopError(
                f"{name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue} "
                f"(executed copy: {executed})"
            ) from None
        seconds = time.perf_counter() - start
        page = _export_html(executed) if html else None
        log(f"[run-notebooks] {name} done in {seconds:.1f} s")
        result.notebooks.append(NotebookRun(name, seconds, executed, page))
    result.summary = summarise(RunDir(run_dir))
    return result


def summarise(run: RunDir) -> dict[str, Any]:
    """Read the run directory's files back into the one-screen summary (None where absent)."""
    summary: dict[str, Any] = {"run_dir": str(run.root)}

    if run.dataset_info.exists():
        from .handover import read_dataset_info

        info = read_dataset_info(run)
        summary["dataset"] = {k: info.get(k) for k in ("data_path", "documents", "tokens", "vocab_size")}
    else:
        summary["dataset"] = None

    summary["plan"] = None
    if run.job_yaml.exists():
        from .handover import read_job_yaml

        # A job YAML edited into something other than a mapping is summarised as empty, not a crash:
        # the notebooks that ran have already said what is wrong with it.
        job = read_job_yaml(run)
        job = job if isinstance(job, dict) else {}
        args = job.get("args") if isinstance(job.get("args"), dict) else {}
        plan: dict[str, Any] = {
            "instance_type": job.get("instance_type"),
            "nodes": job.get("nodes"),
            "tensor_model_parallel_size": args.get("tensor-model-parallel-size", 1),
            "pipeline_model_parallel_size": args.get("pipeline-model-parallel-size", 1),
            "micro_batch_size": args.get("micro-batch-size"),
            "global_batch_size": args.get("global-batch-size"),
        }
        try:
            from .facts.hardware import instance
            from .plan.api import plan_from_megatron_args

            node = instance(str(job.get("instance_type")))
            calc = plan_from_megatron_args(
                args, gpu=node.gpu, gpus_per_node=node.gpus_per_node, nodes=int(job.get("nodes", 1))
            )
            plan.update(
                data_parallel_size=calc.get("data_parallel_size"),
                memory_per_gpu_bytes=(calc.get("memory_per_gpu_bytes") or {}).get("total"),
                fits=calc.get("fits"),
                valid=calc.get("valid"),
            )
        except UsageError as exc:
            plan["note"] = f"calculator unavailable: {exc}"
        summary["plan"] = plan

    summary["training"] = None
    summary["diagnosis"] = None
    if run.train_log.exists():
        from .monitor.diagnose import diagnose_log
        from .monitor.parse import parse_log

        parsed = parse_log(run.train_log)
        iters = parsed.iterations
        last = iters[-1] if iters else {}
        summary["training"] = {
            "iterations": len(iters),
            "first_loss": iters[0].get("lm_loss") if iters else None,
            "final_loss": last.get("lm_loss"),
            "validation": parsed.validation[-1] if parsed.validation else None,
        }
        findings = diagnose_log(run.train_log)
        labels = sorted({getattr(f, "label", None) or f["label"] for f in findings})
        summary["diagnosis"] = {
            "findings": len(findings),
            "labels": labels,
            "verdict": "healthy" if not findings else "needs attention",
        }

    summary["evaluation"] = None
    if run.evaluation.exists():  # notebook 04's before/after of continued pre-training
        import json

        ev = json.loads(run.evaluation.read_text(encoding="utf-8"))
        loss = {(r["model"], r["set"]): r["loss"] for r in ev.get("rows", [])}
        summary["evaluation"] = {
            "base_domain_loss": loss.get(("base", "domain")),
            "final_domain_loss": loss.get(("trained", "domain")),
            "base_general_loss": loss.get(("base", "general")),
            "final_general_loss": loss.get(("trained", "general")),
        }
    return summary


def format_summary(result: JourneyResult) -> str:
    """The one-screen summary printed at the end of ``workshop run-notebooks``."""
    s = result.summary
    lines = ["", "Workshop run summary", "=" * 20, f"run directory   {s['run_dir']}"]
    for nb in result.notebooks:
        lines.append(f"  {nb.name:<24} {nb.seconds:6.1f} s   {nb.executed}")
    ds = s.get("dataset")
    lines.append(
        f"dataset         {ds['documents']:,} documents, {ds['tokens']:,} tokens (vocab {ds['vocab_size']:,})"
        if ds
        else "dataset         - (notebook 01 not run)"
    )
    plan = s.get("plan")
    if plan:
        mem = plan.get("memory_per_gpu_bytes")
        mem_txt = f", {mem / 2**30:.1f} GiB/GPU" if isinstance(mem, int | float) else ""
        fits = {True: " (fits)", False: " (does NOT fit)"}.get(plan.get("fits"), "")
        lines.append(
            f"parallel plan   {plan['nodes']} x {plan['instance_type']}: TP={plan['tensor_model_parallel_size']} "
            f"PP={plan['pipeline_model_parallel_size']} DP={plan.get('data_parallel_size', '?')} "
            f"micro={plan['micro_batch_size']} global={plan['global_batch_size']}{mem_txt}{fits}"
        )
    else:
        lines.append("parallel plan   - (notebook 02 not run)")
    tr = s.get("training")
    if tr and tr["iterations"]:
        lines.append(
            f"training        {tr['iterations']} logged iterations, loss {tr['first_loss']:.3f} -> {tr['final_loss']:.3f}"
        )
    else:
        lines.append("training        - (no iteration lines; notebook 03 not run?)")
    ev = s.get("evaluation")
    if ev and None not in ev.values():
        lines.append(
            f"held-out loss   domain {ev['base_domain_loss']:.3f} -> {ev['final_domain_loss']:.3f}, "
            f"general {ev['base_general_loss']:.3f} -> {ev['final_general_loss']:.3f} (base -> trained)"
        )
    else:
        lines.append("held-out loss   - (notebook 04's evaluation not run)")
    dg = s.get("diagnosis")
    if dg:
        extra = f" ({', '.join(dg['labels'])})" if dg["labels"] else ""
        lines.append(f"diagnosis       {dg['verdict']}{extra}")
    return "\n".join(lines)
