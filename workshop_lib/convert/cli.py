"""Subcommands of the ``convert`` room: ``workshop import-hf`` and ``workshop export-hf``.

Handlers import torch and safetensors lazily, so ``workshop --help`` stays instant.
"""

from __future__ import annotations

import argparse

from ..cli_output import emit_text, print_json, progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``import-hf`` and ``export-hf`` (docs/cli.md, "Continued pre-training")."""
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

    p = sub.add_parser(
        "render-import-job",
        help="render a Kubernetes Job that imports the base model on the shared volume",
        description="One pod (no GPU) runs workshop import-hf where the weights are: on the shared volume. "
        "With --hf-repo an init container downloads the model first; a gated model's token is a Secret "
        "reference (--hf-token-secret), never text in the manifest.",
    )
    p.add_argument(
        "--hf-dir", required=True, help="the Hugging Face folder as the pod sees it (under --mount-path)"
    )
    p.add_argument("--save", required=True, help="the checkpoint folder to write (under --mount-path)")
    p.add_argument("--hf-repo", default=None, help="download this Hub model into --hf-dir first (owner/name)")
    p.add_argument("--hf-revision", default=None, help="branch, tag or commit of --hf-repo")
    p.add_argument(
        "--hf-token-secret", default=None, help="Kubernetes Secret holding the Hub token (gated models)"
    )
    p.add_argument("--hf-token-key", default="token", help="key of the token in that Secret")
    p.add_argument(
        "--tensor-model-parallel-size", type=int, default=1, help="TP the vocabulary is padded for"
    )
    p.add_argument(
        "--pipeline-model-parallel-size", type=int, default=1, help="checked against the layer count"
    )
    p.add_argument("--name", default="import-base-model")
    p.add_argument("--namespace", default="megatron-workshop")
    p.add_argument("--image", default=None, help="the trainer image (default: the kit's ECR example)")
    p.add_argument("--pvc", default="fsx-shared-pvc")
    p.add_argument("--mount-path", default="/shared")
    p.add_argument("--cpus", type=int, default=4)
    p.add_argument("--memory", default="32Gi", help="the largest tensor plus headroom suffices (streaming)")
    p.add_argument("--out", default=None, help="write the YAML here instead of stdout")
    p.set_defaults(func=_render_import_job)


def _import(args: argparse.Namespace) -> int:
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


def _render_import_job(args: argparse.Namespace) -> int:
    from .cluster_job import DEFAULT_IMAGE, render_import_job, to_yaml

    job = render_import_job(
        args.hf_dir,
        args.save,
        hf_repo=args.hf_repo,
        hf_revision=args.hf_revision,
        hf_token_secret=args.hf_token_secret,
        hf_token_key=args.hf_token_key,
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        name=args.name,
        namespace=args.namespace,
        image=args.image or DEFAULT_IMAGE,
        pvc=args.pvc,
        mount_path=args.mount_path,
        cpus=args.cpus,
        memory=args.memory,
    )
    emit_text(to_yaml(job), args.out)
    return 0
