"""Beyond one machine: prep-data sharded across Kubernetes pods, then merged into one dataset.

A real continued-pre-training corpus (SlimPajama: 627B tokens) takes one machine days to tokenize.
The input files are cut into ``shards`` contiguous groups (:func:`shard_files`), a Kubernetes
*Indexed Job* runs one pod per group (``JOB_COMPLETION_INDEX`` picks it) and each pod writes
``{PREFIX}_shard{i}_{key}_document``; ``workshop merge-data`` then concatenates the shards in order
into one dataset, byte-identical to a single run over all the files.

:func:`render_prep_job` is a pure function (arguments in, a plain dict out); nothing here talks to a
cluster. Apply the YAML with ``kubectl apply -f`` (or ``workshop``'s launch commands).
"""

from __future__ import annotations

import glob
import shlex
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import UsageError
from ..paths import data_path_for
from .indexed import IndexedDatasetWriter, check_json_keys, strip_suffix

T = TypeVar("T")


def shard_files(files: Sequence[T], shards: int, index: int) -> list[T]:
    """The contiguous group of ``files`` that shard ``index`` of ``shards`` handles (order kept)."""
    if shards < 1 or not 0 <= index < shards:
        raise UsageError(f"--shard-index {index} / --num-shards {shards}: need 0 <= index < shards")
    n = len(files)
    return list(files[index * n // shards : (index + 1) * n // shards])


def shard_warnings(total_files: int, got_files: int, shards: int, index: int) -> list[str]:
    """What a shard should be told about its share: sharding is by whole file, never within one.

    With fewer files than shards some pods get nothing (one big file goes entirely to the last
    shard); that is legitimate (merge-data takes empty shards) but rarely what was meant.
    """
    out = []
    if total_files < shards:
        out.append(
            f"{total_files} input file(s) for {shards} shards: sharding is by whole file, so "
            f"{shards - total_files} shard(s) get no input; split the corpus into at least {shards} files"
        )
    if got_files == 0:
        out.append(f"shard {index} of {shards} gets no input file; it writes an empty dataset")
    return out


def planned_files_warning(inputs: Sequence[str], shards: int) -> str | None:
    """render-prep-job: a warning when the inputs are plainly fewer files than ``shards``.

    Only named files count (no glob, a JSONL suffix): a folder or a glob is expanded in the pods.
    """
    from .reader import SUFFIXES

    named = [p for p in inputs if str(p).endswith(SUFFIXES) and not glob.has_magic(str(p))]
    if len(named) == len(inputs) and len(named) < shards:
        return (
            f"{len(named)} input file(s) for --shards {shards}: sharding is by whole file, so "
            f"{shards - len(named)} pod(s) get no input; split the corpus into at least {shards} files"
        )
    return None


# The prep-data flags each pod's command sets itself; --prep-args may not set them again.
RESERVED_PREP_FLAGS = ("input", "output-prefix", "num-shards", "shard-index", "json-keys", "workers")


def shard_prefix(output_prefix: str, index: int) -> str:
    return f"{output_prefix}_shard{index}"


def merge_datasets(shards: Sequence[str], output_prefix: str) -> dict:
    """Concatenate shard datasets (in the given order) into ``output_prefix``.bin/.idx, atomically."""
    if not shards:
        raise UsageError("merge-data: name at least one shard prefix")
    from .indexed import IndexedDatasetReader

    # Every shard's index is validated in full before a byte is written: a corrupt shard is one
    # line naming it, never a merged dataset built on garbage pointers.
    readers = [IndexedDatasetReader(s) for s in shards]
    dtype = readers[0].header.dtype
    del readers
    writer = IndexedDatasetWriter(strip_suffix(output_prefix), dtype.type)
    try:
        for s in shards:
            writer.add_index(s)
        b, i = writer.finalize()
    except BaseException:
        writer.abort()
        raise
    return {
        "documents": writer.documents,
        "sequences": writer.sequences,
        "tokens": writer.tokens,
        "shards": [strip_suffix(s) for s in shards],
        "outputs": [str(b), str(i)],
    }


def render_prep_job(
    inputs: Sequence[str],
    output_prefix: str,
    *,
    shards: int,
    name: str = "prep-data",
    namespace: str = "megatron-workshop",
    image: str = "123456789012.dkr.ecr.us-east-2.amazonaws.com/megatron-training:latest",
    pvc: str = "fsx-shared-pvc",
    mount_path: str = "/shared",
    cpus: int = 8,
    memory: str = "16Gi",
    parallelism: int | None = None,
    json_keys: Sequence[str] = ("text",),
    prep_args: Sequence[str] = (),
    backoff_limit_per_index: int = 2,
) -> dict[str, Any]:
    """A batch/v1 Indexed Job: pod ``i`` runs prep-data on shard ``i`` of the inputs (paths in the pod).

    Every value is checked by the rules the job YAML uses (``workshop_lib.k8sfields``): names, PVC,
    mount point, memory, image, and paths that are normalised and under the mount. ``prep_args`` may
    not set a flag the Job sets itself (argparse would let the last ``--output-prefix`` win, or an
    abbreviation such as ``--output``). What the user wrote is escaped for Kubernetes (``$(VAR)``
    stays literal); only ``$(JOB_COMPLETION_INDEX)`` is the kit's reference.
    """
    from ..k8sfields import (
        MAX_ANNOTATIONS_BYTES,
        MAX_INDEXED_COMPLETIONS,
        check_count,
        check_image,
        check_mount_path,
        check_name,
        check_quantity,
        check_text,
        check_volume_path,
        k8s_literal,
    )

    check_name(name, "--name")
    check_name(namespace, "--namespace")
    check_name(pvc, "--pvc")
    check_image(image, "--image")
    mount_path = check_mount_path(mount_path, "--mount-path")
    check_count(
        shards, "--shards", maximum=MAX_INDEXED_COMPLETIONS, why=" (Kubernetes' limit for an Indexed Job)"
    )
    check_count(cpus, "--cpus")
    if parallelism is not None:
        check_count(parallelism, "--parallelism")
    check_count(backoff_limit_per_index, "backoff_limit_per_index", minimum=0)
    memory = check_quantity(memory, "--memory")
    check_json_keys(tuple(json_keys))
    if not inputs:
        raise UsageError("--input: name at least one input path under --mount-path")
    for p in inputs:
        check_volume_path(p, mount_path, "--input")
    check_volume_path(output_prefix, mount_path, "--output-prefix")
    for token in prep_args:
        check_text(token, "--prep-args", what="argument")
        name_part = token[2:].split("=", 1)[0] if token.startswith("--") else None
        clash = [f for f in RESERVED_PREP_FLAGS if name_part and f.startswith(name_part)]
        if clash:
            raise UsageError(
                f"--prep-args: {token.split('=', 1)[0]} would override --{clash[0]}, which the Job sets "
                f"itself; give it as this command's own option (e.g. --{clash[0]}) and leave it out of --prep-args"
            )
    lit = k8s_literal
    command = [
        "workshop",
        "prep-data",
        "--input",
        *map(lit, inputs),
        "--output-prefix",
        f"{lit(output_prefix)}_shard$(JOB_COMPLETION_INDEX)",
        "--num-shards",
        str(shards),
        "--shard-index",
        "$(JOB_COMPLETION_INDEX)",
        "--json-keys",
        *map(lit, json_keys),
        "--workers",
        str(cpus),
        "--no-progress",
        *map(lit, prep_args),
    ]
    merge = [
        "workshop",
        "merge-data",
        "--output-prefix",
        data_path_for(output_prefix, json_keys[0]),
        *[data_path_for(shard_prefix(output_prefix, i), json_keys[0]) for i in range(shards)],
    ]
    merge_text = shlex.join(merge)
    if len(merge_text.encode()) > MAX_ANNOTATIONS_BYTES // 2:
        raise UsageError(
            f"--shards {shards}: the merge command ({len(merge_text.encode()) // 1024} KiB, one prefix per shard) "
            f"does not fit the Job's annotations (Kubernetes allows {MAX_ANNOTATIONS_BYTES // 1024} KiB); "
            "use fewer, larger shards"
        )
    labels = {"app.kubernetes.io/name": "workshop-prep-data", "app.kubernetes.io/instance": name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"workshop/merge-command": merge_text},
        },
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": min(shards, parallelism or shards),
            "backoffLimitPerIndex": backoff_limit_per_index,
            "maxFailedIndexes": 0,
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "prep-data",
                            "image": image,
                            "command": command,
                            "env": [{"name": "RAYON_NUM_THREADS", "value": str(cpus)}],
                            "resources": {
                                "requests": {"cpu": str(cpus), "memory": memory},
                                "limits": {"cpu": str(cpus), "memory": memory},
                            },
                            "volumeMounts": [{"name": "shared", "mountPath": mount_path}],
                        }
                    ],
                    "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": pvc}}],
                },
            },
        },
    }


def to_yaml(job: dict[str, Any]) -> str:
    import yaml

    from ..safeyaml import has_control

    merge = job["metadata"]["annotations"]["workshop/merge-command"]
    if has_control(merge):  # render_prep_job refuses such paths; a comment must stay one line
        raise UsageError(
            "--output-prefix: holds a control character (newline, tab); write the path on one line"
        )
    header = (
        "# Indexed Job: pod i tokenizes shard i of the inputs. Sharding is by whole input file (a file\n"
        "# is never split): give at least as many files as pods, or some pods write empty shards.\n"
        f"# When all pods succeed, merge:\n#   {merge}\n"
    )
    return header + yaml.safe_dump(job, sort_keys=False, width=1000)
