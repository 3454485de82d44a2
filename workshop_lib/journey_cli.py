"""``workshop run-notebooks``: the whole workshop, headless (registered by ``workshop_lib.cli``)."""

from __future__ import annotations

import argparse

from .cli_output import print_json, progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run-notebooks``; the papermill machinery is imported only when it runs."""
    p = sub.add_parser(
        "run-notebooks",
        help="execute the four notebooks in order with papermill (the whole workshop, headless)",
        description="Execute notebooks 01-04 in order with papermill on the chosen backend, write the "
        "executed notebooks and an HTML export of each, and print a one-screen summary.",
    )
    p.add_argument(
        "--backend", default="local", help="local (default: torchrun on this machine) or kubernetes"
    )
    p.add_argument(
        "--output-dir",
        default=None,
        help="where executed notebooks go (default: the run directory every notebook uses by default, "
        "runs/workshop at the repository root or $WORKSHOP_RUN_DIR)",
    )
    p.add_argument(
        "--run-dir", default=None, help="the run directory the notebooks share (default: the output dir)"
    )
    p.add_argument("--only", nargs="+", metavar="NN", help="run only these notebooks, e.g. --only 01 02")
    p.add_argument("--no-html", action="store_true", help="skip the HTML export")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .fsutil import ensure_output_dir
    from .journey import format_summary, run_notebooks
    from .paths import RunDir

    # The same default as the notebooks and every other command, whatever the current directory.
    if args.output_dir is None:
        args.output_dir = str(RunDir.at(None).root)
    # An unwritable or invalid directory is the user's input: one line naming the flag, before any work.
    ensure_output_dir(args.output_dir, "--output-dir")
    if args.run_dir:
        ensure_output_dir(args.run_dir, "--run-dir")
    result = run_notebooks(
        Path(args.output_dir),
        run_dir=Path(args.run_dir) if args.run_dir else None,
        backend=args.backend,
        only=args.only,
        html=not args.no_html,
        log=progress,
    )
    if args.json:
        print_json(
            {
                "notebooks": [
                    {
                        "name": n.name,
                        "seconds": n.seconds,
                        "executed": str(n.executed),
                        "html": str(n.html) if n.html else None,
                    }
                    for n in result.notebooks
                ],
                "summary": result.summary,
            }
        )
    else:
        print(format_summary(result))
    return 0
