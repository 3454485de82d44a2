"""``workshop run-notebooks`` stops each kernel only once it is idle: no stray "KeyboardInterrupt caught in kernel".

The race, made certain: the notebook's cell slows the kernel's ``kernel_info`` handler down by a
second *after* its reply is sent, which is exactly the gap papermill's last ``kernel_info`` request
leaves open before nbclient interrupts the kernel (SIGINT) to shut it down. The kernel writes its
log to this process's stderr (it inherits the descriptor), so ``capfd`` sees what the terminal of
``make workshop`` would see. Plain papermill shows the line; the journey's engine does not.
"""

from __future__ import annotations

import nbformat
import pytest

LINE = "KeyboardInterrupt caught in kernel"
SLOW_KERNEL_INFO = """\
import time
kernel = get_ipython().kernel
reply_then_linger_original = kernel.shell_handlers["kernel_info_request"]

async def reply_then_linger(*args):
    await reply_then_linger_original(*args)  # the reply is on its way to papermill here
    time.sleep(1.0)                          # ... while the handler has not returned yet

kernel.shell_handlers["kernel_info_request"] = reply_then_linger
print("kernel_info now lingers after its reply")
"""


@pytest.fixture(scope="module")
def lingering_notebook(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kernel")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SLOW_KERNEL_INFO)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "linger.ipynb"
    nbformat.write(nb, path)
    return path


def test_plain_papermill_interrupts_a_kernel_still_in_its_handler(lingering_notebook, capfd):
    """The cause, reproduced: without the engine the shutdown's SIGINT lands inside the handler."""
    import papermill as pm

    pm.execute_notebook(
        str(lingering_notebook),
        str(lingering_notebook.with_name("plain.ipynb")),
        progress_bar=False,
        log_output=False,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )
    err = capfd.readouterr().err
    assert LINE in err, (
        "plain papermill no longer interrupts a busy kernel at shutdown; "
        f"journey_engine may be unnecessary now (stderr: {err[-500:]!r})"
    )


def test_journey_engine_waits_until_the_kernel_is_idle(lingering_notebook, capfd):
    from workshop_lib.journey_engine import execute_notebook

    executed = lingering_notebook.with_name("settled.ipynb")
    execute_notebook(lingering_notebook, executed)
    captured = capfd.readouterr()
    assert LINE not in captured.err and LINE not in captured.out, captured.err[-500:]
    out = nbformat.read(executed, as_version=4).cells[0].outputs
    assert any("lingers after its reply" in o.get("text", "") for o in out), out  # it really ran
