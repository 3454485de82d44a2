"""What the trainer's own model saves for backward, per layer: the ground truth of the plan's activations.

``python -m benchmarks.saved_activations '<json list of cases>'`` builds the model exactly as
``workshop train`` does (its flag parser, ``transformer_config`` and ``stage_spec``, so the layers
are Transformer Engine's, or megatron-core's local spec with the kit's SDPA attention and PyTorch
norms where TE is missing), runs one forward pass with loss under
``torch.autograd.graph.saved_tensors_hooks`` and sums the bytes of every distinct storage saved
for backward that is not a parameter. Two models that differ by one layer give one layer's
activations; the storages only the bigger model saves are listed by shape and dtype, so a
difference from the plan can be traced to the tensor that makes it.

It runs on CUDA where there is a GPU (the kernels that save the tensors are then the ones a real
run uses) and on the CPU otherwise. Each case is a dict of Megatron flags (``--`` left out) plus
``micro-batch-size``; it prints one JSON line with ``per_layer_bytes`` and ``per_layer_storages``
for each case. ``tests/test_trainer_saved_activations.py`` runs it on the CPU;
``benchmarks/bench_gpu.py`` runs it on the lent GPU.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections import Counter
from typing import Any


def _init_once() -> Any:
    import torch
    import torch.distributed as dist

    from workshop_lib.train.device import detect, use_cpu

    device = detect()
    if not device.cuda:
        use_cpu()
    if not dist.is_initialized():
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        dist.init_process_group(device.backend, init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
        from megatron.core import parallel_state as ps

        ps.initialize_model_parallel(1, 1)
        from megatron.core.tensor_parallel import random as mr

        if device.cuda:
            mr.model_parallel_cuda_manual_seed(1234)
        else:
            mr.get_cuda_rng_tracker().add("model-parallel-rng", 1234)
    torch.manual_seed(1234)
    return device


def _args(case: dict[str, Any], layers: int):
    from workshop_lib.facts.megatron_flags import format_flags
    from workshop_lib.train.arguments import parse_args

    flags = {**case, "num-layers": layers, "global-batch-size": case["micro-batch-size"]}
    flags.setdefault("max-position-embeddings", case["seq-length"])
    argv = format_flags(flags) + [
        "--lr",
        "1e-4",
        "--train-iters",
        "1",
        "--mock-data",
        "--tokenizer-type",
        "NullTokenizer",
        "--vocab-size",
        "512",
    ]
    return parse_args(argv)


def saved_storages(case: dict[str, Any], layers: int) -> dict[tuple, int]:
    """{(data_ptr, shape, dtype): bytes} of every non-parameter storage one forward pass saves."""
    import torch

    from workshop_lib.train.model import build_model

    device = _init_once()
    args = _args(case, layers)
    chunks, _ = build_model(args, device, 512)
    model = chunks[0]
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in torch.nn.Module.buffers(model)}
    seen: dict[int, tuple[tuple, int]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in params and ptr not in seen:
            seen[ptr] = ((tuple(t.shape), str(t.dtype).replace("torch.", "")), st.nbytes())
        return t

    s, b = args.seq_length, args.micro_batch_size
    dev = device.torch_device if device.cuda else torch.device("cpu")
    ids = torch.randint(0, 512, (b, s), device=dev)
    pos = torch.arange(s, device=dev).unsqueeze(0).expand(b, s)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, pos, None, labels=ids)
    out = {(ptr, *key): nbytes for ptr, (key, nbytes) in seen.items()}
    del loss, model, chunks
    if device.cuda:
        torch.cuda.empty_cache()
    return out


def per_layer(case: dict[str, Any]) -> dict[str, Any]:
    """One layer's saved bytes: the 2-layer model's minus the 1-layer model's."""
    one, two = saved_storages(case, 1), saved_storages(case, 2)
    shapes_one = Counter((shape, dtype) for _ptr, shape, dtype in one)
    extra: list[dict[str, Any]] = []
    for (_ptr, shape, dtype), nbytes in sorted(two.items(), key=lambda kv: -kv[1]):
        if shapes_one[(shape, dtype)] > 0:
            shapes_one[(shape, dtype)] -= 1
            continue
        extra.append({"shape": list(shape), "dtype": dtype, "bytes": nbytes})
    return {
        "case": case,
        "per_layer_bytes": sum(two.values()) - sum(one.values()),
        "per_layer_storages": extra,
    }


def main() -> int:
    import warnings

    warnings.filterwarnings("ignore")
    cases = json.loads(sys.argv[1])
    print(json.dumps([per_layer(c) for c in cases]))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
