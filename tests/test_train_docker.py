"""The trainer image's Dockerfile: stages, pins and the environment the NCCL/EFA rules allow.

No Docker engine runs here, so the Dockerfile's content is checked; what the image runs
(`python -m workshop_lib.train`, the self-check) is the code the other tests exercise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from workshop_lib.facts.nccl_rules import RULES

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = (REPO / "docker" / "Dockerfile").read_text()


def _instructions() -> list[str]:
    """Logical Dockerfile lines (continuations joined, comments dropped)."""
    kept = "\n".join(line for line in DOCKERFILE.splitlines() if not line.lstrip().startswith("#"))
    text = re.sub(r"\\\n", " ", kept)
    return [line.strip() for line in text.splitlines() if line.strip()]


def _arg(name: str) -> str:
    m = re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE, re.M)
    assert m, f"ARG {name} not pinned"
    return m.group(1)


def _env() -> dict[str, str]:
    env = {}
    for line in _instructions():
        if line.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return env


def test_stages_and_base_pin():
    stages = re.findall(r"^FROM (\S+) AS (\S+)$", DOCKERFILE, re.M)
    assert [s for _, s in stages] == ["efa-build", "runtime"]
    base = _arg("BASE_IMAGE")
    assert re.fullmatch(r"nvcr\.io/nvidia/pytorch:\d\d\.\d\d-py3", base), base  # a dated tag, not latest
    assert "COPY --from=efa-build /opt/amazon/efa /opt/amazon/efa" in DOCKERFILE
    assert "COPY --from=efa-build /opt/aws-ofi-nccl /opt/aws-ofi-nccl" in DOCKERFILE


def test_efa_stack_pins():
    assert tuple(map(int, _arg("AWS_OFI_NCCL_VERSION").split("."))) >= (1, 17, 0)
    assert tuple(map(int, _arg("LIBFABRIC_VERSION").split("."))) >= (1, 18, 0)  # device RDMA automatic
    assert "--enable-efa=yes" in DOCKERFILE and "--with-libfabric=/opt/amazon/efa" in DOCKERFILE
    assert "torch.cuda.nccl.version()" in DOCKERFILE and "(2, 27, 0)" in DOCKERFILE  # NCCL 2.27+ asserted
    assert "import torch, transformer_engine" in DOCKERFILE


def test_megatron_core_and_this_package():
    assert _arg("MEGATRON_CORE_VERSION") == "0.16.1"
    install = " ".join(line for line in _instructions() if "pip install" in line)
    assert '--no-deps "megatron-core==${MEGATRON_CORE_VERSION}"' in install
    assert "pip install --no-cache-dir --no-deps ." in install
    assert "helpers_cpp" in DOCKERFILE
    assert 'CMD ["python", "-m", "workshop_lib.train.selfcheck"]' in DOCKERFILE


def test_environment_follows_the_nccl_efa_rules():
    env = _env()
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_HUGE_PAGE"] == "0"
    assert env["TRITON_CACHE_DIR"].startswith("/tmp/")
    for rule in RULES:
        if rule.kind == "unset":
            assert rule.var not in env, f"{rule.var} must not be set ({rule.rule})"
        elif rule.kind == "not_equal" and rule.var in env:
            assert env[rule.var] != rule.value, rule.rule
    assert "FI_EFA_USE_DEVICE_RDMA" not in env and "NCCL_SOCKET_IFNAME" not in env


def test_dockerignore_keeps_the_context_small():
    ignored = (REPO / ".dockerignore").read_text().split()
    for entry in (".git", ".venv", "runs", "tests"):
        assert entry in ignored
    # what the Dockerfile copies is not ignored
    for copied in ("pyproject.toml", "README.md", "workshop_lib", "data/tokenizer"):
        assert copied in DOCKERFILE and copied not in ignored


def test_readme_has_ecr_and_acr_instructions():
    readme = (REPO / "docker" / "README.md").read_text()
    assert "docker build -f docker/Dockerfile" in readme
    assert "aws ecr get-login-password" in readme and "az acr login" in readme


def test_selfcheck_reports_what_is_missing_without_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.train.selfcheck", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(proc.stdout)
    assert set(report) >= {"nccl", "aws_ofi_nccl", "libfabric", "efa_plugin_loads", "ok"}
    assert proc.returncode == (0 if report["ok"] else 1)
    assert "Traceback" not in proc.stderr


def test_selfcheck_says_when_nccl_net_names_a_plugin_that_does_not_load():
    """NCCL_NET="AWS Libfabric" without aws-ofi-nccl stops NCCL at init (seen on an H100, NCCL 2.28)."""
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.train.selfcheck"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "NCCL_NET": "AWS Libfabric", "LD_LIBRARY_PATH": ""},
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "  NCCL_NET=AWS Libfabric" in proc.stdout
    assert "ERROR: NCCL_NET='AWS Libfabric' but the aws-ofi-nccl plugin does not load" in proc.stdout
    from workshop_lib.train.selfcheck import net_problem

    assert net_problem({"NCCL_NET": "AWS Libfabric"}, True) is None
    assert net_problem({"NCCL_NET": "Socket"}, False) is None  # workshop check's rule, not this one
    assert net_problem({}, False) is None
