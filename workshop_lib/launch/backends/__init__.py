"""Launch backends behind one interface (``base.Backend``): ``local`` (torchrun here) and ``kubernetes``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Backend, JobRef, format_status

__all__ = ["Backend", "JobRef", "format_status", "get"]


def get(
    kind: str,
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    run_dir: Path | None = None,
    train_iters: int | None = None,
    request_timeout: float | None = None,
    **extra: Any,
) -> Backend:
    """The backend named ``kind`` ("local" or "kubernetes"); the Kubernetes client loads lazily."""
    if kind == "local":
        from .local import LocalBackend

        return LocalBackend(run_dir=run_dir, train_iters=train_iters, **extra)
    if kind == "kubernetes":
        from .kubernetes import KubernetesBackend

        return KubernetesBackend(
            kubeconfig=kubeconfig, context=context, run_dir=run_dir, request_timeout=request_timeout, **extra
        )
    from ...errors import UsageError

    raise UsageError(f"backend: unknown {kind!r}; use local or kubernetes")
