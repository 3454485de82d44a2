"""The Kubernetes backend and `workshop apply | status | logs | delete`, with the real `kubernetes`
client against the in-process fake API server (tests/fake_kube_api.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml
from crd_schema import maybe_schemas
from fake_kube_api import TOKEN, FakeKubeAPI

from workshop_lib.errors import WorkshopError
from workshop_lib.launch import jobspec, render
from workshop_lib.launch.backends.kubernetes import KubernetesBackend

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "manifests/jobs/techpulse-eks.yaml"
NS, NAME = "megatron-workshop", "megatron-cpt-techpulse"
MASTER, WORKER = f"{NAME}-master-0", f"{NAME}-worker-0"
P4D = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "cpu": "96", "memory": "1100Gi"}


@pytest.fixture
def fake():
    api = FakeKubeAPI(schemas=maybe_schemas()).start()  # the real CRD schemas where ../shared has them
    yield api
    api.stop()


@pytest.fixture
def cluster(fake):
    """A cluster ready for the TechPulse job: namespace, bound PVC, two p4d nodes."""
    fake.add_namespace(NS)
    fake.add_pvc(NS, "fsx-shared-pvc")
    for i in range(2):
        fake.add_node(f"p4d-{i}", P4D, {"node.kubernetes.io/instance-type": "p4d.24xlarge"})
    return fake


@pytest.fixture
def kubeconfig(fake, tmp_path):
    return fake.kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def backend(kubeconfig, tmp_path):
    return KubernetesBackend(
        kubeconfig=str(kubeconfig), run_dir=tmp_path / "run", poll_seconds=0.05, retry_seconds=0.05
    )


def _one_line(res):
    assert res.err.strip() and len(res.err.strip().splitlines()) == 1, res.err
    assert TOKEN not in res.err + res.out
    assert "Traceback" not in res.err
    return res.err


def test_apply_status_delete_round_trip(cli, cluster, kubeconfig, tmp_path):
    k = ("--kubeconfig", kubeconfig)
    res = cli("apply", "--config", JOB, *k)
    assert res.code == 0, res.err
    assert "created pytorchjob/megatron-cpt-techpulse" in res.out
    job = cluster.objects[("pytorchjobs", NS, NAME)]
    assert job == {
        **render.pytorchjob(jobspec.load(JOB)),
        "metadata": job["metadata"],
        "status": job["status"],
    }

    # Every object went with fieldValidation=Strict: nothing the cluster does not know is dropped silently.
    posts = [q for verb, _, q in cluster.queries if verb == "create"]
    assert posts and all(q.get("fieldValidation") == "Strict" for q in posts)

    res = cli("status", "--config", JOB, *k, "--json")
    assert res.code == 0, res.err
    st = res.json()
    assert st["phase"] == "Running"
    assert [(p["name"], p["phase"], p["restarts"]) for p in st["pods"]] == [
        (MASTER, "Running", 0),
        (WORKER, "Running", 0),
    ]

    res = cli("apply", "--config", JOB, *k)
    assert res.code == 1 and "already exists" in _one_line(res) and "--replace" in res.err
    uid = cluster.objects[("pytorchjobs", NS, NAME)]["metadata"]["uid"]
    res = cli("apply", "--config", JOB, *k, "--replace")
    assert res.code == 0, res.err
    assert cluster.objects[("pytorchjobs", NS, NAME)]["metadata"]["uid"] != uid

    cluster.gc_delay = 0.3  # the garbage collector takes a moment: --wait must wait for it
    res = cli("delete", "--name", NAME, "--namespace", NS, *k, "--wait")
    assert res.code == 0, res.err
    assert "pods are gone" in res.out
    assert not [key for key in cluster.objects if key[0] in ("pods", "pytorchjobs")]
    assert ("get", f"/api/v1/namespaces/{NS}/pods") in cluster.requests  # list, then watch

    res = cli("delete", "--name", NAME, "--namespace", NS, *k)
    assert res.code == 1 and "no PyTorchJob named" in _one_line(res)


def test_status_explains_pending_and_image_pull(cli, cluster, kubeconfig):
    cluster.pod_phase = "Pending"
    assert cli("apply", "--config", JOB, "--kubeconfig", kubeconfig).code == 0
    cluster.add_event(
        NS, MASTER, "FailedScheduling", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )
    cluster.set_pod_phase(NS, WORKER, "Pending", waiting_reason="ImagePullBackOff")
    cluster.add_event(NS, WORKER, "Failed", 'Failed to pull image "megatron-training:latest": not found')
    cluster.add_event(NS, "unrelated-pod", "BackOff", "ignore me")
    res = cli("status", "--config", JOB, "--kubeconfig", kubeconfig)
    assert res.code == 0, res.err
    assert (
        "Insufficient nvidia.com/gpu" in res.out
        and "ImagePullBackOff" in res.out
        and "Failed to pull image" in res.out
    )
    assert "ignore me" not in res.out
    # the failed pod gets the same one-line verdict as `workshop train` and `monitor diagnose`
    assert res.out.splitlines()[-1].startswith("diagnosis: image_pull_error at line ")
    st = cli("status", "--config", JOB, "--kubeconfig", kubeconfig, "--json").json()
    assert {p["name"]: p["reason"] for p in st["pods"]}[WORKER] == "ImagePullBackOff"
    assert st["diagnosis"]["primary"] == "image_pull_error" and st["diagnosis"]["summary"].startswith(
        "diagnosis:"
    )
    # logs without --follow on pods that never started says why, in one line
    res = cli("logs", "--config", JOB, "--kubeconfig", kubeconfig)
    assert res.code == 1 and "Insufficient nvidia.com/gpu" in _one_line(res)


def test_status_names_what_a_stuck_pending_pod_waits_for(cli, cluster, kubeconfig):
    """A pod Pending for ever (its FSx claim cannot be mounted) is not failed, but status says why."""
    cluster.pod_phase = "Pending"
    assert cli("apply", "--config", JOB, "--kubeconfig", kubeconfig).code == 0
    cluster.add_event(NS, MASTER, "Scheduled", "Successfully assigned ns/master to node-1", type_="Normal")
    res = cli("status", "--config", JOB, "--kubeconfig", kubeconfig, "--json")
    assert res.code == 0 and "diagnosis" not in res.json()  # Pending with no warning: just starting
    cluster.set_pod_phase(NS, MASTER, "Pending", waiting_reason="ContainerCreating")
    cluster.add_event(
        NS, MASTER, "FailedMount",
        "Unable to attach or mount volumes: unmounted volumes=[fsx], unattached volumes=[fsx dshm]: "
        "timed out waiting for the condition",
    )  # fmt: skip
    res = cli("status", "--config", JOB, "--kubeconfig", kubeconfig)
    assert res.code == 0, res.err
    assert res.out.splitlines()[-1].startswith("diagnosis: volume_mount_failed at line ")
    assert (
        cli("status", "--config", JOB, "--kubeconfig", kubeconfig, "--json").json()["diagnosis"]["primary"]
        == "volume_mount_failed"
    )


def test_status_of_a_pending_pod_with_an_unknown_warning_adds_no_verdict(cli, cluster, kubeconfig):
    cluster.pod_phase = "Pending"
    assert cli("apply", "--config", JOB, "--kubeconfig", kubeconfig).code == 0
    cluster.add_event(NS, MASTER, "SomethingOdd", "the pod is waiting for a reason no signature knows")
    res = cli("status", "--config", JOB, "--kubeconfig", kubeconfig)
    assert res.code == 0 and "SomethingOdd" in res.out and "diagnosis:" not in res.out


@pytest.mark.parametrize(
    "setup, expected",
    [
        (lambda f: setattr(f, "crd_installed", False), "install the Kubeflow training operator"),
        (
            lambda f: f.objects.pop(("persistentvolumeclaims", NS, "fsx-shared-pvc")),
            "PVC fsx-shared-pvc does not exist",
        ),
        (lambda f: f.add_pvc(NS, "fsx-shared-pvc", phase="Pending"), "is Pending, not Bound"),
        (lambda f: f.objects.pop(("nodes", "", "p4d-1")), "only 1 node(s)"),
        (lambda f: f.objects.pop(("namespaces", "", NS)), "namespace megatron-workshop does not exist"),
    ],
    ids=["crd", "pvc-missing", "pvc-pending", "nodes", "namespace"],
)
def test_preflight_failures_are_one_sentence_with_the_fix(cli, cluster, kubeconfig, setup, expected):
    setup(cluster)
    res = cli("apply", "--config", JOB, "--kubeconfig", kubeconfig)
    assert res.code == 1 and expected in res.err and "Traceback" not in res.err
    assert ("pytorchjobs", NS, NAME) not in cluster.objects


def test_nodes_without_efa_do_not_count(cluster, backend):
    cluster.add_node(
        "p4d-1", {**P4D, "vpc.amazonaws.com/efa": "0"}, {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    )
    with pytest.raises(WorkshopError, match="EFA device plugins"):
        backend.preflight(jobspec.load(JOB))


def test_api_errors_are_one_line(cli, cluster, kubeconfig, tmp_path, monkeypatch):
    k = ("--kubeconfig", kubeconfig)
    res = cli("status", "--config", JOB, "--kubeconfig", tmp_path / "missing")
    assert res.code == 2 and "no such file" in _one_line(res)  # invalid input, see below
    res = cli("status", "--config", JOB, "--kubeconfig", cluster.kubeconfig(tmp_path / "bad", token="wrong"))
    assert res.code == 1 and "401" in _one_line(res)
    res = cli("status", "--config", JOB, *k)
    assert res.code == 1 and "no PyTorchJob named megatron-cpt-techpulse" in _one_line(res)
    cluster.forbid.add(("create", "pytorchjobs"))
    res = cli("apply", "--config", JOB, *k)
    assert res.code == 1 and "403" in _one_line(res) and 'cannot create resource "pytorchjobs"' in res.err
    cluster.forbid.clear()
    cluster.crd_installed = False
    res = cli("apply", "--config", JOB, *k, "--skip-preflight")
    assert res.code == 1 and "install the Kubeflow training operator" in _one_line(res)
    cluster.crd_installed = True
    # The EKS launch guide (docs/sources.md) names the container "megatron"; the webhook wants "pytorch".
    monkeypatch.setattr(render, "CONTAINER", "megatron")
    res = cli("apply", "--config", JOB, *k)
    assert res.code == 1 and "422" in _one_line(res) and "no container named pytorch" in res.err
    res = cli("status", "--config", JOB, *k, "--context", "nope")
    assert res.code == 2 and "--context" in _one_line(res)
    stopped = FakeKubeAPI()
    dead = stopped.kubeconfig(tmp_path / "dead")
    stopped.server.server_close()
    res = cli("status", "--config", JOB, "--kubeconfig", dead)
    assert res.code == 1 and "cannot reach the API server" in _one_line(res)


def test_check_errors_block_apply_unless_forced(cli, cluster, kubeconfig, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**yaml.safe_load(JOB.read_text()), "env": {"NCCL_ALGO": "Ring"}}))
    res = cli("apply", "--config", bad, "--kubeconfig", kubeconfig)
    assert res.code == 1 and "nccl-algo" in res.err and ("pytorchjobs", NS, NAME) not in cluster.objects
    assert cli("apply", "--config", bad, "--kubeconfig", kubeconfig, "--force").code == 0


def test_logs_follow_across_drop_and_restart_without_repeats(cluster, backend, tmp_path):
    spec = jobspec.load(JOB)
    backend.submit(spec)
    cluster.log(NS, MASTER, "rank0 starting", "rank0 step 1")
    cluster.log(NS, WORKER, " iteration        1/      10 | lm loss: 9.0 |")

    def training():
        time.sleep(0.3)
        cluster.log(NS, WORKER, " iteration        2/      10 | lm loss: 8.0 |")
        cluster.drop_log_streams()  # the connection dies mid-stream
        time.sleep(0.3)
        cluster.log(NS, WORKER, " iteration        3/      10 | lm loss: 7.5 |", "worker crashing")
        cluster.restart(NS, WORKER)  # OnFailure: the kubelet starts a new container
        cluster.log(NS, WORKER, "resumed from checkpoint", " iteration        4/      10 | lm loss: 7.0 |")
        time.sleep(0.3)
        cluster.set_pod_phase(NS, WORKER, "Succeeded")
        cluster.set_pod_phase(NS, MASTER, "Succeeded")

    t = threading.Thread(target=training)
    t.start()
    shown: list[str] = []
    result = backend.logs(spec, follow=True, sink=shown.append, timeout=20)
    t.join()
    log = Path(result["out"])
    assert log == tmp_path / "run" / "train" / "train.log"
    worker_lines = [line for line in log.read_text().splitlines() if not line.startswith("rank0")]
    assert worker_lines == [
        " iteration        1/      10 | lm loss: 9.0 |",
        " iteration        2/      10 | lm loss: 8.0 |",
        " iteration        3/      10 | lm loss: 7.5 |",
        "worker crashing",
        "resumed from checkpoint",
        " iteration        4/      10 | lm loss: 7.0 |",
    ]
    assert [line for line in log.read_text().splitlines() if line.startswith("rank0")] == [
        "rank0 starting",
        "rank0 step 1",
    ]
    assert "[worker-0] resumed from checkpoint" in shown and "[master-0] rank0 starting" in shown
    assert result["pods"] == [MASTER, WORKER] and result["lines"] == 8


def test_logs_cli_all_ranks_to_out_file(cli, cluster, kubeconfig, tmp_path):
    spec_data = yaml.safe_load(JOB.read_text())
    spec_data.update(nodes=3, args={**spec_data["args"], "global-batch-size": 480})
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(spec_data))
    cluster.add_node("p4d-2", P4D, {"node.kubernetes.io/instance-type": "p4d.24xlarge"})
    assert cli("apply", "--config", job, "--kubeconfig", kubeconfig).code == 0
    pods = [MASTER, WORKER, f"{NAME}-worker-1"]
    for i, pod in enumerate(pods):
        cluster.log(NS, pod, f"hello from node {i}")
        cluster.set_pod_phase(NS, pod, "Succeeded")
    out = tmp_path / "all.log"
    res = cli("logs", "--config", job, "--kubeconfig", kubeconfig, "--all", "--follow", "--out", out)
    assert res.code == 0, res.err
    assert sorted(res.out.splitlines()) == [
        f"[{p[len(NAME) + 1 :]}] hello from node {i}" for i, p in enumerate(pods)
    ]
    assert sorted(out.read_text().splitlines()) == [f"hello from node {i}" for i in range(3)]
    res = cli("logs", "--config", job, "--kubeconfig", kubeconfig, "--out", out, "--json")
    assert res.code == 0 and res.json()["pods"] == [MASTER, f"{NAME}-worker-1"]  # rank 0 and the last rank
    assert "diagnosis" not in res.json()  # a healthy log gets no verdict line


def test_logs_print_the_verdict_when_the_run_failed(cli, cluster, kubeconfig, tmp_path):
    assert cli("apply", "--config", JOB, "--kubeconfig", kubeconfig).code == 0
    cluster.log(
        NS, WORKER, "[rank8]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    )
    cluster.log(
        NS,
        MASTER,
        "[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE)",
    )
    for pod in (MASTER, WORKER):
        cluster.set_pod_phase(NS, pod, "Failed")
    out = tmp_path / "run.log"
    res = cli("logs", "--config", JOB, "--kubeconfig", kubeconfig, "--all", "--out", out)
    assert res.code == 0, res.err
    assert "diagnosis: cuda_oom at line" in res.err  # the OOM, not the timeout it caused
    d = cli("logs", "--config", JOB, "--kubeconfig", kubeconfig, "--all", "--out", out, "--json").json()[
        "diagnosis"
    ]
    assert d["primary"] == "cuda_oom" and [f["label"] for f in d["findings"]] == ["cuda_oom", "nccl_timeout"]


def test_hyperpod_apply_creates_etcd_and_delete_removes_it(cli, fake, kubeconfig):
    job = REPO / "manifests/jobs/techpulse-hyperpod.yaml"
    fake.add_namespace(NS)
    fake.add_pvc(NS, "fsx-claim")
    for i in range(2):
        fake.add_node(
            f"p5-{i}",
            {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
            {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
        )
    res = cli("apply", "--config", job, "--kubeconfig", kubeconfig)
    assert res.code == 0, res.err
    assert ("services", NS, f"{NAME}-etcd") in fake.objects and (
        "deployments",
        NS,
        f"{NAME}-etcd",
    ) in fake.objects
    assert cli("delete", "--config", job, "--kubeconfig", kubeconfig, "--wait").code == 0
    assert ("services", NS, f"{NAME}-etcd") not in fake.objects


def test_a_bad_kubeconfig_is_exit_2_one_line_naming_the_file(cli, tmp_path, monkeypatch):
    """Missing, broken YAML, not a mapping, a directory, empty: invalid input, never the file's text."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(f"apiVersion: v1\nusers: [{{name: u, user: {{token: {TOKEN}}}}}\n  - oops: [\n")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    cases = [
        (broken, "not valid YAML (line"),
        (tmp_path / "nonexist", "no such file"),
        (listed, "cannot be read as a kubeconfig"),
        (tmp_path, "is a directory"),
        (empty, "no usable kubeconfig"),
    ]
    for path, expected in cases:
        for cmd in ("status", "logs", "delete"):
            res = cli(cmd, "--config", JOB, "--kubeconfig", path)
            line = _one_line(res)  # also: the token in broken.yaml is never printed
            assert res.code == 2 and expected in line and str(path) in line, (cmd, line)
            assert "update-kubeconfig" in line and res.out == ""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nonexist-default"))
    res = cli("status", "--config", JOB)
    assert res.code == 2 and "no usable kubeconfig" in _one_line(res) and "nonexist-default" in res.err
