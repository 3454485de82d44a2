"""The job YAML: every bad field is one UsageError line naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workshop_lib.errors import UsageError
from workshop_lib.launch import jobspec

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "manifests/jobs/techpulse-eks.yaml").read_text())


def test_the_contract_example_loads():
    spec = jobspec.load(REPO / "manifests/jobs/techpulse-eks.yaml")
    assert (spec.name, spec.namespace, spec.platform, spec.nodes, spec.backend) == (
        "megatron-cpt-techpulse",
        "megatron-workshop",
        "eks-efa",
        2,
        "kubernetes",
    )
    assert spec.gpus_per_node == 8 and spec.nics_per_node == 4 and spec.world_size == 16
    assert spec.storage == jobspec.Storage("fsx-shared-pvc", "/shared")
    assert spec.args["bf16"] is True and spec.env == {"NCCL_DEBUG": "WARN"}


BAD = [
    ({"name": "Bad_Name"}, "name"),
    ({"name": "x" * 49}, "name"),
    ({"namespace": "UPPER"}, "namespace"),
    ({"image": "has space:tag"}, "image"),
    ({"instance_type": "p9.huge"}, "instance_type"),
    ({"nodes": 0}, "nodes"),
    ({"nodes": "two"}, "nodes"),
    ({"nodes": True}, "nodes"),
    ({"platform": "gke"}, "platform"),
    ({"backend": "slurm"}, "backend"),
    ({"storage": {"pvc": "Bad PVC"}}, "storage.pvc"),
    ({"storage": {"claim": "x"}}, "storage"),
    ({"storage": {"pvc": "fsx", "mount_path": "relative"}}, "storage.mount_path"),
    ({"storage": {"pvc": "fsx", "size": 1}}, "storage.size"),
    ({"env": ["NCCL_DEBUG=WARN"]}, "env"),
    ({"env": {"BAD-NAME": "1"}}, "env.BAD-NAME"),
    ({"env": {"X": {"nested": 1}}}, "env.X"),
    ({"args": ["--bf16"]}, "args"),
    ({"args": {"--num-layers": 2}}, "args.--num-layers"),
    ({"args": {"num_layers": 2}}, "args.num_layers"),
    ({"args": {"lr": {"x": 1}}}, "args.lr"),
    ({"sharp": True}, "sharp"),
    ({"sharp": "yes"}, "sharp"),
    ({"host_network": "no"}, "host_network"),
    ({"resources": {"gpus_per_node": -1}}, "resources.gpus_per_node"),
    ({"resources": {"shm_size": "lots"}}, "resources.shm_size"),
    ({"resources": {"tpus": 1}}, "resources.tpus"),
    ({"unknown_key": 1}, "unknown_key"),
]


@pytest.mark.parametrize("change, field", BAD, ids=[b[1] for b in BAD])
def test_bad_field_is_one_line_naming_file_and_field(change, field):
    with pytest.raises(UsageError) as exc:
        jobspec.from_dict({**BASE, **change}, "job.yaml")
    msg = str(exc.value)
    assert msg.startswith("job.yaml: ") and field in msg and "\n" not in msg


@pytest.mark.parametrize("missing", jobspec.REQUIRED)
def test_missing_required_field(missing):
    data = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(UsageError, match=f"job.yaml: {missing}: missing"):
        jobspec.from_dict(data, "job.yaml")


def test_file_errors(tmp_path):
    with pytest.raises(UsageError, match="no such job file"):
        jobspec.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nargs: {a: 1\n")
    with pytest.raises(UsageError, match=r"bad.yaml:\d+: .*fix the YAML"):
        jobspec.load(bad)
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(UsageError, match="must be a YAML mapping"):
        jobspec.load(tmp_path / "list.yaml")


def test_defaults_and_hyperpod_prefix():
    data = {k: v for k, v in BASE.items() if k not in ("namespace", "platform", "storage", "env")}
    spec = jobspec.from_dict({**data, "instance_type": "ml.p5.48xlarge"})
    assert (spec.namespace, spec.platform, spec.storage, spec.backend) == (
        "default",
        "eks-efa",
        None,
        "kubernetes",
    )
    assert spec.instance.name == "p5.48xlarge" and spec.nics_per_node == 32


@pytest.mark.parametrize("backend", [None, "local"])
def test_the_plan_rooms_job_file_loads_renders_and_checks_clean(backend, tmp_path):
    jobfile = pytest.importorskip("workshop_lib.plan.jobfile")
    from workshop_lib.launch import check, render

    flags = {
        k: v for k, v in BASE["args"].items() if k not in ("data-path", "tokenizer-model", "save", "load")
    }
    path = tmp_path / "job.yaml"
    path.write_text(
        yaml.safe_dump(
            jobfile.job_dict(
                flags,
                backend=backend,
                dataset={
                    "data_path": "/shared/data/techpulse_text_document",
                    "tokenizer_type": "HuggingFaceTokenizer",
                    "tokenizer_model": "/shared/tokenizer",
                },
            )
        )
    )
    spec = jobspec.load(path)
    assert spec.backend == (backend or "kubernetes")
    assert render.pytorchjob(spec)["kind"] == "PyTorchJob"
    assert [f for f in check.check_job(spec) if f.severity == "error"] == []


def test_env_secret_reference_loads_and_is_left_out_of_the_literal_env():
    spec = jobspec.from_dict({**BASE, "env": {"HF_TOKEN": {"secret": "hf.token-1", "key": "token_v.2"}}})
    assert spec.env["HF_TOKEN"] == jobspec.SecretRef("hf.token-1", "token_v.2")
    assert spec.effective_env()["HF_TOKEN"] == jobspec.SecretRef("hf.token-1", "token_v.2")
    assert "HF_TOKEN" not in spec.literal_env() and spec.literal_env()["FI_PROVIDER"] == "efa"


@pytest.mark.parametrize(
    "ref, field",
    [
        ({"secret": "hf-token"}, "env.HF_TOKEN"),
        ({"secret": "hf-token", "key": "token", "value": "x"}, "env.HF_TOKEN"),
        ({"secret": "HF_Token", "key": "token"}, "env.HF_TOKEN.secret"),
        ({"secret": "hf-token", "key": "a key"}, "env.HF_TOKEN.key"),
        ({"secret": 3, "key": "token"}, "env.HF_TOKEN.secret"),
    ],
)
def test_bad_secret_reference_is_one_line_with_the_form(ref, field):
    with pytest.raises(UsageError) as exc:
        jobspec.from_dict({**BASE, "env": {"HF_TOKEN": ref}}, "job.yaml")
    msg = str(exc.value)
    assert msg.startswith(f"job.yaml: {field}: ") and "{secret: SECRET-NAME, key: KEY}" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    "mount, reason",
    [
        ("/shared/../etc", "normalised"),
        ("/shared/./data", "normalised"),
        ("//shared", "normalised"),
        ("/", "whole image"),
        ("/etc", "under /etc"),
        ("/usr/local/data", "under /usr"),
        ("/dev", "under /dev"),
        ("/dev/shm", "under /dev"),
        ("/proc/x", "under /proc"),
        ("/tmp", "local scratch"),
        ("/opt", "EFA"),
        ("shared", "absolute"),
        (7, "absolute"),
    ],
)
def test_mount_path_is_absolute_normalised_and_off_the_system_directories(mount, reason):
    with pytest.raises(UsageError) as exc:
        jobspec.from_dict({**BASE, "storage": {"pvc": "fsx", "mount_path": mount}}, "job.yaml")
    msg = str(exc.value)
    assert msg.startswith("job.yaml: storage.mount_path: ") and reason in msg and "\n" not in msg


@pytest.mark.parametrize(
    "mount", ["/shared", "/shared/", "/fsx", "/data", "/mnt/fsx", "/opt/shared", "/tmp/x"]
)
def test_ordinary_mount_paths_load(mount):
    spec = jobspec.from_dict({**BASE, "storage": {"pvc": "fsx", "mount_path": mount}})
    assert spec.storage.mount_path == mount.rstrip("/")


@pytest.mark.parametrize(
    "flag, value",
    [
        ("micro-batch-size", "two"),
        ("micro-batch-size", 2.5),
        ("micro-batch-size", True),
        ("train-iters", "10k"),
        ("num-layers", [2, 4]),
        ("seed", "1.0"),
        ("lr", "fast"),
        ("lr", True),
        ("clip-grad", [1.0]),
    ],
)
def test_a_numeric_flag_with_a_wrong_type_is_refused_at_load(flag, value):
    with pytest.raises(UsageError) as exc:
        jobspec.from_dict({**BASE, "args": {**BASE["args"], flag: value}}, "job.yaml")
    msg = str(exc.value)
    assert msg.startswith(f"job.yaml: args.{flag}: ") and "write e.g." in msg and "\n" not in msg


def test_numeric_flags_accept_what_the_trainer_accepts():
    ok = {"micro-batch-size": "2", "train-iters": 100, "lr": "1e-5", "min-lr": 0, "weight-decay": 0.1}
    spec = jobspec.from_dict({**BASE, "args": {**BASE["args"], **ok, "seed": None, "fp16": False}})
    assert spec.args["lr"] == "1e-5" and spec.args["micro-batch-size"] == "2"
    types = jobspec.numeric_flags()
    assert types["micro-batch-size"] is int and types["lr"] is float and "data-path" not in types
