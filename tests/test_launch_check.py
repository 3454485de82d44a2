"""`workshop check`: every rule of the table fires on the broken job and is silent once fixed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workshop_lib.facts.nccl_rules import RULES
from workshop_lib.launch import check, jobspec

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "manifests/jobs/techpulse-eks.yaml").read_text())


def _findings(env=None, **fields):
    data = {**BASE, **fields}
    if env is not None:
        data["env"] = env
    spec = jobspec.from_dict(data)
    return [f for f in check.check_job(spec) if not f.rule.startswith("plan")]


def _rules(findings):
    return {f.rule for f in findings}


def test_every_shipped_job_passes_its_own_check():
    for job in sorted((REPO / "manifests/jobs").glob("*.yaml")):
        spec = jobspec.load(job)
        assert [f for f in check.check_job(spec) if f.severity == "error"] == [], job.name


# (rule, broken env entries, fixed env entries); `None` removes the renderer's default.
ENV_CASES = [
    ("fi-provider-efa", {"FI_PROVIDER": "tcp"}, {"FI_PROVIDER": "efa"}),
    ("fi-provider-efa", {"FI_PROVIDER": None}, {}),
    ("fi-efa-huge-page", {"FI_EFA_USE_HUGE_PAGE": "1"}, {"FI_EFA_USE_HUGE_PAGE": "0"}),
    ("nccl-timeout", {"NCCL_TIMEOUT": None, "TORCH_DISTRIBUTED_TIMEOUT": None}, {}),
    ("nccl-timeout", {"NCCL_TIMEOUT": "soon", "TORCH_DISTRIBUTED_TIMEOUT": "soon"}, {}),
    ("torch-timeout-matches", {"TORCH_DISTRIBUTED_TIMEOUT": 600}, {"TORCH_DISTRIBUTED_TIMEOUT": 1800}),
    (
        "torch-timeout-matches",
        {"NCCL_TIMEOUT": 3600},
        {"NCCL_TIMEOUT": 3600, "TORCH_DISTRIBUTED_TIMEOUT": 3600},
    ),
    ("nccl-nvls-disable", {"NCCL_NVLS_ENABLE": "1"}, {"NCCL_NVLS_ENABLE": "0"}),
    ("cuda-alloc-expandable", {"PYTORCH_CUDA_ALLOC_CONF": None}, {}),
    ("triton-cache-local", {"TRITON_CACHE_DIR": "/shared/triton"}, {"TRITON_CACHE_DIR": "/tmp/triton"}),
    ("triton-cache-local", {"TRITON_CACHE_DIR": None}, {}),
    ("nccl-socket-ifname-eth0", {"NCCL_SOCKET_IFNAME": "eth0"}, {}),
    ("nccl-proto", {"NCCL_PROTO": "Simple"}, {}),
    ("nccl-algo", {"NCCL_ALGO": "Ring"}, {}),
    ("nccl-p2p-disable", {"NCCL_P2P_DISABLE": 1}, {"NCCL_P2P_DISABLE": 0}),
    ("cuda-launch-blocking", {"CUDA_LAUNCH_BLOCKING": "1"}, {}),
    ("fi-efa-use-device-rdma", {"FI_EFA_USE_DEVICE_RDMA": "1"}, {}),
    ("fi-efa-fork-safe", {"FI_EFA_FORK_SAFE": "1"}, {}),
    ("nccl-net-socket", {"NCCL_NET": "Socket"}, {}),
    ("nccl-debug-info", {"NCCL_DEBUG": "INFO"}, {"NCCL_DEBUG": "WARN"}),
]


@pytest.mark.parametrize("rule, broken, fixed", ENV_CASES, ids=[c[0] for c in ENV_CASES])
def test_env_rule_fires_and_is_silent_when_fixed(rule, broken, fixed):
    found = [f for f in _findings(env=broken) if f.rule == rule]
    assert len(found) == 1, _rules(_findings(env=broken))
    f = found[0]
    table = {r.rule: r for r in RULES}[rule]
    assert f.severity == table.severity and f.fix == table.fix and table.reason in f.message
    assert rule not in _rules(_findings(env=fixed))


def test_the_seed_bad_examples_read_well():
    (f,) = [f for f in _findings(env={"NCCL_SOCKET_IFNAME": "eth0"}) if f.rule == "nccl-socket-ifname-eth0"]
    assert "Bootstrap: no socket interface found" in f.message and f.severity == "error"
    (f,) = [f for f in _findings(env={"NCCL_P2P_DISABLE": "1"}) if f.rule == "nccl-p2p-disable"]
    assert "10-100x" in f.message
    (f,) = [f for f in _findings(env={"NCCL_ALGO": "Tree"}) if f.rule == "nccl-algo"]
    assert "tuner" in f.message


def test_rules_are_platform_aware():
    aks = yaml.safe_load((REPO / "manifests/jobs/techpulse-aks.yaml").read_text())
    # eth0 is Azure's front-end NIC and the platform default there; EFA rules do not apply.
    assert _rules(_findings(**aks)) == set()
    broken = _findings(**{**aks, "env": {"NCCL_IB_DISABLE": 1}})
    assert _rules(broken) == {"nccl-ib-disable"}
    # ... while on EKS the same IB switch means nothing, and eth0 is an error.
    assert "nccl-ib-disable" not in _rules(_findings(env={"NCCL_IB_DISABLE": 1}))
    assert check.check_env({}, "any") and not [
        f for f in check.check_env({}, "any") if f.rule.startswith("fi-")
    ]


def test_pod_rules_fire_on_overrides_and_are_silent_by_default():
    assert _rules(_findings()) == set()
    assert "gpu-count" in _rules(_findings(resources={"gpus_per_node": 4}))
    assert "efa-count" in _rules(_findings(resources={"nics_per_node": 0}))
    assert "efa-count" in _rules(_findings(resources={"nics_per_node": 2}))
    assert "shm-size" in _rules(_findings(resources={"shm_size": "64Mi"}))
    assert "host-network" in _rules(_findings(host_network=False))
    assert "fabric-mismatch" in _rules(_findings(instance_type="Standard_ND96isr_H100_v5"))
    aks = yaml.safe_load((REPO / "manifests/jobs/techpulse-aks.yaml").read_text())
    assert "ib-count" in _rules(_findings(**{**aks, "resources": {"nics_per_node": 0}}))


def test_pod_rules_read_the_manifest():
    spec = jobspec.from_dict(BASE)
    from workshop_lib.launch.render import pytorchjob

    job = pytorchjob(spec)
    pod = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "dshm"]
    del pod["hostNetwork"]
    assert {f.rule for f in check.check_pod(spec, job)} == {"shm-size", "host-network"}


def test_findings_have_the_contract_keys_and_errors_come_first():
    found = check.check_job(jobspec.from_dict({**BASE, "env": {"NCCL_DEBUG": "INFO", "NCCL_PROTO": "LL"}}))
    assert all(set(f.to_dict()) == {"severity", "rule", "message", "fix"} for f in found)
    severities = [f.severity for f in found]
    assert severities == sorted(severities, key=lambda s: s != "error")


def test_every_rule_has_a_reason_and_a_fix():
    ids = [r.rule for r in RULES]
    assert len(ids) == len(set(ids))
    for r in RULES:
        assert r.severity in ("error", "warning") and len(r.reason) > 20 and r.fix
    assert len(check.rules_table()) == len(RULES)


def test_training_flags_are_checked_by_the_calculator():
    pytest.importorskip("workshop_lib.plan.api")
    ours = {r.rule for r in RULES}

    def plan_findings(**changes):
        found = check.check_job(jobspec.from_dict({**BASE, "args": {**BASE["args"], **changes}}))
        plan = [f for f in found if f.rule not in ours]
        assert all(set(f.to_dict()) == {"severity", "rule", "message", "fix"} and f.fix for f in plan)
        return plan

    assert plan_findings() == []
    plan = plan_findings(**{"global-batch-size": 511})  # DP = 16 / TP 2 = 8 does not divide 511
    assert any(f.severity == "error" and "511" in f.message for f in plan), plan
    plan = plan_findings(**{"tensor-model-parallel-size": 16})  # TP across the 8-GPU nodes
    assert any("TP=16" in f.message for f in plan), plan


# ---- credentials in env -----------------------------------------------------------------------
CREDENTIAL_NAMES = [
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "AWS_SESSION_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "WANDB_API_KEY",
    "NGC_API_KEY",
    "OPENAI_APIKEY",
    "DB_PASSWORD",
    "CLIENT_SECRET",
    "GIT_PASSPHRASE",
    "SSH_PRIVATE_KEY",
]
# Names with TOKEN / KEY / CREDENTIALS in them that do not hold a credential.
HARMLESS_NAMES = [
    "TOKENIZERS_PARALLELISM",  # substring, not a word
    "HF_TOKEN_PATH",  # points at a file
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",  # a path to a key file
    "HF_HUB_DISABLE_IMPLICIT_TOKEN",  # a switch
    "SSH_KEY_PATH",
    "NCCL_IB_PKEY",
    "MAX_TOKENS",
    "KEY",
    "SORT_KEY",
    "NCCL_DEBUG",
]


@pytest.mark.parametrize("name", CREDENTIAL_NAMES)
def test_a_literal_credential_is_an_error_that_never_repeats_the_value(name):
    secret = "hf_SECRETabc123"
    (f,) = [f for f in _findings(env={name: secret}) if f.rule == "secret-literal"]
    assert f.severity == "error" and name in f.message
    assert f.fix.startswith(f"use a Secret: env: {{{name}: {{secret: ")
    assert secret not in f.message + f.fix


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_harmless_names_are_not_taken_for_credentials(name):
    assert "secret-literal" not in _rules(_findings(env={name: "some-literal-value"}))


def test_a_secret_reference_and_a_switch_are_not_findings():
    assert "secret-literal" not in _rules(_findings(env={"HF_TOKEN": {"secret": "hf-token", "key": "token"}}))
    assert "secret-literal" not in _rules(_findings(env={"WANDB_API_KEY": "", "HF_TOKEN": "0"}))


def test_every_literal_credential_is_its_own_finding():
    env = {"HF_TOKEN": "hf_x1", "AWS_SECRET_ACCESS_KEY": "AKSECRETXYZ", "NCCL_DEBUG": "WARN"}
    found = [f for f in _findings(env=env) if f.rule == "secret-literal"]
    assert sorted(f.message.split()[0] for f in found) == ["AWS_SECRET_ACCESS_KEY", "HF_TOKEN"]
    spec = jobspec.from_dict({**BASE, "env": env})
    assert sorted(check.literal_secrets(spec)) == ["AWS_SECRET_ACCESS_KEY", "HF_TOKEN"]


# ---- paths on the shared volume --------------------------------------------------------------
def _volume(findings):
    return {(f.rule, f.message.split("=")[0]) for f in findings if f.rule.startswith("volume-")}


def test_without_storage_the_checkpoints_and_data_are_errors():
    found = _findings(storage=None)
    assert _volume(found) == {
        ("volume-paths", "args.save"),
        ("volume-paths", "args.load"),
        ("volume-paths", "args.data-path"),
        ("volume-paths", "args.pretrained-checkpoint"),  # the base model the pods start from
        ("volume-files", "args.tokenizer-model"),
    }
    (f,) = [f for f in found if f.message.startswith("args.save=")]
    assert f.severity == "error" and "no storage" in f.message and "lost when the pod" in f.message
    assert "storage.mount_path" in f.fix
    assert [f.severity for f in found if f.rule == "volume-files"] == ["warning"]


def test_every_prefix_of_a_blend_and_every_path_flag_is_on_the_volume():
    args = {
        **BASE["args"],
        "data-path": "0.3 /shared/data/a_text_document 0.7 /scratch/b_text_document",
        "save": "/shared/../checkpoints/x",  # normalised: not on /shared
        "load": "checkpoints/x",  # relative: the container's working directory
        "tensorboard-dir": "/tmp/tb",
        "vocab-file": "/shared/vocab.json",
        "merge-file": "/sharedother/merges.txt",  # a sibling, not under /shared
        "tokenizer-model": "meta-llama/Llama-3.1-8B",  # a model name, not a file
    }
    found = _findings(args=args)
    assert _volume(found) == {
        ("volume-paths", "args.data-path"),
        ("volume-paths", "args.save"),
        ("volume-paths", "args.load"),
        ("volume-files", "args.tensorboard-dir"),
        ("volume-files", "args.merge-file"),
    }
    (f,) = [f for f in found if f.message.startswith("args.data-path=")]
    assert "/scratch/b_text_document" in f.message and "outside the shared volume /shared" in f.message
    (f,) = [f for f in found if f.message.startswith("args.load=")]
    assert "relative path" in f.message
    listed = {**args, "data-path": ["0.5", "/shared/a", "0.5", "/elsewhere/b"], "save": "/shared/c"}
    assert ("volume-paths", "args.data-path") in _volume(_findings(args=listed))


def test_volume_rules_skip_the_local_backend_and_a_clean_job():
    assert _volume(_findings(storage=None, backend="local")) == set()
    assert _volume(_findings()) == set()
