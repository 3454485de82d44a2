"""Pure renderers: a JobSpec in, plain dicts (or text) out. No cluster, no files.

``render_job(spec)`` gives the documents ``workshop render`` prints and ``workshop apply`` creates:
the Namespace, for an etcd rendezvous (HyperPod) the etcd Service and Deployment, and the
``kubeflow.org/v1`` PyTorchJob shaped as the guides' (docs/sources.md). Everything that differs between
platforms comes from ``workshop_lib.facts.platforms``; the instance table gives GPU and NIC counts.
``render_slurm(spec)`` gives the equivalent sbatch script for clusters without Kubernetes.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..facts import platforms as P
from ..k8sfields import k8s_literal
from ..safeyaml import has_control
from .jobspec import EnvValue, JobSpec, SecretRef, flag_tokens

GIB = 1024**3
CONTAINER = "pytorch"  # the training operator finds its port on the container named "pytorch"
TRAINER_MODULE = "workshop_lib.train"
AGENT_COMMAND = "workshop-torchrun"  # pyproject's console script for workshop_lib.train.agent
APP_LABEL = "megatron-training"
JOB_LABEL = "workshop.megatron/job"  # on every pod: `workshop status/logs` select with it


def _gib(n_bytes: float) -> str:
    return f"{int(n_bytes // GIB)}Gi"


def pod_sizing(spec: JobSpec) -> dict[str, Any]:
    """GPU, NIC, memory, CPU and /dev/shm figures for one pod (overrides from ``resources`` win)."""
    inst = spec.instance
    mem_bytes = inst.memory_gib * GIB
    memory = spec.resources.get("memory") or _gib(
        min(P.MEMORY_PER_GPU_GIB * spec.gpus_per_node * GIB, 0.9 * mem_bytes)
    )
    shm = spec.resources.get("shm_size") or _gib(min(P.SHM_GIB * GIB, mem_bytes / 4))
    cpu_request = spec.resources.get("cpu") or max(1, inst.vcpus - P.CPU_RESERVED_FOR_SYSTEM)
    return {
        "gpus": spec.gpus_per_node,
        "nics": spec.nics_per_node if spec.platform_info.network_resource else 0,
        "memory": memory,
        "cpu_request": str(cpu_request),
        "cpu_limit": str(max(int(cpu_request), inst.vcpus)),
        "shm": shm,
    }


def torchrun_args(spec: JobSpec) -> list[str]:
    """The container command: torchrun with the platform's rendezvous, the trainer and the Megatron flags.

    ``workshop-torchrun`` (``workshop_lib.train.agent``) is torchrun with torchrun's flags and agent,
    except that the kubelet's SIGTERM reaches the ranks as "save, then stop" (stock torchrun kills
    them before they can save); the pod's grace period leaves time for that save.
    """
    plat = spec.platform_info
    cmd = [AGENT_COMMAND, f"--nproc_per_node={spec.gpus_per_node}", f"--nnodes={spec.nodes}"]
    if plat.rendezvous == "master":
        # The operator injects MASTER_ADDR, MASTER_PORT and RANK (the pod's node rank) into every pod.
        cmd += ["--node_rank=$(RANK)", "--master_addr=$(MASTER_ADDR)", "--master_port=$(MASTER_PORT)"]
    # "etcd": torchrun reads PET_RDZV_BACKEND/PET_RDZV_ENDPOINT, set by the operator from elasticPolicy.
    # Only the references above are the kit's; a "$(VAR)" in the job's own args is escaped so the
    # kubelet passes it on as written (unescaped, a Secret's value would land in argv and the log).
    return [*cmd, "-m", TRAINER_MODULE, *map(k8s_literal, flag_tokens(spec.args))]


def env_entry(name: str, value: EnvValue) -> dict[str, Any]:
    """One container ``env`` entry: a literal ``value``, or ``valueFrom.secretKeyRef`` for a Secret."""
    if isinstance(value, SecretRef):
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": value.secret, "key": value.key}}}
    return {"name": name, "value": k8s_literal(value)}  # "$(VAR)" kept literal, as sbatch keeps it


def _labels(spec: JobSpec, role: str | None = None) -> dict[str, str]:
    labels = {"app": APP_LABEL, JOB_LABEL: spec.name}
    if role:
        labels["role"] = role
    return labels


def _replica(spec: JobSpec, role: str, replicas: int) -> dict[str, Any]:
    plat = spec.platform_info
    size = pod_sizing(spec)
    host_network = plat.host_network if spec.host_network is None else spec.host_network
    requests: dict[str, Any] = {"nvidia.com/gpu": size["gpus"]}
    limits: dict[str, Any] = {"nvidia.com/gpu": size["gpus"]}
    if plat.network_resource and size["nics"]:
        requests[plat.network_resource] = limits[plat.network_resource] = size["nics"]
    requests.update(memory=size["memory"], cpu=size["cpu_request"])
    limits.update(memory=size["memory"], cpu=size["cpu_limit"])
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.image,
        "command": torchrun_args(spec),
        "env": [env_entry(k, v) for k, v in spec.effective_env().items()],
        "resources": {"requests": requests, "limits": limits},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    volumes: list[dict[str, Any]] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size["shm"]}}
    ]
    if spec.storage:
        container["volumeMounts"].insert(0, {"name": "shared", "mountPath": spec.storage.mount_path})
        volumes.insert(0, {"name": "shared", "persistentVolumeClaim": {"claimName": spec.storage.pvc}})
    if plat.ipc_lock:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    pod: dict[str, Any] = {}
    if host_network:
        pod.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
    if plat.instance_label_prefix is not None:
        value = plat.instance_label_prefix + spec.instance.name
        pod["nodeSelector"] = {plat.node_selector_key: value}
    pod["terminationGracePeriodSeconds"] = P.TERMINATION_GRACE_SECONDS  # time to save on SIGTERM
    pod.update(containers=[container], volumes=volumes)
    return {
        "replicas": replicas,
        "restartPolicy": "OnFailure",
        "template": {"metadata": {"labels": _labels(spec, role.lower())}, "spec": pod},
    }


def etcd_name(spec: JobSpec) -> str:
    return f"{spec.name}-etcd"


def pytorchjob(spec: JobSpec) -> dict[str, Any]:
    """The ``kubeflow.org/v1`` PyTorchJob for ``spec``."""
    plat = spec.platform_info
    if plat.master_replica:
        replicas = {"Master": _replica(spec, "Master", 1)}
        if spec.nodes > 1:
            replicas["Worker"] = _replica(spec, "Worker", spec.nodes - 1)
    else:
        replicas = {"Worker": _replica(spec, "Worker", spec.nodes)}
    job_spec: dict[str, Any] = {
        "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
        "nprocPerNode": str(spec.gpus_per_node),
    }
    if plat.rendezvous == "etcd":
        job_spec["elasticPolicy"] = {
            "rdzvBackend": "etcd",
            "rdzvHost": etcd_name(spec),
            "rdzvPort": P.ETCD_PORT,
            # Megatron's parallel layout needs every node: a fixed size, restarts as a whole.
            "minReplicas": spec.nodes,
            "maxReplicas": spec.nodes,
            "maxRestarts": 100,
        }
    job_spec["pytorchReplicaSpecs"] = replicas
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": _labels(spec)},
        "spec": job_spec,
    }


def namespace(spec: JobSpec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": spec.namespace}}


def etcd_objects(spec: JobSpec) -> list[dict[str, Any]]:
    """The etcd Service and Deployment an ``etcd`` rendezvous needs (HyperPod launch guide, docs/sources.md)."""
    name, ns = etcd_name(spec), spec.namespace
    labels = {"app": name, JOB_LABEL: spec.name}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "ports": [
                {
                    "name": "etcd-client-port",
                    "port": P.ETCD_PORT,
                    "protocol": "TCP",
                    "targetPort": P.ETCD_PORT,
                }
            ],
            "selector": {"app": name},
        },
    }
    url = f"http://0.0.0.0:{P.ETCD_PORT}"
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "etcd",
                            "image": P.ETCD_IMAGE,
                            "command": ["/usr/local/bin/etcd"],
                            "args": [
                                "--data-dir",
                                "/var/lib/etcd",
                                "--enable-v2",
                                "--listen-client-urls",
                                url,
                                "--advertise-client-urls",
                                url,
                                "--initial-cluster-state",
                                "new",
                            ],
                            "ports": [{"containerPort": P.ETCD_PORT, "name": "client", "protocol": "TCP"}],
                        }
                    ],
                    "restartPolicy": "Always",
                },
            },
        },
    }
    return [service, deployment]


def render_job(spec: JobSpec) -> list[dict[str, Any]]:
    """Every object the job needs, in the order to create them."""
    docs = [namespace(spec)]
    if spec.platform_info.rendezvous == "etcd":
        docs += etcd_objects(spec)
    docs.append(pytorchjob(spec))
    return docs


def to_yaml(docs: list[dict[str, Any]], header: str = "") -> str:
    """Multi-document YAML in the order given, keys in insertion order."""
    import yaml

    class NoAliases(yaml.SafeDumper):  # write shared sub-dicts out in full, never as &id001 anchors
        def ignore_aliases(self, data: Any) -> bool:
            return True

    body = yaml.dump_all(docs, Dumper=NoAliases, sort_keys=False, default_flow_style=False, width=1000)
    return header + body


def _comment(text: str) -> str:
    """A shell comment line; a control character (a newline ends the comment) is refused, never written."""
    if has_control(text):
        raise UsageError(
            f"{ascii(text)}: a control character (newline, tab, ESC) cannot go into the sbatch script's "
            "comments; rename the job file"
        )
    return f"# {text}"


def render_slurm(spec: JobSpec) -> str:
    """An sbatch script running the same trainer with the same environment (pyxis/enroot container).

    Every value from the job file is ``shlex.quote``-d where the shell reads it, and only checked
    text (no control characters) goes into comments, so no value can add a command to the script.
    """
    size = pod_sizing(spec)
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={spec.name}",
        f"#SBATCH --nodes={spec.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={spec.gpus_per_node}",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x_%j.out",
        _comment(
            f"Rendered by `workshop render --target slurm` from {Path(spec.source).name} "
            f"({spec.instance_type}, platform {spec.platform})."
        ),
        "set -euo pipefail",
        "",
        "# NCCL/EFA environment (see `workshop check` for the reason behind each variable)",
    ]
    for k, v in spec.effective_env().items():
        if isinstance(v, SecretRef):
            # Never inlined: sbatch passes the submitting user's environment (--export=ALL) to the job.
            where = f"on Kubernetes: Secret {v.secret}, key {v.key}"
            lines += [
                _comment(
                    f"{k}: read from the environment of the user who runs sbatch ({where}); never written here"
                ),
                f': "${{{k}:?export {k} in your shell before sbatch ({where})}}"',
                f"export {k}",
            ]
        else:
            lines.append(f"export {k}={shlex.quote(v)}")
    mounts = f"{spec.storage.mount_path}:{spec.storage.mount_path}" if spec.storage else ""
    flags = " \\\n    ".join(shlex.quote(t) for t in flag_tokens(spec.args))
    lines += [
        "",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export MASTER_ADDR MASTER_PORT=29500",
        "",
        "# One torchrun per node; c10d rendezvous on the first node replaces the operator's MASTER_ADDR.",
        "srun --container-image="
        + shlex.quote(spec.image)
        + (f" --container-mounts={shlex.quote(mounts)}" if mounts else "")
        + " \\",
        f'  torchrun --nproc_per_node={size["gpus"]} --nnodes="$SLURM_NNODES" \\',
        '    --rdzv_id="$SLURM_JOB_ID" --rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" \\',
        f"    -m {TRAINER_MODULE}" + (" \\\n    " + flags if flags else ""),
        "",
    ]
    return "\n".join(lines)
