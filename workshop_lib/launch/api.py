"""What notebook 03 and ``workshop render`` call to turn a job into Kubernetes manifests, for either operator.

``operator`` is ``pytorchjob`` (Training Operator v1, the default), ``trainjob`` (Kubeflow Trainer v2)
or ``None`` for what the job YAML's ``operator:`` field says.
"""

from __future__ import annotations

import os
from typing import Any

from ..facts import operators
from . import jobspec, render, trainjob
from .jobspec import JobSpec


def _spec(job: JobSpec | str | os.PathLike[str]) -> JobSpec:
    return job if isinstance(job, JobSpec) else jobspec.load(job)


def manifests(job: JobSpec | str | os.PathLike[str], operator: str | None = None) -> list[dict[str, Any]]:
    """The objects ``workshop apply`` creates for ``job`` on ``operator``, in creation order."""
    spec = _spec(job)
    op = operators.operator(operator or spec.operator).name
    return trainjob.render_trainjob(spec) if op == operators.TRAINJOB.name else render.render_job(spec)


def manifest_text(job: JobSpec | str | os.PathLike[str], operator: str | None = None) -> str:
    """:func:`manifests` as the multi-document YAML ``workshop render`` prints."""
    return render.to_yaml(manifests(job, operator))


def both_renderings(job: JobSpec | str | os.PathLike[str]) -> dict[str, str]:
    """``{"pytorchjob": yaml, "trainjob": yaml}``: the same job on both operators, for a side-by-side view."""
    spec = _spec(job)
    return {name: manifest_text(spec, name) for name in operators.OPERATORS}


def follow_logs(
    launcher: Any, job: Any, *, timeout: float | None = None, emit: Any = print
) -> dict[str, Any]:
    """Notebook 03's view of a run: a progress line, the run's lines without the known library
    warnings (counted, and all kept in the log file), to the end of the run or ``timeout`` seconds.
    ``emit`` receives each shown line (``print`` by default). See :mod:`workshop_lib.launch.readable`."""
    from . import readable

    return readable.follow(launcher, job, timeout=timeout, emit=emit)
