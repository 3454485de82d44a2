"""Subcommands of the ``launch`` room: render, check, apply, status, logs, delete.

Handlers import their implementation lazily, so ``render`` and ``check`` start fast and only the
cluster commands load the Kubernetes client. ``check`` answers with its findings and exits 0, as
``plan`` does for an invalid plan and ``monitor diagnose`` for a sick log: the findings are the
answer. ``--strict`` makes it exit 1 when there is at least one error (so CI can gate on it, like a
linter). A job YAML that cannot be read at all is exit 2; with ``--json`` the findings object is
printed in every other case.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..cli_output import emit_text, print_json, progress


def _positive(kind: type, flag: str):
    """An argparse type: a number > 0, else the usual one-line usage error naming ``flag``."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text}: must be greater than 0 (e.g. {flag} 30)")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _add_target(p: argparse.ArgumentParser, *, need_config: bool) -> None:
    p.add_argument(
        "--config", required=need_config, metavar="JOB.yaml", help="the job YAML (docs/cli.md, 'Launch')"
    )
    if not need_config:
        p.add_argument("--name", help="job name (instead of --config)")
    p.add_argument("--backend", choices=("kubernetes", "local"), help="override the job's backend")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current one)")
    p.add_argument("--namespace", help="namespace (default: the job's)")
    p.add_argument(
        "--run-dir", type=Path, help="run directory for the local backend and logs (default: runs/workshop)"
    )
    p.add_argument(
        "--request-timeout",
        type=_positive(float, "--request-timeout"),
        default=None,
        metavar="SECONDS",
        help="give up on an API request the server has not answered after this long (default 30)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument(
        "--target",
        choices=("pytorchjob", "trainjob"),
        default=None,
        help="the operator to act on (default: the job YAML's `operator:`; with --name, whichever has the job)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
    p = sub.add_parser("render", help="job YAML -> PyTorchJob or TrainJob manifest (or sbatch script)")
    p.add_argument("--config", required=True, metavar="JOB.yaml")
    p.add_argument("--out", type=Path, help="write to FILE instead of stdout")
    p.add_argument(
        "--target",
        choices=("kubernetes", "pytorchjob", "trainjob", "slurm"),
        default="kubernetes",
        help="kubernetes: the operator the job's `operator:` names (default pytorchjob); pytorchjob or "
        "trainjob: that operator whatever the file says; slurm: an sbatch script",
    )
    p.add_argument(
        "--allow-literal-env",
        action="append",
        default=[],
        metavar="VAR",
        help="write VAR's literal value although its name or value looks like a credential (it is not one)",
    )
    p.set_defaults(func=_render)

    p = sub.add_parser("check", help="job YAML against the NCCL/EFA rules, the instance and the plan")
    p.add_argument("--config", required=True, metavar="JOB.yaml")
    p.add_argument(
        "--target",
        choices=("kubernetes", "pytorchjob", "trainjob"),
        default="kubernetes",
        help="judge the pods of this operator (kubernetes: the one the job's `operator:` names)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--strict", action="store_true", help="exit 1 when there is at least one error finding")
    p.set_defaults(func=_check)

    p = sub.add_parser("apply", help="preflight the cluster and create the job (or start it locally)")
    _add_target(p, need_config=True)
    p.add_argument("--replace", action="store_true", help="delete an existing job of that name first")
    p.add_argument("--force", action="store_true", help="submit even when `workshop check` finds errors")
    p.add_argument("--skip-preflight", action="store_true", help="do not check the cluster first")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="server-side dry run (dryRun=All, fieldValidation=Strict): the cluster's CRD schemas and "
        "admission webhooks judge every object; nothing is created",
    )
    p.add_argument(
        "--train-iters",
        type=_positive(int, "--train-iters"),
        default=None,
        help="local backend: iterations of the tiny run (default 30)",
    )
    p.set_defaults(func=_apply)

    p = sub.add_parser(
        "preflight",
        help="which training operator the cluster has, and whether it can take the job (creates nothing)",
    )
    _add_target(p, need_config=True)
    p.set_defaults(func=_preflight)

    p = sub.add_parser(
        "status", help="job conditions, pods (phase, restarts) and the events that explain them"
    )
    _add_target(p, need_config=False)
    p.set_defaults(func=_status)

    p = sub.add_parser("logs", help="stream the job's logs to stdout and to a file the monitor reads")
    _add_target(p, need_config=False)
    p.add_argument("--follow", "-f", action="store_true", help="keep streaming until the job ends")
    p.add_argument(
        "--all", action="store_true", help="every pod (each line prefixed), not just rank 0 and the last rank"
    )
    p.add_argument("--out", type=Path, help="log file to write (default: <run>/train/train.log)")
    p.add_argument(
        "--timeout", type=_positive(float, "--timeout"), default=None, help="give up after this many seconds"
    )
    p.set_defaults(func=_logs)

    p = sub.add_parser("delete", help="delete the job (stop the local run)")
    _add_target(p, need_config=False)
    p.add_argument("--wait", action="store_true", help="return only when its pods are gone")
    p.add_argument("--timeout", type=float, default=300.0)
    p.set_defaults(func=_delete)


def _render(args: argparse.Namespace) -> int:
    """Render the job; refuse (exit 2) to write a literal credential into a manifest.

    Manifests are committed, shared and applied; a token in one is a leaked token. A Secret
    reference costs one line, so a literal is refused rather than warned about. ``--allow-literal-env
    VAR`` exists for a variable whose name only looks like a credential, and names it explicitly.
    """
    from ..errors import UsageError
    from ..facts import nccl_rules
    from . import check, jobspec, render

    spec = jobspec.load(args.config)
    secrets = [v for v in check.literal_secrets(spec) if v not in args.allow_literal_env]
    if secrets:
        var = secrets[0]
        raise UsageError(
            f"{spec.source}: env.{var}: a literal credential ({nccl_rules.secret_reason(var, spec.literal_env()[var])}) "
            f"is never written into a manifest; use a Secret: env: {{{var}: {{secret: SECRET-NAME, key: KEY}}}} "
            f"(or pass --allow-literal-env {var} if it is not a credential)"
        )
    if args.target == "slurm":
        text = render.render_slurm(spec)
    else:
        from . import api

        text = api.manifest_text(spec, None if args.target == "kubernetes" else args.target)
    emit_text(text, args.out)
    return 0


def _check(args: argparse.Namespace) -> int:
    from . import check, jobspec

    spec = jobspec.load(args.config)
    findings = check.check_job(spec, None if args.target == "kubernetes" else args.target)
    if args.json:
        print_json({"findings": [f.to_dict() for f in findings]})
    elif not findings:
        print(f"{args.config}: no findings")
    else:
        for f in findings:
            print(f"{f.severity}: [{f.rule}] {f.message}\n    fix: {f.fix}")
    return 1 if args.strict and any(f.severity == "error" for f in findings) else 0


def _target(args: argparse.Namespace):
    """(job or reference, backend) for the cluster commands."""
    from ..errors import UsageError
    from ..fsutil import check_k8s_name
    from . import backends, jobspec

    # The same rule as the job YAML's fields: the values end up in API paths and file names.
    if args.namespace is not None:
        check_k8s_name(args.namespace, "--namespace")
    if getattr(args, "name", None) is not None:
        check_k8s_name(args.name, "--name")
    if args.config:
        from dataclasses import replace

        job = jobspec.load(args.config)
        if args.namespace:
            job = replace(job, namespace=args.namespace)
        if args.target:
            job = replace(job, operator=args.target)
    elif args.name:
        job = backends.JobRef(
            args.name, args.namespace or "default", args.backend or "kubernetes", operator=args.target
        )
    else:
        raise UsageError("pass --config JOB.yaml (or --name NAME) to say which job")
    kind = args.backend or job.backend
    return job, backends.get(
        kind,
        kubeconfig=args.kubeconfig,
        context=args.context,
        run_dir=args.run_dir,
        train_iters=getattr(args, "train_iters", None),
        request_timeout=args.request_timeout,
    )


def _apply(args: argparse.Namespace) -> int:
    from ..errors import WorkshopError
    from . import check

    job, backend = _target(args)
    if args.dry_run and backend.name != "kubernetes":
        from ..errors import UsageError

        raise UsageError(
            "--dry-run asks a Kubernetes API server to judge the manifests; use --backend kubernetes"
        )
    if backend.name == "local" and args.run_dir is not None:  # it writes there: one line if it cannot
        from ..fsutil import ensure_output_dir

        ensure_output_dir(args.run_dir, "--run-dir")
    if backend.name == "kubernetes":  # the local backend runs a tiny scaled copy; the rules are for clusters
        errors = [] if args.force else [f for f in check.check_job(job) if f.severity == "error"]
        for f in errors:
            progress(f"error: [{f.rule}] {f.message} (fix: {f.fix})")
        if errors:
            raise WorkshopError(
                f"`workshop check` finds {len(errors)} error(s) in {job.source}; fix them or pass --force"
            )
        if not args.skip_preflight:
            for note in backend.preflight(job):
                progress(f"note: {note}")
    extra = {"dry_run": True} if args.dry_run else {}
    result = backend.submit(job, replace=args.replace, **extra)
    print_json(result) if args.json else print(result["message"])
    return 0


def _preflight(args: argparse.Namespace) -> int:
    """The cluster's operators and the job's preflight: exit 0 when it can take the job, else 1 with the problems."""
    from ..errors import UsageError, WorkshopError

    job, backend = _target(args)
    if backend.name != "kubernetes":
        raise UsageError("preflight checks a Kubernetes cluster; use --backend kubernetes")
    cluster = backend.operators()
    try:
        notes, problems = backend.preflight(job), []
    except WorkshopError as exc:
        notes, problems = getattr(backend, "notes", []), str(exc).split("\n  - ")[1:]
    if args.json:
        print_json(
            {**cluster, "operator": job.operator, "ok": not problems, "notes": notes, "problems": problems}
        )
    else:
        for line in [cluster["summary"], *(n for n in notes if n != cluster["summary"])]:
            print(f"note: {line}")
        for line in problems:
            print(f"problem: {line}")
        print(
            f"{job.name}: " + ("the cluster can take it" if not problems else f"{len(problems)} problem(s)")
        )
    return 1 if problems else 0


def _status(args: argparse.Namespace) -> int:
    from ..redact import redact_tree
    from . import backends

    job, backend = _target(args)
    st = redact_tree(backend.status(job))  # events and conditions are the server's text
    diag = _failed_run_verdict(st, backend)
    if diag is not None:
        st["diagnosis"] = {**diag.to_dict(), "summary": diag.one_line()}
    print_json(st) if args.json else print(backends.format_status(st))
    if diag is not None and not args.json:
        print(diag.one_line())
    return 0


# Pod states that mean the run failed even while the job object still says Running/Created.
_FAILED_POD_REASONS = frozenset({"Error", "OOMKilled", "CrashLoopBackOff", "ErrImagePull", "ImagePullBackOff",
                                 "CreateContainerConfigError", "ContainerCannotRun", "Evicted"})  # fmt: skip


def _failed_run_verdict(st: dict, backend):
    """The diagnosis of a failed or stuck job (None while it is healthy): its saved log, then its events.

    The log is what `workshop logs` (or the local runner) wrote; events and pod reasons follow it as
    lines, so an image-pull or scheduling failure with no log is diagnosed too. A job whose pods are
    still Pending is not failed, but Kubernetes keeps it Pending for ever when a volume cannot be
    mounted or no node fits: with Warning events, such a job is diagnosed too, and named only when a
    signature knows the events (a first FailedScheduling that the autoscaler is about to answer is
    still named: the events say what the pod waits for).
    """
    import itertools
    from pathlib import Path

    from ..monitor.diagnose import verdict
    from ..monitor.parse import read_log_lines

    pods = st.get("pods") or []
    events = st.get("events") or []
    failed = st.get("phase") == "Failed" or any(p.get("reason") in _FAILED_POD_REASONS for p in pods)
    stuck = any(p.get("phase") == "Pending" for p in pods) and any(e.get("type") == "Warning" for e in events)
    if not failed and not stuck:
        return None
    log = Path(st.get("log") or backend.run.train_log)
    extra = [f"pod {p['name']}: {p.get('phase')} ({p['reason']})" for p in pods if p.get("reason")]
    extra += [
        f"event {e.get('object')}: {e.get('type')} {e.get('reason')}: {e.get('message')}" for e in events
    ]
    diag = verdict(itertools.chain(read_log_lines(log) if log.is_file() else (), extra))
    return diag if failed or diag.primary is not None else None


def _logs(args: argparse.Namespace) -> int:
    if args.out is not None:  # an unusable --out is one line before any backend work, on every backend
        from ..errors import UsageError
        from ..fsutil import ensure_output_dir

        if args.out.is_dir():
            raise UsageError(
                f"--out {args.out}: is a directory; give a file name, e.g. {args.out / 'train.log'}"
            )
        ensure_output_dir(args.out.parent, "--out")
    job, backend = _target(args)
    sink = progress if args.json else (lambda line: print(line, flush=True))
    result = backend.logs(
        job, follow=args.follow, all_ranks=args.all, out=args.out, sink=sink, timeout=args.timeout
    )
    diag = _log_verdict(result["out"])
    if diag is not None:
        result["diagnosis"] = {**diag.to_dict(), "summary": diag.one_line()}
    if args.json:
        print_json(result)
    else:
        progress(f"wrote {result['lines']} line(s) to {result['out']}")
        if diag is not None:
            progress(diag.one_line())
    return 0


def _log_verdict(out: str):
    """The diagnosis of the log just written, when it shows a failure (None for a healthy log)."""
    from pathlib import Path

    from ..monitor.diagnose import verdict

    path = Path(out)
    if not path.is_file():
        return None
    v = verdict(path)
    return v if v.failed else None


def _delete(args: argparse.Namespace) -> int:
    job, backend = _target(args)
    result = backend.delete(job, wait=args.wait, timeout=args.timeout)
    print_json(result) if args.json else print(result["message"])
    return 0
