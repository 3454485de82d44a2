"""``workshop evaluate``: the loss a checkpoint's model gets on held-out text.

This is the first question of continued pre-training: did the domain loss fall, and how much did
the general loss rise? Answering it needs the *same tokens* scored for the base model and for the
trained one, so by default every token of each dataset is scored exactly once: the documents are
concatenated as megatron-core's GPTDataset packs them (each already ends with its end-of-document
token) and cut into consecutive windows of ``--seq-length`` tokens, each predicting the next token
(the last window may be shorter). The loss is the mean next-token cross-entropy in nats over all
scored tokens, and the perplexity its exponential.

The model comes from the checkpoint alone: its flags from ``workshop_model.json`` (an imported
model) or from the ``args`` the trainer saves in every checkpoint; its weights through megatron-core's
``dist_checkpointing`` whatever TP/PP layout wrote them (one process, TP=PP=1 here: the checkpoint
holds global tensors). The vocabulary rows are read from the checkpoint, so a model padded for TP=8
is scored as saved.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
import warnings

from ..errors import UsageError
from ..paths import CHECKPOINT_TRACKER

MAX_SEQ_LENGTH = 1 << 16


def _model_args(start) -> argparse.Namespace:
    """Every flag of the checkpoint's model, defaults filled, for one CPU/GPU process."""
    from . import checkpointing

    if not start.saved.get("num_layers"):
        raise UsageError(
            f"{start.ckpt}: the checkpoint does not record its model flags (no {checkpointing.MODEL_META} "
            "beside it and no saved args); it was not written by workshop train or import-hf"
        )
    ns = checkpointing.model_namespace([])
    for key, value in start.saved.items():
        if hasattr(ns, key):
            setattr(ns, key, value)
    # One process, no parallelism, no dropout, full precision on the CPU.
    for key, value in (
        ("tensor_model_parallel_size", 1),
        ("pipeline_model_parallel_size", 1),
        ("virtual_pipeline_model_parallel_size", None),
        ("num_layers_per_virtual_pipeline_stage", None),
        ("context_parallel_size", 1),
        ("expert_model_parallel_size", 1),
        ("expert_tensor_parallel_size", 1),
        ("sequence_parallel", False),
        ("hidden_dropout", 0.0),
        ("attention_dropout", 0.0),
        ("recompute_granularity", None),
        ("recompute_method", None),
        ("recompute_num_layers", None),
        ("fp8_format", None),
        ("use_distributed_optimizer", False),
        ("overlap_grad_reduce", False),
        ("overlap_param_gather", False),
        ("moe_grouped_gemm", False),
    ):
        setattr(ns, key, value)
    import torch

    if not torch.cuda.is_available():
        ns.bf16 = ns.fp16 = False
        ns.params_dtype = "fp32"
        if getattr(ns, "moe_token_dispatcher_type", None) == "alltoall":
            ns.moe_token_dispatcher_type = "allgather"
    ns.params_dtype = "bf16" if ns.bf16 else ("fp16" if ns.fp16 else "fp32")
    return ns


def _init_single_process():
    """torch.distributed and megatron-core's process groups for one process (world size 1)."""
    import torch
    from megatron.core import parallel_state as ps

    from .device import detect, use_cpu
    from .launcher import free_port

    if torch.distributed.is_initialized():
        return detect()
    os.environ.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"})
    os.environ["MASTER_PORT"] = str(free_port())
    device = detect()
    if not device.cuda:
        use_cpu()
    torch.distributed.init_process_group(backend=device.backend, world_size=1, rank=0)
    ps.initialize_model_parallel()
    return device


def _close() -> None:
    import torch
    from megatron.core import parallel_state as ps

    ps.destroy_model_parallel()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _tokens(prefix: str):
    """All tokens of an indexed dataset, documents in order (each ends with its EOD when prepared so)."""
    import numpy as np

    from ..data.indexed import IndexedDatasetReader, bin_path, idx_path, strip_suffix

    prefix = strip_suffix(prefix)
    for p in (idx_path(prefix), bin_path(prefix)):
        if not p.is_file():
            raise UsageError(f"--data-path {prefix}: {p} not found (give the prep-data output prefix)")
    reader = IndexedDatasetReader(prefix)
    parts = [reader.sequence(i) for i in range(len(reader))]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)


def evaluate(*args, **kwargs) -> dict:
    """Loss and perplexity of the model in ``load`` on each dataset (see :func:`_evaluate`).

    megatron-core and torch print a wall of known, harmless warnings on a CPU without Transformer
    Engine or Apex (and for torch.distributed.checkpoint's deprecated names); they are kept out of
    the notebook and the terminal here, where they would bury the one table that matters.
    """
    with _quiet():
        return _evaluate(*args, **kwargs)


@contextlib.contextmanager
def _quiet():
    """Keep megatron-core's known CPU warnings (no TE/Apex, deprecated DCP names) off the screen.

    Each by its exact category, message and module (``facts/library_warnings.py``): another warning
    is still shown.
    """
    from .log import ignore_known_warnings

    with warnings.catch_warnings():
        ignore_known_warnings(also_hidden=True)
        yield


def trained_seq_length(load: str | os.PathLike[str]) -> int | None:
    """The ``--seq-length`` a checkpoint's run trained with (its saved flags), None when not recorded."""
    from . import checkpointing

    with _quiet():
        start = checkpointing.resolve_start(argparse.Namespace(load=str(load), pretrained_checkpoint=None))
    value = start.saved.get("seq_length") if start else None
    return int(value) if isinstance(value, int) and value > 0 else None


def _evaluate(
    load: str | os.PathLike[str],
    data_paths: list[str],
    *,
    seq_length: int | None = None,
    eval_iters: int | None = None,
    micro_batch_size: int = 8,
) -> dict:
    """Loss and perplexity of the model in ``load`` on each dataset (see the module docstring)."""
    from megatron.core import dist_checkpointing

    from . import checkpointing
    from .model import build_model

    if micro_batch_size < 1:
        raise UsageError(f"--micro-batch-size must be at least 1, got {micro_batch_size}")
    if eval_iters is not None and eval_iters < 1:
        raise UsageError(
            f"--eval-iters must be at least 1, got {eval_iters} (leave it out to score every token)"
        )
    if not data_paths:
        raise UsageError("give at least one --data-path PREFIX")
    t0 = time.time()
    start = checkpointing.resolve_start(argparse.Namespace(load=str(load), pretrained_checkpoint=None))
    if start is None:
        raise UsageError(
            f"--load {load}: no {checkpointing.TRACKER} there; give a --save folder of workshop train "
            "or of workshop import-hf"
        )
    args = _model_args(start)
    if seq_length is None:
        seq_length = min(args.max_position_embeddings or args.seq_length or 2048, 4096)
    if not 1 <= seq_length <= MAX_SEQ_LENGTH:
        raise UsageError(f"--seq-length must be between 1 and {MAX_SEQ_LENGTH}, got {seq_length}")
    if args.position_embedding_type == "learned_absolute" and seq_length > args.max_position_embeddings:
        raise UsageError(
            f"--seq-length {seq_length} exceeds the model's --max-position-embeddings {args.max_position_embeddings}"
        )
    args.seq_length = seq_length
    datasets = [(p, _tokens(p)) for p in data_paths]  # refuse a bad path before building anything

    device = _init_single_process()
    try:
        rows = dist_checkpointing.load_tensors_metadata(str(start.ckpt))
        emb = rows.get("embedding.word_embeddings.weight")
        if emb is None:
            raise UsageError(f"{start.ckpt}: no embedding.word_embeddings.weight; not a GPT checkpoint")
        vocab_rows = int(emb.global_shape[0])
        args.padded_vocab_size = vocab_rows
        chunks, _config = build_model(args, device, vocab_rows)
        checkpointing.check_shapes(chunks, start)
        model = checkpointing.unwrap(chunks)[0]
        loaded = dist_checkpointing.load({"model": model.sharded_state_dict()}, str(start.ckpt))
        model.load_state_dict(loaded["model"], strict=True)
        model.eval()
        results = []
        for prefix, tokens in datasets:
            if tokens.size and int(tokens.max()) >= vocab_rows:
                raise UsageError(
                    f"--data-path {prefix}: token id {int(tokens.max())} is outside the model's {vocab_rows} "
                    "rows; the dataset was tokenized with another tokenizer than the model's"
                )
            results.append(
                {
                    "data_path": prefix,
                    **_score(model, tokens, seq_length, micro_batch_size, eval_iters, device),
                }
            )
    finally:
        _close()
    return {
        "load": str(load),
        "checkpoint": str(start.ckpt),
        "seq_length": seq_length,
        "results": results,
        "seconds": time.time() - t0,
    }


def _score(model, tokens, seq_length: int, mbs: int, eval_iters: int | None, device) -> dict:
    """Sum of next-token cross-entropy over consecutive windows; each token predicted once."""
    import torch

    n_windows = max(0, math.ceil((len(tokens) - 1) / seq_length))
    starts = [i * seq_length for i in range(n_windows)]
    if eval_iters is not None:
        starts = starts[: eval_iters * mbs]
    total, count = 0.0, 0
    dev = device.torch_device
    with torch.no_grad():
        full = [s for s in starts if s + seq_length + 1 <= len(tokens)]
        tail = [s for s in starts if s + seq_length + 1 > len(tokens)]
        for b in range(0, len(full), mbs):
            batch = torch.stack(
                [torch.from_numpy(tokens[s : s + seq_length + 1]) for s in full[b : b + mbs]]
            ).to(dev)
            total_b, count_b = _batch_loss(model, batch)
            total, count = total + total_b, count + count_b
        for s in tail:  # the last, shorter window
            window = torch.from_numpy(tokens[s:]).unsqueeze(0).to(dev)
            if window.shape[1] >= 2:
                total_b, count_b = _batch_loss(model, window)
                total, count = total + total_b, count + count_b
    loss = total / count if count else float("nan")
    return {
        "loss": loss,
        "perplexity": math.exp(loss) if count and loss < 700 else float("inf") if count else float("nan"),
        "tokens": count,
    }


def _batch_loss(model, batch) -> tuple[float, int]:
    import torch

    inputs, labels = batch[:, :-1].contiguous(), batch[:, 1:].contiguous()
    position_ids = torch.arange(inputs.shape[1], device=inputs.device).unsqueeze(0).expand_as(inputs)
    losses = model(inputs, position_ids, None, labels=labels)  # per-token cross-entropy, [b, s]
    return float(losses.float().sum().item()), int(labels.numel())


def format_table(result: dict) -> str:
    """The evaluation as a small text table (what the command prints without --json)."""
    lines = [f"{result['checkpoint']} (seq length {result['seq_length']})"]
    width = max([len(r["data_path"]) for r in result["results"]] + [9])
    lines.append(f"  {'data path':<{width}}  {'loss':>8}  {'ppl':>10}  {'tokens':>9}")
    for r in result["results"]:
        lines.append(
            f"  {r['data_path']:<{width}}  {r['loss']:8.4f}  {r['perplexity']:10.2f}  {r['tokens']:9d}"
        )
    return "\n".join(lines)


def before_after(run_dir=None, *, seq_length: int | None = None) -> dict:
    """Notebook 04's question: the base model and the trained one on the held-out domain and general
    text (``dataset.json``'s ``heldout``), written to ``<run>/monitor/evaluation.json``.

    Both models are scored on the same windows, at the sequence length the run trained with unless
    ``seq_length`` is given. Returns ``{"seq_length", "rows": [{"model", "set", "loss", "perplexity",
    "tokens"}], "domain_change", "general_change"}``; a change is trained minus base loss (negative: the
    model got better).
    """
    from ..fsutil import atomic_write_text
    from ..handover import read_dataset_info
    from ..paths import RunDir

    run = RunDir.at(run_dir)
    info = read_dataset_info(run)
    held = info.get("heldout")
    if not held:
        raise UsageError(
            f"{run.dataset_info}: no held-out sets; run notebook 01 to the end (replay and held-out)"
        )
    for what, path in (("base model", run.base), ("trained model", run.checkpoints)):
        if not (path / CHECKPOINT_TRACKER).is_file():
            raise UsageError(f"{path}: no {what} checkpoint; run notebook 03 first")
    sets = [("domain", held["domain"]), ("general", held["general"])]
    if seq_length is None:  # score both models at the length the run trained with
        seq_length = trained_seq_length(run.checkpoints)
    rows = []
    for model, path in (("base", run.base), ("trained", run.checkpoints)):
        res = evaluate(path, [p for _, p in sets], seq_length=seq_length)
        seq_length = res["seq_length"]
        for (name, _), r in zip(sets, res["results"], strict=True):
            rows.append({"model": model, "set": name, "loss": r["loss"], "perplexity": r["perplexity"],
                         "tokens": r["tokens"], "checkpoint": res["checkpoint"]})  # fmt: skip
    loss = {(r["model"], r["set"]): r["loss"] for r in rows}
    out = {
        "seq_length": seq_length,
        "rows": rows,
        "domain_change": loss[("trained", "domain")] - loss[("base", "domain")],
        "general_change": loss[("trained", "general")] - loss[("base", "general")],
    }
    run.monitor.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run.evaluation, json.dumps(out, indent=2) + "\n")
    return out
