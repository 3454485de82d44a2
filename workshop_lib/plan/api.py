"""The plan room's public API: one plan from Megatron flags, and the checks alone.

``plan_from_megatron_args(args, gpu=..., gpus_per_node=..., nodes=...)`` returns exactly the
``workshop plan --json`` object of docs/cli.md (plus a few documented extra keys under
``details``); ``check_megatron_args`` returns the same issues as :class:`PlanIssue` objects.
``args`` is the job-YAML form of Megatron's flags: names without leading dashes, ``True`` for a
bare flag, values as str or int. Flags the planner does not model (data, checkpoints, logging,
learning rate...) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import UsageError
from ..facts.hardware import GPUS
from .config import (
    ClusterConfig,
    ModelConfig,
    ParallelConfig,
    model_from_args,
    normalize_args,
    parallel_from_args,
)
from .flops import megatron_flops
from .memory import busiest_gpu_memory
from .model import count_params
from .timing import estimate, instance_for, training_time
from .validity import PlanIssue, check, derived_sizes

__all__ = [
    "PlanIssue",
    "plan",
    "plan_from_megatron_args",
    "check_megatron_args",
    "megatron_args",
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


def megatron_args(m: ModelConfig, par: ParallelConfig) -> list[str]:
    """The flags to paste into a Megatron-LM launch, ``--flag=value`` / ``--flag`` form."""
    out = [
        f"--num-layers={m.num_layers}",
        f"--hidden-size={m.hidden_size}",
        f"--num-attention-heads={m.heads}",
    ]
    if m.num_query_groups and m.num_query_groups != m.heads:
        out += ["--group-query-attention", f"--num-query-groups={m.num_query_groups}"]
    if m.kv_channels:
        out.append(f"--kv-channels={m.kv_channels}")
    out.append(f"--ffn-hidden-size={m.ffn}")
    out += [f"--seq-length={m.seq_length}", f"--max-position-embeddings={m.max_positions}"]
    if m.make_vocab_size_divisible_by != 128:
        out.append(f"--make-vocab-size-divisible-by={m.make_vocab_size_divisible_by}")
    if m.position_embedding_type != "learned_absolute":
        out.append(f"--position-embedding-type={m.position_embedding_type}")
    if m.normalization != "LayerNorm":
        out.append(f"--normalization={m.normalization}")
    if m.swiglu:
        out.append("--swiglu")
    if not m.add_bias_linear:
        out.append("--disable-bias-linear")
    if m.untie_embeddings_and_output_weights:
        out.append("--untie-embeddings-and-output-weights")
    if m.qk_layernorm:
        out.append("--qk-layernorm")
    if m.attention_backend != "auto":
        out.append(f"--attention-backend={m.attention_backend}")
    if m.is_moe:
        out += [
            f"--num-experts={m.num_experts}",
            f"--moe-router-topk={m.moe_router_topk}",
            f"--moe-ffn-hidden-size={m.moe_ffn}",
        ]
        if m.moe_shared_expert_intermediate_size:
            out.append(f"--moe-shared-expert-intermediate-size={m.moe_shared_expert_intermediate_size}")
        if m.moe_router_pre_softmax:
            out.append("--moe-router-pre-softmax")
        if m.moe_layer_freq != 1:
            out.append(f"--moe-layer-freq={m.moe_layer_freq}")
    out += [
        f"--tensor-model-parallel-size={par.tp}",
        f"--pipeline-model-parallel-size={par.pp}",
    ]
    if par.cp > 1:
        out.append(f"--context-parallel-size={par.cp}")
    if par.ep > 1:
        out.append(f"--expert-model-parallel-size={par.ep}")
    if par.expert_tensor_parallel_size and par.expert_tensor_parallel_size != par.tp:
        out.append(f"--expert-tensor-parallel-size={par.expert_tensor_parallel_size}")
    if par.num_layers_per_virtual_pipeline_stage and par.pp > 1:
        out.append(f"--num-layers-per-virtual-pipeline-stage={par.num_layers_per_virtual_pipeline_stage}")
    if par.sequence_parallel and par.tp > 1:  # at TP=1 Megatron turns it off (a warning in the plan)
        out.append("--sequence-parallel")
    if par.use_distributed_optimizer:
        out.append("--use-distributed-optimizer")
    if par.recompute_granularity:
        out.append(f"--recompute-granularity={par.recompute_granularity}")
    if par.recompute_method:
        out.append(f"--recompute-method={par.recompute_method}")
    if par.recompute_num_layers:
        out.append(f"--recompute-num-layers={par.recompute_num_layers}")
    out.append(f"--micro-batch-size={par.micro_batch_size}")
    if par.global_batch_size:
        out.append(f"--global-batch-size={par.global_batch_size}")
    if par.bf16:
        out.append("--bf16")
    if par.fp16:
        out.append("--fp16")
    if par.fp8_format:
        out.append(f"--fp8-format={par.fp8_format}")
    return out


def _null_plan(issues: list[PlanIssue], margs: list[str]) -> dict[str, Any]:
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
        "megatron_args": margs,
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
    margs = megatron_args(m, par)
    errors = [i for i in issues if i.severity == "error"]
    # Sizes that make the arithmetic meaningless: report them without numbers.
    structural = {
        "positive-sizes",
        "hidden-divisible-by-heads",
        "heads-divisible-by-groups",
        "model-args-missing",
    }
    if any(i.rule in structural for i in errors):
        return _null_plan(issues, margs)
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
        "megatron_args": margs,
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
    """The contract's ``workshop plan --json`` object for a Megatron launch's flags."""
    m, par, missing = resolve_args(args)
    cl = _cluster(gpu, gpus_per_node, nodes, instance_type)
    if missing:
        return _null_plan([_missing_issue(missing)], [])
    return plan(m, par, cl, details=details, train_tokens=train_tokens)
