"""The Kubernetes backend: the real ``kubernetes`` client against the cluster a kubeconfig names.

* ``preflight``: the API answers, the PyTorchJob CRD exists, the namespace and PVC exist (PVC Bound),
  and enough nodes offer the allocatable GPUs and EFA/IB devices one pod asks for.
* ``submit`` creates what ``render.render_job`` gives; a name conflict is reported, ``replace``
  deletes and recreates.
* ``status``: conditions, pods (phase, restarts, waiting reason) and the Warning events that
  explain a Pending pod or an image pull error.
* ``logs`` waits for the pods, streams rank 0's pod and the last pod (Megatron prints its iteration
  lines on the last rank) or every pod, writes the lines to a file the monitor reads, re-attaches
  after a container restart with ``sinceTime`` and skips lines it already has (by their
  timestamps), and retries a dropped connection.
* ``delete`` removes the job (and an etcd rendezvous); ``wait`` returns when the pods are gone.

Every API failure becomes one ``WorkshopError`` line; credentials are never printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from ...errors import UsageError, WorkshopError
from ...paths import DEFAULT_RUN_DIR, RunDir
from .. import render
from .base import LineSink

GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"
CRD_NAME = "pytorchjobs.kubeflow.org"
INSTALL_OPERATOR = (
    "install the Kubeflow training operator: kubectl apply --server-side -k "
    '"github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1"'
)
RUNNING_PHASES = ("Running", "Succeeded", "Failed")


def _status_message(exc: Any) -> str:
    """The server's own reason from a Status body, else the HTTP reason."""
    try:
        body = json.loads(exc.body or "{}")
        return str(body.get("message") or exc.reason or "")
    except (TypeError, ValueError):
        return str(exc.reason or "")


class KubernetesBackend:
    name = "kubernetes"

    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        run_dir: Path | None = None,
        poll_seconds: float = 2.0,
        retry_seconds: float = 1.0,
        read_timeout: float = 120.0,
    ):
        self.kubeconfig = kubeconfig
        self.context = context
        self.run = RunDir(Path(run_dir) if run_dir else DEFAULT_RUN_DIR)
        self.poll = poll_seconds
        self.retry = retry_seconds
        self.read_timeout = read_timeout
        self._api = None

    # ---- client and error mapping -----------------------------------------------------------------
    @property
    def api(self):
        """The API client for the kubeconfig and context given.

        A kubeconfig that is missing, unreadable, not YAML or not a kubeconfig is invalid input
        (UsageError, exit 2): one line naming the file and how to get a good one. The messages never
        carry the file's contents or the client's exception text, which can quote a token.
        """
        if self._api is None:
            try:
                import yaml
                from kubernetes import config
            except ImportError:
                raise WorkshopError(
                    "the kubernetes Python client is not installed; pip install kubernetes"
                ) from None
            where = self.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            regenerate = (
                "pass --kubeconfig FILE or set KUBECONFIG (EKS: `aws eks update-kubeconfig --name CLUSTER`; "
                "AKS: `az aks get-credentials`)"
            )
            if self.kubeconfig is not None and not Path(self.kubeconfig).is_file():
                what = "is a directory" if Path(self.kubeconfig).is_dir() else "no such file"
                raise UsageError(f"--kubeconfig {self.kubeconfig}: {what}; {regenerate}")
            try:
                self._api = config.new_client_from_config(
                    config_file=self.kubeconfig, context=self.context, persist_config=False
                )
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = f" (line {mark.line + 1})" if mark is not None else ""
                raise UsageError(
                    f"kubeconfig {where}: not valid YAML{line}; fix the file or regenerate it: {regenerate}"
                ) from None
            except config.ConfigException as exc:
                if self.context and "context" in str(exc).lower():
                    raise UsageError(
                        f"--context: no context {self.context!r} in {where}; list them with `kubectl config get-contexts`"
                    ) from None
                raise UsageError(
                    f"no usable kubeconfig ({where}): it needs clusters, users, contexts and a current-context; "
                    f"{regenerate}"
                ) from None
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                raise UsageError(
                    f"kubeconfig {where}: cannot be read as a kubeconfig (a YAML mapping of clusters, users "
                    f"and contexts); {regenerate}"
                ) from None
        return self._api

    def _clients(self):
        from kubernetes import client

        return client.CoreV1Api(self.api), client.CustomObjectsApi(self.api)

    def _call(self, fn, *args, what: str, not_found: str | None = None, conflict: str | None = None, **kw):
        """Call the API; turn every failure into one WorkshopError line that says what to do."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kw)
        except ApiException as exc:
            raise self._api_error(exc, what, not_found, conflict) from None
        except HTTPError as exc:
            host = getattr(self.api.configuration, "host", "the API server")
            raise WorkshopError(
                f"cannot reach the API server at {host} while trying to {what} ({type(exc).__name__}); "
                "check the cluster endpoint, your network/VPN and the kubeconfig"
            ) from None

    def _api_error(
        self, exc, what: str, not_found: str | None = None, conflict: str | None = None
    ) -> WorkshopError:
        msg = _status_message(exc)
        st = exc.status
        if st == 401:
            return WorkshopError(
                f"the cluster refused the credentials (401 Unauthorized) to {what}: refresh them (EKS: `aws eks update-kubeconfig`) and retry"
            )
        if st == 403:
            return WorkshopError(
                f"forbidden (403) to {what}: {msg}; ask the cluster admin for RBAC permission"
            )
        if st == 404:
            return WorkshopError(not_found or f"not found (404) while trying to {what}: {msg}")
        if st == 409:
            return WorkshopError(conflict or f"conflict (409) while trying to {what}: {msg}")
        if st == 422:
            return WorkshopError(f"the server rejected the request to {what} (422 Invalid): {msg}")
        if st == 0 or st is None:
            return WorkshopError(f"cannot reach the API server while trying to {what}: {exc.reason}")
        return WorkshopError(f"the API server answered {st} {exc.reason} while trying to {what}: {msg}")

    # ---- preflight ---------------------------------------------------------------------------------
    def preflight(self, spec: Any) -> list[str]:
        """Check the cluster can take ``spec``; raise WorkshopError listing every problem (one line each)."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core, _ = self._clients()
        self._call(client.VersionApi(self.api).get_code, what="ask the API server its version")
        problems: list[str] = []
        notes: list[str] = []
        try:
            client.ApiextensionsV1Api(self.api).read_custom_resource_definition(CRD_NAME)
        except ApiException as exc:
            if exc.status == 404:
                problems.append(f"the PyTorchJob CRD ({CRD_NAME}) is missing: {INSTALL_OPERATOR}")
            elif exc.status == 403:
                notes.append("cannot read CRDs (403); assuming the training operator is installed")
            else:
                raise self._api_error(exc, "read the PyTorchJob CRD") from None
        ns_exists = True
        try:
            core.read_namespace(spec.namespace)
        except ApiException as exc:
            if exc.status == 404:
                ns_exists = False
            elif exc.status != 403:
                raise self._api_error(exc, f"read namespace {spec.namespace}") from None
        if spec.storage:
            pvc = spec.storage.pvc
            if not ns_exists:
                problems.append(
                    f"namespace {spec.namespace} does not exist, so PVC {pvc} cannot be in it: "
                    f"create the namespace (kubectl create namespace {spec.namespace}) and the shared PVC in it"
                )
            else:
                try:
                    claim = core.read_namespaced_persistent_volume_claim(pvc, spec.namespace)
                    phase = claim.status.phase if claim.status else None
                    if phase != "Bound":
                        problems.append(
                            f"PVC {pvc} in {spec.namespace} is {phase or 'not bound'}, not Bound: "
                            f"check its StorageClass or PersistentVolume (kubectl describe pvc {pvc} -n {spec.namespace})"
                        )
                except ApiException as exc:
                    if exc.status == 404:
                        problems.append(
                            f"PVC {pvc} does not exist in namespace {spec.namespace}: create the shared-storage "
                            "claim first (e.g. FSx for Lustre CSI on EKS, AMLFS or Blob on AKS)"
                        )
                    else:
                        raise self._api_error(exc, f"read PVC {pvc}") from None
        problems += self._node_capacity(spec, notes)
        self.notes = notes
        if problems:
            raise WorkshopError(
                f"preflight found {len(problems)} problem(s) for {spec.name}:\n  - " + "\n  - ".join(problems)
            )
        return notes

    def _node_capacity(self, spec: Any, notes: list[str]) -> list[str]:
        from kubernetes.client.exceptions import ApiException

        core, _ = self._clients()
        job = render.pytorchjob(spec)
        pod = next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]
        want = {k: int(v) for k, v in pod["containers"][0]["resources"]["limits"].items() if "/" in k}
        selector = pod.get("nodeSelector", {})
        try:
            nodes = core.list_node().items
        except ApiException as exc:
            if exc.status == 403:
                notes.append("cannot list nodes (403); skipped the GPU/EFA capacity check")
                return []
            raise self._api_error(exc, "list nodes") from None
        fit = 0
        for node in nodes:
            labels = node.metadata.labels or {}
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            alloc = (node.status.allocatable or {}) if node.status else {}
            if node.spec and node.spec.unschedulable:
                continue
            if all(int(str(alloc.get(k, "0"))) >= n for k, n in want.items()):
                fit += 1
        if fit >= spec.nodes:
            return []
        need = " and ".join(f"{n} {k}" for k, n in want.items())
        where = f" with {', '.join(f'{k}={v}' for k, v in selector.items())}" if selector else ""
        return [
            f"only {fit} node(s){where} offer {need} allocatable, and the job needs {spec.nodes}: "
            "add nodes (scale the node group) or install the NVIDIA and EFA device plugins so they advertise them"
        ]

    # ---- submit ------------------------------------------------------------------------------------
    def submit(self, spec: Any, *, replace: bool = False) -> dict[str, Any]:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core, custom = self._clients()
        docs = render.render_job(spec)
        created = []
        for doc in docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            if kind == "Namespace":
                try:
                    core.create_namespace(doc)
                    created.append(f"namespace/{name}")
                except ApiException as exc:
                    if exc.status not in (409, 403):
                        raise self._api_error(exc, f"create namespace {name}") from None
            elif kind in ("Service", "Deployment"):
                create = (
                    core.create_namespaced_service
                    if kind == "Service"
                    else client.AppsV1Api(self.api).create_namespaced_deployment
                )
                try:
                    create(spec.namespace, doc)
                    created.append(f"{kind.lower()}/{name}")
                except ApiException as exc:
                    if exc.status != 409:
                        raise self._api_error(exc, f"create {kind} {name}") from None
            else:
                self._create_job(custom, spec, doc, replace)
                created.append(f"pytorchjob/{name}")
        return {
            "name": spec.name,
            "namespace": spec.namespace,
            "backend": self.name,
            "created": created,
            "message": f"created {', '.join(created)}; follow it with `workshop logs --config {spec.source} --follow`",
        }

    def _create_job(self, custom, spec: Any, doc: dict[str, Any], replace: bool) -> None:
        from kubernetes.client.exceptions import ApiException

        what = f"create PyTorchJob {spec.name} in {spec.namespace}"
        try:
            custom.create_namespaced_custom_object(GROUP, VERSION, spec.namespace, PLURAL, doc)
            return
        except ApiException as exc:
            if exc.status == 404:
                raise WorkshopError(f"the cluster has no PyTorchJob API (404): {INSTALL_OPERATOR}") from None
            if exc.status != 409:
                raise self._api_error(exc, what) from None
        if not replace:
            raise WorkshopError(
                f"a PyTorchJob named {spec.name} already exists in {spec.namespace}: pass --replace to delete and "
                "recreate it, or choose another name"
            )
        self.delete(spec, wait=True)
        self._call(
            custom.create_namespaced_custom_object, GROUP, VERSION, spec.namespace, PLURAL, doc, what=what
        )

    # ---- status ------------------------------------------------------------------------------------
    def _get_job(self, ref: Any) -> dict[str, Any]:
        _, custom = self._clients()
        return self._call(
            custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            ref.namespace,
            PLURAL,
            ref.name,
            what=f"read PyTorchJob {ref.name}",
            not_found=f"no PyTorchJob named {ref.name} in namespace {ref.namespace}: check --namespace, or create it with `workshop apply`",
        )

    def _pods(self, ref: Any) -> list[Any]:
        core, _ = self._clients()
        pods = self._call(
            core.list_namespaced_pod,
            ref.namespace,
            label_selector=f"{render.JOB_LABEL}={ref.name}",
            what=f"list the pods of {ref.name}",
        ).items
        return sorted(pods, key=lambda p: _rank(p.metadata.name))

    def status(self, ref: Any) -> dict[str, Any]:
        core, _ = self._clients()
        job = self._get_job(ref)
        conditions = (job.get("status") or {}).get("conditions") or []
        phase = "Created"
        for c in conditions:
            if c.get("status") == "True":
                phase = c.get("type", phase)
        pods = []
        explain = {ref.name}
        for p in self._pods(ref):
            restarts, reason = 0, None
            for cs in (p.status.container_statuses or []) if p.status else []:
                restarts += cs.restart_count or 0
                st = cs.state
                if st and st.waiting and st.waiting.reason:
                    reason = st.waiting.reason
                elif st and st.terminated and st.terminated.reason:
                    reason = st.terminated.reason
            pod_phase = (p.status.phase if p.status else None) or "Unknown"
            if pod_phase == "Pending" or reason:
                explain.add(p.metadata.name)
            pods.append(
                {
                    "name": p.metadata.name,
                    "phase": pod_phase,
                    "restarts": restarts,
                    "reason": reason,
                    "node": p.spec.node_name if p.spec else None,
                }
            )
        events = []
        for obj in sorted(explain):
            evs = self._call(
                core.list_namespaced_event,
                ref.namespace,
                field_selector=f"involvedObject.name={obj}",
                what=f"list the events of {obj}",
            ).items
            for e in evs:
                if e.type == "Warning" or obj != ref.name:
                    when = (
                        e.last_timestamp
                        or e.event_time
                        or (e.metadata.creation_timestamp if e.metadata else None)
                    )
                    events.append(
                        {
                            "object": obj,
                            "type": e.type,
                            "reason": e.reason,
                            "message": e.message,
                            "count": e.count,
                            "time": when.isoformat() if when else None,
                        }
                    )
        events.sort(key=lambda e: e["time"] or "")
        return {
            "name": ref.name,
            "namespace": ref.namespace,
            "backend": self.name,
            "phase": phase,
            "conditions": [
                {k: c.get(k) for k in ("type", "status", "reason", "message", "lastTransitionTime")}
                for c in conditions
            ],
            "pods": pods,
            "events": events[-20:],
        }

    # ---- logs --------------------------------------------------------------------------------------
    def logs(
        self,
        ref: Any,
        *,
        follow: bool = False,
        all_ranks: bool = False,
        out: Path | None = None,
        sink: LineSink | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        deadline = time.time() + timeout if timeout else None
        out_path = Path(out) if out else self.run.train_log
        names = self._wait_for_pods(ref, all_ranks, follow, deadline)
        prefix = len(names) > 1
        lines: queue.Queue[tuple[str, str] | None] = queue.Queue()
        errors: list[BaseException] = []
        stop = threading.Event()

        def run(pod: str) -> None:
            try:
                PodFollower(self, ref.namespace, pod, follow, stop, deadline).run(
                    lambda line: lines.put((pod, line))
                )
            except BaseException as exc:  # noqa: BLE001 - reported once the others finish
                errors.append(exc)
            finally:
                lines.put(None)

        threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in names]
        for t in threads:
            t.start()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        count, open_streams = 0, len(threads)
        with open(out_path, "w", encoding="utf-8") as fh:
            try:
                while open_streams:
                    item = lines.get()
                    if item is None:
                        open_streams -= 1
                        continue
                    pod, line = item
                    shown = f"[{_short(pod, ref.name)}] {line}" if prefix else line
                    fh.write(line + "\n")
                    fh.flush()
                    count += 1
                    if sink:
                        sink(shown)
            finally:
                stop.set()
        if errors:
            err = errors[0]
            raise (
                err
                if isinstance(err, WorkshopError)
                else WorkshopError(f"log streaming failed: {type(err).__name__}: {err}")
            )
        return {"out": str(out_path), "lines": count, "pods": names}

    def _wait_for_pods(self, ref: Any, all_ranks: bool, follow: bool, deadline: float | None) -> list[str]:
        self._get_job(ref)  # a clear 404 line when the job is not there
        while True:
            pods = self._pods(ref)
            started = [p for p in pods if p.status and p.status.phase in RUNNING_PHASES]
            if pods and len(started) == len(pods):
                chosen = pods if all_ranks else [pods[0]] + ([pods[-1]] if len(pods) > 1 else [])
                return [p.metadata.name for p in chosen]
            if not follow or (deadline and time.time() > deadline):
                if started:
                    return [p.metadata.name for p in started] if all_ranks else [started[0].metadata.name]
                st = self.status(ref)
                why = "; ".join(f"{e['object']}: {e['reason']}: {e['message']}" for e in st["events"][-3:])
                raise WorkshopError(
                    f"no pod of {ref.name} is running yet ({', '.join(p['name'] + ' ' + p['phase'] for p in st['pods']) or 'no pods'})"
                    + (f"; {why}" if why else "")
                    + "; pass --follow to wait"
                )
            time.sleep(self.poll)

    # ---- delete ------------------------------------------------------------------------------------
    def delete(self, ref: Any, *, wait: bool = False, timeout: float = 300.0) -> dict[str, Any]:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core, custom = self._clients()
        self._call(
            custom.delete_namespaced_custom_object,
            GROUP,
            VERSION,
            ref.namespace,
            PLURAL,
            ref.name,
            propagation_policy="Background",
            what=f"delete PyTorchJob {ref.name}",
            not_found=f"no PyTorchJob named {ref.name} in namespace {ref.namespace} (already deleted?)",
        )
        etcd = f"{ref.name}-etcd"
        for fn in (core.delete_namespaced_service, client.AppsV1Api(self.api).delete_namespaced_deployment):
            with contextlib.suppress(ApiException, ValueError):  # absent (most platforms), or an odd answer
                fn(etcd, ref.namespace)
        gone = not wait or self._wait_gone(ref, timeout)
        if wait and not gone:
            raise WorkshopError(
                f"PyTorchJob {ref.name} was deleted but its pods are still there after {timeout:.0f} s; check `workshop status`"
            )
        msg = f"deleted PyTorchJob {ref.namespace}/{ref.name}" + (" and its pods are gone" if wait else "")
        return {
            "name": ref.name,
            "namespace": ref.namespace,
            "backend": self.name,
            "deleted": True,
            "message": msg,
        }

    def _wait_gone(self, ref: Any, timeout: float) -> bool:
        """Watch the job's pods until none is left (and the job object itself is gone)."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        core, custom = self._clients()
        deadline = time.time() + timeout
        selector = f"{render.JOB_LABEL}={ref.name}"
        while time.time() < deadline:
            listing = self._call(
                core.list_namespaced_pod, ref.namespace, label_selector=selector, what="list pods"
            )
            left = {p.metadata.name for p in listing.items}
            if not left:
                try:
                    custom.get_namespaced_custom_object(GROUP, VERSION, ref.namespace, PLURAL, ref.name)
                except ApiException as exc:
                    if exc.status == 404:
                        return True
                    raise self._api_error(exc, f"read PyTorchJob {ref.name}") from None
                time.sleep(self.poll)
                continue
            w = watch.Watch()
            remaining = max(1, int(deadline - time.time()))
            for event in self._call(
                w.stream,
                core.list_namespaced_pod,
                ref.namespace,
                label_selector=selector,
                resource_version=listing.metadata.resource_version,
                timeout_seconds=min(remaining, 30),
                what="watch pods",
            ):
                if event["type"] == "DELETED":
                    left.discard(event["object"].metadata.name)
                if not left:
                    w.stop()
        return False


class PodFollower:
    """Streams one pod's container log, across dropped connections and container restarts, without repeats.

    Lines are requested with ``timestamps=true``; the last timestamp seen is the resume point
    (``sinceTime``, whole seconds on the wire), and any line at or before it that was already
    delivered is skipped. After a restart the old container's tail is read with ``previous=true``
    before the new container's log.
    """

    def __init__(
        self,
        backend: KubernetesBackend,
        namespace: str,
        pod: str,
        follow: bool,
        stop: threading.Event,
        deadline: float | None,
    ):
        self.b, self.ns, self.pod, self.follow, self.stop, self.deadline = (
            backend,
            namespace,
            pod,
            follow,
            stop,
            deadline,
        )
        self.last_ts = ""  # RFC3339Nano of the newest line delivered
        self.seen_at_last: set[str] = set()  # lines delivered with exactly that timestamp

    def _deliver(self, raw: str, emit) -> None:
        ts, _, line = raw.partition(" ")
        if not ts[:4].isdigit():  # a line without timestamp (should not happen): pass it on
            emit(raw)
            return
        key = _ts_key(ts)
        if self.last_ts and key < self.last_ts:
            return
        if key == self.last_ts:
            if line in self.seen_at_last:
                return
            self.seen_at_last.add(line)
        else:
            self.last_ts, self.seen_at_last = key, {line}
        emit(line)

    def _stream(self, emit, *, previous: bool = False) -> None:
        from kubernetes.client.exceptions import ApiException

        query = [("container", render.CONTAINER), ("timestamps", "true")]
        if self.follow and not previous:
            query.append(("follow", "true"))
        if previous:
            query.append(("previous", "true"))
        if self.last_ts:
            query.append(("sinceTime", self.last_ts[:19] + "Z"))
        api = self.b.api
        req = api.param_serialize(
            "GET",
            "/api/v1/namespaces/{namespace}/pods/{name}/log",
            path_params={"namespace": self.ns, "name": self.pod},
            query_params=query,
            header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
        )
        resp = api.call_api(*req, _request_timeout=(10, self.b.read_timeout))
        if not 200 <= resp.status <= 299:
            resp.read()
            raise ApiException.from_response(http_resp=resp, body=None, data=None)
        raw = resp.response
        try:
            # The unterminated line is kept as pieces and joined once, when its newline comes:
            # re-splitting a growing buffer per 4 KB was quadratic on a long line (a tqdm bar's \r).
            held: list[bytes] = []
            for chunk in raw.stream(4096, decode_content=False):
                *complete, rest = chunk.split(b"\n")
                if complete:
                    complete[0] = b"".join([*held, complete[0]])
                    held = []
                for line in complete:
                    self._deliver(line.decode("utf-8", errors="replace"), emit)
                if rest:
                    held.append(rest)
                if self.stop.is_set():
                    return
            if held:
                self._deliver(b"".join(held).decode("utf-8", errors="replace"), emit)
        finally:
            raw.release_conn()

    def _container(self) -> tuple[str, int]:
        core, _ = self.b._clients()
        pod = self.b._call(
            core.read_namespaced_pod,
            self.pod,
            self.ns,
            what=f"read pod {self.pod}",
            not_found=f"pod {self.pod} is gone (the job was deleted or restarted as a whole)",
        )
        restarts = (
            sum(cs.restart_count or 0 for cs in (pod.status.container_statuses or [])) if pod.status else 0
        )
        return (pod.status.phase if pod.status else "Unknown") or "Unknown", restarts

    def run(self, emit) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        phase, restarts = self._container()
        failures = 0
        while not self.stop.is_set():
            try:
                self._stream(emit)
                failures = 0
            except (HTTPError, ConnectionError, TimeoutError) as exc:  # dropped: retry from the last line
                failures += 1
                if failures > 30:
                    raise WorkshopError(
                        f"lost the log stream of {self.pod} {failures} times in a row ({type(exc).__name__})"
                    ) from None
            except ApiException as exc:
                if (
                    exc.status == 400 and self.follow
                ):  # "waiting to start": the container is being (re)created
                    failures += 1
                else:
                    raise self.b._api_error(exc, f"read the log of {self.pod}") from None
            if not self.follow or (self.deadline and time.time() > self.deadline):
                return
            phase, now = self._container()
            if now > restarts:  # the container restarted: the old one's tail first, then the new one
                with contextlib.suppress(ApiException, HTTPError):
                    self._stream(emit, previous=True)
                restarts = now
            elif phase in ("Succeeded", "Failed"):
                with contextlib.suppress(ApiException, HTTPError):
                    self._stream(emit)  # whatever came after the last read
                return
            time.sleep(self.b.retry)


def _ts_key(ts: str) -> str:
    """A sortable RFC3339Nano key: fractions padded to nanoseconds (``...05.1Z`` < ``...05.25Z``)."""
    base, _, frac = ts.rstrip("Z").partition(".")
    return f"{base}.{frac.ljust(9, '0')}Z"


def _rank(pod_name: str) -> tuple[int, int]:
    """Sort key: master first, then workers by index."""
    parts = pod_name.rsplit("-", 2)
    role = parts[-2] if len(parts) == 3 else ""
    idx = int(parts[-1]) if parts[-1].isdigit() else 0
    return (0 if role == "master" else 1, idx)


def _short(pod: str, job: str) -> str:
    return pod[len(job) + 1 :] if pod.startswith(job + "-") else pod
