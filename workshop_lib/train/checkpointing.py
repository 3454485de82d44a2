"""Checkpoints laid out as Megatron-LM lays them out, written with megatron-core's dist_checkpointing.

::

    <save>/latest_checkpointed_iteration.txt     the iteration number, nothing else
    <save>/iter_0000010/                          one torch_dist checkpoint (all ranks' shards)

The marker file is replaced atomically (write a temporary file, then ``os.replace``) by rank 0
only after every rank has finished writing the iteration's folder, so a reader never sees a
marker pointing at a partial checkpoint. A checkpoint holds the model, the optimizer (unless
``--no-save-optim``), the learning-rate scheduler, every rank's RNG states (unless
``--no-save-rng``) and the training position (iteration, consumed samples).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

TRACKER = "latest_checkpointed_iteration.txt"


@dataclass
class TrainState:
    """Where training stands; saved in every checkpoint."""

    iteration: int = 0
    consumed_train_samples: int = 0
    consumed_valid_samples: int = 0
    skipped_iterations: int = 0
    floating_point_operations_so_far: float = 0.0


def iteration_dir(root: str | Path, iteration: int) -> Path:
    return Path(root) / f"iter_{iteration:07d}"


def read_tracker(root: str | Path) -> int | None:
    """The iteration in ``latest_checkpointed_iteration.txt``, or None when there is none."""
    f = Path(root) / TRACKER
    if not f.is_file():
        return None
    text = f.read_text().strip()
    if text == "release":
        return 0
    try:
        return int(text)
    except ValueError:
        from ..errors import UsageError

        raise UsageError(f"{f}: expected an iteration number, found {text!r}") from None


def _rng_state(cuda: bool) -> dict:
    from megatron.core import tensor_parallel

    return {
        "random_rng_state": random.getstate(),
        "np_rng_state": np.random.get_state(),
        "torch_rng_state": torch.get_rng_state(),
        "cuda_rng_state": torch.cuda.get_rng_state() if cuda else None,
        "rng_tracker_states": tensor_parallel.get_cuda_rng_tracker().get_states(),
    }


def _set_rng_state(state: dict, cuda: bool) -> None:
    from megatron.core import tensor_parallel

    random.setstate(state["random_rng_state"])
    np.random.set_state(state["np_rng_state"])
    torch.set_rng_state(state["torch_rng_state"])
    if cuda and state.get("cuda_rng_state") is not None:
        torch.cuda.set_rng_state(state["cuda_rng_state"])
    tensor_parallel.get_cuda_rng_tracker().set_states(state["rng_tracker_states"])


def unwrap(chunks) -> list:
    """The GPT modules inside DDP / Float16Module wrappers (checkpoint keys as Megatron-LM writes them)."""
    from megatron.core.distributed import DistributedDataParallel
    from megatron.core.transformer.module import Float16Module

    out = []
    for m in chunks:
        while isinstance(m, (DistributedDataParallel, Float16Module)):
            m = m.module
        out.append(m)
    return out


def _sharded_state_dict(
    model, optimizer, scheduler, train_state, args, cuda, *, loading, with_optim, with_rng
):
    from megatron.core import parallel_state as ps
    from megatron.core.dist_checkpointing.mapping import ShardedObject

    model = unwrap(model)
    state: dict = {"checkpoint_version": 3.0}
    if len(model) == 1:
        state["model"] = model[0].sharded_state_dict()
    else:
        for i, chunk in enumerate(model):
            state[f"model{i}"] = chunk.sharded_state_dict()
    if with_optim:
        model_sd = {k: v for k, v in state.items() if k.startswith("model")}
        state["optimizer"] = optimizer.sharded_state_dict(model_sd, is_loading=loading)
        state["opt_param_scheduler"] = scheduler.state_dict()
    if with_rng:
        pp, tp = ps.get_pipeline_model_parallel_world_size(), ps.get_tensor_model_parallel_world_size()
        state["rng_state"] = ShardedObject(
            "rng_state",
            [_rng_state(cuda)],
            (pp, tp),
            (ps.get_pipeline_model_parallel_rank(), ps.get_tensor_model_parallel_rank()),
            replica_id=ps.get_data_parallel_rank(with_context_parallel=True),
        )
    state["train_state"] = asdict(train_state)
    state["iteration"] = train_state.iteration
    state["args"] = {
        k: v for k, v in vars(args).items() if isinstance(v, (int, float, str, bool, type(None)))
    }
    return state


def save_checkpoint(
    args: argparse.Namespace, model, optimizer, scheduler, train_state: TrainState, cuda: bool
) -> Path:
    """Write ``iter_XXXXXXX/`` on all ranks, then move the marker to it (rank 0)."""
    from megatron.core import dist_checkpointing

    rank = torch.distributed.get_rank()
    ckpt = iteration_dir(args.save, train_state.iteration)
    if rank == 0:
        if ckpt.exists():  # a partial folder from an interrupted save of this same iteration
            shutil.rmtree(ckpt)
        ckpt.mkdir(parents=True)
    torch.distributed.barrier()
    state = _sharded_state_dict(
        model,
        optimizer,
        scheduler,
        train_state,
        args,
        cuda,
        loading=False,
        with_optim=not args.no_save_optim,
        with_rng=not args.no_save_rng,
    )
    dist_checkpointing.save(state, str(ckpt))
    torch.distributed.barrier()
    if rank == 0:
        tmp = Path(args.save) / f".{TRACKER}.tmp"
        tmp.write_text(f"{train_state.iteration}\n")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, Path(args.save) / TRACKER)
    torch.distributed.barrier()
    return ckpt


def load_checkpoint(args: argparse.Namespace, model, optimizer, scheduler, cuda: bool) -> TrainState | None:
    """Resume from ``--load`` (the marker's iteration); None when there is no checkpoint yet."""
    from megatron.core import dist_checkpointing

    iteration = read_tracker(args.load)
    if iteration is None:
        return None
    ckpt = iteration_dir(args.load, iteration)
    if not ckpt.is_dir():
        from ..errors import UsageError

        raise UsageError(f"{Path(args.load) / TRACKER} names iteration {iteration} but {ckpt} is missing")
    with_optim = not (args.no_load_optim or args.finetune)
    with_rng = not (args.no_load_rng or args.finetune)
    common = dist_checkpointing.load_common_state_dict(str(ckpt))
    saved_has_optim = "optimizer" in common or "opt_param_scheduler" in common
    with_optim = with_optim and saved_has_optim
    state = _sharded_state_dict(
        model,
        optimizer,
        scheduler,
        TrainState(),
        args,
        cuda,
        loading=True,
        with_optim=with_optim,
        with_rng=with_rng and "rng_state" in _saved_keys(ckpt),
    )
    loaded = dist_checkpointing.load(state, str(ckpt))
    model = unwrap(model)
    if len(model) == 1:
        model[0].load_state_dict(loaded["model"], strict=True)
    else:
        for i, chunk in enumerate(model):
            chunk.load_state_dict(loaded[f"model{i}"], strict=True)
    if with_optim:
        optimizer.load_state_dict(loaded["optimizer"])
        scheduler.load_state_dict(loaded["opt_param_scheduler"])
    if "rng_state" in loaded and with_rng:
        _set_rng_state(loaded["rng_state"][0], cuda)
    if args.finetune:
        return TrainState()
    return TrainState(**loaded["train_state"])


def _saved_keys(ckpt: Path) -> set[str]:
    """Top-level keys of the sharded objects saved (their files are named after the key)."""
    from megatron.core import dist_checkpointing

    try:
        meta = dist_checkpointing.load_sharded_metadata(str(ckpt))
    except Exception:  # noqa: BLE001 - older layouts: assume the RNG state is there
        return {"rng_state"}
    return {k.split("/")[0] for k in meta}
