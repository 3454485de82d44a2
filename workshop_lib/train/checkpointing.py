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

from ..facts import megatron_flags
from ..paths import CHECKPOINT_TRACKER, MODEL_JSON

TRACKER = CHECKPOINT_TRACKER


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
    _load_weights(model, loaded)
    if with_optim:
        optimizer.load_state_dict(loaded["optimizer"])
        scheduler.load_state_dict(loaded["opt_param_scheduler"])
    if "rng_state" in loaded and with_rng:
        _set_rng_state(loaded["rng_state"][0], cuda)
    if args.finetune:
        optimizer.reload_model_params()  # fp32 main params are copies: refresh them from the weights
        return TrainState()
    return TrainState(**loaded["train_state"])


def _load_weights(model, loaded: dict) -> None:
    """Put the loaded ``model``/``model{i}`` entries into the model chunks (strict: every key)."""
    chunks = unwrap(model)
    if len(chunks) == 1:
        chunks[0].load_state_dict(loaded["model"], strict=True)
    else:
        for i, chunk in enumerate(chunks):
            chunk.load_state_dict(loaded[f"model{i}"], strict=True)


def _saved_keys(ckpt: Path) -> set[str]:
    """Top-level keys of the sharded objects saved (their files are named after the key)."""
    from megatron.core.dist_checkpointing.serialization import load_sharded_metadata

    try:
        meta = load_sharded_metadata(str(ckpt))
    except Exception:  # noqa: BLE001 - older layouts: assume the RNG state is there
        return {"rng_state"}
    return {k.split("/")[0] for k in meta}


# --- Starting from someone else's weights (continued pre-training) --------------------------------

MODEL_META = MODEL_JSON
"""Written by ``workshop import-hf`` beside an imported checkpoint: the model's flags and vocabulary."""
META_MAX_BYTES = 4 << 20

# The flags that fix the shapes of a GPT model's tensors (the flag table's ``shape`` rows), as
# (argparse attribute, flag as a user writes it).
SHAPE_FLAGS: tuple[tuple[str, str], ...] = tuple(
    (f.dest, f"--{f.name}") for f in megatron_flags.FLAGS if f.shape
)


@dataclass
class Start:
    """Where a run's weights come from: its own checkpoint (resume) or a pretrained one (weights only)."""

    kind: str  # "resume" | "pretrained"
    root: Path
    ckpt: Path
    saved: dict  # every flag the checkpoint records (dest name -> value), possibly empty
    source: str  # where ``saved`` was read from, for messages
    vocab_size: int | None  # the model's (unpadded) vocabulary, when the checkpoint says it


def resolve_start(args: argparse.Namespace) -> Start | None:
    """Resume from ``--load`` when it holds a checkpoint, else start from ``--pretrained-checkpoint``.

    This is Megatron-LM's rule: a restarted continued-pre-training job (a pod rescheduled after a
    node failure) must pick up its own latest checkpoint, not the base model again, so ``--load``
    wins whenever its marker exists.
    """
    if args.load and read_tracker(args.load) is not None:
        root, kind = Path(args.load), "resume"
    elif getattr(args, "pretrained_checkpoint", None):
        root, kind = Path(args.pretrained_checkpoint), "pretrained"
        if read_tracker(root) is None:
            from ..errors import UsageError

            raise UsageError(
                f"--pretrained-checkpoint {root}: no {TRACKER} there; give the folder `workshop import-hf "
                "--save` wrote (or a --save folder of an earlier run)"
            )
    else:
        return None
    from .trust import check_checkpoint_trusted

    # Reading a checkpoint unpickles parts of it: refuse files someone else could have written first.
    check_checkpoint_trusted(root, flag="--load" if kind == "resume" else "--pretrained-checkpoint")
    iteration = read_tracker(root)
    ckpt = iteration_dir(root, iteration)
    if not ckpt.is_dir() and (root / "release").is_dir():
        ckpt = root / "release"
    if not ckpt.is_dir():
        from ..errors import UsageError

        raise UsageError(f"{root / TRACKER} names iteration {iteration} but {ckpt} is missing")
    saved, source, vocab = _saved_model_flags(root, ckpt)
    return Start(kind, root, ckpt, saved, source, vocab)


def _saved_model_flags(root: Path, ckpt: Path) -> tuple[dict, str, int | None]:
    """The flags a checkpoint was made with, read once for every later use (shape checks, evaluate):
    ``workshop_model.json`` (import-hf, defaults filled) or the ``args`` the trainer stores in every
    checkpoint's common state."""
    import json

    meta = root / MODEL_META
    if meta.is_file():
        from ..errors import UsageError

        if meta.stat().st_size > META_MAX_BYTES:
            raise UsageError(f"{meta}: larger than {META_MAX_BYTES >> 20} MiB; not a model description")
        try:
            doc = json.loads(meta.read_text(encoding="utf-8"))
            flags = [str(t) for t in doc["megatron_flags"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{meta}: not a model description ({exc}); re-run workshop import-hf") from None
        saved = vars(model_namespace(flags))
        if doc.get("padded_vocab_size"):
            saved["padded_vocab_size"] = int(doc["padded_vocab_size"])
        vocab = doc.get("vocab_size")
        return saved, str(meta), int(vocab) if isinstance(vocab, int) else None
    try:
        from megatron.core import dist_checkpointing

        common = dist_checkpointing.load_common_state_dict(str(ckpt))
    except Exception:  # noqa: BLE001 - a checkpoint without common state: the shape check still runs
        return {}, str(ckpt), None
    saved = dict(common.get("args") or {})
    vocab = saved.get("vocab_size")
    return saved, f"{ckpt} (the flags saved with it)", int(vocab) if isinstance(vocab, int) else None


def model_namespace(flags: list[str]) -> argparse.Namespace:
    """The trainer's flags (defaults filled and derived values set, as for a run) from argv tokens."""
    from .arguments import _normalize, build_parser

    ns, _rest = build_parser().parse_known_args(flags)
    _normalize(ns)
    return ns


def _show(flag: str, value) -> str:
    if isinstance(value, bool):
        return flag if value else f"no {flag}"
    return f"{flag} {value}"


def check_model_flags(args: argparse.Namespace, start: Start, vocab_size: int | None = None) -> None:
    """Refuse, before any step, flags that describe another model than the checkpoint holds.

    Names the first flag that differs and its value in the checkpoint, which is what a user needs
    to fix (a shape error from deep inside dist_checkpointing names a tensor, not a flag).
    """
    from ..errors import UsageError

    for key, flag in SHAPE_FLAGS:
        if key not in start.saved:
            continue
        ours, theirs = getattr(args, key, None), start.saved[key]
        if key == "moe_ffn_hidden_size" and not (args.num_experts or start.saved.get("num_experts")):
            continue
        if (
            bool(ours) != bool(theirs)
            if isinstance(theirs, bool) or isinstance(ours, bool)
            else ours != theirs
        ):
            raise UsageError(
                f"{start.root}: the flags describe another model than the checkpoint: {_show(flag, ours)} "
                f"here, {_show(flag, theirs)} in the checkpoint ({start.source}); use the checkpoint's model flags"
            )
    # The padding may differ (a model imported for TP=1 trained at TP=2): megatron-core loads the
    # embedding and output rows with allow_shape_mismatch. What must hold is that every token id the
    # tokenizer can produce has a row in the checkpoint.
    theirs = start.saved.get("padded_vocab_size")
    ours = vocab_size or getattr(args, "vocab_size", None) or 0
    if theirs and ours > theirs:
        raise UsageError(
            f"{start.root}: the vocabulary here has {ours} tokens (tokenizer or --vocab-size) but the "
            f"checkpoint's embedding has {theirs} rows ({start.source}); ids past {theirs - 1} would have no "
            "trained embedding: use the model's tokenizer"
            + (f" and its --vocab-size {start.vocab_size}" if start.vocab_size else "")
        )


def check_shapes(model, start: Start) -> None:
    """Compare every tensor this rank would load with the checkpoint's global shapes (the safety net
    under :func:`check_model_flags`, for checkpoints whose flags are not recorded)."""
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.dict_utils import nested_values
    from megatron.core.dist_checkpointing.mapping import ShardedTensor, apply_factories

    from ..errors import UsageError

    saved = dist_checkpointing.load_tensors_metadata(str(start.ckpt))
    for chunk in unwrap(model):
        sd = chunk.sharded_state_dict()
        apply_factories(sd)
        for st in nested_values(sd):
            if not isinstance(st, ShardedTensor) or st.key.endswith("_extra_state"):
                continue
            got = saved.get(st.key)
            if got is None:
                raise UsageError(
                    f"{start.ckpt}: has no tensor {st.key} that these flags build ({_hint(st.key)}); "
                    "use the checkpoint's model flags"
                )
            got_shape, want = tuple(got.global_shape), tuple(st.global_shape)
            if st.key.endswith(_VOCAB_ROWS):  # padded rows may differ (see check_model_flags)
                got_shape, want = got_shape[1:], want[1:]
            if got_shape != want:
                raise UsageError(
                    f"{start.ckpt}: {st.key} is {tuple(got.global_shape)} in the checkpoint but "
                    f"{tuple(st.global_shape)} with these flags ({_hint(st.key)})"
                )


# Tensors whose first dimension is the padded vocabulary (loaded with allow_shape_mismatch).
_VOCAB_ROWS = ("embedding.word_embeddings.weight", "output_layer.weight")


def _hint(key: str) -> str:
    """The flags that set a tensor's shape, from its megatron-core name."""
    for part, flags in (
        ("word_embeddings", "vocabulary (tokenizer/--vocab-size) and --hidden-size"),
        ("output_layer", "--untie-embeddings-and-output-weights, vocabulary, --hidden-size"),
        ("linear_qkv.bias", "--add-qkv-bias"),
        ("linear_qkv", "--num-attention-heads, --num-query-groups, --kv-channels, --hidden-size"),
        ("linear_proj", "--num-attention-heads, --kv-channels, --hidden-size"),
        ("router", "--num-experts"),
        ("experts", "--num-experts, --moe-ffn-hidden-size"),
        ("linear_fc1", "--ffn-hidden-size, --swiglu"),
        ("linear_fc2", "--ffn-hidden-size"),
        ("layernorm", "--normalization, --qk-layernorm"),
        ("layers.", "--num-layers"),
    ):
        if part in key:
            return "set by " + flags
    return "see the checkpoint's model flags"


def load_pretrained(args: argparse.Namespace, model, optimizer, scheduler, start: Start, cuda: bool) -> None:
    """Weights only, as Megatron-LM's ``--pretrained-checkpoint`` / ``--finetune``: no optimizer
    state, no RNG, no iteration; the run starts at iteration 0 with its own LR warm-up."""
    from megatron.core import dist_checkpointing

    check_shapes(model, start)
    state = _sharded_state_dict(
        model, None, scheduler, TrainState(), args, cuda, loading=True, with_optim=False, with_rng=False
    )
    state = {k: v for k, v in state.items() if k.startswith("model")}
    loaded = dist_checkpointing.load(state, str(start.ckpt))
    _load_weights(model, loaded)
    optimizer.reload_model_params()  # fp32 main params are copies: refresh them from the weights


TOKENIZER_MAX_BYTES = 64 << 20


def _hf_vocab(path: Path) -> dict | None:
    """token -> id of a Hugging Face ``tokenizer.json`` (file or folder), None when there is none."""
    import json

    f = path / "tokenizer.json" if path.is_dir() else path
    if f.name != "tokenizer.json" or not f.is_file() or f.stat().st_size > TOKENIZER_MAX_BYTES:
        return None
    try:
        doc = json.loads(f.read_text(encoding="utf-8"))
        vocab = dict(doc["model"]["vocab"])
    except (ValueError, KeyError, TypeError):
        return None
    for tok in doc.get("added_tokens") or []:
        if isinstance(tok, dict) and "content" in tok and "id" in tok:
            vocab[tok["content"]] = tok["id"]
    return vocab


def check_tokenizer(args: argparse.Namespace, start: Start) -> None:
    """Refuse a tokenizer that is not the model's own (``import-hf`` copies it to ``<root>/tokenizer``).

    Two tokenizers of the same size give no shape error, yet every id means another string: the run
    would train on noise. Compared token by token, not by size.
    """
    from ..errors import UsageError

    if args.tokenizer_type != "HuggingFaceTokenizer" or not args.tokenizer_model:
        return
    theirs = _hf_vocab(start.root / "tokenizer")
    ours = _hf_vocab(Path(args.tokenizer_model))
    if theirs is None or ours is None or theirs == ours:
        return
    differ = sum(1 for tok, i in ours.items() if theirs.get(tok) != i)
    raise UsageError(
        f"--tokenizer-model {args.tokenizer_model} is not the tokenizer of the model in {start.root}: "
        f"{differ} of its {len(ours)} tokens map to other ids; tokenize with {start.root / 'tokenizer'} "
        "(workshop prep-data --tokenizer-model ...) and train with it"
    )
