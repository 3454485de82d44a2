"""``workshop check``: the job against the NCCL/EFA rules, its pod against the instance, its flags against the plan.

The rules and their reasons live in one table, ``workshop_lib.facts.nccl_rules.RULES``; this module only
evaluates them. The training flags are checked by the calculator (``workshop_lib.plan.api``), imported
lazily so ``check`` stays fast and works while the plan room is absent.
"""

from __future__ import annotations

import posixpath
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import WorkshopError
from ..facts import megatron_flags, nccl_rules
from ..facts.nccl_rules import RULES, RULES_BY_ID, Rule
from ..facts.platforms import SHM_MIN_GIB
from .jobspec import JobSpec, quantity_bytes


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    rule: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _finding(rule: Rule, problem: str) -> Finding:
    return Finding(rule.severity, rule.rule, f"{problem}: {rule.reason}", rule.fix)


def _items(value: str) -> list[str]:
    return [item.strip().lstrip("=").lower() for item in value.split(",")]


def _env_problem(rule: Rule, env: dict[str, str], shared_mount: str | None) -> str | None:
    """What is wrong with ``env`` under ``rule`` (None when it holds)."""
    var, value, current = rule.var, rule.value, env.get(rule.var)
    kind = rule.kind
    if kind in ("equal", "contains", "set", "same_as", "local_path") and current is None:
        return f"{var} is not set"
    if kind == "equal" and current.strip() != value:
        return f"{var}={current} (must be {value})"
    if kind == "contains" and value not in current:
        return f"{var}={current} (must contain {value})"
    if kind == "set" and not (current.strip().isdigit() and int(current) > 0):
        return f"{var}={current} is not a positive number of seconds"
    if kind == "same_as" and current.strip() != env.get(value, "").strip():
        return f"{var}={current} but {value}={env.get(value, '(unset)')}"
    if kind == "local_path":
        path = current.rstrip("/")
        if shared_mount and (path == shared_mount or path.startswith(shared_mount.rstrip("/") + "/")):
            return f"{var}={current} is on the shared mount {shared_mount}"
        if not path.startswith("/"):
            return f"{var}={current} is not an absolute local path"
    if kind == "unset" and current is not None:
        return f"{var} is set ({var}={current})"
    if kind == "not_equal" and current is not None and value.lower() in _items(current):
        return f"{var}={current}"
    return None


def _secret_findings(rule: Rule, env: dict[str, str]) -> list[Finding]:
    """One finding per literal credential; the message names the variable, never its value."""
    return [
        Finding(
            rule.severity,
            rule.rule,
            f"{var} holds a literal value and {why}: {rule.reason}",
            rule.fix.replace("NAME", var, 1),
        )
        for var, value in env.items()
        if (why := nccl_rules.secret_reason(var, value))
    ]


def literal_secrets(spec: JobSpec) -> list[str]:
    """The variables of ``spec`` that would put a literal credential into a manifest."""
    return [k for k, v in spec.literal_env().items() if nccl_rules.literal_secret(k, v)]


def check_env(env: dict[str, str], fabric: str, shared_mount: str | None = None) -> list[Finding]:
    """Apply every environment rule for ``fabric`` ("efa", "infiniband" or "any") to ``env``.

    ``env`` holds literal values only (a Secret reference's value is unknown until the pod starts).
    """
    out = []
    for rule in RULES:
        if rule.kind not in nccl_rules.ENV_KINDS or not nccl_rules.applies(rule, fabric):
            continue
        if rule.kind == "secret_literal":
            out += _secret_findings(rule, env)
            continue
        problem = _env_problem(rule, env, shared_mount)
        if problem:
            out.append(_finding(rule, problem))
    return out


def _pod_specs(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(role, r["template"]["spec"]) for role, r in job["spec"]["pytorchReplicaSpecs"].items()]


def check_pod(spec: JobSpec, job: dict[str, Any]) -> list[Finding]:
    """The rendered PyTorchJob's pods against the instance and the platform."""
    return check_pods(spec, _pod_specs(job), int(job["spec"].get("nprocPerNode", 0)))


def check_pods(spec: JobSpec, pods: list[tuple[str, dict[str, Any]]], nproc: int) -> list[Finding]:
    """Pods (role, pod spec) running ``nproc`` processes each, against the instance and the platform.

    The same rules for a PyTorchJob's replicas and for the pod Kubeflow Trainer makes of a
    TrainingRuntime and its TrainJob (``trainjob.node_pod``).
    """
    plat, inst = spec.platform_info, spec.instance
    rules = {
        r: RULES_BY_ID[r]
        for r in ("gpu-count", "efa-count", "ib-count", "host-network", "shm-size", "fabric-mismatch")
    }
    problems: dict[str, str] = {}  # rule -> first problem found

    def flag(rule: str, problem: str) -> None:
        if nccl_rules.applies(rules[rule], plat.fabric):
            problems.setdefault(rule, problem)

    if plat.fabric != "any" and inst.fabric != plat.fabric:
        flag(
            "fabric-mismatch", f"{inst.name} has {inst.fabric} but platform {plat.name} expects {plat.fabric}"
        )
    for role, pod in pods:
        container = pod["containers"][0]
        limits = container.get("resources", {}).get("limits", {})
        gpus = int(limits.get("nvidia.com/gpu", 0))
        if gpus != inst.gpus_per_node:
            flag(
                "gpu-count", f"{role} requests {gpus} nvidia.com/gpu but {inst.name} has {inst.gpus_per_node}"
            )
        elif nproc != gpus:
            flag("gpu-count", f"nprocPerNode is {nproc} but each pod has {gpus} GPUs")
        for rule, resource in (("efa-count", "vpc.amazonaws.com/efa"), ("ib-count", "rdma/ib")):
            have = int(limits.get(resource, 0))
            want = (
                inst.nics_per_node
                if (inst.fabric, rule) in (("efa", "efa-count"), ("infiniband", "ib-count"))
                else 0
            )
            if want and have != want:
                flag(rule, f"{role} requests {have} {resource} but {inst.name} has {want}")
        if not pod.get("hostNetwork") or pod.get("dnsPolicy") != "ClusterFirstWithHostNet":
            flag(
                "host-network",
                f"{role} has hostNetwork={bool(pod.get('hostNetwork'))}, dnsPolicy={pod.get('dnsPolicy', 'ClusterFirst')}",
            )
        mounts = {m["name"] for m in container.get("volumeMounts", []) if m.get("mountPath") == "/dev/shm"}
        shm = [v for v in pod.get("volumes", []) if v["name"] in mounts]
        if not shm:
            flag("shm-size", f"{role} mounts nothing on /dev/shm (64MB default)")
        else:
            empty = shm[0].get("emptyDir") or {}
            size = empty.get("sizeLimit")
            if empty.get("medium") != "Memory":
                flag("shm-size", f"{role}'s /dev/shm is not memory-backed")
            elif size is not None and quantity_bytes(size) < SHM_MIN_GIB * 1024**3:
                flag("shm-size", f"{role}'s /dev/shm is {size}")
    return [_finding(rules[r], p) for r, p in problems.items()]


def _path_tokens(flag: str, value: Any) -> list[str]:
    """The paths a flag's value names: every prefix of a blend (``0.3 /a 0.7 /b``), weights skipped."""
    if value is None or isinstance(value, bool):
        return []
    tokens = [str(v) for v in value] if isinstance(value, list) else str(value).split()
    return [tok for tok in tokens if not megatron_flags.is_number(tok)]


def _on_volume(path: str, mount: str) -> bool:
    path = posixpath.normpath(path)
    return path.startswith("/") and (path == mount or path.startswith(mount.rstrip("/") + "/"))


def check_paths(spec: JobSpec) -> list[Finding]:
    """The path flags against the shared volume: what the pods must read or keep has to be on it.

    Skipped for the local backend, where every path is on the machine's own disk. A
    ``tokenizer-model`` that is not an absolute path is a Hugging Face model name, not a file.
    """
    if spec.backend != "kubernetes":
        return []
    mount = spec.storage.mount_path if spec.storage else None
    out = []
    for rule in RULES:
        if rule.kind != "volume_path":
            continue
        for flag in nccl_rules.volume_flags(rule):
            for path in _path_tokens(flag, spec.args.get(flag)):
                if flag == "tokenizer-model" and not path.startswith("/"):
                    continue
                if mount is None:
                    where = "the job has no storage, so the pods mount no shared volume"
                elif not path.startswith("/"):
                    where = f"a relative path lands in the container's working directory, not on {mount}"
                elif not _on_volume(path, mount):
                    where = f"it is outside the shared volume {mount} (storage.mount_path)"
                else:
                    continue
                out.append(_finding(rule, f"args.{flag}={path}: {where}"))
                break  # one finding per flag
    return out


def check_references(spec: JobSpec) -> list[Finding]:
    """``$(NAME)`` in an arg or literal env value: one warning per field (the value is never repeated)."""
    from ..k8sfields import has_reference
    from .jobspec import arg_values

    out = []
    for rule in (r for r in RULES if r.kind == "reference"):
        fields = [f"args.{k}" for k, v in spec.args.items() if any(map(has_reference, arg_values(k, v)))]
        fields += [f"env.{k}" for k, v in spec.env.items() if isinstance(v, str) and has_reference(v)]
        out += [_finding(rule, f"{f} holds a $(...) variable reference") for f in fields]
    return out


def check_plan(spec: JobSpec) -> list[Finding]:
    """The training flags against the cluster, by the calculator (world size, batches, TP, memory)."""
    from ..plan import api  # lazily: `workshop render` imports this module and never checks flags

    try:
        issues = api.check_megatron_args(
            spec.args, gpu=spec.instance.gpu, gpus_per_node=spec.gpus_per_node, nodes=spec.nodes
        )
    except WorkshopError as exc:
        return [Finding("error", "plan-args", f"{spec.source}: args: {exc}", "fix the flag named above")]
    return [Finding(i.severity, i.rule, i.message, i.fix) for i in issues]


def check_job(spec: JobSpec, operator: str | None = None) -> list[Finding]:
    """Every finding for ``spec`` on ``operator`` (default: the job's): environment, pod, flags; errors first.

    The environment rules are the same for both operators (the TrainJob carries the environment in
    ``spec.trainer.env``); the pod rules judge the pods each operator would create.
    """
    from .render import pytorchjob

    mount = spec.storage.mount_path if spec.storage else None
    findings = check_env(spec.literal_env(), spec.platform_info.fabric, mount)
    if (operator or spec.operator) == "trainjob":
        from .trainjob import node_pod

        findings += check_pods(spec, [("node", node_pod(spec))], spec.gpus_per_node)
    else:
        findings += check_pod(spec, pytorchjob(spec))
    findings += check_paths(spec)
    findings += check_references(spec)
    findings += check_plan(spec)
    return sorted(findings, key=lambda f: f.severity != "error")


def rules_table() -> list[dict[str, Any]]:
    """The rule table as rows (for notebook 03 and `workshop check --rules`)."""
    return [
        {
            "rule": r.rule,
            "severity": r.severity,
            "variable": r.var
            or {"pod": "(pod)", "volume_path": "(args)", "reference": "(args, env)"}.get(r.kind, "(by name)"),
            "kind": r.kind,
            "value": r.value,
            "fabrics": ",".join(r.fabrics),
            "reason": r.reason,
            "fix": r.fix,
        }
        for r in RULES
    ]
