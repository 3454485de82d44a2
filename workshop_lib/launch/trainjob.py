"""Pure renderer for Kubeflow Trainer v2: a JobSpec in, a ``TrainingRuntime`` and a ``TrainJob`` out.

The same job YAML that renders a PyTorchJob (``render.py``) renders here, with everything the kit
promises for the first:

* the **TrainingRuntime** (namespaced, named ``runtime:`` or the job's name) holds what the platform
  needs of the pod: the image, EFA or InfiniBand (``IPC_LOCK``), ``/dev/shm``, the shared volume,
  ``hostNetwork`` where the platform wants it, the instance nodeSelector, and a termination grace long
  enough for the trainer's save-on-SIGTERM. It is a JobSet template with one replicated job ``node``
  labelled as the trainer ancestor, whose container is named ``node``: that is where Trainer's torch
  plugin injects the rendezvous. Pod-level settings live here and not in a TrainJob runtime patch,
  where a misplaced ``hostNetwork`` is silently dropped by a non-strict API server.
* the **TrainJob** references it and carries the job: ``numNodes``, ``numProcPerNode``,
  ``resourcesPerNode`` (GPUs, NICs, memory, CPU), the torchrun command with the Megatron flags and the
  NCCL/EFA environment in ``spec.trainer.env``.

Trainer injects ``PET_NNODES``, ``PET_NPROC_PER_NODE``, ``PET_NODE_RANK``, ``PET_MASTER_ADDR`` and
``PET_MASTER_PORT`` into the ``node`` container; the command uses them (Kubernetes expands ``$(VAR)``
from the container's environment), never PyTorchJob's ``MASTER_ADDR``/``RANK``, and never an etcd
rendezvous (HyperPod's PyTorchJob needs one; a JobSet gives every pod a stable DNS name instead).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ..errors import UsageError
from ..facts import operators as O
from ..facts import platforms as P
from . import render
from .jobspec import JobSpec

# A TrainJob's name must be an RFC 1035 label (the CRD's own validation rule): a letter first.
_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def runtime_name(spec: JobSpec) -> str:
    """The TrainingRuntime the TrainJob references: the job YAML's ``runtime:``, else the job's name."""
    return spec.runtime or spec.name


def check_names(spec: JobSpec) -> None:
    """Names a TrainJob refuses that a PyTorchJob takes: one UsageError line naming the field."""
    if not _RFC1035.match(spec.name):
        raise UsageError(
            f"{spec.source}: name: {spec.name!r} must start with a letter for a TrainJob "
            "(its CRD requires an RFC 1035 label); rename the job, e.g. job-" + spec.name
        )
    user_pet = [k for k in spec.env if k in O.PET_ENV]
    if user_pet:
        raise UsageError(
            f"{spec.source}: env.{user_pet[0]}: Trainer injects the PET_* rendezvous variables itself and "
            "refuses a TrainJob that sets them; remove it from env"
        )


def torchrun_command(spec: JobSpec) -> list[str]:
    """torchrun (the kit's agent, ``workshop-torchrun``) with Trainer's PET_* rendezvous, then exactly the trainer and flags a PyTorchJob runs."""
    pytorchjob_cmd = render.torchrun_args(spec)
    trainer_and_flags = pytorchjob_cmd[pytorchjob_cmd.index("-m") :]  # one spelling of the flags
    return [
        render.AGENT_COMMAND,  # torchrun's agent that turns the kubelet's SIGTERM into "save, then stop"
        "--nnodes=$(PET_NNODES)",
        "--nproc_per_node=$(PET_NPROC_PER_NODE)",
        "--node_rank=$(PET_NODE_RANK)",
        "--master_addr=$(PET_MASTER_ADDR)",
        "--master_port=$(PET_MASTER_PORT)",
        *trainer_and_flags,
    ]


def _pytorchjob_pod(spec: JobSpec) -> dict[str, Any]:
    """The pod the PyTorchJob renderer gives (one source for devices, volumes, network, selector)."""
    job = render.pytorchjob(spec)
    replica = next(iter(job["spec"]["pytorchReplicaSpecs"].values()))
    return copy.deepcopy(replica["template"]["spec"])


def resources_per_node(spec: JobSpec) -> dict[str, Any]:
    """GPUs, NICs, memory and CPU of one node: what the PyTorchJob's container asks for."""
    return _pytorchjob_pod(spec)["containers"][0]["resources"]


def training_runtime(spec: JobSpec) -> dict[str, Any]:
    """The namespaced ``TrainingRuntime``: the platform's pod around the ``node`` container."""
    pod = _pytorchjob_pod(spec)
    src = pod["containers"][0]
    container: dict[str, Any] = {"name": O.TRAINER_NODE, "image": spec.image}
    container["volumeMounts"] = src["volumeMounts"]
    if "securityContext" in src:
        container["securityContext"] = src["securityContext"]
    pod_spec: dict[str, Any] = {}
    for key in ("hostNetwork", "dnsPolicy", "nodeSelector"):
        if key in pod:
            pod_spec[key] = pod[key]
    pod_spec["restartPolicy"] = "OnFailure"  # as the PyTorchJob: the container restarts in place
    pod_spec["terminationGracePeriodSeconds"] = P.TERMINATION_GRACE_SECONDS
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = pod["volumes"]
    labels = {**_labels(spec), O.FRAMEWORK_LABEL: "torch"}
    return {
        "apiVersion": O.TRAINJOB.api_version,
        "kind": O.RUNTIME_KIND,
        "metadata": {"name": runtime_name(spec), "namespace": spec.namespace, "labels": labels},
        "spec": {
            "mlPolicy": {"numNodes": spec.nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": O.TRAINER_NODE,
                            "replicas": 1,
                            "template": {
                                "metadata": {"labels": {O.ANCESTOR_LABEL: O.ANCESTOR_TRAINER}},
                                "spec": {
                                    # The PyTorchJob's runPolicy.backoffLimit: container restarts allowed.
                                    "backoffLimit": 3,
                                    "template": {
                                        "metadata": {"labels": {**_labels(spec), "role": O.TRAINER_NODE}},
                                        "spec": pod_spec,
                                    },
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def _labels(spec: JobSpec) -> dict[str, str]:
    return {"app": render.APP_LABEL, render.JOB_LABEL: spec.name}


def trainjob(spec: JobSpec) -> dict[str, Any]:
    """The ``TrainJob`` that references :func:`training_runtime` and carries the job itself."""
    check_names(spec)
    env = [render.env_entry(k, v) for k, v in spec.effective_env().items()]
    return {
        "apiVersion": O.TRAINJOB.api_version,
        "kind": O.TRAINJOB.kind,
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": _labels(spec)},
        "spec": {
            "runtimeRef": {
                "apiGroup": O.TRAINJOB.group,
                "kind": O.RUNTIME_KIND,
                "name": runtime_name(spec),
            },
            "trainer": {
                "numNodes": spec.nodes,
                "numProcPerNode": spec.gpus_per_node,
                "resourcesPerNode": resources_per_node(spec),
                "command": torchrun_command(spec),
                "env": env,
            },
        },
    }


def node_pod(spec: JobSpec) -> dict[str, Any]:
    """The pod spec Trainer builds for each node: the runtime's pod with the TrainJob's ``trainer``
    (command, env, resourcesPerNode) applied to the ``node`` container. What ``workshop check`` judges."""
    runtime, job = training_runtime(spec), trainjob(spec)
    rjob = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    pod = copy.deepcopy(rjob["template"]["spec"]["template"]["spec"])
    trainer = job["spec"]["trainer"]
    (container,) = [c for c in pod["containers"] if c["name"] == O.TRAINER_NODE]
    container.update(command=trainer["command"], env=trainer["env"], resources=trainer["resourcesPerNode"])
    return pod


def render_trainjob(spec: JobSpec) -> list[dict[str, Any]]:
    """Every object a TrainJob launch needs, in the order to create them (the runtime first: the
    Trainer webhook refuses a TrainJob whose runtime does not exist yet)."""
    job = trainjob(spec)
    return [render.namespace(spec), training_runtime(spec), job]
