"""`workshop render | check`: exit codes, JSON shape, one-line errors."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
EKS = REPO / "manifests/jobs/techpulse-eks.yaml"


def test_render_prints_multi_doc_yaml(cli):
    res = cli("render", "--config", EKS)
    assert res.code == 0, res.err
    docs = list(yaml.safe_load_all(res.out))
    assert [d["kind"] for d in docs] == ["Namespace", "PyTorchJob"]
    assert res.out == (REPO / "manifests/techpulse-eks.yaml").read_text()


def test_render_out_and_slurm(cli, tmp_path):
    out = tmp_path / "job.sbatch"
    res = cli("render", "--config", EKS, "--target", "slurm", "--out", out)
    assert res.code == 0 and res.out == ""
    assert out.read_text().startswith("#!/bin/bash\n#SBATCH --job-name=megatron-cpt-techpulse")


def test_check_json_and_exit_codes(cli, tmp_path):
    res = cli("check", "--config", EKS, "--json")
    assert res.code == 0, res.err
    assert [f for f in res.json()["findings"] if f["severity"] == "error"] == []
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**yaml.safe_load(EKS.read_text()), "env": {"NCCL_SOCKET_IFNAME": "eth0"}}))
    res = cli("check", "--config", bad, "--json")
    assert res.code == 0  # the findings are the answer
    (f,) = [f for f in res.json()["findings"] if f["rule"] == "nccl-socket-ifname-eth0"]
    assert set(f) == {"severity", "rule", "message", "fix"} and f["severity"] == "error"
    assert cli("check", "--config", bad, "--json", "--strict").code == 1
    assert cli("check", "--config", EKS, "--strict").code == 0
    res = cli("check", "--config", bad)
    assert (
        res.code == 0
        and "error: [nccl-socket-ifname-eth0]" in res.out
        and "fix: remove NCCL_SOCKET_IFNAME" in res.out
    )


def test_invalid_job_is_exit_2_one_line(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**yaml.safe_load(EKS.read_text()), "nodes": -1}))
    for cmd in (("render",), ("check", "--json")):
        res = cli(*cmd, "--config", bad)
        assert res.code == 2 and res.out == ""
        assert len(res.err.strip().splitlines()) == 1 and "bad.yaml: nodes:" in res.err
