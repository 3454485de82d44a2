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


def test_render_refuses_a_literal_credential_and_check_never_echoes_it(cli, tmp_path):
    data = yaml.safe_load(EKS.read_text())
    data["env"] = {"HF_TOKEN": "hf_SECRETabc123", "AWS_SECRET_ACCESS_KEY": "AKSECRETXYZ"}
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(data))
    for target in ("kubernetes", "slurm"):
        out = tmp_path / f"out.{target}"
        res = cli("render", "--config", job, "--target", target, "--out", out)
        assert res.code == 2 and res.out == "" and not out.exists()
        assert len(res.err.strip().splitlines()) == 1 and "use a Secret: env: {" in res.err
        assert "hf_SECRET" not in res.err and "AKSECRET" not in res.err
    res = cli("check", "--config", job, "--json")
    assert res.code == 0
    found = [f for f in res.json()["findings"] if f["rule"] == "secret-literal"]
    assert len(found) == 2 and all(f["severity"] == "error" for f in found)
    res = cli("check", "--config", job)
    assert "hf_SECRET" not in res.out + res.err and "AKSECRET" not in res.out + res.err
    assert cli("check", "--config", job, "--strict").code == 1
    # the override names each variable; one left out still refuses
    res = cli("render", "--config", job, "--allow-literal-env", "HF_TOKEN")
    assert res.code == 2 and "AWS_SECRET_ACCESS_KEY" in res.err
    both = ("--allow-literal-env", "HF_TOKEN", "--allow-literal-env", "AWS_SECRET_ACCESS_KEY")
    res = cli("render", "--config", job, *both)
    assert res.code == 0 and "value: hf_SECRETabc123" in res.out


def test_render_writes_a_secret_reference(cli, tmp_path):
    data = yaml.safe_load(EKS.read_text())
    data["env"] = {"HF_TOKEN": {"secret": "hf-token", "key": "token"}}
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(data))
    res = cli("render", "--config", job)
    assert res.code == 0, res.err
    (pj,) = [d for d in yaml.safe_load_all(res.out) if d["kind"] == "PyTorchJob"]
    env = pj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}} in env


def test_namespace_and_name_on_the_command_line_are_validated(cli):
    bad_values = ("../x", "UPPER", "a/b", "", "x" * 64)
    for value in bad_values:
        for cmd in ("status", "logs", "delete"):
            res = cli(cmd, "--config", EKS, "--namespace", value, "--backend", "local")
            assert res.code == 2 and res.out == "", (cmd, value, res.err)
            assert len(res.err.strip().splitlines()) == 1 and "--namespace: " in res.err
            res = cli(cmd, "--name", value, "--backend", "local")
            assert res.code == 2 and "--name: " in res.err and "not a valid Kubernetes name" in res.err
        res = cli("apply", "--config", EKS, "--namespace", value, "--backend", "local")
        assert res.code == 2 and "--namespace: " in res.err


def test_render_refuses_a_flag_value_of_the_wrong_type(cli, tmp_path):
    data = yaml.safe_load(EKS.read_text())
    data["args"]["micro-batch-size"] = "two"
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(data))
    for cmd in ("render", "check"):
        res = cli(cmd, "--config", job)
        assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1
        assert "args.micro-batch-size: 'two' is not a whole number" in res.err


def test_render_out_must_be_a_writable_file(cli, tmp_path):
    res = cli("render", "--config", EKS, "--out", tmp_path)
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1
    assert f"--out {tmp_path}: is a directory" in res.err
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = cli("render", "--config", EKS, "--target", "slurm", "--out", blocker / "job.sbatch")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "cannot write there" in res.err
    assert blocker.read_text() == "x" and list(tmp_path.iterdir()) == [blocker]  # nothing left behind
