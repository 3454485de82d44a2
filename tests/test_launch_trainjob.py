"""Kubeflow Trainer v2 rendering: TrainingRuntime + TrainJob from the same job YAML as the PyTorchJob,
checked against the operators' real CRD schemas (``<shared>/crds``), and `workshop render --target`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from crd_schema import SKIP_REASON, crd_dir, load_schemas, validate

from workshop_lib.facts import operators
from workshop_lib.launch import api, jobspec, render

REPO = Path(__file__).resolve().parents[1]
JOBS = sorted((REPO / "manifests" / "jobs").glob("*.yaml"))
EKS = REPO / "manifests/jobs/techpulse-eks.yaml"


@pytest.fixture(scope="module")
def schemas():
    d = crd_dir()
    if d is None:
        pytest.skip(SKIP_REASON)
    return load_schemas(d)


def _load(name: str) -> jobspec.JobSpec:
    return jobspec.load(REPO / "manifests" / "jobs" / f"{name}.yaml")


def _docs(name: str) -> dict[str, dict]:
    return {d["kind"]: d for d in api.manifests(_load(name), "trainjob")}


@pytest.mark.parametrize(
    "stem", ["techpulse-eks", "techpulse-aks", "techpulse-generic", "techpulse-hyperpod"]
)
def test_checked_in_trainjob_manifest_equals_render(stem):
    golden = REPO / "manifests" / f"{stem}.trainjob.yaml"
    assert golden.read_text() == api.manifest_text(REPO / "manifests/jobs" / f"{stem}.yaml", "trainjob"), (
        f"{golden.name} is stale; regenerate it (manifests/README.md)"
    )


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.stem)
@pytest.mark.parametrize("operator", list(operators.OPERATORS))
def test_every_rendered_custom_resource_passes_the_real_crd_schema(schemas, job, operator):
    docs = [d for d in api.manifests(job, operator) if "kubeflow.org" in d["apiVersion"]]
    assert docs, "nothing rendered for the operator"
    for doc in docs:
        report = validate(doc, schemas)
        assert report.ok, (doc["kind"], report.unknown, report.invalid)
        if doc["kind"] == "TrainJob":  # the CRD's CEL rule on the name (CEL is not evaluated above)
            assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])


def test_the_validator_refuses_what_a_strict_server_refuses(schemas):
    """The schema check can fail: a misplaced hostNetwork, a string count, a missing runtime name."""
    job = _docs("techpulse-eks")["TrainJob"]
    job["spec"]["trainer"]["hostNetwork"] = True
    job["spec"]["trainer"]["numNodes"] = "2"
    del job["spec"]["runtimeRef"]["name"]
    report = validate(job, schemas)
    assert report.unknown == ["spec.trainer.hostNetwork"]
    assert any("numNodes" in m for m in report.invalid) and any(
        "runtimeRef.name" in m for m in report.invalid
    )
    runtime = _docs("techpulse-eks")["TrainingRuntime"]
    runtime["spec"]["mlPolicy"]["torch"]["numProcPerNode"] = 8  # v2.2's field, gone in v2.3
    assert validate(runtime, schemas).unknown == ["spec.mlPolicy.torch.numProcPerNode"]


def test_trainjob_carries_the_pytorchjob_command_env_and_resources():
    spec = _load("techpulse-eks")
    pj = render.pytorchjob(spec)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    docs = _docs("techpulse-eks")
    assert list(docs) == ["Namespace", "TrainingRuntime", "TrainJob"]
    tj = docs["TrainJob"]
    assert tj["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert tj["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "TrainingRuntime",
        "name": docs["TrainingRuntime"]["metadata"]["name"],
    }
    t = tj["spec"]["trainer"]
    assert (t["numNodes"], t["numProcPerNode"]) == (2, 8)
    assert t["resourcesPerNode"] == pj["resources"]
    assert t["env"] == pj["env"]
    cmd = t["command"]
    # The rendezvous comes from Trainer's PET_* variables, never PyTorchJob's MASTER_ADDR/RANK.
    assert cmd[:6] == [
        "workshop-torchrun",  # torchrun's agent that passes the kubelet's SIGTERM on as "save, then stop"
        "--nnodes=$(PET_NNODES)",
        "--nproc_per_node=$(PET_NPROC_PER_NODE)",
        "--node_rank=$(PET_NODE_RANK)",
        "--master_addr=$(PET_MASTER_ADDR)",
        "--master_port=$(PET_MASTER_PORT)",
    ]
    assert set(re.findall(r"\$\((\w+)\)", " ".join(cmd))) <= set(operators.PET_ENV)
    assert cmd[cmd.index("-m") :] == pj["command"][pj["command"].index("-m") :]
    assert not any("MASTER_ADDR)" in c and "PET_" not in c for c in cmd)


def test_runtime_holds_the_platform_pod():
    eks = _docs("techpulse-eks")["TrainingRuntime"]
    (rjob,) = eks["spec"]["template"]["spec"]["replicatedJobs"]
    assert rjob["name"] == "node"
    assert rjob["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }
    pod = rjob["template"]["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    assert pod["terminationGracePeriodSeconds"] >= 120 and pod["restartPolicy"] == "OnFailure"
    (c,) = pod["containers"]
    assert c["name"] == "node" and c["image"] == _load("techpulse-eks").image
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/shared", "/dev/shm"}
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Gi"}} in pod["volumes"]
    assert eks["spec"]["mlPolicy"] == {"numNodes": 2, "torch": {}}

    aks = _docs("techpulse-aks")
    apod = aks["TrainingRuntime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]
    assert apod["containers"][0]["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert aks["TrainJob"]["spec"]["trainer"]["resourcesPerNode"]["limits"]["rdma/ib"] == 8

    generic = _docs("techpulse-generic")
    gpod = generic["TrainingRuntime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]
    assert "hostNetwork" not in gpod and "nodeSelector" not in gpod
    assert set(generic["TrainJob"]["spec"]["trainer"]["resourcesPerNode"]["limits"]) == {
        "nvidia.com/gpu",
        "memory",
        "cpu",
    }

    hyperpod = _docs("techpulse-hyperpod")  # no etcd: the JobSet gives node 0 a stable DNS name
    assert list(hyperpod) == ["Namespace", "TrainingRuntime", "TrainJob"]


def test_both_renderings_for_the_notebook():
    both = api.both_renderings(EKS)
    assert set(both) == {"pytorchjob", "trainjob"}
    assert [d["kind"] for d in yaml.safe_load_all(both["pytorchjob"])] == ["Namespace", "PyTorchJob"]
    assert [d["kind"] for d in yaml.safe_load_all(both["trainjob"])] == [
        "Namespace",
        "TrainingRuntime",
        "TrainJob",
    ]


def _job_file(tmp_path: Path, **changes) -> Path:
    data = yaml.safe_load(EKS.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_render_target_and_operator_field(cli, tmp_path):
    res = cli("render", "--config", EKS, "--target", "trainjob")
    assert res.code == 0, res.err
    assert res.out == (REPO / "manifests/techpulse-eks.trainjob.yaml").read_text()
    job = _job_file(tmp_path, operator="trainjob", runtime="megatron-eks-runtime")
    kinds = [d["kind"] for d in yaml.safe_load_all(cli("render", "--config", job).out)]
    assert kinds == ["Namespace", "TrainingRuntime", "TrainJob"]
    (tj,) = [d for d in yaml.safe_load_all(cli("render", "--config", job).out) if d["kind"] == "TrainJob"]
    assert tj["spec"]["runtimeRef"]["name"] == "megatron-eks-runtime"
    res = cli("render", "--config", job, "--target", "pytorchjob")
    assert [d["kind"] for d in yaml.safe_load_all(res.out)] == ["Namespace", "PyTorchJob"]


@pytest.mark.parametrize(
    "args, changes, expected",
    [
        (("--target", "tfjob"), {}, "invalid choice: 'tfjob'"),
        ((), {"operator": "mpijob"}, "job.yaml: operator: 'mpijob' is not an operator"),
        (
            (),
            {"operator": "trainjob", "runtime": "Megatron_Runtime"},
            "runtime: 'Megatron_Runtime' is not a valid",
        ),
        (("--target", "trainjob"), {"nodes": 0}, "job.yaml: nodes: 0 is not a positive whole number"),
        (("--target", "trainjob"), {"name": "7b-cpt"}, "name: '7b-cpt' must start with a letter"),
        (("--target", "trainjob"), {"env": {"PET_MASTER_ADDR": "x"}}, "env.PET_MASTER_ADDR: Trainer injects"),
    ],
    ids=["target", "operator", "runtime-not-dns-label", "num-nodes", "rfc1035-name", "reserved-env"],
)
def test_bad_input_is_one_line_exit_2(cli, tmp_path, args, changes, expected):
    job = _job_file(tmp_path, **changes)
    res = cli("render", "--config", job, *args)
    assert res.code == 2 and res.out == "", res.err
    assert len(res.err.strip().splitlines()) == 1 and expected in res.err and "Traceback" not in res.err


def test_check_applies_the_same_rules_to_both_operators(cli, tmp_path):
    from workshop_lib.launch import check

    for job in JOBS:
        spec = jobspec.load(job)
        assert [f for f in check.check_job(spec, "trainjob") if f.severity == "error"] == [], job.name
    broken = _job_file(tmp_path, env={"NCCL_SOCKET_IFNAME": "eth0", "FI_PROVIDER": "tcp"}, host_network=False)
    rules = {}
    for target in ("pytorchjob", "trainjob"):
        res = cli("check", "--config", broken, "--target", target, "--json")
        assert res.code == 0, res.err
        rules[target] = {f["rule"] for f in res.json()["findings"] if f["severity"] == "error"}
    assert rules["pytorchjob"] == rules["trainjob"]
    assert {"nccl-socket-ifname-eth0", "fi-provider-efa", "host-network"} <= rules["trainjob"]
    small_shm = _job_file(tmp_path, resources={"shm_size": "1Gi"}, operator="trainjob")
    res = cli("check", "--config", small_shm, "--json")
    assert "shm-size" in {f["rule"] for f in res.json()["findings"]}
