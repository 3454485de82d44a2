"""``workshop export-hf``: a Megatron checkpoint (any TP/PP) back to a Hugging Face folder.

The checkpoint's global tensors are read block by block (:class:`~.dcp_io.DcpReader`), whatever
layout wrote them; optimizer state and RNG states in it are ignored. What model it is comes from
``workshop_model.json`` (written by import-hf) found by walking up from the checkpoint, or, for a
run that started from an imported checkpoint, next to the ``--pretrained-checkpoint``/``--load``
the trainer recorded in the checkpoint's ``args``; a model trained from scratch is described by
those ``args`` alone (Llama-shaped, or Qwen2-shaped with ``--add-qkv-bias``; anything else is one
line). Padded vocabulary rows are trimmed.

The folder is written under a temporary name next to ``--hf-dir`` and renamed at the end, so an
interrupted export leaves nothing that looks complete. Shards are streamed: each safetensors
header is written first and tensors are appended as they are computed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from ..errors import UsageError
from . import hfconfig, layout
from .dcp_io import DcpReader
from .hf_io import INDEX, TORCH_DTYPE_NAMES, SafetensorsStreamWriter
from .importer import MODEL_JSON, TRACKER, peak_rss_bytes

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def find_checkpoint(load: Path) -> tuple[Path, int | str]:
    """The torch_dist folder ``--load`` means: a save folder (via its tracker) or an iteration folder."""
    if not load.is_dir():
        raise UsageError(
            f"--load {load}: not a folder; pass the trainer's --save folder or one iter_* folder in it"
        )
    tracker = load / TRACKER
    if tracker.is_file():
        text = tracker.read_text().strip()
        if text == "release":
            for name in ("iter_0000000", "release"):
                if (load / name / "metadata.json").is_file():
                    return load / name, "release"
            raise UsageError(f"{tracker}: says 'release' but {load}/iter_0000000 is missing")
        try:
            it = int(text)
        except ValueError:
            raise UsageError(f"{tracker}: expected an iteration number, found {text[:40]!r}") from None
        ckpt = load / f"iter_{it:07d}"
        if not (ckpt / "metadata.json").is_file():
            raise UsageError(f"{tracker}: names iteration {it} but {ckpt} is missing or incomplete")
        return ckpt, it
    if (load / "metadata.json").is_file():
        return load, load.name
    raise UsageError(f"--load {load}: no {TRACKER} and no torch_dist checkpoint (metadata.json) in it")


def _walk_up(start: Path) -> Path | None:
    for d in (start, *start.resolve().parents):
        if (d / MODEL_JSON).is_file():
            return d / MODEL_JSON
    return None


def _read_model_json(path: Path) -> dict[str, Any]:
    try:
        desc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(desc.get("hf_config"), dict):
            raise ValueError("no hf_config object")
    except (OSError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: unreadable model description ({exc}); re-run workshop import-hf") from None
    return desc


def _common_args(ckpt: Path) -> dict[str, Any]:
    try:
        common = torch.load(ckpt / "common.pt", map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - missing or foreign common state is bad input
        raise UsageError(
            f"{ckpt}/common.pt: unreadable ({type(exc).__name__}); is this a trainer checkpoint?"
        ) from None
    args = common.get("args") if isinstance(common, dict) else None
    return args if isinstance(args, dict) else {}


def _spec_from_args(args: dict[str, Any], ckpt: Path) -> hfconfig.ModelSpec:
    """A Llama/Qwen2-shaped model from the trainer's stored flags, or one line saying why not."""
    src = f"{ckpt}/common.pt args"
    refuse = []
    if args.get("position_embedding_type") != "rope":
        refuse.append(f"--position-embedding-type {args.get('position_embedding_type')} (Llama needs rope)")
    if args.get("normalization") != "RMSNorm":
        refuse.append(f"--normalization {args.get('normalization')} (Llama needs RMSNorm)")
    if not args.get("swiglu"):
        refuse.append("no --swiglu")
    if not args.get("disable_bias_linear"):
        refuse.append("linear biases (no --disable-bias-linear)")
    if args.get("qk_layernorm"):
        refuse.append("--qk-layernorm")
    if args.get("num_experts"):
        refuse.append("--num-experts (MoE from scratch)")
    if args.get("rotary_percent", 1.0) != 1.0:
        refuse.append("--rotary-percent")
    if refuse:
        raise UsageError(
            f"{src}: no workshop_model.json found and the model is not Llama-shaped ({'; '.join(refuse)}); "
            "if it came from workshop import-hf, copy that import's workshop_model.json next to the checkpoint"
        )
    heads = int(args["num_attention_heads"])
    spec = hfconfig.ModelSpec(
        architecture="Qwen2ForCausalLM" if args.get("add_qkv_bias") else "LlamaForCausalLM",
        family="qwen2" if args.get("add_qkv_bias") else "llama",
        num_layers=int(args["num_layers"]),
        hidden_size=int(args["hidden_size"]),
        ffn_hidden_size=int(args["ffn_hidden_size"]),
        num_attention_heads=heads,
        num_query_groups=int(args["num_query_groups"] if args.get("group_query_attention") else heads),
        kv_channels=int(args.get("kv_channels") or int(args["hidden_size"]) // heads),
        max_position_embeddings=int(args.get("max_position_embeddings") or args.get("seq_length")),
        rotary_base=int(args.get("rotary_base", 10000)),
        norm_epsilon=float(args.get("norm_epsilon", 1e-5)),
        vocab_size=int(args.get("padded_vocab_size") or 0),
        tied=not args.get("untie_embeddings_and_output_weights"),
        qkv_bias=bool(args.get("add_qkv_bias")),
        init_method_std=float(args.get("init_method_std", 0.02)),
    )
    if args.get("use_rope_scaling"):
        spec.rope_scaling_factor = float(args.get("rope_scaling_factor", 8.0))
    if args.get("rotary_seq_len_interpolation_factor"):
        spec.rope_linear_factor = float(args["rotary_seq_len_interpolation_factor"])
    return spec


def _scratch_tokenizer(args: dict[str, Any]) -> tuple[Path | None, int | None]:
    """(tokenizer folder to copy, its vocabulary size) for a from-scratch model, when knowable."""
    if args.get("tokenizer_type") == "HuggingFaceTokenizer" and args.get("tokenizer_model"):
        folder = Path(args["tokenizer_model"])
        folder = folder if folder.is_dir() else folder.parent
        try:
            from ..data.tokenizer import load_tokenizer

            tok = load_tokenizer("HuggingFaceTokenizer", folder, engine="reference")
            return folder, max(tok.vocab_size, int(args.get("vocab_size") or 0))
        except Exception:  # noqa: BLE001 - then keep the padded vocabulary
            return None, None
    if args.get("tokenizer_type") == "NullTokenizer" and args.get("vocab_size"):
        return None, int(args["vocab_size"]) + 1
    return None, None


def describe(ckpt: Path) -> tuple[hfconfig.ModelSpec, dict[str, Any], Path | None, list[str]]:
    """(spec, HF config dict, tokenizer folder or None, notes) for the checkpoint at ``ckpt``."""
    notes: list[str] = []
    found = _walk_up(ckpt)
    args: dict[str, Any] | None = None
    if found is None:
        args = _common_args(ckpt)
        for key in ("pretrained_checkpoint", "load"):
            if args.get(key):
                found = _walk_up(Path(args[key]))
                if found:
                    notes.append(f"model description from {found} (the run's --{key.replace('_', '-')})")
                    break
    if found is not None:
        desc = _read_model_json(found)
        spec = hfconfig.spec_from_config(desc["hf_config"], str(found))
        tok = found.parent / "tokenizer"
        return spec, dict(desc["hf_config"]), tok if tok.is_dir() else None, notes
    spec = _spec_from_args(args or {}, ckpt)
    tok_dir, vocab = _scratch_tokenizer(args or {})
    if vocab:
        spec.vocab_size = vocab
    else:
        notes.append("tokenizer unknown: the padded vocabulary is exported as is")
    notes.append(
        "no workshop_model.json (walking up from the checkpoint or next to the run's --pretrained-checkpoint/"
        "--load): the model is described by the checkpoint's training flags"
    )
    return spec, hfconfig.hf_config_from_spec(spec, "float32"), tok_dir, notes


def _parse_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    t = text.strip().upper()
    for suffix, mult in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("GIB", 2**30), ("MIB", 2**20)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    return int(t)


def export_hf(
    load: str | os.PathLike[str],
    hf_dir: str | os.PathLike[str],
    *,
    dtype: str | None = None,
    max_shard_size: str | int = "5GB",
    progress=None,
) -> dict[str, Any]:
    """Write ``hf_dir`` from the checkpoint at ``load``; returns the JSON object of the command."""
    t0 = time.time()
    out = Path(hf_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--hf-dir {out}: exists and is not empty; give a new folder")
    try:
        shard_limit = _parse_size(max_shard_size)
    except ValueError:
        raise UsageError(f"--max-shard-size {max_shard_size!r}: give bytes or e.g. 5GB, 500MB") from None
    ckpt, iteration = find_checkpoint(Path(load))
    reader = DcpReader(ckpt)
    spec, hf_cfg, tok_dir, notes = describe(ckpt)
    emb = reader.shape("embedding.word_embeddings.weight")
    if emb is None:
        raise UsageError(f"{ckpt}: no embedding.word_embeddings.weight; not a GPT model checkpoint")
    if spec.vocab_size == 0:
        spec.vocab_size = emb[0]
    if emb[0] < spec.vocab_size:
        raise UsageError(
            f"{ckpt}: embedding has {emb[0]} rows, fewer than the vocabulary's {spec.vocab_size}"
        )
    entries = layout.entries(spec, emb[0])
    for e in entries:
        got = reader.shape(e.key)
        if got != e.shape:
            raise UsageError(
                f"{ckpt}: {e.key} has shape {list(got) if got else None}, the model description says "
                f"{list(e.shape)}; the checkpoint is not this model"
            )
    if dtype is not None and dtype not in DTYPES:
        raise UsageError(f"--dtype {dtype}: use one of {', '.join(DTYPES)}")
    out_dtype = DTYPES[dtype] if dtype else reader.dtype("decoder.final_layernorm.weight")
    shapes = layout.hf_shapes(spec)
    order = [n for e in entries for p in e.pieces for n in p.source]
    shards: list[list[str]] = [[]]
    size = 0
    elem = torch.empty((), dtype=out_dtype).element_size()
    for name in order:
        nbytes = layout_numel(shapes[name]) * elem
        if shards[-1] and size + nbytes > shard_limit:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    n = len(shards)
    files = [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)]
    shard_of = {name: i for i, names in enumerate(shards) for name in names}

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        writers: dict[int, SafetensorsStreamWriter] = {}
        total_bytes = 0

        def emit(name: str, t: torch.Tensor) -> None:
            nonlocal total_bytes
            i = shard_of[name]
            if i not in writers:
                for j in list(writers):  # shards are filled in order: close the previous one
                    writers.pop(j).close()
                writers[i] = SafetensorsStreamWriter(
                    tmp / files[i], [(x, shapes[x], out_dtype) for x in shards[i]]
                )
            writers[i].write(name, t.reshape(shapes[name]).to(out_dtype))
            total_bytes += t.numel() * elem

        done = 0
        for e in entries:
            for p in e.pieces:
                if p.kind == "zeros":
                    continue
                block = reader.read(e.key, p.offsets, p.sizes)
                if p.kind == "qkv":
                    for name, t in zip(p.source, _split_qkv(spec, block), strict=True):
                        emit(name, t)
                else:
                    emit(p.source[0], block)
                done += 1
            if progress:
                progress(f"export-hf: {e.key} done")
        for j in list(writers):
            writers.pop(j).close()
        index = {
            "metadata": {"total_size": total_bytes},
            "weight_map": {name: files[shard_of[name]] for name in order},
        }
        (tmp / INDEX).write_text(json.dumps(index, indent=2) + "\n")
        cfg = dict(hf_cfg)
        dtype_name = TORCH_DTYPE_NAMES[out_dtype]
        cfg["dtype" if "dtype" in cfg else "torch_dtype"] = dtype_name
        cfg["vocab_size"] = spec.vocab_size
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        copied = []
        if tok_dir is not None:
            from .hf_io import TOKENIZER_FILES

            for name in TOKENIZER_FILES:
                if (tok_dir / name).is_file():
                    shutil.copyfile(tok_dir / name, tmp / name)
                    copied.append(name)
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {
        "hf_dir": str(out),
        "load": str(ckpt),
        "iteration": iteration,
        "architecture": spec.architecture,
        "parameters": sum(layout_numel(shapes[n]) for n in order),
        "dtype": dtype_name,
        "shards": files,
        "tokenizer_files": copied,
        "notes": notes,
        "seconds": time.time() - t0,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def layout_numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _split_qkv(spec: hfconfig.ModelSpec, block: torch.Tensor) -> list[torch.Tensor]:
    """Inverse of the import's interleave: megatron-core's fused rows back to q, k, v."""
    G, D = spec.num_query_groups, spec.kv_channels
    per = spec.num_attention_heads // G
    rest = block.shape[2:]  # block is (1, rows, *rest)
    t = block.reshape(G, (per + 2) * D, *rest)
    q, k, v = torch.split(t, [per * D, D, D], dim=1)
    return [x.reshape(-1, *rest) for x in (q, k, v)]
