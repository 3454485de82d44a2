"""The Kubernetes platforms a job can target, as data: what differs between EKS, HyperPod, AKS and the rest.

The renderer (``workshop_lib.launch.render``) reads one :class:`Platform` and never branches on a
platform's name, so adding a platform is adding a row here. Sources (docs/sources.md): the EKS launch
guide (Master + Worker, ``hostNetwork``, EFA requests, ``/dev/shm`` 128Gi), the HyperPod EKS launch
guide (worker-only PyTorchJob with an ``elasticPolicy`` rendezvous through etcd and
``node.kubernetes.io/instance-type: ml.p5...``) and the AKS launch guide (``rdma/ib`` requests,
``IPC_LOCK``, NCCL's InfiniBand settings, optional SHARP).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

GIB = 1024**3

# The environment every platform gets: the EKS launch guide's variables to set that are not fabric-specific.
# NCCL_TIMEOUT and TORCH_DISTRIBUTED_TIMEOUT must stay equal (nccl_rules checks it).
COMMON_ENV: Mapping[str, str] = MappingProxyType(
    {
        "NCCL_TIMEOUT": "1800",
        "TORCH_DISTRIBUTED_TIMEOUT": "1800",
        "NCCL_NVLS_ENABLE": "0",
        "NCCL_DEBUG": "WARN",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "TRITON_CACHE_DIR": "/tmp/triton_cache",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    }
)

EFA_ENV: Mapping[str, str] = MappingProxyType({"FI_PROVIDER": "efa", "FI_EFA_USE_HUGE_PAGE": "0"})

# Azure ND-series (AKS launch guide's train_megatron.sh): IB on, relaxed ordering, the NDv5 topology file.
# On these VMs eth0 *is* the front-end NIC NCCL should bootstrap on, unlike p4d/p5.
IB_ENV: Mapping[str, str] = MappingProxyType(
    {
        "NCCL_IB_DISABLE": "0",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_IB_PCI_RELAXED_ORDERING": "1",
        "NCCL_IB_QPS_PER_CONNECTION": "4",
        "NCCL_IGNORE_CPU_AFFINITY": "1",
        "NCCL_TOPO_FILE": "/etc/ndv5-topo.xml",
        "UCX_TLS": "rc",
        "UCX_NET_DEVICES": "mlx5_ib0:1",
    }
)

# SHARP in-network reductions on InfiniBand (the AKS launch guide's `training.useSharp=1`).
SHARP_ENV: Mapping[str, str] = MappingProxyType(
    {
        "NCCL_COLLNET_ENABLE": "1",
        "SHARP_COLL_ENABLE_SAT": "1",
        "SHARP_COLL_LOG_LEVEL": "3",
        "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
        "SHARP_SMX_UCX_INTERFACE": "mlx5_ib0:1",
    }
)


@dataclass(frozen=True)
class Platform:
    """How one kind of cluster wants a multi-node PyTorchJob to look."""

    name: str
    description: str
    fabric: str  # "efa" | "infiniband" | "any": which instance fabrics this platform expects
    network_resource: str | None  # extended resource for the NICs, or None
    master_replica: bool  # Master + Worker (operator injects MASTER_ADDR/RANK) or Worker-only
    rendezvous: str  # "master" (torchrun --master_addr) | "etcd" (elasticPolicy + etcd service)
    env: Mapping[str, str]  # platform defaults, applied before the job's own `env`
    host_network: bool = True
    ipc_lock: bool = False  # RDMA memory registration needs IPC_LOCK on IB
    # nodeSelector on node.kubernetes.io/instance-type: the value's prefix ("ml." on HyperPod), or
    # None for no selector (generic clusters name their nodes as they like)
    instance_label_prefix: str | None = ""
    node_selector_key: str = "node.kubernetes.io/instance-type"
    sharp_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform(
            "eks-efa",
            "Amazon EKS with EFA (EKS launch guide): Master + Worker, hostNetwork, vpc.amazonaws.com/efa",
            fabric="efa",
            network_resource="vpc.amazonaws.com/efa",
            master_replica=True,
            rendezvous="master",
            env=MappingProxyType({**COMMON_ENV, **EFA_ENV}),
        ),
        Platform(
            "hyperpod-eks",
            "SageMaker HyperPod on EKS (HyperPod launch guide): worker-only, etcd rendezvous, ml.* instance labels",
            fabric="efa",
            network_resource="vpc.amazonaws.com/efa",
            master_replica=False,
            rendezvous="etcd",
            env=MappingProxyType({**COMMON_ENV, **EFA_ENV}),
            instance_label_prefix="ml.",
        ),
        Platform(
            "aks-ib",
            "Azure AKS on ND-series with InfiniBand (AKS launch guide): rdma/ib, IPC_LOCK, optional SHARP",
            fabric="infiniband",
            network_resource="rdma/ib",
            master_replica=True,
            rendezvous="master",
            env=MappingProxyType({**COMMON_ENV, **IB_ENV}),
            ipc_lock=True,
            sharp_env=SHARP_ENV,
        ),
        Platform(
            "generic",
            "Any Kubernetes with the training operator and NVIDIA GPUs; no fast-fabric resources",
            fabric="any",
            network_resource=None,
            master_replica=True,
            rendezvous="master",
            env=COMMON_ENV,
            host_network=False,
            instance_label_prefix=None,
        ),
    )
}

# Pod sizing shared by every platform (EKS launch guide: 8 x A100 40GB -> memory 200Gi, cpu 80 of 96, shm 128Gi).
MEMORY_PER_GPU_GIB = 25
CPU_RESERVED_FOR_SYSTEM = 16  # kubelet, device plugins, daemonsets
SHM_GIB = 128
SHM_MIN_GIB = 16  # below this, dataloader workers and NCCL's shm transport fail ("Bus error")
# The kubelet sends SIGTERM, waits this long, then SIGKILLs. The trainer saves a checkpoint on SIGTERM
# at the end of the current iteration; a multi-GB distributed checkpoint to Lustre takes minutes, not
# the default 30 s.
TERMINATION_GRACE_SECONDS = 300
MASTER_PORT = 23456  # the training operator's default `pytorchjob-port`
ETCD_IMAGE = "registry.k8s.io/etcd:3.4.13-0"
ETCD_PORT = 2379


def platform(name: str) -> Platform:
    """Look up a platform by name (UsageError naming the field when unknown)."""
    if name not in PLATFORMS:
        from ..errors import UsageError

        raise UsageError(f"platform: unknown {name!r}; choose one of {', '.join(PLATFORMS)}")
    return PLATFORMS[name]
