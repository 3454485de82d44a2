"""The plan room's public API: one plan from Megatron flags, and the checks alone.

``plan_from_megatron_args(args, gpu=..., gpus_per_node=..., nodes=...)`` returns exactly the
``workshop plan --json`` object of docs/cli.md (plus a few documented extra keys under
``details``); ``check_megatron_args`` returns the same issues as :class:`PlanIssue` objects.
``args`` is the job-YAML form of Megatron's flags: names without leading dashes, ``True`` for a
bare flag, values as str or int. Flags the planner does not model (data, checkpoints, logging,
learning rate...) are ignored.

Notebook 02 imports this module (and the widgets) alone: the run directory, notebook 01's
dataset.json (:func:`read_dataset`), the job file (:func:`write_job`), and the report and hardware
tables it shows, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from ..facts.hardware import GPUS
from ..facts.hardware import instance as instance  # notebook 02's names, re-exported
from ..facts.megatron_flags import format_flags
from ..paths import RunDir
from .config import (
    ClusterConfig,
    ModelConfig,
    ParallelConfig,
    model_from_args,
    normalize_args,
    parallel_from_args,
)
from .flops import megatron_flops
from .layout import dimension_links as dimension_links
from .memory import busiest_gpu_memory
from .model import count_params
from .report import plan_text as plan_text
from .report import search_rows as search_rows
from .timing import estimate, instance_for, training_time
from .validity import PlanIssue, check, derived_sizes

__all__ = [
    "PlanIssue",
    "plan",
    "plan_from_megatron_args",
    "check_megatron_args",
    "plan_flags",
    "plan_json",
    "resolve_args",
    "DEFAULT_TRAIN_TOKENS",
]

# "Days to train" is reported for this many tokens unless the caller says otherwise.
DEFAULT_TRAIN_TOKENS = 1e12


def resolve_args(
    args: Mapping[str, Any], *, model: str | None = None
) -> tuple[ModelConfig, ParallelConfig, list[str]]:
    """Model and parallel configs from flags (a preset fills the model where given)."""
    norm = normalize_args(args)
    base = None
    preset_name = model or norm.pop("model", None)
    if preset_name:
        from ..facts.models import preset

        flags = preset(str(preset_name))
        base, _ = model_from_args(normalize_args(flags))
        base = base.with_(name=str(preset_name))
    m, missing = model_from_args(norm, base)
    par = parallel_from_args(norm)
    m = m.with_(vocab_pad_tp=par.tp)
    return m, par, missing


def plan_flags(m: ModelConfig, par: ParallelConfig) -> dict[str, Any]:
    """The plan's layout as Megatron flags (job-YAML form: ``{"tensor-model-parallel-size": 2, "bf16": True}``).

    What a Megatron-LM launch needs for this model and layout, in the order a person would write
    them: flags at Megatron's default are left out, except the sizes people look for. The plan keeps
    this dict (``plan["flags"]``); :func:`plan_json` spells it as ``--flag=value`` strings.
    """
    out: dict[str, Any] = {
        "num-layers": m.num_layers,
        "hidden-size": m.hidden_size,
        "num-attention-heads": m.heads,
    }
    if m.num_query_groups and m.num_query_groups != m.heads:
        out.update({"group-query-attention": True, "num-query-groups": m.num_query_groups})
    if m.kv_channels:
        out["kv-channels"] = m.kv_channels
    out["ffn-hidden-size"] = m.ffn
    out.update({"seq-length": m.seq_length, "max-position-embeddings": m.max_positions})
    if m.make_vocab_size_divisible_by != 128:
        out["make-vocab-size-divisible-by"] = m.make_vocab_size_divisible_by
    if m.position_embedding_type != "learned_absolute":
        out["position-embedding-type"] = m.position_embedding_type
    if m.normalization != "LayerNorm":
        out["normalization"] = m.normalization
    if m.swiglu:
        out["swiglu"] = True
    if not m.add_bias_linear:
        out["disable-bias-linear"] = True
    if m.untie_embeddings_and_output_weights:
        out["untie-embeddings-and-output-weights"] = True
    if m.qk_layernorm:
        out["qk-layernorm"] = True
    if m.attention_backend != "auto":
        out["attention-backend"] = m.attention_backend
    if m.transformer_impl != "transformer_engine":
        out["transformer-impl"] = m.transformer_impl
    if m.is_moe:
        out.update(
            {
                "num-experts": m.num_experts,
                "moe-router-topk": m.moe_router_topk,
                "moe-ffn-hidden-size": m.moe_ffn,
            }
        )
        if m.moe_shared_expert_intermediate_size:
            out["moe-shared-expert-intermediate-size"] = m.moe_shared_expert_intermediate_size
        if m.moe_router_pre_softmax:
            out["moe-router-pre-softmax"] = True
        if m.moe_layer_freq != 1:
            out["moe-layer-freq"] = m.moe_layer_freq
    out.update({"tensor-model-parallel-size": par.tp, "pipeline-model-parallel-size": par.pp})
    if par.cp > 1:
        out["context-parallel-size"] = par.cp
    if par.ep > 1:
        out["expert-model-parallel-size"] = par.ep
    if par.expert_tensor_parallel_size and par.expert_tensor_parallel_size != par.tp:
        out["expert-tensor-parallel-size"] = par.expert_tensor_parallel_size
    if par.num_layers_per_virtual_pipeline_stage and par.pp > 1:
        out["num-layers-per-virtual-pipeline-stage"] = par.num_layers_per_virtual_pipeline_stage
    if par.sequence_parallel and par.tp > 1:  # at TP=1 Megatron turns it off (a warning in the plan)
        out["sequence-parallel"] = True
    if par.use_distributed_optimizer:
        out["use-distributed-optimizer"] = True
    if par.recompute_granularity:
        out["recompute-granularity"] = par.recompute_granularity
    if par.recompute_method:
        out["recompute-method"] = par.recompute_method
    if par.recompute_num_layers:
        out["recompute-num-layers"] = par.recompute_num_layers
    out["micro-batch-size"] = par.micro_batch_size
    if par.global_batch_size:
        out["global-batch-size"] = par.global_batch_size
    if par.bf16:
        out["bf16"] = True
    if par.fp16:
        out["fp16"] = True
    if par.fp8_format:
        out["fp8-format"] = par.fp8_format
    return out


def plan_json(p: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's ``workshop plan --json`` object of a plan: its ``flags`` as ``megatron_args`` strings.

    Same keys in the same order as :func:`plan` builds them; only the layout changes form, here and
    nowhere else (``facts.megatron_flags.format_flags``).
    """
    return {
        ("megatron_args" if k == "flags" else k): (format_flags(v) if k == "flags" else v)
        for k, v in p.items()
    }


def _null_plan(issues: list[PlanIssue], flags: dict[str, Any]) -> dict[str, Any]:
    return {
        "valid": False,
        "errors": [i.render() for i in issues if i.severity == "error"],
        "warnings": [i.render() for i in issues if i.severity == "warning"],
        "parameters": {"total": None, "active": None, "embedding": None, "per_gpu_max": None},
        "data_parallel_size": None,
        "num_microbatches": None,
        "memory_per_gpu_bytes": {
            "weights": None,
            "gradients": None,
            "optimizer": None,
            "activations": None,
            "total": None,
        },
        "fits": False,
        "pipeline_bubble_fraction": None,
        "flops_per_iteration": None,
        "estimate": {"seconds_per_iteration": None, "tokens_per_second": None, "mfu": None},
        "flags": flags,
    }


def plan(
    m: ModelConfig,
    par: ParallelConfig,
    cl: ClusterConfig,
    *,
    train_tokens: float = DEFAULT_TRAIN_TOKENS,
    price_per_hour: float | None = None,
    details: bool = True,
    issues: list[PlanIssue] | None = None,
) -> dict[str, Any]:
    """docs/cli.md's plan object for one configuration."""
    m = m.with_(vocab_pad_tp=par.tp)
    if cl.gpu not in GPUS:
        raise UsageError(f"--gpu: unknown {cl.gpu!r}; choose one of {', '.join(GPUS)}")
    issues = list(issues or []) + check(m, par, cl)
    flags = plan_flags(m, par)
    errors = [i for i in issues if i.severity == "error"]
    # Sizes that make the arithmetic meaningless: report them without numbers.
    structural = {
        "positive-sizes",
        "hidden-divisible-by-heads",
        "heads-divisible-by-groups",
        "model-args-missing",
    }
    if any(i.rule in structural for i in errors):
        return _null_plan(issues, flags)
    world = cl.world_size
    dp, n_mb = derived_sizes(m, par, cl)
    gbs = par.global_batch_size or par.micro_batch_size * dp
    n_mb_calc = n_mb if n_mb is not None else max(1, gbs // max(1, par.micro_batch_size * dp))
    params = count_params(m, par)
    mem = busiest_gpu_memory(m, par, params, world, n_mb_calc)
    gpu = GPUS[cl.gpu]
    fits = mem.total <= gpu.memory_bytes
    if not fits:
        over = (mem.total - gpu.memory_bytes) / 2**30
        hints = []
        if not par.use_distributed_optimizer and dp * par.cp > 1:
            hints.append("--use-distributed-optimizer")
        if not par.recompute_granularity:
            hints.append("--recompute-granularity selective (or full)")
        if par.tp < min(8, cl.gpus_per_node):
            hints.append("a larger TP within the node")
        hints.append("a larger PP")
        if par.micro_batch_size > 1:
            hints.append("--micro-batch-size 1")
        issues.append(
            PlanIssue(
                "warning",
                "does-not-fit",
                f"needs {mem.total / 2**30:.1f} GiB per GPU, {over:.1f} GiB more than the "
                f"{gpu.memory_bytes / 2**30:.0f} GiB of a {gpu.name}.",
                "try " + ", ".join(hints) + ".",
            )
        )
    v = par.vpp(m.num_layers)
    bubble = (par.pp - 1) / (n_mb_calc * v) if par.pp > 1 else 0.0
    flops = megatron_flops(m, gbs)
    stage = mem.stage
    est = estimate(
        m,
        par,
        cl,
        dp=dp,
        num_microbatches=n_mb_calc,
        params_per_gpu_dense=params.per_gpu_stage_dense[stage],
        params_per_gpu_expert=params.per_gpu_stage_expert[stage],
    )
    inst = instance_for(cl)
    out: dict[str, Any] = {
        "valid": not any(i.severity == "error" for i in issues),
        "errors": [i.render() for i in issues if i.severity == "error"],
        "warnings": [i.render() for i in issues if i.severity == "warning"],
        "parameters": {
            "total": params.total,
            "active": params.active,
            "embedding": params.embedding,
            "per_gpu_max": params.per_gpu_max,
        },
        "data_parallel_size": dp,
        "num_microbatches": n_mb,
        "memory_per_gpu_bytes": mem.as_json(),
        "fits": bool(fits),
        "pipeline_bubble_fraction": bubble,
        "flops_per_iteration": flops,
        "estimate": est.as_json(),
        "flags": flags,
    }
    if details:
        out["details"] = {
            "model": m.name,
            "notes": list(m.notes),
            "world_size": world,
            "gpu": cl.gpu,
            "gpu_memory_bytes": gpu.memory_bytes,
            "instance_type": inst.name if inst else None,
            "global_batch_size": gbs,
            "tokens_per_iteration": gbs * m.seq_length,
            "padded_vocab_size": m.padded_vocab(par.tp),
            "ffn_hidden_size": m.ffn,
            "virtual_pipeline_stages": v,
            "gradient_accumulation_steps": n_mb,
            "parameters_per_stage": params.per_stage,
            "parameters_per_gpu_per_stage": params.per_gpu_stage,
            "memory_stage": stage,
            "memory_allowance_bytes": int(round(mem.allowance)),
            "memory": mem.detail,
            "time": est.breakdown,
            "training": training_time(
                est.tokens_per_second,
                train_tokens,
                nodes=cl.nodes,
                instance_type=inst.name if inst else None,
                price=price_per_hour,
            ),
            "issues": [
                {"severity": i.severity, "rule": i.rule, "message": i.message, "fix": i.fix} for i in issues
            ],
        }
    return out


def _cluster(gpu: str, gpus_per_node: int, nodes: int, instance_type: str | None) -> ClusterConfig:
    if gpu not in GPUS:
        raise UsageError(f"--gpu: unknown {gpu!r}; choose one of {', '.join(GPUS)}")
    return ClusterConfig(
        gpu=gpu, gpus_per_node=int(gpus_per_node), nodes=int(nodes), instance_type=instance_type
    )


def _missing_issue(missing: list[str]) -> PlanIssue:
    return PlanIssue(
        "error",
        "model-args-missing",
        f"model flags missing: {', '.join(missing)}.",
        "give them (e.g. " + ", ".join(f"{f}: N" for f in missing) + ") or a preset with --model.",
    )


def check_megatron_args(
    args: Mapping[str, Any], *, gpu: str, gpus_per_node: int, nodes: int, instance_type: str | None = None
) -> list[PlanIssue]:
    """Every validity issue of a Megatron launch (errors first), including "does not fit"."""
    try:
        m, par, missing = resolve_args(args)
    except UsageError as exc:
        return [PlanIssue("error", "bad-flag", str(exc), "correct the flag's value.")]
    if missing:
        return [_missing_issue(missing)]
    cl = _cluster(gpu, gpus_per_node, nodes, instance_type)
    result = plan(m, par, cl, details=True)
    if "details" in result:
        return [PlanIssue(**i) for i in result["details"]["issues"]]
    return check(m, par, cl)


def plan_from_megatron_args(
    args: Mapping[str, Any],
    *,
    gpu: str,
    gpus_per_node: int,
    nodes: int,
    instance_type: str | None = None,
    details: bool = True,
    train_tokens: float = DEFAULT_TRAIN_TOKENS,
) -> dict[str, Any]:
    """The contract's ``workshop plan --json`` object for a Megatron launch's flags (``megatron_args`` strings)."""
    m, par, missing = resolve_args(args)
    cl = _cluster(gpu, gpus_per_node, nodes, instance_type)
    if missing:
        return plan_json(_null_plan([_missing_issue(missing)], {}))
    return plan_json(plan(m, par, cl, details=details, train_tokens=train_tokens))


# ---- notebook 02's entry point: it imports this module and the widgets, nothing else ------------


def resolve_run(run_dir: str | Any | None = None) -> RunDir:
    """The run directory (``paths.RunDir.at``): the path given, or the default one."""
    return RunDir.at(run_dir)


def read_dataset(run_dir: Any = None) -> dict[str, Any] | None:
    """Notebook 01's ``dataset.json`` (checked by its one reader), or None before notebook 01 has run."""
    from ..handover import read_dataset_info_if_any

    return read_dataset_info_if_any(RunDir.at(run_dir), required=("data_path", "vocab_size", "tokens"))


def write_job(
    run_dir: Any,
    flags: Mapping[str, Any],
    *,
    instance_type: str,
    nodes: int,
    backend: str | None = None,
    **job_options: Any,
) -> Any:
    """Write ``<run>/plan/job.yaml`` for a layout's ``flags`` (``{"model": preset, flag: value}``,
    as ``LayoutExplorer.flags()`` gives them) and return its path.

    :func:`~workshop_lib.plan.jobfile.job_dict` does the rest: the preset's model flags, the
    dataset and tokenizer of ``dataset.json`` (whose tokenizer brings its own vocabulary, so no
    ``vocab-size``), the run directory's checkpoints and the training schedule.
    """
    from ..handover import write_job_yaml
    from .jobfile import job_dict

    run = RunDir.at(run_dir)
    job = job_dict(
        flags, instance_type=instance_type, nodes=nodes, backend=backend, run_dir=run.root, **job_options
    )
    return write_job_yaml(run, job)


def expert_parameters_per_gpu(args: Mapping[str, Any]) -> int:
    """Routed-expert parameters one GPU of the first pipeline stage holds for Megatron flags ``args``."""
    m, par, missing = resolve_args(args)
    if missing:
        raise UsageError(f"model flags missing: {', '.join(missing)}")
    return count_params(m, par).per_gpu_stage_expert[0]
