"""Subcommands of the ``convert`` room: ``workshop import-hf`` and ``workshop export-hf``.

Handlers import torch and safetensors lazily, so ``workshop --help`` stays instant.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``import-hf`` and ``export-hf`` (see the contract's continued pre-training section)."""
    p = sub.add_parser(
        "import-hf",
        help="convert a local Hugging Face model (Llama, Mistral, Qwen2, Mixtral) to a Megatron checkpoint",
        description="Read config.json and *.safetensors from --hf-dir one tensor at a time and write a "
        "megatron-core torch_dist checkpoint the trainer starts from, with the Megatron flags that "
        "describe the model in <save>/workshop_model.json and the tokenizer in <save>/tokenizer.",
    )
    p.add_argument("--hf-dir", required=True, help="local Hugging Face model folder (nothing is downloaded)")
    p.add_argument(
        "--save", required=True, help="new output folder (the trainer's --load/--pretrained-checkpoint)"
    )
    p.add_argument(
        "--tensor-model-parallel-size", type=int, default=1, help="TP the vocabulary is padded for"
    )
    p.add_argument(
        "--pipeline-model-parallel-size", type=int, default=1, help="checked against the layer count"
    )
    p.add_argument("--expert-model-parallel-size", type=int, default=1, help="checked against the experts")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_import)

    p = sub.add_parser(
        "export-hf",
        help="convert a Megatron checkpoint (any TP/PP) back to a Hugging Face folder",
        description="Gather the model weights of a torch_dist checkpoint (optimizer state ignored) into "
        "config.json + safetensors shards + model.safetensors.index.json (+ tokenizer files) that "
        "transformers.AutoModelForCausalLM.from_pretrained loads. Written atomically.",
    )
    p.add_argument("--load", required=True, help="the trainer's --save folder, or one iter_* folder in it")
    p.add_argument("--hf-dir", required=True, help="new output folder")
    p.add_argument(
        "--dtype", choices=("float32", "bfloat16", "float16"), default=None, help="default: as stored"
    )
    p.add_argument("--max-shard-size", default="5GB", help="largest safetensors shard (bytes, or 5GB, 500MB)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_export)


def _import(args: argparse.Namespace) -> int:
    from ..cli import print_json, progress
    from .importer import import_hf

    result = import_hf(
        args.hf_dir,
        args.save,
        tp=args.tensor_model_parallel_size,
        pp=args.pipeline_model_parallel_size,
        ep=args.expert_model_parallel_size,
        progress=progress,
    )
    if args.json:
        print_json(result)
    else:
        print(f"wrote {result['save']} ({result['architecture']}, {result['parameters']:,} parameters)")
        print("Megatron flags: " + " ".join(result["megatron_flags"]))
    return 0


def _export(args: argparse.Namespace) -> int:
    from ..cli import print_json, progress
    from .exporter import export_hf

    result = export_hf(
        args.load, args.hf_dir, dtype=args.dtype, max_shard_size=args.max_shard_size, progress=progress
    )
    if args.json:
        print_json(result)
    else:
        for note in result["notes"]:
            progress(f"note: {note}")
        print(f"wrote {result['hf_dir']} ({result['architecture']}, {len(result['shards'])} shard(s))")
    return 0
