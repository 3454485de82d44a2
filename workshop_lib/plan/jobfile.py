"""The chosen plan as docs/cli.md's job YAML (``<run>/plan/job.yaml``), for notebook 03 and launch.

:func:`job_dict` builds the mapping (``yaml.safe_dump`` writes it); :func:`write_job_yaml` writes it
atomically. The training flags are the plan's model and parallel flags, the dataset and tokenizer
of ``<run>/data/dataset.json`` when notebook 01 wrote one (``data-path``, ``tokenizer-type``,
``tokenizer-model``; a Hugging Face tokenizer brings its own vocabulary, so there is no
``vocab-size`` flag for it), checkpoints saved to and loaded from the shared volume, and a
continued-pre-training schedule that the caller may override with ``extra_args``.

On a cluster the pods see the shared volume at ``storage.mount_path`` (``/shared``), so the dataset
and tokenizer paths are rewritten to ``<mount>/data/<file>`` and ``<mount>/tokenizer/<file>``
(copy them there: notebook 03 shows how); with ``backend: local`` they stay this machine's paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import UsageError
from ..facts import megatron_flags
from ..handover import read_dataset_info_if_any
from ..handover import write_job_yaml as write_job_yaml  # job.yaml's one writer, re-exported
from ..paths import RunDir

DEFAULT_IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/megatron-training:latest"

# A continued-pre-training schedule (override any of these with extra_args).
TRAINING_DEFAULTS: dict[str, Any] = {
    "train-iters": 1000,
    "lr": 3.0e-5,
    "min-lr": 3.0e-6,
    "lr-decay-style": "cosine",
    "lr-warmup-iters": 50,
    "weight-decay": 0.1,
    "clip-grad": 1.0,
    "adam-beta1": 0.9,
    "adam-beta2": 0.95,
    "init-method-std": 0.02,
    "split": "98,2,0",
    "log-interval": 10,
    "eval-interval": 200,
    "eval-iters": 10,
    "save-interval": 200,
}

# Flags of a plan that are model or parallel flags (kept in the job's args).
_DROP = {"model"}


def args_from_tokens(tokens: Sequence[str]) -> dict[str, Any]:
    """``["--tensor-model-parallel-size=2", "--bf16"]`` -> ``{"tensor-model-parallel-size": 2, "bf16": True}``.

    For a ``megatron_args`` list from ``workshop plan --json`` (the plan itself hands over its
    ``flags`` dict); each value is typed by the flag table (``facts.megatron_flags.typed_value``).
    """
    out: dict[str, Any] = {}
    for tok in tokens:
        if not tok.startswith("--"):
            raise UsageError(f"megatron_args: {tok!r} is not a --flag")
        key, eq, value = tok[2:].partition("=")
        out[key] = megatron_flags.typed_value(key, value) if eq else True
    return out


def _on_volume(mount: str, sub: str, local: str) -> str:
    return str(PurePosixPath(mount) / sub / Path(local).name)


def job_dict(
    plan_args: Mapping[str, Any] | Sequence[str],
    *,
    name: str = "megatron-cpt-techpulse",
    namespace: str = "megatron-workshop",
    image: str = DEFAULT_IMAGE,
    platform: str = "eks-efa",
    instance_type: str = "p4d.24xlarge",
    nodes: int = 2,
    backend: str | None = None,
    pvc: str = "fsx-shared-pvc",
    mount_path: str = "/shared",
    env: Mapping[str, str] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    dataset: Mapping[str, Any] | None = None,
    extra_args: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """docs/cli.md's job YAML as a plain dict.

    ``plan_args``: the plan's flags in job-YAML form (``plan["flags"]``, ``LayoutExplorer.flags()``),
    or a ``megatron_args`` token list from ``workshop plan --json``.
    ``dataset``: dataset.json's content; by default read from ``run_dir`` when it exists.
    """
    if isinstance(plan_args, Mapping):
        args = {str(k).lstrip("-"): v for k, v in plan_args.items() if v is not None and v is not False}
    else:
        args = args_from_tokens(list(plan_args))
    for k in _DROP:
        args.pop(k, None)
    if "model" in (plan_args if isinstance(plan_args, Mapping) else {}):
        from ..facts.models import preset

        args = {**preset(str(plan_args["model"])), **args}
    args.setdefault("bf16", True)
    job_args: dict[str, Any] = dict(args)
    for k, v in TRAINING_DEFAULTS.items():
        job_args.setdefault(k, v)
    ds = dict(dataset) if dataset is not None else read_dataset_info_if_any(run_dir)
    local = backend == "local"
    if ds:
        # Continued pre-training reads the replay blend ("W1 DOMAIN W2 GENERAL") when notebook 01 made one.
        data_path = str(ds.get("blend") or ds["data_path"])
        tok_model = str(ds.get("tokenizer_model", ""))
        job_args["data-path"] = (
            data_path
            if local
            else " ".join(
                t if megatron_flags.is_number(t) else _on_volume(mount_path, "data", t)
                for t in data_path.split()
            )
        )
        job_args["tokenizer-type"] = ds.get("tokenizer_type", "HuggingFaceTokenizer")
        if tok_model:
            job_args["tokenizer-model"] = (
                tok_model if local else _on_volume(mount_path, "tokenizer", tok_model)
            )
        if job_args["tokenizer-type"] != "NullTokenizer":
            job_args.pop("vocab-size", None)  # the tokenizer defines it; not a flag for HF tokenizers
    if local and run_dir is not None:
        run = RunDir.at(run_dir)
        ckpt, tb = str(run.checkpoints), str(run.tensorboard)
    else:
        ckpt = str(PurePosixPath(mount_path) / "checkpoints" / name)
        tb = str(PurePosixPath(mount_path) / "tensorboard" / name)
    job_args.setdefault("save", ckpt)
    job_args.setdefault("load", ckpt)
    if not local:  # the base model `workshop render-import-job` converts on the volume (README, EKS step 3)
        job_args.setdefault("pretrained-checkpoint", str(PurePosixPath(mount_path) / "checkpoints" / "base"))
    job_args.setdefault("tensorboard-dir", tb)
    if extra_args:
        for k, v in extra_args.items():
            key = str(k).lstrip("-")
            if v is None or v is False:
                job_args.pop(key, None)
            else:
                job_args[key] = v
    job: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "image": image,
        "platform": platform,
        "instance_type": instance_type,
        "nodes": int(nodes),
    }
    if backend:
        job["backend"] = backend
    job["storage"] = {"pvc": pvc, "mount_path": mount_path}
    job["env"] = dict(env) if env is not None else {"NCCL_DEBUG": "WARN"}
    job["args"] = job_args
    return job
