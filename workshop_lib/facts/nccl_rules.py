"""The NCCL / EFA / pod rules ``workshop check`` applies: one table, each rule with its reason and fix.

Every reason comes from what breaks in practice (docs/sources.md: the EKS launch guide's variables
to set and not to set and its launch issues; the AKS guide for InfiniBand). ``workshop_lib.launch.check`` evaluates
the rows: environment rows generically by ``kind``, pod rows by their ``rule`` name. Notebook 03 shows
this table as it is.

Kinds of environment rows:

* ``equal``      the variable must be set to ``value``
* ``contains``   the variable must be set and contain ``value``
* ``set``        the variable must be set (to a positive number of seconds)
* ``same_as``    the variable must be set to the same value as the variable named in ``value``
* ``local_path`` the variable must be set to a path outside the shared mount
* ``unset``      the variable must not be set at all
* ``not_equal``  the variable must not be set to ``value``
* ``secret_literal`` no variable whose name looks like a credential (:func:`looks_secret`), and no
  value shaped like one (``secret_shapes.SHAPES``), may be a literal: it must come from a Kubernetes
  Secret (``env: {NAME: {secret: ..., key: ...}}``)

Rows of kind ``reference`` flag a ``$(NAME)`` in an arg or env value (Kubernetes would substitute it;
the kit renders it escaped). Rows of kind ``volume_path`` check the Megatron path flags named in ``value`` against the shared
volume (``storage.mount_path``) on the Kubernetes backend.

``fabrics`` says where a row applies: ``efa``, ``infiniband``, or both (platform ``generic``,
fabric ``any``, gets only rows that list ``any``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ALL = ("efa", "infiniband", "any")
FAST = ("efa", "infiniband")


@dataclass(frozen=True)
class Rule:
    rule: str  # stable id, shown in findings
    severity: str  # "error" | "warning"
    kind: str  # an environment kind above, or "pod" (evaluated by name in launch.check)
    var: str  # the environment variable ("" for pod rows)
    value: str  # the value the kind compares against
    fabrics: tuple[str, ...]
    reason: str  # what breaks
    fix: str


RULES: tuple[Rule, ...] = (
    # ---- must be set --------------------------------------------------------------------------
    Rule(
        "fi-provider-efa",
        "error",
        "equal",
        "FI_PROVIDER",
        "efa",
        ("efa",),
        "without FI_PROVIDER=efa libfabric may pick another provider and NCCL falls back to TCP "
        "sockets ('NET/Socket' in the log): a silent multi-x slowdown",
        "set FI_PROVIDER=efa",
    ),
    Rule(
        "fi-efa-huge-page",
        "error",
        "equal",
        "FI_EFA_USE_HUGE_PAGE",
        "0",
        ("efa",),
        "EFA's huge-page buffers fail to allocate when the process forks (dataloader workers, "
        "GC): 'Cannot allocate memory' crashes at random",
        "set FI_EFA_USE_HUGE_PAGE=0",
    ),
    Rule(
        "nccl-timeout",
        "error",
        "set",
        "NCCL_TIMEOUT",
        "",
        ALL,
        "the default 10-minute collective timeout is too short for large checkpoints and the "
        "first iterations: jobs die with 'Watchdog caught collective operation timeout'",
        "set NCCL_TIMEOUT=1800 (seconds)",
    ),
    Rule(
        "torch-timeout-matches",
        "error",
        "same_as",
        "TORCH_DISTRIBUTED_TIMEOUT",
        "NCCL_TIMEOUT",
        ALL,
        "PyTorch's ProcessGroup watchdog uses its own timeout; when it differs from NCCL_TIMEOUT "
        "the shorter one kills the job first and the longer one is never used",
        "set TORCH_DISTRIBUTED_TIMEOUT to the same value as NCCL_TIMEOUT (1800)",
    ),
    Rule(
        "nccl-nvls-disable",
        "error",
        "equal",
        "NCCL_NVLS_ENABLE",
        "0",
        FAST,
        "NVLink SHARP (NVLS) set-up fails on some nodes (Fabric Manager or driver state: "
        "'Failed to bind NVLink SHARP (NVLS) Multicast memory', transport/nvls.cc 'Cuda failure 1 "
        "invalid argument')",
        "set NCCL_NVLS_ENABLE=0",
    ),
    Rule(
        "cuda-alloc-expandable",
        "warning",
        "contains",
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        ALL,
        "without expandable segments the CUDA caching allocator fragments memory and large models "
        "hit 'CUDA out of memory' with GBs reserved but unallocated",
        "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    ),
    Rule(
        "triton-cache-local",
        "error",
        "local_path",
        "TRITON_CACHE_DIR",
        "",
        ALL,
        "Triton's JIT cache on the shared file system makes every rank contend for the same file "
        "locks: training hangs at the first forward pass",
        "set TRITON_CACHE_DIR=/tmp/triton_cache (local disk, not the shared mount)",
    ),
    # ---- must not be set ----------------------------------------------------------------------
    Rule(
        "nccl-socket-ifname-eth0",
        "error",
        "not_equal",
        "NCCL_SOCKET_IFNAME",
        "eth0",
        ("efa",),
        "p4d/p5 instances do not use eth0 for EFA: NCCL stops with 'Bootstrap: no socket interface found'",
        "remove NCCL_SOCKET_IFNAME (NCCL picks the right interface)",
    ),
    Rule(
        "nccl-proto",
        "error",
        "unset",
        "NCCL_PROTO",
        "",
        FAST,
        "forcing a protocol disables the aws-ofi-nccl / NCCL tuner's selection: suboptimal "
        "protocol choices on every collective",
        "remove NCCL_PROTO",
    ),
    Rule(
        "nccl-algo",
        "error",
        "unset",
        "NCCL_ALGO",
        "",
        FAST,
        "forcing an algorithm disables the tuner, as NCCL_PROTO does",
        "remove NCCL_ALGO",
    ),
    Rule(
        "nccl-p2p-disable",
        "error",
        "not_equal",
        "NCCL_P2P_DISABLE",
        "1",
        ALL,
        "disables NVLink GPU-to-GPU transfers inside the node: 10-100x slower communication",
        "remove NCCL_P2P_DISABLE",
    ),
    Rule(
        "cuda-launch-blocking",
        "error",
        "not_equal",
        "CUDA_LAUNCH_BLOCKING",
        "1",
        ALL,
        "forces synchronous CUDA execution (a debugging switch): 10-100x slower training",
        "remove CUDA_LAUNCH_BLOCKING",
    ),
    Rule(
        "fi-efa-use-device-rdma",
        "warning",
        "unset",
        "FI_EFA_USE_DEVICE_RDMA",
        "",
        ("efa",),
        "auto-enabled by libfabric >= 1.18.0; setting it by hand can conflict with what the "
        "instance supports (p4d vs p5)",
        "remove FI_EFA_USE_DEVICE_RDMA",
    ),
    Rule(
        "fi-efa-fork-safe",
        "warning",
        "unset",
        "FI_EFA_FORK_SAFE",
        "",
        ("efa",),
        "managed by aws-ofi-nccl >= 1.13.0; setting it by hand overrides the plugin's choice",
        "remove FI_EFA_FORK_SAFE",
    ),
    Rule(
        "nccl-net-socket",
        "error",
        "not_equal",
        "NCCL_NET",
        "Socket",
        FAST,
        "forces NCCL onto TCP sockets and bypasses EFA / InfiniBand entirely",
        "remove NCCL_NET",
    ),
    Rule(
        "nccl-ib-disable",
        "error",
        "not_equal",
        "NCCL_IB_DISABLE",
        "1",
        ("infiniband",),
        "turns InfiniBand off: NCCL falls back to TCP over the front-end NIC",
        "set NCCL_IB_DISABLE=0 or remove it",
    ),
    Rule(
        "nccl-debug-info",
        "warning",
        "not_equal",
        "NCCL_DEBUG",
        "INFO",
        ALL,
        "INFO logs every connection of every rank: enormous log volume in production",
        "use NCCL_DEBUG=WARN; switch to INFO only while debugging the network",
    ),
    # ---- credentials ---------------------------------------------------------------------------
    Rule(
        "secret-literal",
        "error",
        "secret_literal",
        "",
        "TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIALS, ACCESS_KEY, API_KEY, PRIVATE_KEY, PAT; "
        "or a value shaped like a token (facts/secret_shapes.py)",
        ALL,
        "a literal credential is written into the rendered manifest (and git), stored in the "
        "PyTorchJob object that anyone allowed to read jobs in the namespace can see, and shown by "
        "`kubectl describe`; a Secret keeps it out of all three",
        "use a Secret: env: {NAME: {secret: SECRET-NAME, key: KEY}} "
        "(create it with `kubectl create secret generic SECRET-NAME --from-literal=KEY=...`)",
    ),
    # ---- paths on the shared volume (Kubernetes backend) -----------------------------------------
    Rule(
        "volume-paths",
        "error",
        "volume_path",
        "",
        "save, load, pretrained-checkpoint, data-path, train-data-path, valid-data-path, test-data-path",
        ALL,
        "each pod has its own container file system: a checkpoint saved outside the shared volume "
        "is lost when the pod restarts or ends, and data or a checkpoint to load that is not on it "
        "does not exist in the pods (the run fails at start-up or silently starts from scratch)",
        "put the path under storage.mount_path (e.g. /shared/checkpoints/JOB), and give the job "
        "storage: {pvc: CLAIM, mount_path: /shared} if it has none",
    ),
    Rule(
        "volume-files",
        "warning",
        "volume_path",
        "",
        "tokenizer-model, vocab-file, merge-file, tensorboard-dir, data-cache-path",
        ALL,
        "outside the shared volume the pods see only what the image holds: a tokenizer file that "
        "was not baked in is missing, and TensorBoard events or the dataset index cache written "
        "there vanish with the pod",
        "put the path under storage.mount_path (or make sure the image contains the file)",
    ),
    # ---- variable references in values ---------------------------------------------------------
    Rule(
        "variable-reference",
        "warning",
        "reference",
        "",
        "$(",
        ALL,
        "Kubernetes substitutes $(NAME) in a container's command, args and env with the variable's "
        "value (a Secret's too), which then sits in argv, `ps` and the trainer's printed arguments "
        "in train.log; the kit escapes it ($$(NAME)) so the value is passed on as written, as the "
        "sbatch script and the local backend pass it",
        "if the trainer should get a variable's value, read it in the program (os.environ); "
        "otherwise rename the text so it has no $(...)",
    ),
    # ---- the pod ------------------------------------------------------------------------------
    Rule(
        "gpu-count",
        "error",
        "pod",
        "",
        "",
        ALL,
        "a pod that asks for fewer GPUs than the node has leaves GPUs idle (and nproc-per-node "
        "must equal the GPUs requested); more than the node has never schedules",
        "request nvidia.com/gpu equal to the instance's GPUs and set nprocPerNode to it",
    ),
    Rule(
        "efa-count",
        "error",
        "pod",
        "",
        "",
        ("efa",),
        "without vpc.amazonaws.com/efa requests the pod gets no EFA device and NCCL falls back "
        "to TCP sockets; fewer than the instance has leaves bandwidth unused",
        "request vpc.amazonaws.com/efa equal to the instance's EFA interfaces (p4d: 4, p5: 32)",
    ),
    Rule(
        "ib-count",
        "error",
        "pod",
        "",
        "",
        ("infiniband",),
        "without rdma/ib requests the pod cannot open the InfiniBand HCAs and NCCL uses TCP",
        "request rdma/ib equal to the node's HCAs (8 on ND-series)",
    ),
    Rule(
        "host-network",
        "error",
        "pod",
        "",
        "",
        FAST,
        "EFA/IB devices live in the host network namespace; without hostNetwork NCCL cannot "
        "use them, and without dnsPolicy ClusterFirstWithHostNet the master's name does not resolve",
        "set hostNetwork: true and dnsPolicy: ClusterFirstWithHostNet",
    ),
    Rule(
        "shm-size",
        "error",
        "pod",
        "",
        "",
        ALL,
        "the container default /dev/shm is 64MB: dataloader workers and NCCL's shared-memory "
        "transport die with 'Bus error' / 'No space left on device'",
        "mount a memory-backed emptyDir (medium: Memory) of at least 16Gi (128Gi recommended) on /dev/shm",
    ),
    Rule(
        "fabric-mismatch",
        "error",
        "pod",
        "",
        "",
        ALL,
        "the instance's network fabric does not match the platform (EFA rules on an InfiniBand "
        "node or the reverse): the NICs are never used",
        "pick the platform that matches instance_type (eks-efa/hyperpod-eks for EFA, aks-ib for InfiniBand)",
    ),
)

RULES_BY_ID: dict[str, Rule] = {r.rule: r for r in RULES}


def volume_flags(rule: Rule) -> tuple[str, ...]:
    """The Megatron flags a ``volume_path`` row checks."""
    return tuple(f.strip() for f in rule.value.split(","))


ENV_KINDS = ("equal", "contains", "set", "same_as", "local_path", "unset", "not_equal", "secret_literal")

# Words of a variable name (split at '_') that mark a credential, and the words before KEY that do.
SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIALS",
        "APIKEY",
        "ACCESSKEY",
        "SECRETKEY",
        "PAT",
    }
)
KEY_QUALIFIERS = frozenset(
    {"ACCESS", "API", "SECRET", "PRIVATE", "AUTH", "CLIENT", "ENCRYPTION", "SIGNING", "LICENSE", "MASTER"}
)
# A last word that makes the variable point at a credential rather than hold one (HF_TOKEN_PATH,
# AWS_SHARED_CREDENTIALS_FILE), and known names that hold paths or switches, not credentials.
LOCATOR_WORDS = frozenset({"PATH", "FILE", "FILENAME", "DIR", "DIRECTORY", "URL", "URI", "ENDPOINT"})
HARMLESS_NAMES = frozenset(
    {
        "GOOGLE_APPLICATION_CREDENTIALS",  # a path to a key file
        "HF_HUB_DISABLE_IMPLICIT_TOKEN",  # a switch
        "TOKENIZERS_PARALLELISM",  # "TOKENIZERS" is not "TOKEN"; listed for the reader
    }
)
# Literals that cannot be a credential (switches), so they are never flagged.
NON_SECRET_VALUES = frozenset({"", "0", "1", "true", "false", "yes", "no", "on", "off"})


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (whole words, not substrings).

    ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``WANDB_API_KEY``, ``DB_PASSWORD`` do; ``TOKENIZERS_PARALLELISM``,
    ``HF_TOKEN_PATH``, ``SSH_KEY_PATH``, ``NCCL_IB_PKEY``, ``MAX_TOKENS`` do not.
    """
    upper = name.upper()
    if upper in HARMLESS_NAMES:
        return False
    words = [w for w in re.split(r"_+", upper) if w]
    if not words or words[-1] in LOCATOR_WORDS:
        return False
    if SECRET_WORDS.intersection(words):
        return True
    return any(w == "KEY" and i > 0 and words[i - 1] in KEY_QUALIFIERS for i, w in enumerate(words))


def secret_reason(name: str, value: str) -> str | None:
    """Why the literal ``value`` of variable ``name`` is taken for a credential, or None.

    By name (``HF_TOKEN``) or by the value's shape (``secret_shapes``: an ``hf_...`` token in
    ``WANDB_KEY``, ``user:password@`` in ``DATABASE_URL``, a long random string); switches such as
    0/1/true are never credentials.
    """
    from .secret_shapes import shape_of

    if value.strip().lower() in NON_SECRET_VALUES:
        return None
    if looks_secret(name):
        return "its name says it is a credential"
    shape = shape_of(value)
    return f"its value looks like {shape}" if shape else None


def literal_secret(name: str, value: str) -> bool:
    """A literal ``value`` that is a credential by its variable's name or by its own shape."""
    return secret_reason(name, value) is not None


def applies(rule: Rule, fabric: str) -> bool:
    """Whether ``rule`` applies to a platform of ``fabric`` ("efa", "infiniband" or "any")."""
    return fabric in rule.fabrics
