"""The ``workshop`` command: a thin layer over the rooms (see ``docs/cli.md``).

Each room owns its subcommands in its own ``cli.py`` with a ``register(subparsers)`` function, so
the rooms stay independent and this file only wires them together and enforces the contract's
conventions:

* ``--json`` prints exactly one JSON object on stdout (progress goes to stderr);
* exit 0 on success, 2 on bad usage or invalid input with one clear line on stderr and no
  traceback, 1 on any other failure;
* nothing heavy (torch, megatron-core, the Kubernetes client) is imported at start-up: every
  room's ``cli.py`` imports its implementation inside the handler.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .errors import UsageError, WorkshopError

# The rooms that contribute subcommands, in the order `workshop --help` lists them.
ROOMS = (
    "workshop_lib.data.cli",
    "workshop_lib.plan.cli",
    "workshop_lib.train.cli",
    "workshop_lib.convert.cli",
    "workshop_lib.launch.cli",
    "workshop_lib.monitor.cli",
    "workshop_lib.journey_cli",
)


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="workshop",
        description="Megatron-on-Kubernetes workshop kit: prepare data, plan parallelism, "
        "launch training (Kubernetes or local torchrun) and monitor it.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"workshop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in ROOMS:
        module = importlib.import_module(name)
        module.register(sub)
    return parser


class _Interrupts:
    """Remembers a Ctrl-C (SIGINT) while a command runs, then raises KeyboardInterrupt as Python does.

    A library can turn the interruption into some other error on its way up (an encoder thread
    returning a half-built result, a worker pool's exception): whatever surfaces, a command that was
    interrupted ends with "interrupted" and exit 130, never a misleading failure line.
    """

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def __enter__(self) -> _Interrupts:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            import signal

            signal.signal(signal.SIGINT, self._previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workshop`` console script; returns the exit status."""
    try:
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
        except KeyboardInterrupt:  # Ctrl-C while the rooms load
            print("workshop: interrupted", file=sys.stderr)
            return 130
        with _Interrupts() as interrupts:
            return _run(args, interrupts)
    finally:
        _forget_handled_interrupt()


def _forget_handled_interrupt() -> None:
    """Make the status ``main`` returns the process's exit status, even after a handled Ctrl-C.

    CPython marks a KeyboardInterrupt that leaves an ``exec()`` of source text as unhandled, even
    when a caller then catches it, and under ``python -m`` its main ends the process by SIGINT
    (status -2) instead of exiting with the 130 this command returns. A Ctrl-C during an import
    often lands in such an exec: dataclasses build every ``__init__`` that way. Running any source
    text through exec clears the mark first (Python/pythonrun.c, run_eval_code_obj), so this does.
    """
    exec("pass")


def _run(args: argparse.Namespace, interrupts: _Interrupts) -> int:
    handler: Callable[[argparse.Namespace], int | None] = args.func
    from .redact import redact  # every message can carry a server's or a file's text: mask credentials

    try:
        status = handler(args)
    except UsageError as exc:
        if interrupts.seen:
            print(f"workshop {args.command}: interrupted", file=sys.stderr)
            return 130
        print(f"workshop {args.command}: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except WorkshopError as exc:
        if interrupts.seen:
            print(f"workshop {args.command}: interrupted", file=sys.stderr)
            return 130
        print(f"workshop {args.command}: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"workshop {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the contract: one line, no traceback
        if interrupts.seen:  # what a library made of the Ctrl-C: the user interrupted, nothing failed
            print(f"workshop {args.command}: interrupted", file=sys.stderr)
            return 130
        if os.environ.get("WORKSHOP_DEBUG"):
            raise
        print(
            f"workshop {args.command}: failed: {type(exc).__name__}: {redact(str(exc))} "
            "(set WORKSHOP_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
