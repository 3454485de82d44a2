"""Where the trainer runs: CUDA + NCCL when GPUs are there, CPU + gloo otherwise.

megatron-core is written for GPUs: many of its buffers are allocated with
``device=torch.cuda.current_device()`` or ``device='cuda'`` and its RNG tracker forks the CUDA
generator. On a CPU-only machine the trainer runs the same megatron-core code under two small,
explicit adaptations installed by :func:`use_cpu` (and only there):

* :class:`CpuDeviceMode`, a ``TorchFunctionMode`` that turns a CUDA device request in a tensor
  factory or ``.to()``/``.cuda()`` call into the CPU and names tensor types as megatron-core's
  asserts expect (``torch.cuda.FloatTensor``), and ``torch.cuda.current_device`` that answers
  device 0 (which the mode then maps to the CPU), and ``torch.cuda.synchronize`` a no-op;
* :class:`CpuRNGStatesTracker`, megatron-core's RNG tracker on the CPU generator, so tensor-parallel
  dropout and initialisation forks work and their states go into checkpoints; activation
  recomputation's save/restore of the CUDA generator becomes a no-op (the CPU generator, which it
  also saves, is the one in use).

Nothing is patched when CUDA is present.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode


@dataclass(frozen=True)
class Device:
    """The accelerator choice of this process."""

    cuda: bool
    backend: str  # torch.distributed backend
    torch_device: torch.device

    @property
    def name(self) -> str:
        return "cuda" if self.cuda else "cpu"


def detect(backend: str | None = None) -> Device:
    """CUDA when available (NCCL unless --distributed-backend says otherwise), else CPU + gloo."""
    if torch.cuda.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        local_size = int(os.environ.get("LOCAL_WORLD_SIZE", "0") or 0)
        check_local_gpus(max(local_rank + 1, local_size), torch.cuda.device_count())
        torch.cuda.set_device(local_rank)
        return Device(True, backend or "nccl", torch.device("cuda", local_rank))
    if backend == "nccl":
        from ..errors import UsageError

        raise UsageError(
            "--distributed-backend nccl needs GPUs; on this CPU-only machine drop it (gloo is used)"
        )
    return Device(False, "gloo", torch.device("cpu"))


def check_local_gpus(processes: int, gpus: int) -> None:
    """One UsageError when this node starts more trainer processes than it shows GPUs.

    Each rank takes the GPU numbered by its local rank. Without this check the ranks past the last
    GPU die in ``set_device`` with CUDA's "invalid device ordinal", and the others wait in the
    process group's rendezvous until torchrun gives up on them (30 s). It happens when
    ``--nproc-per-node`` is larger than the pod's ``nvidia.com/gpu`` limit, or when
    ``CUDA_VISIBLE_DEVICES`` hides some of the node's GPUs. ``workshop train`` asks before it
    starts any rank; in a pod, where torchrun starts the ranks, every rank asks (torchrun's
    ``LOCAL_WORLD_SIZE``), so all of them stop at once with the same line.
    """
    if processes <= gpus:
        return
    from ..errors import UsageError

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = f" (CUDA_VISIBLE_DEVICES={visible[:64]!r})" if visible is not None else ""
    raise UsageError(
        f"{processes} processes on this node, but it shows {gpus} GPU(s){shown}: start one process "
        f"per GPU (--nproc-per-node {gpus}), or give the pod more nvidia.com/gpu"
    )


def _is_cuda(device: object) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, int) and not isinstance(device, bool)


class CpuDeviceMode(TorchFunctionMode):
    """Redirect CUDA device requests of megatron-core to the CPU (installed on CPU-only hosts)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cuda:
            return args[0]
        if func is torch.Tensor.type and len(args) == 1 and not kwargs:
            # megatron-core asserts on type strings such as 'torch.cuda.FloatTensor'
            name = func(*args)
            return name.replace("torch.", "torch.cuda.", 1) if "cuda" not in name else name
        if "device" in kwargs and _is_cuda(kwargs["device"]):
            kwargs = {**kwargs, "device": "cpu"}
        if func is torch.Tensor.to and len(args) > 1 and _is_cuda(args[1]):
            args = (args[0], "cpu", *args[2:])
        return func(*args, **kwargs)


class CpuRNGStatesTracker:
    """megatron-core's ``CudaRNGStatesTracker`` interface over the CPU generator."""

    def __init__(self) -> None:
        self.reset()

    def is_initialized(self) -> bool:
        return self._is_initialized

    def reset(self) -> None:
        self._is_initialized = False
        self.states_: dict[str, torch.Tensor] = {}
        self.seeds_: set[int] = set()

    def get_states(self) -> dict[str, torch.Tensor]:
        return dict(self.states_)

    def set_states(self, states: dict[str, torch.Tensor]) -> None:
        self._is_initialized = True
        self.states_ = dict(states)

    def add(self, name: str, seed: int) -> None:
        self._is_initialized = True
        if seed in self.seeds_:
            raise RuntimeError(f"seed {seed} already exists")
        if name in self.states_:
            raise RuntimeError(f"rng state {name} already exists")
        self.seeds_.add(seed)
        gen = torch.Generator()
        gen.manual_seed(seed)
        self.states_[name] = gen.get_state()

    @contextlib.contextmanager
    def fork(self, name: str = "model-parallel-rng"):
        if name not in self.states_:
            raise RuntimeError(f"rng state {name} is not added")
        orig = torch.get_rng_state()
        torch.set_rng_state(self.states_[name])
        try:
            yield
        finally:
            self.states_[name] = torch.get_rng_state()
            torch.set_rng_state(orig)


_cpu_mode: CpuDeviceMode | None = None


def use_cpu() -> None:
    """Install the CPU adaptations (idempotent). Call before building megatron-core objects."""
    global _cpu_mode
    if _cpu_mode is not None:
        return
    torch.cuda.current_device = lambda: 0  # type: ignore[assignment]  # mapped to the CPU by the mode
    torch.cuda.synchronize = lambda device=None: None  # type: ignore[assignment]  # CPU ops are synchronous
    # megatron-core wraps small fused functions with torch.compile; on CPU that compiles C++ at
    # start-up for no gain, so run them eagerly.
    from torch import _dynamo

    _dynamo.config.disable = True
    from megatron.core.tensor_parallel import random as mcore_random

    mcore_random._CUDA_RNG_STATE_TRACKER = CpuRNGStatesTracker()
    mcore_random._CUDA_RNG_STATE_TRACKER_INITIALIZED = True
    # Activation recomputation saves and restores the CUDA generator around the recomputed forward;
    # on the CPU the CPU generator (which it saves too) is the only one.
    mcore_random._get_cuda_rng_state = lambda *args, **kwargs: torch.get_rng_state()
    mcore_random._set_cuda_rng_state = lambda *args, **kwargs: None
    # megatron-core 0.16's MoE router refers to TE's GEMM even when TE is absent; name it None.
    from megatron.core.transformer.moe import moe_utils

    if not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None
    _cpu_mode = CpuDeviceMode()
    _cpu_mode.__enter__()


def seed_everything(seed: int, *, cuda: bool) -> None:
    """Megatron-LM's ``_set_random_seed``: per pipeline stage seeds plus the model-parallel states."""
    import random

    import numpy as np
    from megatron.core import parallel_state as ps
    from megatron.core.tensor_parallel import random as mcore_random

    seed = seed + 100 * ps.get_pipeline_model_parallel_rank()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if cuda:
        mcore_random.model_parallel_cuda_manual_seed(seed)
        return
    tracker = mcore_random.get_cuda_rng_tracker()
    tracker.reset()
    tp_rank = ps.get_tensor_model_parallel_rank()
    tracker.add(mcore_random._DATA_PARALLEL_RNG_TRACKER_NAME, seed)
    tracker.add(mcore_random._MODEL_PARALLEL_RNG_TRACKER_NAME, seed + 2718 + tp_rank)
    ep_rank = ps.get_expert_model_parallel_rank()
    etp_rank = ps.get_expert_tensor_parallel_rank()
    tracker.add(mcore_random._EXPERT_PARALLEL_RNG_TRACKER_NAME, seed + 1024 + 100 * ep_rank + etp_rank)
