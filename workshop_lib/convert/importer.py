"""``workshop import-hf``: a Hugging Face folder to a checkpoint the trainer starts from.

Output (``--save DIR``)::

    DIR/latest_checkpointed_iteration.txt   "release"  (the trainer reads it as iteration 0)
    DIR/iter_0000000/                        torch_dist: .metadata, __0_*.distcp, common.pt, metadata.json
    DIR/workshop_model.json                  architecture, megatron_flags, hf_config, vocab sizes, source
    DIR/tokenizer/                           the HF tokenizer files, for prep-data and export

The checkpoint holds only the model (``model`` key: exactly the keys of ``GPTModel.sharded_state_dict()``
for the model those flags build) plus ``iteration``/``train_state`` at 0, so both the trainer's
``--load`` and a weights-only start find what they need. It is assembled in a temporary folder next
to DIR and renamed into place, so an interrupted import leaves no DIR that looks complete.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ..errors import UsageError
from ..paths import CHECKPOINT_TRACKER, MODEL_JSON
from . import hfconfig, layout
from .hf_io import TOKENIZER_FILES, HFWeights

TRACKER = CHECKPOINT_TRACKER
ITER_DIR = "iter_0000000"


def peak_rss_bytes() -> int:
    """The process's peak resident set (Linux reports kilobytes)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r) * (1 if sys.platform == "darwin" else 1024)


def _qkv(spec: hfconfig.ModelSpec, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q/k/v (weights [out, in] or biases [out]) interleaved per query group, megatron-core's order."""
    G, D = spec.num_query_groups, spec.kv_channels
    per = spec.num_attention_heads // G
    rest = q.shape[1:]
    return torch.cat(
        [q.reshape(G, per * D, *rest), k.reshape(G, D, *rest), v.reshape(G, D, *rest)], dim=1
    ).reshape(-1, *rest)


def _check_source_shapes(spec: hfconfig.ModelSpec, weights: HFWeights) -> dict[str, torch.dtype]:
    """Every source tensor has the shape the config implies (header only); returns dtypes by name."""
    want = layout.hf_shapes(spec)
    weights.check_names(want, optional=("lm_head.weight",) if spec.tied else ())
    dtypes = {}
    for name, shape in want.items():
        got, dtype = weights.meta(name)
        if got != shape:
            raise UsageError(
                f"{weights.where[name]}: tensor {name} has shape {list(got)}, but config.json implies {list(shape)}"
            )
        dtypes[name] = dtype
    return dtypes


def import_hf(
    hf_dir: str | os.PathLike[str],
    save: str | os.PathLike[str],
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    progress=None,
) -> dict[str, Any]:
    """Convert ``hf_dir`` into a Megatron checkpoint at ``save``; returns docs/cli.md's JSON object."""
    t0 = time.time()
    hf = Path(hf_dir)
    if not hf.is_dir():
        raise UsageError(f"--hf-dir {hf}: not a folder; pass a local Hugging Face model folder")
    spec, raw_cfg = hfconfig.load_spec(hf)
    spec.check_parallel(tp, pp, ep)
    out = Path(save)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--save {out}: exists and is not empty; give a new folder (nothing is overwritten)")
    weights = HFWeights(hf)
    dtypes = _check_source_shapes(spec, weights)
    divisor = hfconfig.vocab_divisor(spec.vocab_size, tp)
    padded = hfconfig.padded_vocab(spec.vocab_size, divisor, tp)
    flags = spec.megatron_flags(divisor)
    for w in spec.warnings:
        (progress or (lambda m: None))(f"warning: {w}")

    blocks: list = []
    from .dcp_io import Block

    entries = layout.entries(spec, padded)
    for entry in entries:
        dtype = dtypes[next(p.source[0] for p in entry.pieces if p.source)]
        for piece in entry.pieces:
            blocks.append(
                Block(
                    entry.key,
                    entry.shape,
                    piece.offsets,
                    piece.sizes,
                    dtype,
                    _computer(spec, weights, piece, dtype),
                )
            )
    parameters = sum(_numel(e.shape) for e in entries)
    objects_bytes = None
    from .dcp_io import none_object_bytes, write_checkpoint

    objects_bytes = none_object_bytes()
    objects = {k: objects_bytes for k in layout.extra_state_keys(spec)}
    common = {
        "checkpoint_version": 3.0,
        "iteration": 0,
        "train_state": {
            "iteration": 0,
            "consumed_train_samples": 0,
            "consumed_valid_samples": 0,
            "skipped_iterations": 0,
            "floating_point_operations_so_far": 0.0,
        },
    }
    total = len(blocks)
    done = [0]

    def on_written(_block) -> None:
        done[0] += 1
        if progress and (done[0] % 50 == 0 or done[0] == total):
            progress(f"import-hf: wrote {done[0]}/{total} blocks")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        ckpt = tmp / ITER_DIR
        ckpt.mkdir()
        write_checkpoint(ckpt, blocks, objects, common, on_written)
        tok_dir = tmp / "tokenizer"
        copied = []
        for name in TOKENIZER_FILES:
            src = hf / name
            if src.is_file():
                tok_dir.mkdir(exist_ok=True)
                shutil.copyfile(src, tok_dir / name)
                copied.append(name)
        model_json = {
            "architecture": spec.architecture,
            "megatron_flags": flags,
            "hf_config": raw_cfg,
            "vocab_size": spec.vocab_size,
            "padded_vocab_size": padded,
            "make_vocab_size_divisible_by": divisor,
            "tensor_model_parallel_size": tp,
            "pipeline_model_parallel_size": pp,
            "expert_model_parallel_size": ep,
            "dtype": str(next(iter(dtypes.values()))).removeprefix("torch."),
            "sliding_window": spec.sliding_window,
            "tokenizer_files": copied,
            "source": str(hf.resolve()),
        }
        (tmp / MODEL_JSON).write_text(json.dumps(model_json, indent=2) + "\n")
        (tmp / TRACKER).write_text("release\n")
        if out.exists():
            out.rmdir()  # checked empty above
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {
        "save": str(out),
        "architecture": spec.architecture,
        "megatron_flags": flags,
        "parameters": parameters - (padded - spec.vocab_size) * spec.hidden_size * (1 if spec.tied else 2),
        "padded_vocab_size": padded,
        "tensor_model_parallel_size": tp,
        "tokenizer": str(out / "tokenizer") if copied else None,
        "warnings": list(spec.warnings),
        "seconds": time.time() - t0,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _computer(spec: hfconfig.ModelSpec, weights: HFWeights, piece: layout.Piece, dtype: torch.dtype):
    """A function that reads this piece's HF tensors (only when called) and returns the block."""

    def compute() -> torch.Tensor:
        if piece.kind == "zeros":
            return torch.zeros(piece.sizes, dtype=dtype)
        if piece.kind == "qkv":
            q, k, v = (weights.get(n) for n in piece.source)
            t = _qkv(spec, q, k, v)
        else:
            t = weights.get(piece.source[0])
        return t.to(dtype).reshape(piece.sizes)

    return compute
