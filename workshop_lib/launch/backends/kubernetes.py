"""The Kubernetes backend: the real ``kubernetes`` client against the cluster a kubeconfig names.

* ``preflight``: the API answers, which operator the cluster has (PyTorchJob CRD, TrainJob CRDs,
  both, neither) and that the job's one is there, the namespace and PVC exist (PVC Bound), and
  enough nodes offer the allocatable GPUs and EFA/IB devices one pod asks for.
* ``submit`` creates what the job's operator needs (``workloads``: a PyTorchJob, or a TrainingRuntime
  and a TrainJob); a name conflict is reported, ``replace`` deletes and recreates. Every request
  goes with ``fieldValidation=Strict``, so a field the cluster's schema does not know is an error,
  never silently dropped; ``dry_run`` sends ``dryRun=All``: the server (schemas, admission webhooks)
  judges everything and creates nothing.
* ``status``: conditions, pods (phase, restarts, waiting reason) and the Warning events that
  explain a Pending pod or an image pull error.
* ``logs`` waits for the pods, streams rank 0's pod and the last pod (Megatron prints its iteration
  lines on the last rank) or every pod, writes the lines to a file the monitor reads, re-attaches
  after a container restart with ``sinceTime`` and skips lines it already has (by their
  timestamps), retries a dropped connection, and goes on with the pod that replaces an evicted one
  (same node rank: the same name under a PyTorchJob, a new name under a TrainJob's JobSet).
* ``delete`` removes the job (and an etcd rendezvous, or the job's own TrainingRuntime); ``wait``
  returns when the pods are gone.

Commands given only ``--name`` find the job among both operators' kinds.

Every API failure becomes one ``WorkshopError`` line; credentials are never printed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from ...errors import UsageError, WorkshopError
from ...facts import operators
from ...paths import RunDir
from ...redact import one_line, redact
from .. import render
from .base import LineSink
from .workloads import WORKLOADS, Workload, kubernetes_version, operator_problem

CRD_NAME = operators.PYTORCHJOB.crd
INSTALL_OPERATOR = operators.PYTORCHJOB.install
STRICT = {"field_validation": "Strict"}  # on every create and update: no field silently dropped
RUNNING_PHASES = ("Running", "Succeeded", "Failed")
# Every request is bounded (connect, read) unless it gives its own bound: an API server that accepts
# and never answers must cost a bounded wait and one line, not a hang.
DEFAULT_REQUEST_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0


def _status_message(exc: Any) -> str:
    """The server's own reason from a Status body, else the HTTP reason; one redacted, bounded line.

    The body is the server's (or a proxy's) text: an echoing proxy puts the request's
    ``Authorization: Bearer ...`` in it, so it never reaches a message unredacted.
    """
    try:
        body = json.loads(exc.body or "{}")
        text = body.get("message") if isinstance(body, dict) else None
        return one_line(str(text or exc.reason or ""))
    except (TypeError, ValueError):
        return one_line(str(exc.reason or ""))


class _ExecLog(logging.Handler):
    """Collects what the kubeconfig loader logs (an exec credential plugin's failure, on the root
    logger), so it becomes one error line instead of several log lines on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.messages.append(record.getMessage())


class _NoRetryNoise(logging.Filter):
    """urllib3's "Retrying (...)" warnings: the retries are bounded, and a failure is one error line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Retrying (")


_NO_RETRY_NOISE = _NoRetryNoise()


class Unreachable(WorkshopError):
    """A request that could not connect or was not answered in time (every call raises this one)."""

    def __init__(self, message: str, cause: BaseException):
        super().__init__(message)
        self.cause = cause


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
        request_timeout: float | None = None,
    ):
        self.kubeconfig = kubeconfig
        self.context = context
        self.run = RunDir.at(run_dir)
        self.poll = poll_seconds
        self.retry = retry_seconds
        self.read_timeout = read_timeout  # the longest a followed log stream may stay silent
        self.request_timeout = float(request_timeout or DEFAULT_REQUEST_TIMEOUT)
        self._api = None
        self._found: dict[tuple[str, str], Workload] = {}  # (namespace, name) -> the kind found there

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
            from ...safeyaml import shown

            where = shown(self.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config")
            regenerate = (
                "pass --kubeconfig FILE or set KUBECONFIG (EKS: `aws eks update-kubeconfig --name CLUSTER`; "
                "AKS: `az aks get-credentials`)"
            )
            if self.kubeconfig is not None and not Path(self.kubeconfig).is_file():
                what = "is a directory" if Path(self.kubeconfig).is_dir() else "no such file"
                raise UsageError(f"--kubeconfig {shown(self.kubeconfig)}: {what}; {regenerate}")
            self._check_kubeconfig_files(regenerate)
            from kubernetes import client

            cfg = client.Configuration()
            captured = _ExecLog()
            root = logging.getLogger()
            root.addHandler(captured)  # also keeps logging.error() from calling basicConfig()
            try:
                config.load_kube_config(
                    config_file=self.kubeconfig,
                    context=self.context,
                    client_configuration=cfg,
                    persist_config=False,
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
            finally:
                root.removeHandler(captured)
            if captured.messages:  # the exec credential plugin (aws eks get-token, kubelogin) failed
                raise WorkshopError(
                    f"kubeconfig {where}: the credential plugin failed: {one_line(captured.messages[0], 200)}; "
                    f"fix or log in to the tool it runs, or {regenerate}"
                )
            self._api = self._bounded_client(client, cfg)
        return self._api

    def _check_kubeconfig_files(self, regenerate: str) -> None:
        """Read each kubeconfig file through the kit's bounded YAML reader before the client does.

        The client's own ``yaml.safe_load`` has no bound: an alias bomb or ``/dev/zero`` as
        ``--kubeconfig`` would run it out of memory. A file that passes has no aliases, is a regular
        file of at most 1 MiB and is at most 100 levels deep, so the client's second read is cheap.
        """
        from ... import safeyaml

        if self.kubeconfig is not None:
            paths = [self.kubeconfig]
        else:
            env = os.environ.get("KUBECONFIG")
            paths = [p for p in env.split(os.pathsep) if p] if env else ["~/.kube/config"]
        for path in paths:
            p = Path(path).expanduser()
            if not p.exists():
                continue  # the client reports a missing file with its own message
            try:
                safeyaml.load_file(p, "kubeconfig", all_documents=True)
            except UsageError as exc:
                if "syntax" in str(exc):  # the client's message names the line; keep it
                    continue
                raise UsageError(f"kubeconfig: {exc}; {regenerate}") from None

    def _bounded_client(self, client: Any, cfg: Any) -> Any:
        """An ApiClient whose every request has a (connect, read) timeout and at most two connect retries."""
        from urllib3.util.retry import Retry

        cfg.retries = Retry(total=2, connect=2, read=0, redirect=0, status=0, other=0)
        logging.getLogger("urllib3.connectionpool").addFilter(_NO_RETRY_NOISE)
        api = client.ApiClient(cfg)
        rest = api.rest_client
        request = rest.request
        default = (min(CONNECT_TIMEOUT, self.request_timeout), self.request_timeout)

        from urllib3.exceptions import HTTPError

        def bounded(method, url, headers=None, body=None, post_params=None, _request_timeout=None):
            try:
                return request(
                    method,
                    url,
                    headers=headers,
                    body=body,
                    post_params=post_params,
                    _request_timeout=_request_timeout or default,
                )
            except (HTTPError, OSError) as exc:  # every call, also those made outside _call
                path = url.split("?", 1)[0].split("://", 1)[-1].partition("/")[2]
                raise self._unreachable(exc, f"{method} /{path}") from None

        rest.request = bounded
        return api

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
        except Unreachable as exc:  # the same failure, told with what we were doing
            raise self._unreachable(exc.cause, what) from None
        except (HTTPError, OSError) as exc:
            raise self._unreachable(exc, what) from None

    def _unreachable(self, exc: BaseException, what: str) -> Unreachable:
        """One line for a connection that failed or a server that did not answer in time."""
        from urllib3.exceptions import MaxRetryError, ReadTimeoutError

        host = redact(str(getattr(self.api.configuration, "host", "the API server")))
        cause = exc.reason if isinstance(exc, MaxRetryError) and exc.reason else exc
        if isinstance(cause, ReadTimeoutError | TimeoutError) or "timed out" in str(cause):
            return Unreachable(
                f"the API server at {host} did not answer within {self.request_timeout:g} s while trying to "
                f"{what}; check the cluster's health and your network/VPN (--request-timeout sets the wait)",
                exc,
            )
        return Unreachable(
            f"cannot reach the API server at {host} while trying to {what} ({type(exc).__name__}); "
            "check the cluster endpoint, your network/VPN and the kubeconfig",
            exc,
        )

    def _api_error(
        self, exc, what: str, not_found: str | None = None, conflict: str | None = None
    ) -> WorkshopError:
        msg = _status_message(exc)
        st = exc.status
        if st == 401:
            return WorkshopError(
                f"the cluster refused the credentials (401 Unauthorized) to {what}: refresh them (EKS: `aws eks update-kubeconfig`) and retry"
            )
        if st == 403 and "admission webhook" in msg:  # an operator's validation, not RBAC
            return WorkshopError(f"the cluster's admission webhook refused to {what}: {msg}")
        if st == 403:
            return WorkshopError(
                f"forbidden (403) to {what}: {msg}; ask the cluster admin for RBAC permission"
            )
        if st == 400 and "strict decoding error" in msg:
            return WorkshopError(
                f"the cluster's schema refused to {what} (fieldValidation=Strict): {msg}; the field is "
                "not in the installed operator's CRD: check the operator's version (`workshop preflight`)"
            )
        if st == 404:
            return WorkshopError(not_found or f"not found (404) while trying to {what}: {msg}")
        if st == 409:
            return WorkshopError(conflict or f"conflict (409) while trying to {what}: {msg}")
        if st == 422:
            return WorkshopError(f"the server rejected the request to {what} (422 Invalid): {msg}")
        reason = one_line(str(exc.reason or ""), 80)
        if st == 0 or st is None:
            return WorkshopError(f"cannot reach the API server while trying to {what}: {reason}")
        return WorkshopError(f"the API server answered {st} {reason} while trying to {what}: {msg}")

    # ---- preflight ---------------------------------------------------------------------------------
    def preflight(self, spec: Any) -> list[str]:
        """Check the cluster can take ``spec``; raise WorkshopError listing every problem (one line each)."""
        from kubernetes.client.exceptions import ApiException

        core, _ = self._clients()
        problems: list[str] = []
        notes: list[str] = []
        cluster = self.operators()  # its summary is `workshop preflight`'s first line, not a note here
        if None in (cluster["pytorchjob"], cluster["trainjob"]):
            notes.append(cluster["summary"] + "; assuming the job's operator is installed")
        problem = operator_problem(cluster, getattr(spec, "operator", operators.DEFAULT_OPERATOR))
        if problem:
            problems.append(problem)
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

    def operators(self) -> dict[str, Any]:
        """Which training operators the cluster has, from their CRDs, and the server's version.

        ``{"server_version", "kubernetes": [major, minor] | None, "crds": {crd: true | false | null},
        "pytorchjob": bool | None, "trainjob": bool | None, "summary": one line}``; ``None`` where RBAC
        forbids reading CRDs (403), so the answer is unknown rather than "missing".
        """
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        info = self._call(client.VersionApi(self.api).get_code, what="ask the API server its version")
        ext = client.ApiextensionsV1Api(self.api)
        crds: dict[str, bool | None] = {}
        for crd in (CRD_NAME, operators.TRAINJOB.crd, operators.RUNTIME_CRD, operators.JOBSET_CRD):
            try:
                ext.read_custom_resource_definition(crd)
                crds[crd] = True
            except ApiException as exc:
                if exc.status == 404:
                    crds[crd] = False
                elif exc.status == 403:
                    crds[crd] = None
                else:
                    raise self._api_error(exc, f"read the CRD {crd}") from None

        def both(*names: str) -> bool | None:
            vals = [crds[n] for n in names]
            return None if None in vals else all(vals)

        have = {"pytorchjob": crds[CRD_NAME], "trainjob": both(operators.TRAINJOB.crd, operators.RUNTIME_CRD)}
        version = getattr(info, "git_version", None) or "unknown"
        names = {
            "pytorchjob": "PyTorchJob (Training Operator v1)",
            "trainjob": "TrainJob (Kubeflow Trainer v2)",
        }
        if None in have.values():
            summary = "cannot read CRDs (403): which training operator the cluster has is unknown"
        elif all(have.values()):
            summary = (
                f"the cluster ({version}) has both operators: {names['pytorchjob']} and {names['trainjob']}"
            )
        elif any(have.values()):
            (only,) = [k for k, v in have.items() if v]
            summary = f"the cluster ({version}) has {names[only]} only"
        else:
            summary = (
                f"the cluster ({version}) has neither PyTorchJob nor TrainJob CRDs: no training operator"
            )
        return {
            "server_version": version,
            "kubernetes": list(kubernetes_version(info) or ()) or None,
            "crds": crds,
            **have,
            "summary": summary,
        }

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
    def _workload(self, ref: Any) -> Workload:
        """The operator kind of ``ref``: the job YAML's ``operator``, else the kind found on the cluster."""
        op = getattr(ref, "operator", None)
        if op:
            return WORKLOADS[op]
        found = self._found.get((ref.namespace, ref.name))
        if found is None:
            self._get_job(ref)  # finds it (or says neither kind has it)
            found = self._found[(ref.namespace, ref.name)]
        return found

    def submit(self, spec: Any, *, replace: bool = False, dry_run: bool = False) -> dict[str, Any]:
        """Create what the job's operator needs, each request with ``fieldValidation=Strict``.

        ``dry_run`` sends every request with ``dryRun=All`` as well: the API server decodes, defaults
        and validates each object against the installed CRD schemas and runs the admission webhooks
        (the training operator's), then stores nothing. A TrainJob's dry run needs its runtime on the
        server (Trainer's webhook reads it); when the runtime's own dry run was its first creation,
        that one refusal is reported as a note, not an error.
        """
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        core, custom = self._clients()
        wl = self._workload(spec)
        kind_name = wl.operator.kind
        docs = wl.render(spec)
        opts = {**STRICT, **({"dry_run": "All"} if dry_run else {})}
        done: list[str] = []
        notes: list[str] = []
        self._make_room(custom, spec, wl, replace, dry_run)
        runtime_existed = True
        for doc in docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            if kind == "Namespace":
                try:
                    core.create_namespace(doc, **opts)
                    done.append(f"namespace/{name}")
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
                    create(spec.namespace, doc, **opts)
                    done.append(f"{kind.lower()}/{name}")
                except ApiException as exc:
                    if exc.status != 409:
                        raise self._api_error(exc, f"create {kind} {name}") from None
            elif kind == operators.RUNTIME_KIND:
                runtime_existed = self._put_runtime(custom, spec, doc, replace, opts)
                done.append(f"{kind.lower()}/{name}")
            else:
                note = self._create_job(custom, spec, wl, doc, opts, runtime_existed)
                if note:
                    notes.append(note)
                done.append(f"{kind_name.lower()}/{name}")
        if dry_run:
            message = (
                f"dry run: the API server accepted {', '.join(done)} (fieldValidation=Strict); nothing was created"
                + "".join(f"; note: {n}" for n in notes)
            )
        else:
            message = (
                f"created {', '.join(done)}; follow it with `workshop logs --config {spec.source} --follow`"
            )
        return {
            "name": spec.name,
            "namespace": spec.namespace,
            "backend": self.name,
            "operator": wl.operator.name,
            "kind": kind_name,
            "dry_run": dry_run,
            "created": [] if dry_run else done,
            "accepted": done,
            "notes": notes,
            "message": message,
        }

    def _make_room(self, custom, spec: Any, wl: Workload, replace: bool, dry_run: bool) -> None:
        """An existing job of that name: an error, or (``replace``) deleted before anything is sent."""
        from kubernetes.client.exceptions import ApiException

        op = wl.operator
        try:
            custom.get_namespaced_custom_object(op.group, op.version, spec.namespace, op.plural, spec.name)
        except ApiException as exc:
            if exc.status == 404:  # no such job (or no such API: the create below says which)
                return
            raise self._api_error(exc, f"read {op.kind} {spec.name}") from None
        if not replace:
            raise WorkshopError(
                f"a {op.kind} named {spec.name} already exists in {spec.namespace}: pass --replace to delete and "
                "recreate it, or choose another name"
            )
        if dry_run:
            raise WorkshopError(
                f"a {op.kind} named {spec.name} already exists in {spec.namespace}, and a dry run deletes nothing: "
                "delete it first (`workshop delete`) or dry-run under another name"
            )
        self.delete(spec, wait=True)

    def _put_runtime(
        self, custom, spec: Any, doc: dict[str, Any], replace: bool, opts: dict[str, Any]
    ) -> bool:
        """Create the job's TrainingRuntime, or update the one this job left (same name, same job label).

        Returns whether it existed. A runtime of that name that belongs to another job is never
        overwritten (its TrainJobs would start from a template they were not made for) unless
        ``replace`` says so.
        """
        from kubernetes.client.exceptions import ApiException

        g, v, plural = operators.TRAINJOB.group, operators.TRAINJOB.version, operators.RUNTIME_PLURAL
        name, ns = doc["metadata"]["name"], spec.namespace
        what = f"create TrainingRuntime {name} in {ns}"
        try:
            custom.create_namespaced_custom_object(g, v, ns, plural, doc, **opts)
            return False
        except ApiException as exc:
            if exc.status == 404:
                raise WorkshopError(
                    f"the cluster has no TrainingRuntime API (404): {operators.TRAINJOB.install}"
                ) from None
            if exc.status != 409:
                raise self._api_error(exc, what) from None
        current = self._call(
            custom.get_namespaced_custom_object, g, v, ns, plural, name, what=f"read TrainingRuntime {name}"
        )
        owner = ((current.get("metadata") or {}).get("labels") or {}).get(render.JOB_LABEL)
        if owner != spec.name and not replace:
            raise WorkshopError(
                f"a TrainingRuntime named {name} already exists in {ns} and is not this job's "
                f"({render.JOB_LABEL}={owner}): set `runtime:` to another name in the job YAML, or pass --replace"
            )
        body = {
            **doc,
            "metadata": {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        self._call(
            custom.replace_namespaced_custom_object,
            g,
            v,
            ns,
            plural,
            name,
            body,
            what=f"update {what[7:]}",
            **opts,
        )
        return True

    def _create_job(
        self,
        custom,
        spec: Any,
        wl: Workload,
        doc: dict[str, Any],
        opts: dict[str, Any],
        runtime_existed: bool,
    ) -> str | None:
        from kubernetes.client.exceptions import ApiException

        op = wl.operator
        what = f"create {op.kind} {spec.name} in {spec.namespace}"
        try:
            custom.create_namespaced_custom_object(
                op.group, op.version, spec.namespace, op.plural, doc, **opts
            )
            return None
        except ApiException as exc:
            if exc.status == 404:
                raise WorkshopError(f"the cluster has no {op.kind} API (404): {op.install}") from None
            raw = str(exc.body or "")[:65536]  # matched, never printed (messages go through _status_message)
            if opts.get("dry_run") and not runtime_existed and "must be created before the TrainJob" in raw:
                # Trainer's webhook reads the runtime, which a dry run did not create: everything the
                # server checks before its webhooks (decoding, strict fields, the CRD schema) passed.
                return (
                    f"the {op.kind} passed the API server's schema checks; Trainer's webhook could not judge it "
                    f"against runtime {doc['spec']['runtimeRef']['name']}, which a dry run does not create"
                )
            if exc.status == 409:
                raise WorkshopError(
                    f"a {op.kind} named {spec.name} already exists in {spec.namespace}: pass --replace to delete "
                    "and recreate it, or choose another name"
                ) from None
            raise self._api_error(exc, what) from None

    # ---- status ------------------------------------------------------------------------------------
    def _get_job(self, ref: Any) -> dict[str, Any]:
        """The job object; for a bare name, whichever operator's kind has it (PyTorchJob first)."""
        from kubernetes.client.exceptions import ApiException

        _, custom = self._clients()
        op = getattr(ref, "operator", None)
        known = self._found.get((ref.namespace, ref.name))
        candidates = [WORKLOADS[op]] if op else [known] if known else list(WORKLOADS.values())

        def get(o: operators.Operator) -> dict[str, Any] | None:
            try:
                return custom.get_namespaced_custom_object(
                    o.group, o.version, ref.namespace, o.plural, ref.name
                )
            except ApiException as exc:
                if exc.status == 404:  # not there (or that operator is not installed)
                    return None
                raise

        for wl in candidates:
            job = self._call(get, wl.operator, what=f"read {wl.operator.kind} {ref.name}")
            if job is not None:
                self._found[(ref.namespace, ref.name)] = wl
                return job
        kinds = [w.operator.kind for w in candidates]
        also = f" (and no {' or '.join(kinds[1:])})" if len(kinds) > 1 else ""
        raise WorkshopError(
            f"no {kinds[0]} named {ref.name} in namespace {ref.namespace}{also}: check --namespace, "
            "or create it with `workshop apply`"
        )

    def _pods(self, ref: Any) -> list[Any]:
        core, _ = self._clients()
        wl = self._workload(ref)
        pods = self._call(
            core.list_namespaced_pod,
            ref.namespace,
            label_selector=wl.selector(ref.name),
            what=f"list the pods of {ref.name}",
        ).items
        return sorted(pods, key=wl.rank)

    def status(self, ref: Any) -> dict[str, Any]:
        core, _ = self._clients()
        job = self._get_job(ref)
        wl = self._workload(ref)
        conditions = (job.get("status") or {}).get("conditions") or []
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
            "kind": wl.operator.kind,
            "phase": wl.phase(job, [p["phase"] for p in pods]),
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
        # The output is opened before any thread starts: an unwritable path is one line (exit 2), not
        # an exception unwinding past running threads (which aborted the interpreter). Append mode
        # keeps an earlier log intact until there is something to replace it with.
        existed = out_path.exists()
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(out_path, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            from ...fsutil import output_error

            raise output_error(out_path, "--out" if out else "--run-dir", exc) from None
        with fh:
            try:
                names = self._wait_for_pods(ref, all_ranks, follow, deadline)
            except BaseException:
                fh.close()
                if not existed:
                    with contextlib.suppress(OSError):
                        out_path.unlink()
                raise
            fh.seek(0)
            fh.truncate()
            count, errors = self._stream_pods(ref, names, follow, deadline, fh, sink)
        if errors:
            err = errors[0]
            raise (
                err
                if isinstance(err, WorkshopError)
                else WorkshopError(f"log streaming failed: {type(err).__name__}: {err}")
            )
        return {"out": str(out_path), "lines": count, "pods": names}

    def _stream_pods(
        self, ref: Any, names: list[str], follow: bool, deadline: float | None, fh: Any, sink: LineSink | None
    ) -> tuple[int, list[BaseException]]:
        """One follower thread per pod; their lines go to ``fh`` and ``sink`` as they come."""
        prefix = len(names) > 1
        lines: queue.Queue[tuple[str, str] | None] = queue.Queue()
        errors: list[BaseException] = []
        stop = threading.Event()

        def run(pod: str) -> None:
            try:
                self._follow_node(
                    ref, pod, follow, stop, deadline, container, lambda line: lines.put((pod, line))
                )
            except BaseException as exc:  # noqa: BLE001 - reported once the others finish
                errors.append(exc)
            finally:
                lines.put(None)

        container = self._workload(ref).container
        threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in names]
        for t in threads:
            t.start()
        count, open_streams = 0, len(threads)
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
        return count, errors

    def _follow_node(
        self,
        ref: Any,
        pod: str,
        follow: bool,
        stop: threading.Event,
        deadline: float | None,
        container: str,
        emit,
    ) -> None:
        """Follow one node's log, and with ``follow`` its replacement when the pod is gone.

        A container restart keeps the pod (``PodFollower`` reads the old container's tail, then the
        new one). A deleted or evicted pod is replaced by its controller: under a PyTorchJob with the
        same name, under a TrainJob (JobSet's indexed Job) with a new name and the same completion
        index. Either way the stream goes on with the pod now holding that node rank.
        """
        wl = self._workload(ref)
        rank = (
            next((wl.rank(p)[:2] for p in self._pods(ref) if p.metadata.name == pod), None)
            if follow
            else None
        )
        while True:
            try:
                PodFollower(self, ref.namespace, pod, follow, stop, deadline, container).run(emit)
                return
            except PodGone:
                if not follow or stop.is_set() or rank is None:
                    raise
            while True:
                if stop.is_set() or (deadline and time.time() > deadline):
                    return
                try:
                    self._get_job(ref)
                except WorkshopError:  # the job itself is gone (deleted): nothing more to follow
                    return
                started = [
                    p
                    for p in self._pods(ref)
                    if wl.rank(p)[:2] == rank and p.status and p.status.phase in RUNNING_PHASES
                ]
                if started:
                    pod = started[0].metadata.name
                    break
                time.sleep(self.poll)

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
        op = self._workload(ref).operator
        runtime = self._own_runtime(ref) if op is operators.TRAINJOB else None
        self._call(
            custom.delete_namespaced_custom_object,
            op.group,
            op.version,
            ref.namespace,
            op.plural,
            ref.name,
            propagation_policy="Background",
            what=f"delete {op.kind} {ref.name}",
            not_found=f"no {op.kind} named {ref.name} in namespace {ref.namespace} (already deleted?)",
        )
        if runtime:  # Trainer keeps it (finalizer) until no TrainJob uses it, then it goes
            with contextlib.suppress(ApiException):
                custom.delete_namespaced_custom_object(
                    op.group, op.version, ref.namespace, operators.RUNTIME_PLURAL, runtime
                )
        etcd = f"{ref.name}-etcd"
        for fn in (core.delete_namespaced_service, client.AppsV1Api(self.api).delete_namespaced_deployment):
            with contextlib.suppress(ApiException, ValueError):  # absent (most platforms), or an odd answer
                fn(etcd, ref.namespace)
        gone = not wait or self._wait_gone(ref, timeout)
        if wait and not gone:
            raise WorkshopError(
                f"{op.kind} {ref.name} was deleted but its pods are still there after {timeout:.0f} s; check `workshop status`"
            )
        msg = (
            f"deleted {op.kind} {ref.namespace}/{ref.name}"
            + (f" and its TrainingRuntime {runtime}" if runtime else "")
            + (" and its pods are gone" if wait else "")
        )
        return {
            "name": ref.name,
            "namespace": ref.namespace,
            "backend": self.name,
            "kind": op.kind,
            "deleted": True,
            "message": msg,
        }

    def _own_runtime(self, ref: Any) -> str | None:
        """The namespaced TrainingRuntime the TrainJob references, when the kit made it for this job."""
        from kubernetes.client.exceptions import ApiException

        _, custom = self._clients()
        job = self._get_job(ref)
        runtime_ref = (job.get("spec") or {}).get("runtimeRef") or {}
        if runtime_ref.get("kind") != operators.RUNTIME_KIND or not runtime_ref.get("name"):
            return None  # a ClusterTrainingRuntime is shared: never the job's to delete
        t = operators.TRAINJOB
        try:
            runtime = custom.get_namespaced_custom_object(
                t.group, t.version, ref.namespace, operators.RUNTIME_PLURAL, runtime_ref["name"]
            )
        except ApiException:
            return None
        labels = (runtime.get("metadata") or {}).get("labels") or {}
        return runtime_ref["name"] if labels.get(render.JOB_LABEL) == ref.name else None

    def _wait_gone(self, ref: Any, timeout: float) -> bool:
        """Watch the job's pods until none is left (and the job object itself is gone)."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        core, custom = self._clients()
        deadline = time.time() + timeout
        wl = self._workload(ref)
        selector = wl.selector(ref.name)
        while time.time() < deadline:
            listing = self._call(
                core.list_namespaced_pod, ref.namespace, label_selector=selector, what="list pods"
            )
            left = {p.metadata.name for p in listing.items}
            if not left:
                o = wl.operator
                try:
                    custom.get_namespaced_custom_object(o.group, o.version, ref.namespace, o.plural, ref.name)
                except ApiException as exc:
                    if exc.status == 404:
                        return True
                    raise self._api_error(exc, f"read {o.kind} {ref.name}") from None
                time.sleep(self.poll)
                continue
            w = watch.Watch()
            window = min(max(1, int(deadline - time.time())), 30)
            # The server ends the watch after `window` s; the client gives up 10 s after that, so a
            # server that stops answering mid-watch costs a bounded wait (the stream is read outside
            # _call, hence the mapping here).
            try:
                for event in w.stream(
                    core.list_namespaced_pod,
                    ref.namespace,
                    label_selector=selector,
                    resource_version=listing.metadata.resource_version,
                    timeout_seconds=window,
                    _request_timeout=(min(CONNECT_TIMEOUT, self.request_timeout), window + 10),
                ):
                    if event["type"] == "DELETED":
                        left.discard(event["object"].metadata.name)
                    if not left:
                        w.stop()
            except ApiException as exc:
                raise self._api_error(exc, "watch pods") from None
            except Unreachable as exc:
                raise self._unreachable(exc.cause, "watch pods") from None
            except (HTTPError, OSError) as exc:
                raise self._unreachable(exc, "watch pods") from None
        return False


class PodGone(WorkshopError):
    """The pod being followed no longer exists (deleted, evicted, or replaced by its controller)."""


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
        container: str = render.CONTAINER,
    ):
        self.b, self.ns, self.pod, self.follow, self.stop, self.deadline = (
            backend,
            namespace,
            pod,
            follow,
            stop,
            deadline,
        )
        self.container = container  # "pytorch" in a PyTorchJob's pods, "node" in a TrainJob's
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

        query = [("container", self.container), ("timestamps", "true")]
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
        # A followed stream may stay silent up to read_timeout (then it is re-opened from the last
        # line); a one-shot read gets the backend's request timeout like every other call.
        read = self.b.read_timeout if self.follow and not previous else self.b.request_timeout
        resp = api.call_api(*req, _request_timeout=(min(CONNECT_TIMEOUT, self.b.request_timeout), read))
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
        from kubernetes.client.exceptions import ApiException

        core, _ = self.b._clients()

        def read():
            try:
                return core.read_namespaced_pod(self.pod, self.ns)
            except ApiException as exc:
                if exc.status == 404:
                    raise PodGone(
                        f"pod {self.pod} is gone (the job was deleted or restarted as a whole)"
                    ) from None
                raise

        pod = self.b._call(read, what=f"read pod {self.pod}")
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
            except (
                HTTPError,
                ConnectionError,
                TimeoutError,
                Unreachable,
            ) as exc:  # dropped: retry from the last line
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
                with contextlib.suppress(ApiException, HTTPError, Unreachable):
                    self._stream(emit, previous=True)
                restarts = now
            elif phase in ("Succeeded", "Failed"):
                with contextlib.suppress(ApiException, HTTPError, Unreachable):
                    self._stream(emit)  # whatever came after the last read
                return
            time.sleep(self.b.retry)


def _ts_key(ts: str) -> str:
    """A sortable RFC3339Nano key: fractions padded to nanoseconds (``...05.1Z`` < ``...05.25Z``)."""
    base, _, frac = ts.rstrip("Z").partition(".")
    return f"{base}.{frac.ljust(9, '0')}Z"


def _short(pod: str, job: str) -> str:
    return pod[len(job) + 1 :] if pod.startswith(job + "-") else pod
