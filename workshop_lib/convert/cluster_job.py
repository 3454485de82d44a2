"""``workshop render-import-job``: the base-model import as a Kubernetes Job on the shared volume.

On the cluster the base model (Llama 3.1 8B is 16 GB of safetensors, 70B is 140 GB) should never pass
through a laptop: one pod on a CPU node (the import needs no GPU, and streams one tensor at a time, so
modest memory suffices) reads it from FSx for Lustre and writes the Megatron checkpoint next to it,
where the training pods' ``--pretrained-checkpoint`` finds it.

With ``hf_repo`` an init container first downloads the model from the Hugging Face Hub into ``hf_dir``
(the cluster has network; nothing in the kit downloads at run time here). A gated model (Llama) needs a
token: it is only ever referenced as a Kubernetes Secret (``secretKeyRef``), never written into the
manifest. Every value is checked by the same rules as the job YAML (``workshop_lib.k8sfields``) and
the user's strings are escaped for Kubernetes' ``$(VAR)`` expansion.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UsageError

DEFAULT_IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/megatron-training:latest"
# A Hub repository id: owner/name, letters, digits, '-', '_', '.' (the Hub's own rule, without '--').
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
# The files a converter needs; optimizer states, original/ PyTorch pickles and GGUF copies are skipped.
DOWNLOAD_PATTERNS = ("*.safetensors", "*.json", "tokenizer.model", "*.tiktoken")


def render_import_job(
    hf_dir: str,
    save: str,
    *,
    hf_repo: str | None = None,
    hf_revision: str | None = None,
    hf_token_secret: str | None = None,
    hf_token_key: str = "token",
    tensor_model_parallel_size: int = 1,
    pipeline_model_parallel_size: int = 1,
    name: str = "import-base-model",
    namespace: str = "megatron-workshop",
    image: str = DEFAULT_IMAGE,
    pvc: str = "fsx-shared-pvc",
    mount_path: str = "/shared",
    cpus: int = 4,
    memory: str = "32Gi",
) -> dict[str, Any]:
    """A batch/v1 Job: (download, then) ``workshop import-hf --hf-dir HF --save SAVE`` in one pod."""
    from ..k8sfields import (
        check_count,
        check_image,
        check_mount_path,
        check_name,
        check_quantity,
        check_volume_path,
        k8s_literal,
    )

    check_name(name, "--name")
    check_name(namespace, "--namespace")
    check_name(pvc, "--pvc")
    check_image(image, "--image")
    mount_path = check_mount_path(mount_path, "--mount-path")
    check_volume_path(hf_dir, mount_path, "--hf-dir")
    check_volume_path(save, mount_path, "--save")
    check_count(tensor_model_parallel_size, "--tensor-model-parallel-size")
    check_count(pipeline_model_parallel_size, "--pipeline-model-parallel-size")
    check_count(cpus, "--cpus")
    memory = check_quantity(memory, "--memory")
    if hf_repo is not None and not _REPO.match(hf_repo):
        raise UsageError(
            f"--hf-repo {hf_repo!r}: not a Hub repository id; write owner/name, e.g. meta-llama/Llama-3.1-8B"
        )
    if hf_revision is not None and not re.fullmatch(r"[A-Za-z0-9._/-]{1,128}", hf_revision):
        raise UsageError(
            f"--hf-revision {hf_revision!r}: a branch, tag or commit hash (letters, digits, . _ / -)"
        )
    if hf_token_secret is not None:
        check_name(hf_token_secret, "--hf-token-secret")
        if not re.fullmatch(r"[-._a-zA-Z0-9]{1,253}", hf_token_key):
            raise UsageError(
                f"--hf-token-key {hf_token_key!r}: a Secret key (letters, digits, '-', '_', '.')"
            )
        if hf_repo is None:
            raise UsageError("--hf-token-secret is for the download: give --hf-repo too (or drop the token)")

    lit = k8s_literal
    labels = {"app.kubernetes.io/name": "workshop-import-hf", "app.kubernetes.io/instance": name}

    def volume_mounts() -> list[dict[str, str]]:  # fresh objects: shared ones become YAML anchors
        return [{"name": "shared", "mountPath": mount_path}]

    def resources() -> dict[str, dict[str, str]]:
        return {
            "requests": {"cpu": str(cpus), "memory": memory},
            "limits": {"cpu": str(cpus), "memory": memory},
        }

    importer = {
        "name": "import-hf",
        "image": image,
        "command": [
            "workshop",
            "import-hf",
            "--hf-dir",
            lit(hf_dir),
            "--save",
            lit(save),
            "--tensor-model-parallel-size",
            str(tensor_model_parallel_size),
            "--pipeline-model-parallel-size",
            str(pipeline_model_parallel_size),
            "--json",
        ],  # fmt: skip
        "resources": resources(),
        "volumeMounts": volume_mounts(),
    }
    pod: dict[str, Any] = {"restartPolicy": "Never"}
    if hf_repo is not None:
        download = ["hf", "download", hf_repo, "--local-dir", lit(hf_dir), "--include", *DOWNLOAD_PATTERNS]
        if hf_revision:
            download += ["--revision", hf_revision]
        env: list[dict[str, Any]] = [{"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}]
        if hf_token_secret:
            env.append(
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": hf_token_secret, "key": hf_token_key}},
                }
            )
        pod["initContainers"] = [
            {
                "name": "download",
                "image": image,
                "command": download,
                "env": env,
                "resources": resources(),
                "volumeMounts": volume_mounts(),
            }
        ]
    pod["containers"] = [importer]
    pod["volumes"] = [{"name": "shared", "persistentVolumeClaim": {"claimName": pvc}}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"backoffLimit": 1, "template": {"metadata": {"labels": dict(labels)}, "spec": pod}},
    }


def to_yaml(job: dict[str, Any]) -> str:
    import yaml

    pod = job["spec"]["template"]["spec"]
    steps = "download the model, then convert it" if "initContainers" in pod else "convert the model"
    header = (
        f"# Job: {steps} on the shared volume (workshop import-hf). When it has succeeded, start the\n"
        "# training job with --pretrained-checkpoint set to the --save folder and the model flags of\n"
        "# <save>/workshop_model.json (`kubectl logs job/NAME` prints them as JSON).\n"
    )
    return header + yaml.safe_dump(job, sort_keys=False, width=1000)
