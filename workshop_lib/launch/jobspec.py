"""The job YAML (docs/cli.md, section "Launch"): load it, validate every field, and hold it as a JobSpec.

Every problem is one :class:`~workshop_lib.errors.UsageError` line naming the file, the field and the
fix (exit status 2 on the command line). Optional keys beyond docs/cli.md's:

* ``backend: kubernetes | local`` (default kubernetes),
* ``sharp: true`` (aks-ib only: SHARP in-network reductions),
* ``host_network: false`` and ``resources: {gpus_per_node, nics_per_node, shm_size, memory, cpu}``
  to override what the instance table gives (``workshop check`` then says what that breaks),
* ``operator: pytorchjob | trainjob`` (default pytorchjob: Training Operator v1; trainjob: Kubeflow
  Trainer v2) and ``runtime: NAME``, the TrainingRuntime a TrainJob references (default: the job's name).

An ``env`` value of ``null`` removes a platform default instead of setting it. A credential is never
written as a literal: ``env: {HF_TOKEN: {secret: hf-token, key: token}}`` names a Kubernetes Secret
(``kubectl create secret generic hf-token --from-literal=token=...``) and renders as
``valueFrom.secretKeyRef``; the sbatch script reads such a variable from the environment of the user
who runs ``sbatch`` and never contains its value. ``workshop check`` flags a literal value in a
variable whose name looks like a credential, and ``workshop render`` refuses to write one.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..facts import hardware, megatron_flags, operators, platforms
from ..fsutil import check_k8s_name
from ..k8sfields import SYSTEM_TREES, WHOLE_DIRS, check_image, check_mount_path, quantity_bytes
from ..safeyaml import clip, has_control

__all__ = ["SYSTEM_TREES", "WHOLE_DIRS", "JobSpec", "load", "from_dict", "flag_tokens", "quantity_bytes"]

BACKENDS = ("kubernetes", "local")
REQUIRED = ("name", "image", "instance_type", "nodes", "args")
OPTIONAL = (
    "namespace",
    "platform",
    "storage",
    "env",
    "backend",
    "sharp",
    "host_network",
    "resources",
    "operator",
    "runtime",
)
RESOURCE_KEYS = ("gpus_per_node", "nics_per_node", "shm_size", "memory", "cpu")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLAG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
# A Secret's name is a DNS subdomain; its data keys are letters, digits, '-', '_' and '.'.
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Storage:
    pvc: str
    mount_path: str = "/shared"


@dataclass(frozen=True)
class SecretRef:
    """An environment value read from key ``key`` of the Kubernetes Secret ``secret`` (never inlined)."""

    secret: str
    key: str


EnvValue = str | SecretRef


@dataclass(frozen=True)
class JobSpec:
    """A validated job. ``env`` is the job's own entries (``None`` = remove the platform default)."""

    name: str
    image: str
    instance_type: str
    nodes: int
    args: dict[str, Any]
    namespace: str = "default"
    platform: str = "eks-efa"
    storage: Storage | None = None
    env: dict[str, EnvValue | None] = field(default_factory=dict)
    backend: str = "kubernetes"
    sharp: bool = False
    host_network: bool | None = None  # None: the platform's choice
    resources: dict[str, Any] = field(default_factory=dict)
    source: str = "<job>"  # the file it came from, for messages
    operator: str = operators.DEFAULT_OPERATOR  # "pytorchjob" | "trainjob"
    runtime: str | None = None  # the TrainingRuntime a TrainJob references; None: the job's name

    @property
    def instance(self) -> hardware.Instance:
        return hardware.instance(self.instance_type)

    @property
    def platform_info(self) -> platforms.Platform:
        return platforms.platform(self.platform)

    @property
    def gpus_per_node(self) -> int:
        return int(self.resources.get("gpus_per_node", self.instance.gpus_per_node))

    @property
    def nics_per_node(self) -> int:
        return int(self.resources.get("nics_per_node", self.instance.nics_per_node))

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node

    def effective_env(self) -> dict[str, EnvValue]:
        """What the container's environment will be: platform defaults, SHARP, then the job's own.

        Values are strings, or :class:`SecretRef` for a variable taken from a Kubernetes Secret.
        """
        plat = self.platform_info
        env = dict(plat.env)
        if self.sharp:
            env.update(plat.sharp_env)
        for key, value in self.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def literal_env(self) -> dict[str, str]:
        """The effective environment's literal values (Secret references left out: their values are unknown here)."""
        return {k: v for k, v in self.effective_env().items() if isinstance(v, str)}


def _fail(src: str, fld: str, msg: str) -> UsageError:
    """One line naming the file and field; a field name from the file is cut short (it can be anything)."""
    fld = fld if len(fld) <= 80 and not has_control(fld) else clip(fld, 60)
    return UsageError(f"{src}: {fld}: {msg}")


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _mount_path(src: str, mount: Any) -> str:
    """An absolute, normalised mount point that hides nothing the container needs (``k8sfields``)."""
    return check_mount_path(mount, "storage.mount_path", prefix=f"{src}: ")


@functools.lru_cache(maxsize=1)
def numeric_flags() -> dict[str, type]:
    """Megatron flag (no dashes) -> ``int`` or ``float``, for every job-file flag of the flag table.

    ``facts/megatron_flags.py`` is the trainer's own table, so a value the trainer would reject at
    start-up, on every node, is rejected here instead.
    """
    return {f.name: f.type for f in megatron_flags.accepted_by(megatron_flags.JOB) if f.type in (int, float)}


@functools.lru_cache(maxsize=1)
def multi_value_flags() -> frozenset[str]:
    """Flags (no dashes) that take several values (``list`` rows of the flag table: a blend's prefixes).

    Only these split a string at whitespace (``data-path: "0.3 /a 0.7 /b"``); any other string value
    is one argument whatever it holds, so ``save: "/shared/x --load /tmp/y"`` cannot add a flag.
    """
    return frozenset(f.name for f in megatron_flags.accepted_by(megatron_flags.JOB) if f.type is list)


def arg_values(flag: str, value: Any) -> list[str]:
    """The separate command-line values of one job-YAML arg (empty for ``true``/``false``/``null``)."""
    if value is None or isinstance(value, bool):
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str) and flag in multi_value_flags():
        return value.split()
    return [str(value)]


def _check_arg_value(src: str, flag: str, value: Any) -> None:
    """Each value stays one argument: no control characters, and no value of several that reads as a flag.

    ``--flag=value`` keeps a single value whole whatever it holds; the values of a multi-value flag
    are separate arguments, and one starting with ``-`` (``/x --save /tmp/evil``) would be parsed by
    the trainer as a flag of its own.
    """
    for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
        if isinstance(item, str) and has_control(item):
            raise _fail(
                src,
                f"args.{flag}",
                f"{clip(item)} holds a control character (newline, tab, NUL); write it on one line",
            )
    values = arg_values(flag, value)
    if len(values) > 1 or isinstance(value, list):
        for item in values:
            if item.startswith("-") and not megatron_flags.is_number(item):
                raise _fail(
                    src,
                    f"args.{flag}",
                    f"the value {clip(item)} starts with '-', so the trainer would read it as a flag; "
                    f"give {flag} only its own values (each other flag is a key of args)",
                )


def _check_arg_type(src: str, flag: str, value: Any) -> None:
    """A value the trainer's ``int``/``float`` flag would refuse (``two``, ``2.5``, ``true``) is a UsageError."""
    kind = numeric_flags().get(flag)
    if kind is None or value is None or value is False:
        return
    want = "a whole number" if kind is int else "a number"
    example = "2" if kind is int else "1.0e-5"
    problem = f"{clip(value)} is not {want}; write e.g. {flag}: {example}"
    if isinstance(value, bool | list):
        raise _fail(src, f"args.{flag}", problem)
    if kind is int:
        ok = (isinstance(value, int)) or (
            isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip())
        )
    else:
        ok = megatron_flags.is_number(value)
    if not ok:
        raise _fail(src, f"args.{flag}", problem)


def _secret_ref(src: str, var: str, value: Mapping[Any, Any]) -> SecretRef:
    """``{secret: NAME, key: KEY}`` -> SecretRef; the message never repeats a value (it may be a credential)."""
    form = f"write env: {{{var}: {{secret: SECRET-NAME, key: KEY}}}}"
    if set(value) != {"secret", "key"}:
        raise _fail(src, f"env.{var}", f"a Secret reference has exactly the fields secret and key; {form}")
    name, key = value["secret"], value["key"]
    if not isinstance(name, str) or len(name) > 253 or not _SECRET_NAME.match(name):
        raise _fail(
            src,
            f"env.{var}.secret",
            "not a Kubernetes Secret name (lowercase letters, digits, '-' and '.'); " + form,
        )
    if not isinstance(key, str) or len(key) > 253 or not _SECRET_KEY.match(key):
        raise _fail(
            src, f"env.{var}.key", "not a Secret data key (letters, digits, '-', '_' and '.'); " + form
        )
    return SecretRef(name, key)


def from_dict(data: Any, source: str = "<job>") -> JobSpec:
    """Validate a job mapping (as ``yaml.safe_load`` gives it) and return a JobSpec."""
    src = source
    if not isinstance(data, Mapping):
        raise UsageError(
            f"{src}: the job file must be a YAML mapping of fields (name, image, ...); see docs/cli.md, 'Launch'"
        )
    unknown = [k for k in data if k not in REQUIRED + OPTIONAL]
    if unknown:
        raise _fail(src, str(unknown[0]), f"unknown field; the fields are {', '.join(REQUIRED + OPTIONAL)}")
    for key in REQUIRED:
        if key not in data or data[key] is None:
            raise _fail(src, key, "missing; add it (see the job YAML example in docs/cli.md)")

    def name_field(key: str, value: Any) -> str:
        try:
            return check_k8s_name(value, key)
        except UsageError as exc:
            raise UsageError(f"{src}: {exc}") from None

    name = name_field("name", data["name"])
    # PyTorchJob pods are named <name>-worker-<i>; keep room for the suffix within 63 characters.
    if len(name) > 48:
        raise _fail(src, "name", f"{clip(name)} is {len(name)} characters; use at most 48 so pod names fit")
    namespace = name_field("namespace", data.get("namespace", "default"))
    image = check_image(data["image"], "image", prefix=f"{src}: ")
    for key in ("instance_type", "platform"):  # looked up by name in a table: a short string or nothing
        if key in data and not (isinstance(data[key], str) and len(data[key]) <= 64):
            raise _fail(
                src, key, f"{clip(data[key])} is not a name from the table; see the example in docs/cli.md"
            )
    try:
        hardware.instance(str(data["instance_type"]))
    except UsageError as exc:
        raise UsageError(f"{src}: {exc}") from None
    nodes = data["nodes"]
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise _fail(
            src, "nodes", f"{clip(nodes)} is not a positive whole number of nodes; write e.g. nodes: 2"
        )
    plat_name = data.get("platform", "eks-efa")
    try:
        plat = platforms.platform(str(plat_name))
    except UsageError as exc:
        raise UsageError(f"{src}: {exc}") from None

    storage = None
    if data.get("storage") is not None:
        st = data["storage"]
        if not isinstance(st, Mapping) or "pvc" not in st:
            raise _fail(src, "storage", "write storage: {pvc: NAME, mount_path: /shared}")
        extra = [k for k in st if k not in ("pvc", "mount_path")]
        if extra:
            raise _fail(src, f"storage.{extra[0]}", "unknown field; use pvc and mount_path")
        pvc = name_field("storage.pvc", st["pvc"])
        mount = _mount_path(src, st.get("mount_path", "/shared"))
        storage = Storage(pvc, mount)

    env_in = data.get("env") or {}
    if not isinstance(env_in, Mapping):
        raise _fail(src, "env", "write env as a mapping, e.g. env: {NCCL_DEBUG: WARN}")
    env: dict[str, EnvValue | None] = {}
    for key, value in env_in.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise _fail(src, f"env.{key}", "not a valid environment variable name (letters, digits, _)")
        if isinstance(value, Mapping):
            env[key] = _secret_ref(src, key, value)
            continue
        if value is not None and not _scalar(value):
            raise _fail(
                src,
                f"env.{key}",
                "the value must be a string or number (null removes a default), "
                "or a Secret reference {secret: NAME, key: KEY}",
            )
        if isinstance(value, str) and has_control(value):
            raise _fail(
                src,
                f"env.{key}",
                "the value holds a control character (newline, tab, NUL); write it on one line",
            )
        env[key] = None if value is None else _env_value(value)

    args_in = data["args"]
    if not isinstance(args_in, Mapping):
        raise _fail(
            src, "args", "write the Megatron flags as a mapping, e.g. args: {num-layers: 32, bf16: true}"
        )
    args: dict[str, Any] = {}
    for key, value in args_in.items():
        key_s = str(key)
        if key_s.startswith("-"):
            raise _fail(src, f"args.{key_s}", f"write the flag without leading dashes: {key_s.lstrip('-')}")
        if "_" in key_s:
            raise _fail(src, f"args.{key_s}", f"Megatron flags use dashes: {key_s.replace('_', '-')}")
        if not _FLAG.match(key_s) or len(key_s) > 64:
            raise _fail(src, f"args.{key_s}", "not a Megatron flag name (lowercase letters, digits, '-')")
        if isinstance(value, list):
            if not value or not all(_scalar(v) and not isinstance(v, bool) for v in value):
                raise _fail(src, f"args.{key_s}", "a list value must hold strings or numbers")
        elif value is not None and not _scalar(value):
            raise _fail(src, f"args.{key_s}", "the value must be a string, number, true/false or a list")
        _check_arg_type(src, key_s, value)
        _check_arg_value(src, key_s, value)
        args[key_s] = value

    backend = data.get("backend", "kubernetes")
    if backend not in BACKENDS:
        raise _fail(src, "backend", f"{clip(backend)} is not a backend; use one of {', '.join(BACKENDS)}")
    sharp = data.get("sharp", False)
    if not isinstance(sharp, bool):
        raise _fail(src, "sharp", "write true or false")
    if sharp and not plat.sharp_env:
        raise _fail(
            src,
            "sharp",
            f"SHARP needs InfiniBand; platform {plat.name} has none (use aks-ib or remove sharp)",
        )
    host_network = data.get("host_network")
    if host_network is not None and not isinstance(host_network, bool):
        raise _fail(src, "host_network", "write true or false")
    res_in = data.get("resources") or {}
    if not isinstance(res_in, Mapping):
        raise _fail(src, "resources", f"write a mapping with any of {', '.join(RESOURCE_KEYS)}")
    resources: dict[str, Any] = {}
    for key, value in res_in.items():
        if key not in RESOURCE_KEYS:
            raise _fail(src, f"resources.{key}", f"unknown field; use {', '.join(RESOURCE_KEYS)}")
        if key in ("gpus_per_node", "nics_per_node", "cpu"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _fail(src, f"resources.{key}", f"{clip(value)} must be a whole number >= 0")
        else:
            try:
                quantity_bytes(value)
            except ValueError:
                raise _fail(
                    src, f"resources.{key}", f"{clip(value)} is not a size; write e.g. 128Gi"
                ) from None
            value = str(value)
        resources[key] = value
    if resources.get("gpus_per_node") == 0:
        raise _fail(src, "resources.gpus_per_node", "a training pod needs at least one GPU")
    op = data.get("operator", operators.DEFAULT_OPERATOR)
    if not isinstance(op, str) or op not in operators.OPERATORS:
        raise _fail(
            src, "operator", f"{op!r} is not an operator; use one of {', '.join(operators.OPERATORS)}"
        )
    runtime = None if data.get("runtime") is None else name_field("runtime", data["runtime"])

    return JobSpec(
        name=name,
        image=image,
        instance_type=str(data["instance_type"]),
        nodes=nodes,
        args=args,
        namespace=namespace,
        platform=plat.name,
        storage=storage,
        env=env,
        backend=backend,
        sharp=sharp,
        host_network=host_network,
        resources=resources,
        source=src,
        operator=op,
        runtime=runtime,
    )


def load(path: str | os.PathLike[str]) -> JobSpec:
    """Read and validate a job YAML file (a regular file of at most 1 MiB, no aliases: ``safeyaml``).

    The file's name ends up in messages, in the sbatch script's header comment and in ``kubectl``
    hints, so a name with a control character (a newline) is refused here, once for all of them.
    """
    from .. import safeyaml
    from ..handover import read_job_yaml

    if safeyaml.has_control(str(path)):
        raise UsageError(
            f"--config {safeyaml.shown(path)}: the file name holds a control character (newline, tab, ESC); "
            "rename the file"
        )
    p = Path(path)
    data = read_job_yaml(p)
    return from_dict(data, str(p))


def flag_tokens(args: Mapping[str, Any]) -> list[str]:
    """Megatron command-line tokens for job-YAML args (``True`` = bare flag, ``False``/``None`` omitted).

    Every value is exactly one token, whatever it holds (spaces included): a single value is
    ``--flag=value``; a list, or a multi-value flag's string (a blend's ``data-path: "0.7 /a 0.3 /b"``,
    see :func:`multi_value_flags`), is ``--flag`` followed by one token per value, as Megatron's
    ``nargs='*'`` flags expect. Every target (PyTorchJob, sbatch, local) passes these tokens as
    separate arguments, so they reach the trainer as they are here.
    """
    out: list[str] = []
    for key, value in args.items():
        if value is True:
            out.append(f"--{key}")
        elif value is False or value is None:
            continue
        elif isinstance(value, list) or (isinstance(value, str) and len(arg_values(key, value)) > 1):
            out += [f"--{key}", *arg_values(key, value)]
        else:
            out.append(f"--{key}={value}")
    return out
