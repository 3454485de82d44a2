"""A small in-process Kubernetes API server for the launch tests (stdlib only).

No real API server installs from the registries here, so the tests drive the *real* ``kubernetes``
client against this one, through a generated kubeconfig pointing at ``http://127.0.0.1:PORT``. It
answers the paths and bodies the launch backend uses, as the real API server does:

* ``GET /version`` (``version``, default 1.33); ``GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}``
  for the CRDs in ``crds`` (PyTorchJob, TrainJob, TrainingRuntime, ClusterTrainingRuntime, JobSet)
* namespaces (create/get), PVCs (get), nodes (list), events (list with ``fieldSelector=involvedObject.name=``)
* services and apps/v1 deployments (create/delete)
* ``/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs`` create/get/list/delete, with the training
  operator's webhook check that a container named ``pytorch`` exists (422 otherwise)
* Kubeflow Trainer v2: ``/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainingruntimes`` (create, get,
  update with ``resourceVersion``, delete) and ``trainjobs`` (create, get, delete). Trainer's validating
  webhook as in v2.3 (403 ``admission webhook ... denied the request``): the referenced runtime must exist,
  and ``spec.trainer.env`` must not set a ``PET_*`` variable. The "controller" creates one pod per node
  as JobSet names and labels them (``<job>-node-0-<i>-<suffix>``, ``jobset.sigs.k8s.io/jobset-name``,
  ``batch.kubernetes.io/job-completion-index``): the runtime's pod template with the TrainJob's command,
  env, resources and the ``PET_*`` variables applied to container ``node``.
* custom resources are judged against the real CRD schemas given as ``schemas`` (tests load them from
  ``<shared>/crds``, see ``crd_schema.py``), as an API server does: with ``fieldValidation=Strict`` an
  unknown field is 400 ``strict decoding error: unknown field "..."``; without it the field is pruned
  and a ``Warning`` header says so; a wrong type or a missing required field is 422. ``dryRun=All``
  runs all of that (and the webhook) and stores nothing. Every request's query is kept in ``queries``.
* pods: get, list with ``labelSelector`` (``k=v`` terms), ``watch=true`` streams (ADDED/MODIFIED/DELETED
  JSON lines, chunked) ending at ``timeoutSeconds``
* ``pods/{name}/log`` with ``container``, ``follow``, ``previous``, ``timestamps``, ``sinceTime``: a
  Pending pod answers 400 "waiting to start"; a followed stream ends when the container ends
  (restart or finish) and can be cut abruptly (``drop_log_streams``) as a lost connection is
* errors are real ``Status`` objects: 401 (wrong bearer token), 403 (``forbid``), 404, 409, 422

Limits (what it does not do): no TLS, no admission beyond the checks above, no field validation of
built-in objects (namespaces, services, deployments), no CEL rules, no finalizers (a TrainingRuntime in
use is deleted at once), no resourceVersion semantics for watches (a watch sees events from its start), no
``limit``/``continue`` paging, ``sinceTime`` compared at whole seconds as the real server does
(it is a ``metav1.Time``), and the "operator" is a few lines: creating a PyTorchJob creates its pods
at once (``pod_phase`` on create), deleting it deletes them after ``gc_delay`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import crd_schema

TOKEN = "fake-token-0123456789"  # noqa: S105 - a test credential; the tests check it never leaks
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
TRAINER = "trainer.kubeflow.org"
# resource -> (group, CRD name, kind) of the custom resources served
CUSTOM = {
    "pytorchjobs": ("kubeflow.org", "pytorchjobs.kubeflow.org", "PyTorchJob"),
    "trainjobs": (TRAINER, f"trainjobs.{TRAINER}", "TrainJob"),
    "trainingruntimes": (TRAINER, f"trainingruntimes.{TRAINER}", "TrainingRuntime"),
    "clustertrainingruntimes": (TRAINER, f"clustertrainingruntimes.{TRAINER}", "ClusterTrainingRuntime"),
}
ALL_CRDS = frozenset({*(c[1] for c in CUSTOM.values()), "jobsets.jobset.x-k8s.io"})
PET_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")


def status_body(code: int, reason: str, message: str, details: dict | None = None) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.body = status_body(code, reason, message, details)


def _pod_spec(template_spec: dict[str, Any], node: str | None) -> dict[str, Any]:
    """A pod's spec as the API server stores it: resource quantities serialised as strings."""
    spec = json.loads(json.dumps(template_spec))
    for c in spec.get("containers", []):
        for part in ("requests", "limits"):
            res = c.get("resources", {}).get(part)
            if res:
                c["resources"][part] = {k: str(v) for k, v in res.items()}
    if node:
        spec["nodeName"] = node
    return spec


class Container:
    """One container instance of a pod: its log lines and whether it has ended."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []  # (RFC3339Nano timestamp, text)
        self.ended = False


class FakeKubeAPI:
    def __init__(self, schemas: dict[tuple[str, str], dict[str, Any]] | None = None) -> None:
        self.lock = threading.Condition()
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (kind, ns, name) -> object
        self.containers: dict[tuple[str, str], list[Container]] = {}  # (ns, pod) -> instances, last = current
        self.watchers: list[tuple[str, dict[str, str], queue.Queue]] = []
        self.requests: list[tuple[str, str]] = []
        self.forbid: set[tuple[str, str]] = set()  # (verb, resource) -> 403
        self.crds: set[str] = set(ALL_CRDS)
        self.schemas = schemas or {}  # (apiVersion, kind) -> openAPIV3Schema
        self.version = (1, 33)
        self.queries: list[tuple[str, str, dict[str, str]]] = []  # (verb, path, query) of every request
        self.pod_phase = "Running"
        self.gc_delay = 0.0
        self.drop_generation = 0
        self._rv = 0
        self._clock = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def crd_installed(self) -> bool:
        """Whether the PyTorchJob CRD is installed (the Training Operator v1)."""
        return CUSTOM["pytorchjobs"][1] in self.crds

    @crd_installed.setter
    def crd_installed(self, value: bool) -> None:
        (self.crds.add if value else self.crds.discard)(CUSTOM["pytorchjobs"][1])

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> FakeKubeAPI:
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.lock:
            for c in (c for cs in self.containers.values() for c in cs):
                c.ended = True
            self.lock.notify_all()
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, path: Path, token: str = TOKEN, namespace: str = "default") -> Path:
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "fake",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": "tester", "user": {"token": token}}],
                    "contexts": [
                        {
                            "name": "fake",
                            "context": {"cluster": "fake", "user": "tester", "namespace": namespace},
                        }
                    ],
                }
            )
        )
        return path

    # ---- state helpers for tests -------------------------------------------------------------------
    def now(self) -> str:
        with self.lock:
            self._clock += 1
            t = _EPOCH + timedelta(microseconds=self._clock * 1000)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}000Z"

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _meta(self, obj: dict[str, Any], ns: str | None) -> None:
        meta = obj.setdefault("metadata", {})
        if ns is not None:
            meta["namespace"] = ns
        meta.setdefault("uid", str(uuid.uuid4()))
        meta["resourceVersion"] = self._next_rv()
        meta.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def put(
        self, kind: str, obj: dict[str, Any], ns: str | None = None, event: str = "ADDED"
    ) -> dict[str, Any]:
        with self.lock:
            self._meta(obj, ns)
            self.objects[(kind, ns or "", obj["metadata"]["name"])] = obj
            if kind == "pods":
                self.containers.setdefault((ns, obj["metadata"]["name"]), [Container()])
                self._notify(event, obj)
            self.lock.notify_all()
        return obj

    def add_namespace(self, name: str) -> None:
        self.put(
            "namespaces",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name},
                "status": {"phase": "Active"},
            },
        )

    def add_pvc(self, ns: str, name: str, phase: str = "Bound") -> None:
        self.put(
            "persistentvolumeclaims",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name},
                "spec": {},
                "status": {"phase": phase},
            },
            ns,
        )

    def add_node(self, name: str, allocatable: dict[str, str], labels: dict[str, str] | None = None) -> None:
        self.put(
            "nodes",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels or {}},
                "spec": {},
                "status": {"allocatable": allocatable, "capacity": allocatable},
            },
        )

    def add_event(
        self, ns: str, involved: str, reason: str, message: str, type_: str = "Warning", kind: str = "Pod"
    ) -> None:
        name = f"{involved}.{uuid.uuid4().hex[:8]}"
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.put(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {"kind": kind, "name": involved, "namespace": ns},
                "reason": reason,
                "message": message,
                "type": type_,
                "count": 1,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
            },
            ns,
        )

    def pod(self, ns: str, name: str) -> dict[str, Any]:
        return self.objects[("pods", ns, name)]

    def set_pod_phase(self, ns: str, name: str, phase: str, waiting_reason: str | None = None) -> None:
        with self.lock:
            pod = self.pod(ns, name)
            pod["status"]["phase"] = phase
            cs = pod["status"]["containerStatuses"][0]
            if waiting_reason:
                cs["state"] = {"waiting": {"reason": waiting_reason}}
            elif phase == "Running":
                cs["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
            else:
                cs["state"] = {
                    "terminated": {
                        "exitCode": 0 if phase == "Succeeded" else 1,
                        "reason": "Completed" if phase == "Succeeded" else "Error",
                    }
                }
                self.containers[(ns, name)][-1].ended = True
            pod["metadata"]["resourceVersion"] = self._next_rv()
            self._notify("MODIFIED", pod)
            self.lock.notify_all()

    def log(self, ns: str, pod: str, *lines: str) -> None:
        for line in lines:
            ts = self.now()
            with self.lock:
                self.containers[(ns, pod)][-1].lines.append((ts, line))
                self.lock.notify_all()

    def restart(self, ns: str, pod: str) -> None:
        """The container dies and the kubelet starts a new one (restartCount + 1)."""
        with self.lock:
            self.containers[(ns, pod)][-1].ended = True
            self.containers[(ns, pod)].append(Container())
            p = self.pod(ns, pod)
            p["status"]["containerStatuses"][0]["restartCount"] += 1
            p["metadata"]["resourceVersion"] = self._next_rv()
            self._notify("MODIFIED", p)
            self.lock.notify_all()

    def drop_log_streams(self) -> None:
        """Cut every open follow stream mid-way, as a lost connection does."""
        with self.lock:
            self.drop_generation += 1
            self.lock.notify_all()

    # ---- the "operator" ----------------------------------------------------------------------------
    def _new_pod(
        self,
        ns: str,
        name: str,
        labels: dict[str, str],
        owner: dict[str, Any],
        spec: dict[str, Any],
        node: str,
    ) -> None:
        """A pod as a controller creates it, in ``pod_phase``, its first container the trainer's."""
        state = (
            {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
            if self.pod_phase == "Running"
            else {"waiting": {"reason": "ContainerCreating"}}
        )
        self.put(
            "pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "ownerReferences": [{**owner, "controller": True}],
                },
                "spec": _pod_spec(spec, node if self.pod_phase == "Running" else None),
                "status": {
                    "phase": self.pod_phase,
                    "containerStatuses": [
                        {
                            "name": spec["containers"][0]["name"],
                            "restartCount": 0,
                            "ready": self.pod_phase == "Running",
                            "image": spec["containers"][0].get("image", ""),
                            "imageID": "",
                            "state": state,
                        }
                    ],
                },
            },
            ns,
        )

    def _create_pods(self, job: dict[str, Any]) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        for rtype, rspec in job["spec"]["pytorchReplicaSpecs"].items():
            for i in range(int(rspec.get("replicas", 1))):
                tmpl = rspec["template"]
                labels = dict(tmpl.get("metadata", {}).get("labels", {}))
                labels.update(
                    {
                        "training.kubeflow.org/job-name": name,
                        "training.kubeflow.org/replica-type": rtype.lower(),
                        "training.kubeflow.org/replica-index": str(i),
                    }
                )
                owner = {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": name,
                    "uid": job["metadata"]["uid"],
                }
                self._new_pod(
                    ns,
                    f"{name}-{rtype.lower()}-{i}",
                    labels,
                    owner,
                    tmpl["spec"],
                    f"node-{rtype.lower()}-{i}",
                )
        job["status"] = {
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "PyTorchJobCreated",
                    "message": f"PyTorchJob {name} is created.",
                },
                {
                    "type": "Running",
                    "status": "True" if self.pod_phase == "Running" else "False",
                    "reason": "PyTorchJobRunning",
                    "message": f"PyTorchJob {name} is running.",
                },
            ]
        }

    def _create_trainjob_pods(self, job: dict[str, Any], runtime: dict[str, Any]) -> None:
        """What Trainer (torch plugin) and JobSet make of a TrainJob and its runtime: one pod per node."""
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        trainer = job["spec"].get("trainer") or {}
        rjob = next(
            r
            for r in runtime["spec"]["template"]["spec"]["replicatedJobs"]
            if r["template"].get("metadata", {}).get("labels", {}).get(f"{TRAINER}/trainjob-ancestor-step")
            == "trainer"
        )
        tmpl = rjob["template"]["spec"]["template"]
        nodes = int(trainer.get("numNodes") or runtime["spec"].get("mlPolicy", {}).get("numNodes") or 1)
        nproc = trainer.get("numProcPerNode", "auto")
        for i in range(nodes):
            spec = json.loads(json.dumps(tmpl["spec"]))
            (c,) = [c for c in spec["containers"] if c["name"] == "node"]
            env = [*c.get("env", []), *trainer.get("env", [])]
            env += [
                {"name": "PET_NNODES", "value": str(nodes)},
                {"name": "PET_NPROC_PER_NODE", "value": str(nproc)},
                {
                    "name": "PET_NODE_RANK",
                    "valueFrom": {
                        "fieldRef": {
                            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                        }
                    },
                },
                {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"},
                {"name": "PET_MASTER_PORT", "value": "29500"},
            ]
            c["env"] = env
            for key, value in (
                ("command", trainer.get("command")),
                ("resources", trainer.get("resourcesPerNode")),
            ):
                if value:
                    c[key] = value
            labels = {
                **tmpl.get("metadata", {}).get("labels", {}),
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                "jobset.sigs.k8s.io/job-index": "0",
                "jobset.sigs.k8s.io/restart-attempt": "0",
                "batch.kubernetes.io/job-completion-index": str(i),
            }
            owner = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": f"{name}-node-0",
                "uid": str(uuid.uuid4()),
            }
            pod = f"{name}-node-0-{i}-{uuid.uuid4().hex[:5]}"
            self._new_pod(ns, pod, labels, owner, spec, f"node-{i}")
        job["status"] = {
            "jobsStatus": [
                {
                    "name": rjob["name"],
                    "active": nodes,
                    "ready": 0,
                    "succeeded": 0,
                    "failed": 0,
                    "suspended": 0,
                }
            ]
        }

    def replace_pod(self, ns: str, pod: str) -> str:
        """The pod is deleted (evicted, its node lost) and its Job creates a new one for the same
        completion index, named as JobSet's pods are (a new random suffix). Returns the new name."""
        with self.lock:
            old = self.objects.pop(("pods", ns, pod))
            for c in self.containers.pop((ns, pod), []):
                c.ended = True
            self._notify("DELETED", old)
            self.lock.notify_all()
        meta = old["metadata"]
        new = f"{pod.rsplit('-', 1)[0]}-{uuid.uuid4().hex[:5]}"
        spec = {k: v for k, v in old["spec"].items() if k != "nodeName"}
        self._new_pod(ns, new, dict(meta["labels"]), meta["ownerReferences"][0], spec, "node-replacement")
        return new

    def trainjob_pods(self, ns: str, name: str) -> list[str]:
        """The pods of TrainJob ``name`` by node rank (the names carry JobSet's random suffix)."""
        with self.lock:
            pods = [
                o
                for (kind, ons, _), o in self.objects.items()
                if kind == "pods"
                and ons == ns
                and o["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name
            ]
        pods.sort(key=lambda o: int(o["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]))
        return [o["metadata"]["name"] for o in pods]

    def _delete_pods_of(self, ns: str, job: str) -> None:
        def gc() -> None:
            with self.lock:
                for key in [
                    k
                    for k, o in self.objects.items()
                    if k[0] == "pods"
                    and k[1] == ns
                    and (
                        any(r.get("name") == job for r in o["metadata"].get("ownerReferences", []))
                        or o["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name") == job
                    )
                ]:
                    obj = self.objects.pop(key)
                    for c in self.containers.pop((ns, key[2]), []):
                        c.ended = True
                    self._notify("DELETED", obj)
                self.lock.notify_all()

        if self.gc_delay:
            threading.Timer(self.gc_delay, gc).start()
        else:
            gc()

    def _notify(self, event: str, obj: dict[str, Any]) -> None:
        ns = obj["metadata"].get("namespace")
        for wns, selector, q in list(self.watchers):
            labels = obj["metadata"].get("labels", {})
            if wns == ns and all(labels.get(k) == v for k, v in selector.items()):
                q.put({"type": event, "object": json.loads(json.dumps(obj))})

    # ---- HTTP ----------------------------------------------------------------------------------------
    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any, content_type: str = "application/json") -> None:
                data = (json.dumps(body) if not isinstance(body, str) else body).encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                for warning in getattr(self, "warnings", []):
                    self.send_header("Warning", f'299 - "{warning}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _start_chunked(self, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _dispatch(self, verb: str) -> None:
                url = urlparse(self.path)
                q = {k: v[-1] for k, v in parse_qs(url.query).items()}
                api.requests.append((verb, url.path))
                api.queries.append((verb, url.path, q))
                self.warnings = []
                try:
                    if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                        raise ApiError(401, "Unauthorized", "Unauthorized")
                    length = int(self.headers.get("Content-Length") or 0)
                    body = json.loads(self.rfile.read(length)) if length else None
                    result = api.route(verb, url.path, q, body, self)
                    if result is not None:
                        code, obj = result
                        self._send(code, obj)
                except ApiError as exc:
                    self._send(exc.body["code"], exc.body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def do_GET(self) -> None:
                self._dispatch("get")

            def do_POST(self) -> None:
                self._dispatch("create")

            def do_DELETE(self) -> None:
                self._dispatch("delete")

            def do_PUT(self) -> None:
                self._dispatch("update")

        return Handler

    def route(self, verb: str, path: str, q: dict[str, str], body: Any, h) -> tuple[int, Any] | None:
        parts = [p for p in path.split("/") if p]
        if path.rstrip("/") == "/version":
            return 200, {
                "major": str(self.version[0]),
                "minor": str(self.version[1]),
                "gitVersion": f"v{self.version[0]}.{self.version[1]}.0-fake",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.22.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        if parts[:4] == ["apis", "apiextensions.k8s.io", "v1", "customresourcedefinitions"]:
            name = parts[4]
            if name not in self.crds:
                raise ApiError(
                    404,
                    "NotFound",
                    f'customresourcedefinitions.apiextensions.k8s.io "{name}" not found',
                    {"name": name, "group": "apiextensions.k8s.io", "kind": "customresourcedefinitions"},
                )
            plural, _, crd_group = name.partition(".")
            return 200, {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {
                    "group": crd_group,
                    "names": {"plural": plural, "kind": CUSTOM.get(plural, ("", "", plural))[2]},
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": "v1" if crd_group == "kubeflow.org" else "v1alpha1",
                            "served": True,
                            "storage": True,
                        }
                    ],
                },
            }
        # /api/v1/... or /apis/{group}/{version}/...
        if parts[:2] == ["api", "v1"]:
            rest, group = parts[2:], ""
        elif parts[0] == "apis" and len(parts) >= 3:
            rest, group = parts[3:], parts[1]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        resource = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if resource in CUSTOM and (group != CUSTOM[resource][0] or CUSTOM[resource][1] not in self.crds):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if (verb, resource) in self.forbid:
            raise ApiError(
                403,
                "Forbidden",
                f'{resource}{"." + group if group else ""} is forbidden: User "tester" cannot {verb} '
                f'resource "{resource}" in API group "{group}"'
                + (f' in the namespace "{ns}"' if ns else " at the cluster scope"),
                {"kind": resource, "group": group},
            )
        if resource == "pods" and sub == "log":
            return self._pod_log(ns, name, q, h)
        if resource == "namespaces" and ns is None and verb == "create":
            name = body["metadata"]["name"]
        if verb == "get" and name is None:
            if q.get("watch") in ("true", "1"):
                return self._watch(ns, q, h)
            return 200, self._list(resource, ns, q)
        if verb == "get":
            return 200, self._get(resource, ns, name, group)
        if verb == "create":
            return 201, self._create(resource, ns, body, group, q, h)
        if verb == "update":
            return 200, self._update(resource, ns, name, body, group, q, h)
        if verb == "delete":
            return 200, self._delete(resource, ns, name, group)
        raise ApiError(405, "MethodNotAllowed", "method not allowed")

    def _not_found(self, resource: str, name: str, group: str) -> ApiError:
        full = f"{resource}.{group}" if group else resource
        return ApiError(
            404, "NotFound", f'{full} "{name}" not found', {"name": name, "group": group, "kind": resource}
        )

    def _get(self, resource: str, ns: str | None, name: str, group: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects.get((resource, ns or "", name))
            if obj is None:
                raise self._not_found(resource, name, group)
            return json.loads(json.dumps(obj))

    def _list(self, resource: str, ns: str | None, q: dict[str, str]) -> dict[str, Any]:
        selector = dict(t.split("=", 1) for t in q.get("labelSelector", "").split(",") if "=" in t)
        fields = dict(t.split("=", 1) for t in q.get("fieldSelector", "").split(",") if "=" in t)
        items = []
        with self.lock:
            for (kind, ons, _), obj in sorted(self.objects.items()):
                if kind != resource or (ns is not None and ons != ns):
                    continue
                labels = obj["metadata"].get("labels") or {}
                if any(labels.get(k) != v for k, v in selector.items()):
                    continue
                if (
                    fields.get("involvedObject.name")
                    and obj.get("involvedObject", {}).get("name") != fields["involvedObject.name"]
                ):
                    continue
                items.append(json.loads(json.dumps(obj)))
            rv = str(self._rv)
        kind = {
            "pods": "PodList",
            "nodes": "NodeList",
            "events": "EventList",
            "namespaces": "NamespaceList",
            "pytorchjobs": "PyTorchJobList",
            "trainjobs": "TrainJobList",
            "trainingruntimes": "TrainingRuntimeList",
        }.get(resource, "List")
        return {"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": rv}, "items": items}

    def _judge(self, resource: str, body: dict[str, Any], q: dict[str, str], h) -> dict[str, Any]:
        """Decode and validate a custom resource as the API server does; the object as it would be stored."""
        if resource not in CUSTOM:
            return body
        kind = CUSTOM[resource][2]
        schema = self.schemas.get((body.get("apiVersion", ""), body.get("kind", "")))
        if body.get("kind") != kind:
            raise ApiError(
                400, "BadRequest", f"the API version in the data does not match the expected {kind}"
            )
        if schema is None:  # no CRD schemas given to this fake: judged by nothing
            return body
        report, stored = crd_schema.check(body, schema, prune=q.get("fieldValidation") != "Strict")
        name = body.get("metadata", {}).get("name", "")
        if report.unknown and q.get("fieldValidation") == "Strict":
            raise ApiError(
                400,
                "BadRequest",
                "strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in report.unknown),
            )
        if report.unknown:
            h.warnings += [f'unknown field "{f}"' for f in report.unknown]
        if report.invalid:
            full = f"{kind}.{CUSTOM[resource][0]}"
            raise ApiError(
                422,
                "Invalid",
                f'{full} "{name}" is invalid: [{", ".join(report.invalid)}]',
                {"name": name, "group": CUSTOM[resource][0], "kind": kind},
            )
        return stored

    def _trainjob_webhook(self, ns: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Trainer v2.3's TrainJob validator: the runtime must exist; PET_* are the torch plugin's.
        Returns the runtime (None for a ClusterTrainingRuntime)."""
        ref = body.get("spec", {}).get("runtimeRef", {})
        kind = ref.get("kind", "ClusterTrainingRuntime")
        key = (
            ("trainingruntimes", ns, ref.get("name"))
            if kind == "TrainingRuntime"
            else (
                "clustertrainingruntimes",
                "",
                ref.get("name"),
            )
        )
        runtime = self.objects.get(key)
        hook = 'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request'
        if runtime is None:
            raise ApiError(
                403,
                "Forbidden",
                f'{hook}: spec.runtimeRef: Invalid value: {json.dumps(ref)}: {key[0]}.{TRAINER} "{ref.get("name")}" '
                "not found: specified trainingRuntime must be created before the TrainJob is created",
            )
        reserved = sorted(
            {e.get("name") for e in body["spec"].get("trainer", {}).get("env", [])} & set(PET_ENV)
        )
        if reserved:
            raise ApiError(
                403,
                "Forbidden",
                f"{hook}: spec.trainer.env: Invalid value: must not have reserved envs, invalid envs configured: {reserved}",
            )
        return runtime

    def _create(
        self,
        resource: str,
        ns: str | None,
        body: dict[str, Any],
        group: str,
        q: dict[str, str] | None = None,
        h=None,
    ) -> dict[str, Any]:
        q = q or {}
        dry_run = q.get("dryRun") == "All"
        name = body.get("metadata", {}).get("name", "")
        if not _DNS.match(name or ""):
            raise ApiError(
                422,
                "Invalid",
                f'{resource} "{name}" is invalid: metadata.name: Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\'',
                {
                    "name": name,
                    "kind": resource,
                    "causes": [{"reason": "FieldValueInvalid", "field": "metadata.name"}],
                },
            )
        with self.lock:
            if (resource, ns or "", name) in self.objects:
                full = f"{resource}.{group}" if group else resource
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{full} "{name}" already exists',
                    {"name": name, "group": group, "kind": resource},
                )
            body = self._judge(resource, body, q, h)
            runtime = self._trainjob_webhook(ns, body) if resource == "trainjobs" else None
            if resource == "pytorchjobs":
                for rtype, r in body.get("spec", {}).get("pytorchReplicaSpecs", {}).items():
                    names = [
                        c.get("name") for c in r.get("template", {}).get("spec", {}).get("containers", [])
                    ]
                    if "pytorch" not in names:
                        raise ApiError(
                            422,
                            "Invalid",
                            f'PyTorchJob.kubeflow.org "{name}" is invalid: spec.pytorchReplicaSpecs[{rtype}].template.spec.containers: '
                            f'Invalid value: "{",".join(map(str, names))}": There is no container named pytorch in {rtype}',
                            {"name": name, "group": "kubeflow.org", "kind": "PyTorchJob"},
                        )
            if dry_run:  # everything judged, nothing stored
                obj = json.loads(json.dumps(body))
                obj["metadata"].update(namespace=ns, uid=str(uuid.uuid4()))
                return obj
            obj = self.put(resource, json.loads(json.dumps(body)), ns)
            if resource == "pytorchjobs":
                self._create_pods(obj)
            if resource == "trainjobs":
                self._create_trainjob_pods(obj, runtime)
            return json.loads(json.dumps(obj))

    def _update(
        self, resource: str, ns: str | None, name: str, body: dict[str, Any], group: str, q: dict[str, str], h
    ) -> dict[str, Any]:
        """PUT: replace an object whose ``metadata.resourceVersion`` is the current one (409 otherwise)."""
        with self.lock:
            current = self.objects.get((resource, ns or "", name))
            if current is None:
                raise self._not_found(resource, name, group)
            if body.get("metadata", {}).get("resourceVersion") != current["metadata"]["resourceVersion"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {resource}.{group} "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                )
            body = self._judge(resource, body, q, h)
            obj = json.loads(json.dumps(body))
            obj["metadata"].update(
                uid=current["metadata"]["uid"], creationTimestamp=current["metadata"]["creationTimestamp"]
            )
            if q.get("dryRun") == "All":
                return obj
            return json.loads(json.dumps(self.put(resource, obj, ns)))

    def _delete(self, resource: str, ns: str | None, name: str, group: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects.pop((resource, ns or "", name), None)
            if obj is None:
                raise self._not_found(resource, name, group)
            if resource == "pods":
                self._notify("DELETED", obj)
        if resource in ("pytorchjobs", "trainjobs"):
            self._delete_pods_of(ns, name)
        # The API server answers a DELETE with the object as it was deleted (deletionTimestamp set).
        obj["metadata"]["deletionTimestamp"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return obj

    def _watch(self, ns: str | None, q: dict[str, str], h) -> None:
        selector = dict(t.split("=", 1) for t in q.get("labelSelector", "").split(",") if "=" in t)
        events: queue.Queue = queue.Queue()
        entry = (ns, selector, events)
        self.watchers.append(entry)
        deadline = time.time() + float(q.get("timeoutSeconds", 30))
        h._start_chunked("application/json")
        try:
            while time.time() < deadline:
                with contextlib.suppress(queue.Empty):
                    ev = events.get(timeout=0.05)
                    h._chunk((json.dumps(ev) + "\n").encode())
            h._chunk(b"")
        finally:
            self.watchers.remove(entry)
        return None

    def _pod_log(self, ns: str, name: str, q: dict[str, str], h) -> None:
        with self.lock:
            pod = self.objects.get(("pods", ns, name))
            if pod is None:
                raise self._not_found("pods", name, "")
            names = [c["name"] for c in pod["spec"].get("containers", [])]
            container = q.get("container", names[0] if names else "")
            if container not in names:
                raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
            instances = self.containers[(ns, name)]
            if q.get("previous") == "true":
                if len(instances) < 2:
                    raise ApiError(
                        400,
                        "BadRequest",
                        f'previous terminated container "{container}" in pod "{name}" not found',
                    )
                c = instances[-2]
            else:
                c = instances[-1]
                waiting = pod["status"]["containerStatuses"][0]["state"].get("waiting")
                if pod["status"]["phase"] == "Pending" or waiting:
                    reason = (waiting or {}).get("reason", "ContainerCreating")
                    raise ApiError(
                        400,
                        "BadRequest",
                        f'container "{container}" in pod "{name}" is waiting to start: {reason}',
                    )
            generation = self.drop_generation
        since = q.get("sinceTime", "")
        since_key = since.rstrip("Z")[:19] if since else ""
        stamps, follow = q.get("timestamps") == "true", q.get("follow") == "true"
        h._start_chunked("text/plain")
        sent = 0
        while True:
            with self.lock:
                new = c.lines[sent:]
                sent = len(c.lines)
                ended, dropped = c.ended, self.drop_generation != generation
            for ts, text in new:
                if since_key and ts[:19] < since_key:
                    continue
                h._chunk(((ts + " " if stamps else "") + text + "\n").encode())
            if dropped:
                h.close_connection = True  # no terminating chunk: the client sees the connection die
                return None
            if not follow or ended:
                h._chunk(b"")
                return None
            with self.lock:
                if len(c.lines) == sent and not c.ended and self.drop_generation == generation:
                    self.lock.wait(0.1)
