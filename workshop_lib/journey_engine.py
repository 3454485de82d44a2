"""How ``workshop run-notebooks`` executes one notebook: papermill, with kernels that are idle when stopped.

Why a papermill engine of our own: after the last cell papermill asks the kernel for its
``kernel_info`` and waits only for the *reply*; nbclient then shuts the kernel down, and
jupyter_client's shutdown begins by interrupting the kernel's process group (SIGINT). The kernel
sends that reply from inside its message handler, while SIGINT still raises KeyboardInterrupt
there (ipykernel restores "ignore SIGINT" only once the handler has returned). When the
interrupt lands in that gap, and on a busy machine it does, ipykernel logs "KeyboardInterrupt
caught in kernel." on the terminal of ``make workshop``, although nothing was interrupted.

:class:`SettledClient` closes the gap at its cause: after any request that is not a cell (the
``kernel_info`` requests before the first and after the last cell) it also waits for the kernel's
"idle" status for that request, which ipykernel publishes only after the handler has returned.
The shutdown's interrupt then reaches a kernel that ignores it. Everything else is papermill's.

papermill, nbclient and jupyter_client are imported here, so import this module lazily.
"""

from __future__ import annotations

from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from nbclient.util import ensure_async, run_sync
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines

ENGINE_NAME = "workshop"
IDLE_TIMEOUT_S = 10.0  # how long to wait for a kernel's "idle" after a reply (it is milliseconds)


class SettledClient(PapermillNotebookClient):
    """papermill's notebook client, but a non-cell request is finished only when the kernel is idle."""

    async def async_wait_for_reply(self, msg_id: str, cell: Any = None) -> dict[str, Any] | None:
        reply = await super().async_wait_for_reply(msg_id, cell)
        if reply is not None and cell is None:
            await self._async_wait_idle(msg_id)
        return reply

    # nbclient binds the synchronous names to its own coroutine: bind them to this one.
    wait_for_reply = run_sync(async_wait_for_reply)
    _wait_for_reply = wait_for_reply

    async def _async_wait_idle(self, msg_id: str, timeout: float = IDLE_TIMEOUT_S) -> bool:
        """Read the kernel's IOPub messages until it reports "idle" for ``msg_id``; whether it did.

        Messages for other requests are dropped, as nbclient drops them: every cell has already
        consumed its own output by the time papermill asks for ``kernel_info``.
        """
        assert self.kc is not None
        deadline = monotonic() + timeout
        while (left := deadline - monotonic()) > 0:
            try:
                msg = await ensure_async(self.kc.iopub_channel.get_msg(timeout=min(left, 1.0)))
            except Empty:
                if self.km is not None and not await ensure_async(self.km.is_alive()):
                    return False
                continue
            if (
                msg.get("parent_header", {}).get("msg_id") == msg_id
                and msg.get("msg_type") == "status"
                and msg.get("content", {}).get("execution_state") == "idle"
            ):
                return True
        return False


class SettledEngine(NBClientEngine):
    """papermill's nbclient engine with :class:`SettledClient` as its client."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man: Any,
        kernel_name: str | None,
        log_output: bool = False,
        stdout_file: Any = None,
        stderr_file: Any = None,
        start_timeout: float = 60,
        execution_timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        from papermill.log import logger

        for unused in ("input_path", "timeout", "startup_timeout"):
            kwargs.pop(unused, None)
        client = SettledClient(
            nb_man,
            timeout=execution_timeout,
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
            **kwargs,
        )
        return client.execute()


papermill_engines.register(ENGINE_NAME, SettledEngine)


def execute_notebook(
    source: Path,
    executed: Path,
    *,
    parameters: dict[str, Any] | None = None,
    cwd: Path | None = None,
    kernel_name: str | None = None,
) -> None:
    """Execute ``source`` into ``executed`` headless (raises papermill's PapermillExecutionError)."""
    import papermill as pm

    pm.execute_notebook(
        str(source),
        str(executed),
        parameters=parameters or {},
        cwd=str(cwd) if cwd else None,
        kernel_name=kernel_name,
        engine_name=ENGINE_NAME,
        progress_bar=False,
        log_output=False,
        # The kernels are local children of this process; their start-up chatter (e.g.
        # ipykernel's note that a loopback kernel is unencrypted) is noise on this screen.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
