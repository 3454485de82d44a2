"""What differs, on a live cluster, between a PyTorchJob and a TrainJob: one :class:`Workload` each.

The Kubernetes backend asks its workload where the job object lives (group, version, plural), what
to create (the renderer), which pods belong to the job and in which order, which container holds the
trainer's log, and what phase the job is in. Everything else (apply, status, logs across restarts,
delete, dry runs) is the same code for both operators.

* PyTorchJob: pods carry the kit's ``workshop.megatron/job`` label, are named
  ``<job>-master-0``/``<job>-worker-<i>``, log in container ``pytorch``; the phase is the newest
  condition that is True (Created, Running, Restarting, Succeeded, Failed).
* TrainJob: pods are created by JobSet and found through its ``jobset.sigs.k8s.io/jobset-name``
  label; node rank is the indexed Job's completion index; the trainer's container is ``node``.
  Trainer v2.3 has only terminal conditions (Complete, Failed) and Suspended, so a job without them
  is Running when its pods run, Pending while any waits, Created before any exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...facts import operators as O
from .. import render


@dataclass(frozen=True)
class Workload:
    operator: O.Operator
    container: str
    render: Callable[[Any], list[dict[str, Any]]]
    pod_label: str  # the label whose value is the job's name on every one of its pods

    def selector(self, name: str) -> str:
        return f"{self.pod_label}={name}"

    def rank(self, pod: Any) -> tuple[int, int, str]:
        """Sort key of a pod (a client model object): node rank first."""
        name = pod.metadata.name
        labels = pod.metadata.labels or {}
        if self.operator is O.TRAINJOB:
            idx = labels.get(O.COMPLETION_INDEX_LABEL, "")
            return (0, int(idx) if idx.isdigit() else 1 << 30, name)
        parts = name.rsplit("-", 2)
        role = parts[-2] if len(parts) == 3 else ""
        idx = int(parts[-1]) if parts[-1].isdigit() else 0
        return (0 if role == "master" else 1, idx, name)

    def phase(self, job: dict[str, Any], pod_phases: list[str]) -> str:
        conditions = (job.get("status") or {}).get("conditions") or []
        true = [c.get("type") for c in conditions if c.get("status") == "True"]
        if self.operator is O.PYTORCHJOB:
            return true[-1] if true else "Created"
        for cond, phase in (
            (O.TRAINJOB_FAILED, "Failed"),
            (O.TRAINJOB_COMPLETE, "Succeeded"),
            (O.TRAINJOB_SUSPENDED, "Suspended"),
        ):
            if cond in true:
                return phase
        if not pod_phases:
            return "Created"
        if any(p in ("Pending", "Unknown") for p in pod_phases):
            return "Pending"
        if any(p == "Running" for p in pod_phases):
            return "Running"
        return pod_phases[-1]


def _render_trainjob(spec: Any) -> list[dict[str, Any]]:
    from ..trainjob import render_trainjob

    return render_trainjob(spec)


PYTORCHJOB = Workload(O.PYTORCHJOB, render.CONTAINER, lambda spec: render.render_job(spec), render.JOB_LABEL)
TRAINJOB = Workload(O.TRAINJOB, O.TRAINER_NODE, _render_trainjob, O.JOBSET_NAME_LABEL)
WORKLOADS: dict[str, Workload] = {w.operator.name: w for w in (PYTORCHJOB, TRAINJOB)}


def kubernetes_version(info: Any) -> tuple[int, int] | None:
    """(major, minor) from the API server's ``/version`` answer (EKS says ``"minor": "32+"``)."""
    try:
        major = int("".join(ch for ch in str(info.major) if ch.isdigit()))
        minor = int("".join(ch for ch in str(info.minor) if ch.isdigit()))
    except (AttributeError, ValueError):
        return None
    return major, minor


def operator_problem(cluster: dict[str, Any], chosen: str) -> str | None:
    """One line when the job's operator is missing from ``cluster`` (``KubernetesBackend.operators``):
    what to install, the other operator where the cluster has it, and the server's version for
    Trainer v2, whose runtime CRDs need Kubernetes 1.32 or newer."""
    crds, version = cluster["crds"], cluster["server_version"]
    if chosen == O.PYTORCHJOB.name:
        if cluster["pytorchjob"] is not False:
            return None
        text = f"the PyTorchJob CRD ({O.PYTORCHJOB.crd}) is missing: {O.PYTORCHJOB.install}"
        if cluster["trainjob"]:
            text += (
                "; or launch on the Kubeflow Trainer v2 the cluster has: `operator: trainjob` in the job YAML"
            )
        return text
    if cluster["trainjob"] is False:
        missing = [c for c in (O.TRAINJOB.crd, O.RUNTIME_CRD) if crds.get(c) is False]
        text = f"the TrainJob CRDs ({', '.join(missing)}) are missing; the API server is {version}"
        kube = cluster.get("kubernetes")
        need = ".".join(map(str, O.TRAINER_MIN_KUBERNETES))
        if kube and tuple(kube) < O.TRAINER_MIN_KUBERNETES:
            text += (
                f", older than Kubernetes {need}, which Trainer {O.TRAINER_VERSION}'s runtime CRDs need (the "
                f"API server rejects a validation rule in them): upgrade the cluster to {need}+, then "
                + O.TRAINJOB.install
            )
        else:
            text += f": {O.TRAINJOB.install}"
        if cluster["pytorchjob"]:
            text += "; or launch on the Training Operator v1 the cluster has: `operator: pytorchjob`"
        return text
    if cluster["trainjob"] and crds.get(O.JOBSET_CRD) is False:
        return (
            f"the JobSet CRD ({O.JOBSET_CRD}) is missing, and Trainer runs every TrainJob as a JobSet: "
            + O.TRAINJOB.install
        )
    return None
