"""The command line's conventions and the shared helpers every room relies on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from workshop_lib.errors import UsageError
from workshop_lib.facts import hardware
from workshop_lib.fsutil import atomic_path, atomic_write_text, check_k8s_name, held_stop_signals


def test_unknown_subcommand_is_one_line_exit_2(cli):
    res = cli("no-such-command")
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1
    assert "invalid choice" in res.err


def test_version(cli):
    res = cli("--version")
    assert res.code == 0
    assert res.out.startswith("workshop ")


def test_importing_cli_does_not_import_heavy_modules():
    code = (
        "import sys, workshop_lib.cli as c; c.build_parser();"
        "heavy=[m for m in ('torch','megatron','kubernetes','pandas','matplotlib') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_held_stop_signals_acts_on_a_ctrl_c_only_after_the_outermost_block():
    steps = []
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), held_stop_signals():
        with held_stop_signals():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)  # a second Ctrl-C is one stop, not two
            steps.append("inner block finished")
        steps.append("outer block finished")
    assert steps == ["inner block finished", "outer block finished"]
    assert signal.getsignal(signal.SIGINT) is before
    with held_stop_signals():  # nothing pending from before: a block with no signal just ends
        steps.append("quiet")
    assert steps[-1] == "quiet"


def test_held_stop_signals_hands_a_sigterm_to_the_handler_that_was_there():
    got = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        with held_stop_signals():
            signal.raise_signal(signal.SIGTERM)
            assert got == []
        assert got == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert not target.exists()
    assert os.listdir(tmp_path) == []
    atomic_write_text(target, "whole")
    assert target.read_text() == "whole"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("bad", ["", "Upper", "-lead", "trail-", "a" * 64, "has_underscore", "a/b"])
def test_k8s_names_are_validated(bad):
    with pytest.raises(UsageError, match="field-x"):
        check_k8s_name(bad, "field-x")
    assert check_k8s_name("megatron-cpt-techpulse", "name") == "megatron-cpt-techpulse"


def test_instance_table_matches_the_seeds():
    p4d = hardware.instance("p4d.24xlarge")
    assert (p4d.gpus_per_node, p4d.efa_per_node, p4d.gpu) == (8, 4, "a100-40gb")
    assert hardware.instance("ml.p5en.48xlarge").efa_per_node == 16
    assert hardware.instance("p6-b200.48xlarge").efa_per_node == 8
    assert hardware.instance("Standard_ND96isr_H100_v5").efa_per_node == 0
    with pytest.raises(UsageError, match="instance_type"):
        hardware.instance("p9.nothing")


def test_json_output_is_strict_json(capsys):
    """Every --json output is valid JSON: NaN and Infinity (which JSON lacks) become null."""
    import json
    from pathlib import Path

    from workshop_lib.cli_output import print_json

    print_json({"loss": float("nan"), "scale": float("inf"), "rows": [1.5, float("-inf")], "p": Path("/a")})
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    assert json.loads(out) == {"loss": None, "scale": None, "rows": [1.5, None], "p": "/a"}
