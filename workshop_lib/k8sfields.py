"""Rules for the values that end up in a Kubernetes manifest, shared by every renderer.

The job YAML (``launch.jobspec``) and ``workshop render-prep-job`` (``data.shard``) put the same
kinds of values into pods: names, a PVC and its mount point, a memory size, an image, paths on the
shared volume, command-line arguments. One set of rules here means one answer for the same value
whichever way it came in (a rule per renderer drifts: ``/shared/../etc`` used to pass one and not
the other). Every function raises :class:`~workshop_lib.errors.UsageError` with ``field`` (a job
field such as ``storage.mount_path`` or a flag such as ``--mount-path``) and the fix.

:func:`k8s_literal` is Kubernetes' own escape for ``$(VAR)`` references in ``command``, ``args`` and
``env`` values: the kubelet substitutes a defined variable there (a Secret's value too), so a value
the user wrote must reach the program as written, and only the kit's own references (``$(RANK)``,
``$(JOB_COMPLETION_INDEX)``) are left to be expanded.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .errors import UsageError
from .fsutil import check_k8s_name
from .safeyaml import clip, has_control

_QUANTITY = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti)?$")
_UNITS = {None: 1, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}
# registry[:port]/path[:tag][@algo:digest]: letters, digits and . _ - / : @ only (no shell characters).
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")
_K8S_REF = re.compile(r"\$(?=[$(])")  # a '$' that Kubernetes would read as an escape or a reference
# A "$(NAME)" reference; each "$(" scans only to the next one, so "$($($(..." stays linear (the same
# matches as "\$\([^)]*\)")
_REFERENCE = re.compile(r"\$\((?:[^)$]|\$(?!\())*\)")

# Where a volume must not be mounted: over these trees the image's system files or the kernel's
# and runtime's file systems disappear from the container ...
SYSTEM_TREES = {
    "/etc": "the image's configuration (users, DNS resolution, certificates)",
    "/usr": "the image's programs and libraries (Python, CUDA, NCCL)",
    "/bin": "the image's programs",
    "/sbin": "the image's programs",
    "/lib": "the image's libraries",
    "/lib32": "the image's libraries",
    "/lib64": "the image's libraries",
    "/libx32": "the image's libraries",
    "/boot": "the image's boot files",
    "/dev": "the devices (the GPUs, EFA/IB NICs and /dev/shm)",
    "/proc": "the kernel's process file system",
    "/sys": "the kernel's device file system",
    "/run": "the runtime's sockets and secrets (the service-account token is in /run/secrets)",
}
# ... these are the same directories under another name (symbolic links in every distribution) ...
ALIASES = {"/var/run": "/run", "/var/lock": "/run/lock"}
# ... and these directories as a whole hide what the image keeps in them.
WHOLE_DIRS = {
    "/tmp": "local scratch (TRITON_CACHE_DIR and other caches must stay off the shared volume)",
    "/var": "the image's state and logs",
    "/opt": "the image's installs (EFA, aws-ofi-nccl, conda live in /opt)",
    "/home": "the users' home directories",
    "/root": "root's home directory (pip and Hugging Face caches)",
}


def _fail(prefix: str, fld: str, msg: str) -> UsageError:
    return UsageError(f"{prefix}{fld}: {msg}")


def check_text(value: Any, fld: str, *, prefix: str = "", what: str = "value") -> str:
    """A string without control characters (a newline would start a new YAML line or script line)."""
    if not isinstance(value, str):
        raise _fail(prefix, fld, f"{clip(value)} is not a string; write the {what} as text")
    if has_control(value):
        raise _fail(
            prefix,
            fld,
            f"{clip(value)} holds a control character (newline, tab, NUL, ESC); write the {what} on one line",
        )
    return value


def check_name(value: Any, fld: str, *, prefix: str = "", max_len: int = 63) -> str:
    """A Kubernetes name (RFC 1123 label): jobs, namespaces, PVCs."""
    try:
        return check_k8s_name(value, fld, max_len)
    except UsageError as exc:
        raise UsageError(f"{prefix}{exc}") from None


def check_image(value: Any, fld: str, *, prefix: str = "") -> str:
    """A container image reference: ``registry[:port]/repo[:tag][@sha256:digest]``, nothing else."""
    if not isinstance(value, str) or len(value) > 1024 or not _IMAGE.match(value):
        raise _fail(prefix, fld, f"{clip(value)} is not an image reference; write e.g. registry/repo:tag")
    return value


def quantity_bytes(value: Any) -> int:
    """Bytes in a Kubernetes binary quantity such as ``128Gi`` (ValueError if it is not one)."""
    m = _QUANTITY.match(str(value))
    if not m or isinstance(value, bool):
        raise ValueError(value)
    return int(m.group(1)) * _UNITS[m.group(2)]


def check_quantity(value: Any, fld: str, *, prefix: str = "") -> str:
    """A positive memory size in binary units (``16Gi``), as a string."""
    try:
        n = quantity_bytes(value)
    except ValueError:
        raise _fail(prefix, fld, f"{clip(value)} is not a size; write e.g. 16Gi") from None
    if n <= 0:
        raise _fail(prefix, fld, f"{clip(value)} is zero; write a size such as 16Gi")
    return str(value)


def check_count(
    value: Any, fld: str, *, prefix: str = "", minimum: int = 1, maximum: int | None = None, why: str = ""
) -> int:
    """A whole number of at least ``minimum`` (and at most ``maximum``: pods, CPUs, shards)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(prefix, fld, f"{clip(value)} must be a whole number >= {minimum}")
    if maximum is not None and value > maximum:
        raise _fail(prefix, fld, f"{value} is more than {maximum}{why}; use at most {maximum}")
    return value


# Kubernetes' own bounds: an Indexed Job has at most 100,000 completions, and all annotations of
# an object together at most 256 KiB.
MAX_INDEXED_COMPLETIONS = 100_000
MAX_ANNOTATIONS_BYTES = 256 * 1024


def check_mount_path(mount: Any, fld: str, *, prefix: str = "") -> str:
    """An absolute, normalised mount point that hides nothing the container needs.

    ``/var/run`` is ``/run`` (a symbolic link in every image), so ``/var/run/secrets`` is refused as
    ``/run/secrets`` is: a volume there hides the service-account token.
    """
    if not isinstance(mount, str) or not mount.startswith("/"):
        raise _fail(prefix, fld, f"{clip(mount)} must be an absolute path such as /shared")
    check_text(mount, fld, prefix=prefix, what="path")
    path = mount.rstrip("/") or "/"
    if ".." in path.split("/") or "//" in path or posixpath.normpath(path) != path:
        raise _fail(
            prefix,
            fld,
            f"{clip(mount)} is not a normalised path ('..', '.', '//'); write it plainly, e.g. /shared",
        )
    if path == "/":
        raise _fail(
            prefix, fld, "'/' would hide the whole image; mount the volume on its own directory, e.g. /shared"
        )
    real = path
    for alias, target in ALIASES.items():
        if path == alias or path.startswith(alias + "/"):
            real = target + path[len(alias) :]
    for tree, what in SYSTEM_TREES.items():
        if real == tree or real.startswith(tree + "/"):
            via = f" (that is {real})" if real != path else ""
            raise _fail(
                prefix, fld, f"{clip(mount)}{via} is under {tree}, which holds {what}; mount on e.g. /shared"
            )
    if path in WHOLE_DIRS:
        raise _fail(prefix, fld, f"{clip(mount)} would hide {WHOLE_DIRS[path]}; mount on e.g. /shared")
    return path


def check_volume_path(path: Any, mount: str, fld: str, *, prefix: str = "") -> str:
    """A path the pods read or write: absolute, normalised, strictly under the volume's ``mount``."""
    check_text(path, fld, prefix=prefix, what="path")
    root = mount.rstrip("/")
    fix = f"give a path under {root}/, e.g. {root}/data/corpus"
    if not path.startswith(root + "/") or path.rstrip("/") == root:
        raise _fail(prefix, fld, f"{clip(path)}: pods see only the shared volume; {fix}")
    if ".." in path.split("/") or "//" in path or posixpath.normpath(path) != path.rstrip("/"):
        raise _fail(prefix, fld, f"{clip(path)} is not a normalised path ('..', '.', '//'); {fix}")
    return path


def k8s_literal(value: str) -> str:
    """``value`` escaped so that Kubernetes passes it on unchanged in ``command``, ``args`` or ``env``.

    Kubernetes reads ``$$`` as ``$`` and substitutes ``$(NAME)``; doubling every ``$`` that is
    followed by ``$`` or ``(`` is the exact inverse (``$(HF_TOKEN)`` -> ``$$(HF_TOKEN)``, ``a$$b`` ->
    ``a$$$b``; a ``$`` before anything else is already literal).
    """
    return _K8S_REF.sub("$$", value)


def has_reference(value: str) -> bool:
    """Whether ``value`` holds a ``$(NAME)`` that Kubernetes would substitute if it were not escaped."""
    return bool(_REFERENCE.search(value))
