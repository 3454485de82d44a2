"""What notebook 03 calls, under one name: the launch room's steps from job YAML to a followed run.

Notebook 03 imports this module (and ``convert.api`` for the base model): the job file read and
validated, the manifests for either operator (``operator`` is ``pytorchjob``, Training Operator v1,
the default; ``trainjob``, Kubeflow Trainer v2; or ``None`` for what the job YAML's ``operator:``
field says; ``workshop render`` prints the same text), the checks, the backends (imported when first
used) and :func:`follow_logs`, the notebook's view of a run.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import UsageError as UsageError
from ..facts import operators
from ..facts.nccl_rules import RULES as RULES
from ..paths import REPO_ROOT, RunDir
from . import jobspec, render, trainjob
from .check import check_env as check_env
from .check import check_job as check_job
from .check import rules_table as rules_table
from .jobspec import JobSpec
from .jobspec import from_dict as job_from_dict  # noqa: F401
from .render import render_slurm as slurm_script  # noqa: F401


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


def resolve_run(run_dir: str | os.PathLike[str] | None = None) -> RunDir:
    """The run directory (``paths.RunDir.at``): the path given, or the default one."""
    return RunDir.at(run_dir)


def load_job(job: RunDir | str | os.PathLike[str]) -> JobSpec:
    """The job YAML (``<run>/plan/job.yaml`` for a :class:`RunDir`), read and validated."""
    return jobspec.load(job.job_yaml if isinstance(job, RunDir) else job)


def read_job(job: RunDir | str | os.PathLike[str]) -> dict[str, Any]:
    """The job YAML as a plain mapping, not validated (to edit a copy and validate it with
    :func:`job_from_dict`); ``{}`` for an empty file."""
    from ..handover import read_job_yaml

    return dict(read_job_yaml(job) or {})


def backend(kind: str, **options: Any) -> Any:
    """A launch backend (``local`` or ``kubernetes``) behind the one interface of ``backends/base.py``."""
    from . import backends

    return backends.get(kind, **options)


def format_status(status: Any) -> str:
    """``workshop status``'s text for a backend's status object."""
    from .backends import format_status as fmt

    return fmt(status)


def image_recipes(max_lines: int = 12) -> dict[str, list[str]]:
    """The training image's recipes under ``docker/`` (path from the repository root: their FROM,
    ENV, ARG and ``RUN pip`` lines), or ``{}`` in a checkout without them."""
    docker_dir = REPO_ROOT / "docker"
    recipes = sorted(p for p in docker_dir.glob("*") if p.is_file()) if docker_dir.is_dir() else []
    out = {}
    for p in recipes:
        keep = ("FROM", "ENV", "ARG", "RUN pip")
        lines = [line for line in p.read_text(encoding="utf-8").splitlines() if line.startswith(keep)]
        out[str(p.relative_to(REPO_ROOT))] = lines[:max_lines]
    return out


def follow_logs(
    launcher: Any, job: Any, *, timeout: float | None = None, emit: Any = print
) -> dict[str, Any]:
    """Notebook 03's view of a run: a progress line, the run's lines without the known library
    warnings (counted, and all kept in the log file), to the end of the run or ``timeout`` seconds.
    ``emit`` receives each shown line (``print`` by default). See :mod:`workshop_lib.launch.readable`."""
    from . import readable

    return readable.follow(launcher, job, timeout=timeout, emit=emit)
