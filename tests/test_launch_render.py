"""The renderers: checked-in manifests equal what render produces, shaped as docs/sources.md's guides say."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workshop_lib.launch import jobspec, render

REPO = Path(__file__).resolve().parents[1]
JOBS = sorted((REPO / "manifests" / "jobs").glob("*.yaml"))


def _load(name: str) -> jobspec.JobSpec:
    return jobspec.load(REPO / "manifests" / "jobs" / f"{name}.yaml")


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.stem)
def test_checked_in_manifest_equals_render(job):
    rendered = render.to_yaml(render.render_job(jobspec.load(job)))
    checked_in = (REPO / "manifests" / f"{job.stem}.yaml").read_text()
    assert checked_in == rendered, f"manifests/{job.stem}.yaml is stale; regenerate it (manifests/README.md)"


def test_checked_in_sbatch_equals_render():
    text = render.render_slurm(_load("techpulse-eks"))
    assert (REPO / "manifests" / "techpulse-eks.sbatch").read_text() == text


def test_every_platform_has_an_example():
    from workshop_lib.facts.platforms import PLATFORMS

    assert {jobspec.load(j).platform for j in JOBS} == set(PLATFORMS)


def _job(docs):
    (job,) = [d for d in docs if d["kind"] == "PyTorchJob"]
    return job


def test_eks_job_matches_the_seed_manifest():
    spec = _load("techpulse-eks")
    docs = render.render_job(spec)
    assert [d["kind"] for d in docs] == ["Namespace", "PyTorchJob"]
    job = _job(docs)
    assert job["apiVersion"] == "kubeflow.org/v1"
    assert job["metadata"] == {
        "name": "megatron-cpt-techpulse",
        "namespace": "megatron-workshop",
        "labels": {"app": "megatron-training", render.JOB_LABEL: "megatron-cpt-techpulse"},
    }
    s = job["spec"]
    assert s["nprocPerNode"] == "8"
    assert s["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 3}
    reps = s["pytorchReplicaSpecs"]
    assert {k: v["replicas"] for k, v in reps.items()} == {"Master": 1, "Worker": 1}
    for role, rep in reps.items():
        assert rep["restartPolicy"] == "OnFailure"
        pod = rep["template"]["spec"]
        assert rep["template"]["metadata"]["labels"]["role"] == role.lower()
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
        (c,) = pod["containers"]
        assert c["name"] == "pytorch"
        res = c["resources"]
        assert res["requests"] == {
            "nvidia.com/gpu": 8,
            "vpc.amazonaws.com/efa": 4,
            "memory": "200Gi",
            "cpu": "80",
        }
        assert res["limits"] == {
            "nvidia.com/gpu": 8,
            "vpc.amazonaws.com/efa": 4,
            "memory": "200Gi",
            "cpu": "96",
        }
        assert pod["terminationGracePeriodSeconds"] >= 300  # the ranks save on the kubelet's SIGTERM
        assert c["command"][:8] == [
            "workshop-torchrun",
            "--nproc_per_node=8",
            "--nnodes=2",
            "--node_rank=$(RANK)",
            "--master_addr=$(MASTER_ADDR)",
            "--master_port=$(MASTER_PORT)",
            "-m",
            "workshop_lib.train",
        ]
        assert "--tensor-model-parallel-size=2" in c["command"] and "--bf16" in c["command"]
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_HUGE_PAGE"] == "0"
        assert env["NCCL_TIMEOUT"] == env["TORCH_DISTRIBUTED_TIMEOUT"] == "1800"
        assert env["TRITON_CACHE_DIR"] == "/tmp/triton_cache"
        assert "NCCL_SOCKET_IFNAME" not in env
        assert c["volumeMounts"] == [
            {"name": "shared", "mountPath": "/shared"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ]
        assert pod["volumes"] == [
            {"name": "shared", "persistentVolumeClaim": {"claimName": "fsx-shared-pvc"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Gi"}},
        ]


@pytest.mark.parametrize(
    "nodes, expected", [(1, {"Master": 1}), (2, {"Master": 1, "Worker": 1}), (5, {"Master": 1, "Worker": 4})]
)
def test_replicas_sum_to_nodes(nodes, expected):
    data = yaml.safe_load((REPO / "manifests/jobs/techpulse-eks.yaml").read_text()) | {"nodes": nodes}
    job = render.pytorchjob(jobspec.from_dict(data))
    assert {k: v["replicas"] for k, v in job["spec"]["pytorchReplicaSpecs"].items()} == expected


def test_hyperpod_is_worker_only_with_etcd_rendezvous_and_instance_selector():
    docs = render.render_job(_load("techpulse-hyperpod"))
    assert [d["kind"] for d in docs] == ["Namespace", "Service", "Deployment", "PyTorchJob"]
    job = _job(docs)
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Worker"]
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2
    assert job["spec"]["elasticPolicy"]["rdzvBackend"] == "etcd"
    assert (
        job["spec"]["elasticPolicy"]["rdzvHost"]
        == docs[1]["metadata"]["name"]
        == "megatron-cpt-techpulse-etcd"
    )
    pod = worker["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    c = pod["containers"][0]
    assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
    assert not any("master_addr" in t for t in c["command"])


def test_aks_uses_infiniband_and_sharp_instead_of_efa():
    job = _job(render.render_job(_load("techpulse-aks")))
    c = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["rdma/ib"] == 8
    assert "vpc.amazonaws.com/efa" not in c["resources"]["limits"]
    assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    env = {e["name"]: e["value"] for e in c["env"]}
    assert "FI_PROVIDER" not in env and env["NCCL_IB_DISABLE"] == "0" and env["NCCL_COLLNET_ENABLE"] == "1"


def test_generic_has_no_fabric_resources_or_host_network():
    job = _job(render.render_job(_load("techpulse-generic")))
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Master"]
    pod = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert "hostNetwork" not in pod and "nodeSelector" not in pod
    assert set(pod["containers"][0]["resources"]["limits"]) == {"nvidia.com/gpu", "memory", "cpu"}


def test_user_env_is_kept_and_null_removes_a_default():
    data = yaml.safe_load((REPO / "manifests/jobs/techpulse-eks.yaml").read_text())
    data["env"] = {"NCCL_DEBUG": "INFO", "MY_FLAG": 1, "NCCL_NVLS_ENABLE": None}
    c = render.pytorchjob(jobspec.from_dict(data))["spec"]["pytorchReplicaSpecs"]["Master"]["template"][
        "spec"
    ]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["NCCL_DEBUG"] == "INFO" and env["MY_FLAG"] == "1" and "NCCL_NVLS_ENABLE" not in env


def test_flag_tokens():
    assert jobspec.flag_tokens(
        {"bf16": True, "fp16": False, "lr": 1e-4, "data-path": "0.7 /a 0.3 /b", "x": [1, "y"]}
    ) == [
        "--bf16",
        "--lr=0.0001",
        "--data-path",
        "0.7",
        "/a",
        "0.3",
        "/b",
        "--x",
        "1",
        "y",
    ]


def test_slurm_script_carries_env_and_flags():
    text = render.render_slurm(_load("techpulse-eks"))
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=8" in text
    assert "export FI_PROVIDER=efa" in text and "--rdzv_backend=c10d" in text
    assert "--tensor-model-parallel-size=2" in text and "-m workshop_lib.train" in text


def test_secret_reference_renders_as_secret_key_ref_and_is_never_inlined_in_sbatch():
    data = yaml.safe_load((REPO / "manifests/jobs/techpulse-eks.yaml").read_text())
    data["env"] = {"HF_TOKEN": {"secret": "hf-token", "key": "token"}, "NCCL_DEBUG": "WARN"}
    spec = jobspec.from_dict(data)
    for rep in _job(render.render_job(spec))["spec"]["pytorchReplicaSpecs"].values():
        env = rep["template"]["spec"]["containers"][0]["env"]
        (entry,) = [e for e in env if e["name"] == "HF_TOKEN"]
        assert entry == {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}},
        }
        assert {"name": "NCCL_DEBUG", "value": "WARN"} in env
    script = render.render_slurm(spec)
    lines = script.splitlines()
    assert "export HF_TOKEN" in lines and not any(line.startswith("export HF_TOKEN=") for line in lines)
    assert any(line.startswith(': "${HF_TOKEN:?') for line in lines)  # fails early when unset
    assert "export NCCL_DEBUG=WARN" in lines
