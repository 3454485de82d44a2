"""GPUs and the instance types that carry them.

Numbers are the vendors' published *dense* figures (no structured sparsity): bf16 peak 312 TFLOP/s
(A100), 989 (H100/H200 SXM), 2250 (B200); FP8 twice the bf16 figure; NVLink per direction 300 GB/s
(A100, NVLink 3), 450 (H100/H200, NVLink 4), 900 (B200, NVLink 5). Memory is what
``nvidia-smi`` reports as total for the part, which is what a training process can plan against
before the CUDA context and allocator overheads (those are an explicit allowance in ``plan``).

Sources: NVIDIA A10/A100/H100/H200/B200 datasheets; AWS EC2 accelerated-computing instance pages
and the HyperPod EFA table (p5: 32, p5e: 32, p5en: 16, p6-b200: 8 EFA interfaces); Azure ND-series
pages (8 x 400 Gb/s NDR InfiniBand on ND H100/H200 v5, 8 x 200 Gb/s HDR on ND A100 v4).
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024**2


@dataclass(frozen=True)
class GPU:
    """One GPU model. Bandwidths are per GPU and per direction, in bytes per second."""

    key: str  # the `--gpu` value of `workshop plan`
    name: str
    memory_bytes: int
    bf16_tflops: float  # dense tensor-core peak
    fp8_tflops: float | None  # None: no FP8 tensor cores
    hbm_bytes_per_s: float
    nvlink_bytes_per_s: float  # 0 where GPUs talk over PCIe only
    pcie_bytes_per_s: float


GPUS: dict[str, GPU] = {
    g.key: g
    for g in (
        # A10G is AWS's variant of the A10 (g5). Its dense BF16/FP16 tensor peak is 70 TFLOP/s (140
        # with sparsity): the A10's datasheet 125 TFLOP/s does not apply, since the A10G trades tensor
        # throughput for CUDA-core throughput (35 vs 31.2 TFLOP/s FP32). No FP8, no NVLink (PCIe 4.0).
        GPU("a10g", "NVIDIA A10G 24GB", 23028 * MIB, 70.0, None, 600e9, 0.0, 32e9),
        GPU("a100-40gb", "NVIDIA A100-SXM4-40GB", 40960 * MIB, 312.0, None, 1555e9, 300e9, 32e9),
        GPU("a100-80gb", "NVIDIA A100-SXM4-80GB", 81920 * MIB, 312.0, None, 2039e9, 300e9, 32e9),
        GPU("h100-80gb", "NVIDIA H100 80GB HBM3 (SXM)", 81559 * MIB, 989.0, 1979.0, 3350e9, 450e9, 64e9),
        GPU("h200", "NVIDIA H200 141GB HBM3e (SXM)", 143771 * MIB, 989.0, 1979.0, 4800e9, 450e9, 64e9),
        GPU("b200", "NVIDIA B200 180GB HBM3e", 183359 * MIB, 2250.0, 4500.0, 8000e9, 900e9, 64e9),
    )
}


@dataclass(frozen=True)
class Instance:
    """A node type: how many GPUs, which network fabric, and what the pod may request."""

    name: str
    cloud: str  # "aws" | "azure"
    gpu: str  # key into GPUS
    gpus_per_node: int
    fabric: str  # "efa" | "infiniband" | "ethernet"
    nics_per_node: int  # EFA interfaces (vpc.amazonaws.com/efa) or IB HCAs (rdma/ib)
    network_gbps: float  # aggregate inter-node bandwidth of the node
    vcpus: int
    memory_gib: int

    @property
    def efa_per_node(self) -> int:
        """The ``vpc.amazonaws.com/efa`` count a pod requests to get every EFA interface."""
        return self.nics_per_node if self.fabric == "efa" else 0

    @property
    def network_bytes_per_s_per_gpu(self) -> float:
        """Inter-node bandwidth available to each GPU, per direction, in bytes/s."""
        return self.network_gbps * 1e9 / 8 / self.gpus_per_node


INSTANCES: dict[str, Instance] = {
    i.name: i
    for i in (
        Instance("g5.8xlarge", "aws", "a10g", 1, "ethernet", 0, 25, 32, 128),
        Instance("g5.48xlarge", "aws", "a10g", 8, "efa", 1, 100, 192, 768),
        Instance("p4d.24xlarge", "aws", "a100-40gb", 8, "efa", 4, 400, 96, 1152),
        Instance("p4de.24xlarge", "aws", "a100-80gb", 8, "efa", 4, 400, 96, 1152),
        Instance("p5.48xlarge", "aws", "h100-80gb", 8, "efa", 32, 3200, 192, 2048),
        Instance("p5e.48xlarge", "aws", "h200", 8, "efa", 32, 3200, 192, 2048),
        Instance("p5en.48xlarge", "aws", "h200", 8, "efa", 16, 3200, 192, 2048),
        Instance("p6-b200.48xlarge", "aws", "b200", 8, "efa", 8, 3200, 192, 2048),
        Instance("Standard_ND96asr_v4", "azure", "a100-40gb", 8, "infiniband", 8, 1600, 96, 900),
        Instance("Standard_ND96amsr_A100_v4", "azure", "a100-80gb", 8, "infiniband", 8, 1600, 96, 1900),
        Instance("Standard_ND96isr_H100_v5", "azure", "h100-80gb", 8, "infiniband", 8, 3200, 96, 1900),
        Instance("Standard_ND96isr_H200_v5", "azure", "h200", 8, "infiniband", 8, 3200, 96, 1850),
    )
}


def instance(name: str) -> Instance:
    """Look up an instance type; SageMaker HyperPod's ``ml.`` prefix is accepted."""
    key = name.removeprefix("ml.")
    if key not in INSTANCES:
        from ..errors import UsageError

        raise UsageError(f"instance_type: unknown {name!r}; choose one of {', '.join(sorted(INSTANCES))}")
    return INSTANCES[key]


def gpu(key: str) -> GPU:
    """Look up a GPU by its ``--gpu`` key."""
    if key not in GPUS:
        from ..errors import UsageError

        raise UsageError(f"--gpu: unknown {key!r}; choose one of {', '.join(GPUS)}")
    return GPUS[key]
