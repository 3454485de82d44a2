"""The two Kubeflow training operators a job can launch on, as data.

* ``pytorchjob``: the Training Operator v1 (``kubeflow.org/v1`` ``PyTorchJob``), in maintenance on its
  1.9 branch; the launch guides (docs/sources.md), the workshop clusters and HyperPod use it: the default.
* ``trainjob``: Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): a ``TrainJob`` that references
  a ``TrainingRuntime`` (namespaced) or ``ClusterTrainingRuntime``; the controller turns the pair into a
  JobSet. What a cluster set up today gets.

Sources: the CRDs of kubeflow/trainer v1.9.4 and v2.3.0 (``manifests/base/crds``), the v2.3.0 torch
plugin (``pkg/runtime/framework/plugins/torch``: the ``PET_*`` variables it injects, the trainer
container and replicated job both named ``node``, port 29500, master address
``<trainjob>-node-0-0.<trainjob>``) and JobSet v0.12 (the labels it puts on every pod).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Operator:
    """One operator's job API: where the job object lives and how to install it."""

    name: str  # the job YAML's `operator:` value
    title: str
    kind: str
    group: str
    version: str
    plural: str
    install: str  # one sentence: what to run when the CRD is missing

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def crd(self) -> str:
        return f"{self.plural}.{self.group}"


TRAINER_VERSION = "v2.3.0"
TRAINING_OPERATOR_VERSION = "v1.9.4"

PYTORCHJOB = Operator(
    "pytorchjob",
    "Training Operator v1",
    kind="PyTorchJob",
    group="kubeflow.org",
    version="v1",
    plural="pytorchjobs",
    install=(
        "install the Kubeflow training operator: kubectl apply --server-side -k "
        f'"github.com/kubeflow/trainer.git/manifests/overlays/standalone?ref={TRAINING_OPERATOR_VERSION}"'
    ),
)
TRAINJOB = Operator(
    "trainjob",
    "Kubeflow Trainer v2",
    kind="TrainJob",
    group="trainer.kubeflow.org",
    version="v1alpha1",
    plural="trainjobs",
    install=(
        f"install Kubeflow Trainer {TRAINER_VERSION} (it brings JobSet): kubectl apply --server-side -k "
        f'"https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref={TRAINER_VERSION}"'
    ),
)
OPERATORS: dict[str, Operator] = {o.name: o for o in (PYTORCHJOB, TRAINJOB)}
DEFAULT_OPERATOR = PYTORCHJOB.name

# The namespaced runtime a TrainJob references (the kit renders one per job).
RUNTIME_KIND = "TrainingRuntime"
RUNTIME_PLURAL = "trainingruntimes"
RUNTIME_CRD = f"{RUNTIME_PLURAL}.{TRAINJOB.group}"
# Trainer v2.3's runtime CRDs carry a validation rule older API servers reject: they install only here.
TRAINER_MIN_KUBERNETES = (1, 32)
JOBSET_CRD = "jobsets.jobset.x-k8s.io"

# The torch plugin looks for the replicated job labelled as the trainer ancestor and, in it, the
# container named "node": that container gets the PET_* rendezvous variables and the TrainJob's
# command, env and resourcesPerNode.
TRAINER_NODE = "node"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
# What the torch plugin injects; the webhook refuses a TrainJob that sets any of them itself.
PET_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
TRAINER_PORT = 29500

# JobSet's labels on every pod it creates (v0.12), and the indexed Job's own completion index.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOBSET_RESTART_LABEL = "jobset.sigs.k8s.io/restart-attempt"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"

# TrainJob condition types (v2.3): there is no "Running" or "Created" condition.
TRAINJOB_COMPLETE, TRAINJOB_FAILED, TRAINJOB_SUSPENDED = "Complete", "Failed", "Suspended"


def operator(name: str) -> Operator:
    """Look up an operator by the job YAML's name for it (UsageError naming the field when unknown)."""
    if name not in OPERATORS:
        from ..errors import UsageError

        raise UsageError(f"operator: unknown {name!r}; choose one of {', '.join(OPERATORS)}")
    return OPERATORS[name]
