"""Megatron-on-Kubernetes workshop kit.

Rooms (see docs/architecture.md): ``facts`` (tables), ``data`` (corpora to indexed datasets),
``plan`` (parallelism math), ``monitor`` (logs, health, checkpoints), ``train`` (the Megatron-Core
trainer), ``launch`` (job rendering, checks, backends), ``widgets`` (ipywidgets views) and ``cli``.

Importing this package is cheap on purpose: nothing here imports torch, megatron-core or the
Kubernetes client, so the planning and rendering commands start in well under a second.
"""

__version__ = "0.1.0"


def _interrupt_quietly_while_loading() -> None:
    """When this process is the ``workshop`` command, a Ctrl-C while it loads is one line, exit 130.

    Installed from the package's first line (``workshop_lib.cli.main`` takes over once it runs),
    and only for the command itself: a notebook or test that imports the package keeps its own
    SIGINT handling.
    """
    import os
    import sys

    argv = list(getattr(sys, "orig_argv", []))
    as_module = any(argv[i : i + 2] == ["-m", "workshop_lib.cli"] for i in range(len(argv)))
    if not (as_module or os.path.basename(sys.argv[0] if sys.argv else "") == "workshop"):
        return
    import signal
    import threading

    def interrupted(signum: int, frame: object) -> None:
        sys.stderr.write("workshop: interrupted\n")
        raise SystemExit(130)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupted)


_interrupt_quietly_while_loading()
