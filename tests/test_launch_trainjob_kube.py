"""`workshop apply | status | logs | delete | preflight` on Kubeflow Trainer v2 (TrainJob), and the
strict, dry-run requests for both operators: the real `kubernetes` client against the fake API server
(tests/fake_kube_api.py), which judges custom resources by the operators' real CRD schemas where
``<shared>/crds`` is present."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
import yaml
from crd_schema import SKIP_REASON, maybe_schemas
from fake_kube_api import TOKEN, FakeKubeAPI

from workshop_lib.launch import api, jobspec, render, trainjob
from workshop_lib.launch.backends.kubernetes import KubernetesBackend

REPO = Path(__file__).resolve().parents[1]
EKS = REPO / "manifests/jobs/techpulse-eks.yaml"
NS, NAME = "megatron-workshop", "megatron-cpt-techpulse"
P4D = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "cpu": "96", "memory": "1100Gi"}
TRAINER_CRDS = {"trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org"}
needs_schemas = pytest.mark.skipif(not maybe_schemas(), reason=SKIP_REASON)


@pytest.fixture
def cluster():
    """A cluster with both operators, the namespace, a bound PVC and two p4d nodes."""
    api_ = FakeKubeAPI(schemas=maybe_schemas()).start()
    api_.add_namespace(NS)
    api_.add_pvc(NS, "fsx-shared-pvc")
    for i in range(2):
        api_.add_node(f"p4d-{i}", P4D, {"node.kubernetes.io/instance-type": "p4d.24xlarge"})
    yield api_
    api_.stop()


@pytest.fixture
def kubeconfig(cluster, tmp_path):
    return cluster.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def job(tmp_path):
    """The EKS job YAML with `operator: trainjob`."""
    data = yaml.safe_load(EKS.read_text())
    data["operator"] = "trainjob"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_line(res):
    assert res.err.strip() and len(res.err.strip().splitlines()) == 1, res.err
    assert TOKEN not in res.err + res.out and "Traceback" not in res.err
    return res.err


def _custom(cluster):
    return sorted(k for k in cluster.objects if k[0] in ("pytorchjobs", "trainjobs", "trainingruntimes"))


def test_trainjob_apply_status_replace_delete(cli, cluster, kubeconfig, job):
    k = ("--kubeconfig", kubeconfig)
    res = cli("apply", "--config", job, *k)
    assert res.code == 0, res.err
    assert "created namespace" not in res.out  # the namespace was there already
    assert (
        "trainingruntime/megatron-cpt-techpulse" in res.out and "trainjob/megatron-cpt-techpulse" in res.out
    )
    spec = jobspec.load(job)
    stored = cluster.objects[("trainjobs", NS, NAME)]
    assert {k: v for k, v in stored.items() if k not in ("metadata", "status")} == {
        k: v for k, v in trainjob.trainjob(spec).items() if k != "metadata"
    }
    assert cluster.objects[("trainingruntimes", NS, NAME)]["spec"] == trainjob.training_runtime(spec)["spec"]
    sent = [(v, p, q) for v, p, q in cluster.queries if v in ("create", "update")]
    assert sent and all(q.get("fieldValidation") == "Strict" for _, _, q in sent)

    # The pods JobSet made: found by its labels, node rank = completion index, and every $(VAR) the
    # command uses is a variable Trainer put into the container's environment.
    pods = cluster.trainjob_pods(NS, NAME)
    assert len(pods) == 2 and all(p.startswith(f"{NAME}-node-0-") for p in pods)
    for pod in pods:
        (c,) = cluster.pod(NS, pod)["spec"]["containers"]
        assert c["name"] == "node"
        used = set(re.findall(r"\$\((\w+)\)", " ".join(c["command"])))
        assert used and used <= {e["name"] for e in c["env"]}
        assert {"FI_PROVIDER", "NCCL_TIMEOUT"} <= {e["name"] for e in c["env"]}

    res = cli("status", "--config", job, *k, "--json")
    assert res.code == 0, res.err
    st = res.json()
    assert (st["kind"], st["phase"]) == ("TrainJob", "Running")
    assert [p["name"] for p in st["pods"]] == pods
    # By name only: the backend finds it among both operators' kinds.
    res = cli("status", "--name", NAME, "--namespace", NS, *k, "--json")
    assert res.code == 0 and res.json()["kind"] == "TrainJob", res.err

    res = cli("apply", "--config", job, *k)
    assert res.code == 1 and "a TrainJob named" in _one_line(res) and "--replace" in res.err
    uid = stored["metadata"]["uid"]
    res = cli("apply", "--config", job, *k, "--replace")
    assert res.code == 0, res.err
    assert cluster.objects[("trainjobs", NS, NAME)]["metadata"]["uid"] != uid

    cluster.gc_delay = 0.3
    res = cli("delete", "--name", NAME, "--namespace", NS, *k, "--wait")
    assert res.code == 0, res.err
    assert "deleted TrainJob" in res.out and "TrainingRuntime" in res.out and "pods are gone" in res.out
    assert _custom(cluster) == [] and cluster.trainjob_pods(NS, NAME) == []
    res = cli("delete", "--name", NAME, "--namespace", NS, *k)
    assert res.code == 1 and "no PyTorchJob named" in _one_line(res) and "no TrainJob" in res.err


def test_a_runtime_of_another_job_is_not_overwritten(cli, cluster, kubeconfig, job, tmp_path):
    k = ("--kubeconfig", kubeconfig)
    assert cli("apply", "--config", job, *k).code == 0
    other = yaml.safe_load(job.read_text()) | {"name": "other-job", "runtime": NAME}
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(other))
    res = cli("apply", "--config", path, *k)
    assert res.code == 1 and "not this job's" in _one_line(res) and "runtime:" in res.err
    assert ("trainjobs", NS, "other-job") not in cluster.objects
    # The job's own runtime left behind (its TrainJob deleted by hand) is brought up to date.
    cluster.objects.pop(("trainjobs", NS, NAME))
    changed = yaml.safe_load(job.read_text()) | {"image": "registry.example/megatron:v2"}
    job.write_text(yaml.safe_dump(changed))
    assert cli("apply", "--config", job, *k).code == 0
    runtime = cluster.objects[("trainingruntimes", NS, NAME)]
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry.example/megatron:v2"


def test_logs_follow_the_first_and_last_node_across_a_restart(cluster, kubeconfig, job, tmp_path):
    backend = KubernetesBackend(
        kubeconfig=str(kubeconfig), run_dir=tmp_path / "run", poll_seconds=0.05, retry_seconds=0.05
    )
    spec = jobspec.load(job)
    backend.submit(spec)
    first, last = cluster.trainjob_pods(NS, NAME)
    cluster.log(NS, first, "rank0 starting")
    cluster.log(NS, last, " iteration        1/      10 | lm loss: 9.0 |")

    def training():
        time.sleep(0.3)
        cluster.log(NS, last, " iteration        2/      10 | lm loss: 8.0 |", "node crashing")
        cluster.restart(NS, last)  # restartPolicy OnFailure: a new container in the same pod
        cluster.log(NS, last, "resumed from checkpoint", " iteration        3/      10 | lm loss: 7.0 |")
        time.sleep(0.3)
        cluster.set_pod_phase(NS, last, "Succeeded")
        cluster.set_pod_phase(NS, first, "Succeeded")

    t = threading.Thread(target=training)
    t.start()
    shown: list[str] = []
    result = backend.logs(spec, follow=True, sink=shown.append, timeout=20)
    t.join()
    assert result["pods"] == [first, last]
    lines = Path(result["out"]).read_text().splitlines()
    assert [x for x in lines if not x.startswith("rank0")] == [
        " iteration        1/      10 | lm loss: 9.0 |",
        " iteration        2/      10 | lm loss: 8.0 |",
        "node crashing",
        "resumed from checkpoint",
        " iteration        3/      10 | lm loss: 7.0 |",
    ]
    assert "rank0 starting" in lines
    assert ("get", f"/api/v1/namespaces/{NS}/pods/{last}/log") in cluster.requests
    assert all(q.get("container") == "node" for _, path, q in cluster.queries if path.endswith("/log"))


def test_logs_follow_a_node_onto_its_replacement_pod(cluster, kubeconfig, job, tmp_path):
    """An evicted pod is replaced by the indexed Job under a new name: the stream goes on with it."""
    backend = KubernetesBackend(
        kubeconfig=str(kubeconfig), run_dir=tmp_path / "run", poll_seconds=0.05, retry_seconds=0.05
    )
    spec = jobspec.load(job)
    backend.submit(spec)
    first, last = cluster.trainjob_pods(NS, NAME)
    cluster.log(NS, last, "before eviction")
    replaced: list[str] = []

    def evict():
        time.sleep(0.3)
        new = cluster.replace_pod(NS, last)
        replaced.append(new)
        cluster.log(NS, new, "on the new pod")
        time.sleep(0.3)
        cluster.set_pod_phase(NS, new, "Succeeded")
        cluster.set_pod_phase(NS, first, "Succeeded")

    t = threading.Thread(target=evict)
    t.start()
    result = backend.logs(spec, follow=True, timeout=20)
    t.join()
    assert replaced and replaced[0] != last and cluster.trainjob_pods(NS, NAME) == [first, replaced[0]]
    assert Path(result["out"]).read_text().splitlines() == ["before eviction", "on the new pod"]


@pytest.mark.parametrize("operator", ["pytorchjob", "trainjob"])
def test_dry_run_is_judged_by_the_server_and_creates_nothing(cli, cluster, kubeconfig, operator):
    cluster.objects.pop(("namespaces", "", NS))
    before = set(cluster.objects)
    res = cli(
        "apply",
        "--config",
        EKS,
        "--target",
        operator,
        "--kubeconfig",
        kubeconfig,
        "--dry-run",
        "--json",
        "--skip-preflight",
    )
    assert res.code == 0, res.err
    out = res.json()
    assert out["dry_run"] is True and out["created"] == [] and "nothing was created" in out["message"]
    kinds = [a.split("/")[0] for a in out["accepted"]]
    assert kinds == (
        ["namespace", "pytorchjob"]
        if operator == "pytorchjob"
        else ["namespace", "trainingruntime", "trainjob"]
    )
    assert set(cluster.objects) == before  # not even the namespace
    posts = [q for verb, _, q in cluster.queries if verb == "create"]
    assert len(posts) == len(kinds)
    assert all(q.get("dryRun") == "All" and q.get("fieldValidation") == "Strict" for q in posts)
    if operator == "trainjob":  # Trainer's webhook needs the runtime, which the dry run did not create
        assert len(out["notes"]) == 1 and "could not judge it against runtime" in out["notes"][0]


def test_trainjob_dry_run_with_its_runtime_on_the_cluster_goes_through_the_webhook(
    cli, cluster, kubeconfig, job
):
    runtime = trainjob.training_runtime(jobspec.load(job))
    cluster.put("trainingruntimes", runtime, NS)
    res = cli("apply", "--config", job, "--kubeconfig", kubeconfig, "--dry-run", "--json")
    assert res.code == 0, res.err
    assert res.json()["notes"] == [] and _custom(cluster) == [("trainingruntimes", NS, NAME)]


@needs_schemas
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_field_the_crd_does_not_know_is_refused_never_dropped(
    cli, cluster, kubeconfig, job, monkeypatch, dry_run
):
    """A `hostNetwork` put in the TrainJob (where v2.3 has no such field) is a 400 under Strict; without
    Strict the API server would have stored the job without it and only warned."""
    original = trainjob.trainjob

    def misplaced(spec):
        doc = original(spec)
        doc["spec"]["trainer"]["hostNetwork"] = True
        return doc

    monkeypatch.setattr(trainjob, "trainjob", misplaced)
    extra = ("--dry-run",) if dry_run else ()
    res = cli("apply", "--config", job, "--kubeconfig", kubeconfig, *extra)
    assert res.code == 1 and "strict decoding error" in _one_line(res)
    assert 'unknown field "spec.trainer.hostNetwork"' in res.err
    assert ("trainjobs", NS, NAME) not in cluster.objects
    # What the default (Warn) would have done: created, the field pruned, a warning header only.
    from kubernetes import client, config

    custom = client.CustomObjectsApi(config.new_client_from_config(str(kubeconfig)))
    body = misplaced(jobspec.load(job))
    cluster.put("trainingruntimes", trainjob.training_runtime(jobspec.load(job)), NS)
    custom.create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", NS, "trainjobs", body)
    assert "hostNetwork" not in cluster.objects[("trainjobs", NS, NAME)]["spec"]["trainer"]


@needs_schemas
def test_pytorchjob_strict_and_schema_errors_are_one_line(cli, cluster, kubeconfig, monkeypatch):
    original = render.pytorchjob

    def broken(spec):
        doc = original(spec)
        doc["spec"]["runPolicy"]["backoffLimit"] = "three"
        return doc

    monkeypatch.setattr(render, "pytorchjob", broken)
    res = cli("apply", "--config", EKS, "--kubeconfig", kubeconfig, "--dry-run")
    assert res.code == 1 and "422 Invalid" in _one_line(res) and "backoffLimit" in res.err
    assert _custom(cluster) == []


def test_every_rendering_is_accepted_by_the_strict_fake_for_every_platform(cluster, kubeconfig, tmp_path):
    """Each platform's job, on each operator, passes a strict server-side dry run."""
    if not maybe_schemas():
        pytest.skip(SKIP_REASON)
    backend = KubernetesBackend(kubeconfig=str(kubeconfig), run_dir=tmp_path / "run")
    for path in sorted((REPO / "manifests/jobs").glob("*.yaml")):
        for operator in ("pytorchjob", "trainjob"):
            spec = jobspec.load(path)
            from dataclasses import replace

            result = backend.submit(replace(spec, operator=operator), dry_run=True)
            assert result["dry_run"] and result["created"] == [], (path.name, operator)
            sent = [d for d in api.manifests(spec, operator) if d["kind"] != "Namespace"]  # NS exists
            assert len(result["accepted"]) == len(sent), (path.name, operator, result)


def _preflight(cli, job, kubeconfig):
    return cli("preflight", "--config", job, "--kubeconfig", kubeconfig, "--json")


def test_preflight_names_the_operators_and_what_to_install(cli, cluster, kubeconfig, job):
    res = _preflight(cli, job, kubeconfig)
    assert res.code == 0, res.err
    out = res.json()
    assert out["pytorchjob"] is True and out["trainjob"] is True and out["ok"] is True
    assert "has both operators" in out["summary"]

    cluster.crds -= TRAINER_CRDS
    cluster.version = (1, 30)
    res = _preflight(cli, job, kubeconfig)
    assert res.code == 1
    out = res.json()
    assert out["trainjob"] is False and "PyTorchJob (Training Operator v1) only" in out["summary"]
    (problem,) = out["problems"]
    assert "v1.30.0-fake" in problem and "older than Kubernetes 1.32" in problem
    assert "overlays/manager?ref=v2.3.0" in problem and "operator: pytorchjob" in problem
    res = cli("apply", "--config", job, "--kubeconfig", kubeconfig)  # apply stops at the same line
    assert res.code == 1 and "older than Kubernetes 1.32" in res.err and _custom(cluster) == []

    cluster.version = (1, 33)
    res = _preflight(cli, job, kubeconfig)
    (problem,) = res.json()["problems"]
    assert (
        "v1.33.0-fake" in problem and "older than" not in problem and "kubectl apply --server-side" in problem
    )

    cluster.crds |= TRAINER_CRDS
    cluster.crd_installed = False
    res = cli("preflight", "--config", EKS, "--kubeconfig", kubeconfig)  # the PyTorchJob job
    assert res.code == 1
    assert "TrainJob (Kubeflow Trainer v2) only" in res.out and "operator: trainjob" in res.out
    assert "install the Kubeflow training operator" in res.out

    cluster.crds.clear()
    res = _preflight(cli, job, kubeconfig)
    assert res.code == 1 and "neither PyTorchJob nor TrainJob" in res.json()["summary"]


def test_status_text_names_the_kind_and_a_pending_node(cli, cluster, kubeconfig, job):
    cluster.pod_phase = "Pending"
    assert cli("apply", "--config", job, "--kubeconfig", kubeconfig).code == 0
    first, _ = cluster.trainjob_pods(NS, NAME)
    cluster.add_event(
        NS, first, "FailedScheduling", "0/2 nodes are available: 2 Insufficient vpc.amazonaws.com/efa."
    )
    res = cli("status", "--config", job, "--kubeconfig", kubeconfig)
    assert res.code == 0, res.err
    assert (
        f"kubernetes job TrainJob {NS}/{NAME}: Pending" in res.out
        and "Insufficient vpc.amazonaws.com/efa" in res.out
    )


def test_dry_run_needs_the_kubernetes_backend(cli, job):
    res = cli("apply", "--config", job, "--backend", "local", "--dry-run")
    assert res.code == 2 and "--dry-run" in _one_line(res) and res.out == ""
