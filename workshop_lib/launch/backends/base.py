"""The one interface every launch backend offers (as kubeflow/sdk's trainer client has over its backends).

Notebook 03 and the ``workshop apply | status | logs | delete`` commands talk only to this
interface, so switching between the local torchrun run and a Kubernetes cluster is one parameter.
Every method returns plain JSON-ready dicts; failures raise ``WorkshopError`` (one line, exit 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

LineSink = Callable[[str], None]


@dataclass(frozen=True)
class JobRef:
    """What status, logs and delete need when there is no job YAML at hand: a name and a namespace."""

    name: str
    namespace: str = "default"
    backend: str = "kubernetes"
    source: str = "<command line>"
    operator: str | None = None  # "pytorchjob" | "trainjob"; None: whichever kind the cluster has it as


class Backend(Protocol):
    name: str

    def submit(self, job: Any, *, replace: bool = False) -> dict[str, Any]:
        """Start the job; ``{"name", "namespace", "backend", "message", ...}``. The Kubernetes backend
        also takes ``dry_run=True`` (a server-side dry run that creates nothing)."""

    def status(self, job: Any) -> dict[str, Any]:
        """``{"name", "namespace", "backend", "phase", "conditions": [..], "pods": [{"name", "phase",
        "restarts", "reason", "node"}], "events": [{"object", "type", "reason", "message", "time"}]}``."""

    def logs(
        self,
        job: Any,
        *,
        follow: bool = False,
        all_ranks: bool = False,
        out: Path | None = None,
        sink: LineSink | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Stream log lines to ``sink`` and to ``out``; ``{"out", "lines", "pods"}``."""

    def delete(self, job: Any, *, wait: bool = False, timeout: float = 300.0) -> dict[str, Any]:
        """Remove the job (stop the run); ``{"name", "deleted", "message"}``."""


def format_status(st: dict[str, Any]) -> str:
    """The status dict as a few readable lines (what `workshop status` prints without --json)."""
    kind = f" {st['kind']}" if st.get("kind") else ""  # PyTorchJob or TrainJob on a cluster
    lines = [f"{st['backend']} job{kind} {st['namespace']}/{st['name']}: {st['phase']}"]
    for c in st.get("conditions", []):
        lines.append(
            f"  condition {c.get('type')}={c.get('status')} {c.get('reason') or ''} {c.get('message') or ''}".rstrip()
        )
    for p in st.get("pods", []):
        extra = f" ({p['reason']})" if p.get("reason") else ""
        lines.append(
            f"  pod {p['name']}: {p['phase']}{extra}, restarts {p['restarts']}"
            + (f", node {p['node']}" if p.get("node") else "")
        )
    for e in st.get("events", []):
        lines.append(f"  event {e.get('object')}: {e.get('type')} {e.get('reason')}: {e.get('message')}")
    return "\n".join(lines)
