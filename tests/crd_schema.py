"""A small structural OpenAPI v3 validator for CustomResourceDefinition schemas (test helper, stdlib only).

It judges an object as a Kubernetes API server judges a custom resource against
``spec.versions[].schema.openAPIV3Schema``:

* **unknown fields**: a field a structural schema does not declare (no ``properties`` entry, no
  ``additionalProperties``, no ``x-kubernetes-preserve-unknown-fields``; an object schema without
  ``properties`` declares none) is *unknown*. A server with
  ``fieldValidation=Strict`` refuses the request (400, ``strict decoding error: unknown field "..."``);
  without it the field is pruned and only a warning comes back: :func:`prune` gives that object.
* **invalid values** (422): ``type`` (``x-kubernetes-int-or-string`` takes both), ``required``,
  ``enum``, ``minimum``/``maximum``, ``minLength``/``maxLength``, ``pattern``, ``minItems``/``maxItems``,
  ``minProperties``.

Not evaluated: CEL rules (``x-kubernetes-validations``), ``format``, list-map key uniqueness. The
object's ``metadata`` (``type: object`` in every CRD) is checked against ObjectMeta's field names.

The CRDs are the real ones under ``<shared>/crds`` (``WORKSHOP_SHARED_DIR``, else ``<repo>/../shared``);
they are never copied into the repository, and tests skip, saying so, where the folder is absent.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
OBJECT_META_FIELDS = {
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
}


def shared_dir() -> Path:
    return Path(os.environ.get("WORKSHOP_SHARED_DIR") or REPO.parent / "shared")


def crd_dir() -> Path | None:
    """``<shared>/crds`` when it holds the CRDs, else None."""
    d = shared_dir() / "crds"
    return d if any(d.glob("*.yaml")) else None


SKIP_REASON = (
    "the operators' CRDs are not here: set WORKSHOP_SHARED_DIR to the folder holding crds/ "
    "(in CI the repository is cloned with shared/ beside it)"
)


@dataclass
class Report:
    unknown: list[str] = field(default_factory=list)  # paths of undeclared fields
    invalid: list[str] = field(default_factory=list)  # "path: why"

    @property
    def ok(self) -> bool:
        return not self.unknown and not self.invalid


def load_schemas(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(apiVersion, kind) -> openAPIV3Schema`` for every served version of every CRD in ``directory``."""
    out = {}
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for ver in doc["spec"]["versions"]:
                if ver.get("served", True):
                    out[(f"{group}/{ver['name']}", kind)] = ver["schema"]["openAPIV3Schema"]
    return out


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    t = schema.get("type")
    if t is None:
        return True
    return {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }[t](value)


def _walk(value: Any, schema: dict[str, Any], path: str, report: Report, prune: bool) -> Any:
    """Check ``value``; return it with unknown fields removed when ``prune``."""
    if value is None and schema.get("nullable"):
        return value
    if not _type_ok(value, schema):
        want = "int or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        report.invalid.append(f"{path}: Invalid value: {value!r}: must be of type {want}")
        return value
    if "enum" in schema and value not in schema["enum"]:
        report.invalid.append(f"{path}: Unsupported value: {value!r}: supported values: {schema['enum']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            report.invalid.append(
                f"{path}: Invalid value: {value}: should be greater than or equal to {schema['minimum']}"
            )
        if "maximum" in schema and value > schema["maximum"]:
            report.invalid.append(
                f"{path}: Invalid value: {value}: should be less than or equal to {schema['maximum']}"
            )
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            report.invalid.append(f"{path}: Too long: may not be longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            report.invalid.append(f"{path}: Invalid value: {value!r}: at least {schema['minLength']} chars")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            report.invalid.append(f"{path}: Invalid value: {value!r}: should match '{schema['pattern']}'")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            report.invalid.append(
                f"{path}: Too many: {len(value)}: must have at most {schema['maxItems']} items"
            )
        if "minItems" in schema and len(value) < schema["minItems"]:
            report.invalid.append(f"{path}: Invalid value: must have at least {schema['minItems']} items")
        items = schema.get("items") or {}
        return [_walk(v, items, f"{path}[{i}]", report, prune) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            report.invalid.append(
                f"{path}: Invalid value: must have at least {schema['minProperties']} fields"
            )
        for req in schema.get("required", []):
            if req not in value:
                report.invalid.append(f"{path}.{req}: Required value")
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        out = {}
        for key, sub in value.items():
            where = f"{path}.{key}" if path else key
            if props is not None and key in props:
                out[key] = _walk(sub, props[key], where, report, prune)
            elif isinstance(extra, dict):
                out[key] = _walk(sub, extra, where, report, prune)
            elif extra is True or preserve:
                out[key] = sub
            else:
                report.unknown.append(where)
                if not prune:
                    out[key] = sub
        return out
    return value


def check(
    obj: dict[str, Any], schema: dict[str, Any], *, prune: bool = False
) -> tuple[Report, dict[str, Any]]:
    """Judge ``obj`` against a CRD's schema; the second value is ``obj`` as stored (pruned when asked)."""
    report = Report()
    body = {k: v for k, v in obj.items() if k != "metadata"}
    checked = _walk(body, schema, "", report, prune)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        report.invalid.append("metadata: Required value")
    else:
        for key in meta:
            if key not in OBJECT_META_FIELDS:
                report.unknown.append(f"metadata.{key}")
        for part in ("labels", "annotations"):
            for k, v in (meta.get(part) or {}).items():
                if not isinstance(v, str):
                    report.invalid.append(f"metadata.{part}.{k}: Invalid value: {v!r}: must be a string")
        checked["metadata"] = copy.deepcopy(meta)
    return report, checked


def validate(obj: dict[str, Any], schemas: dict[tuple[str, str], dict[str, Any]]) -> Report:
    """Judge a manifest document by the schema of its apiVersion and kind (KeyError when no CRD has it)."""
    return check(obj, schemas[(obj["apiVersion"], obj["kind"])])[0]


_CACHE: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}


def maybe_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """The CRD schemas when the shared folder is there, else ``{}`` (loaded once per test process)."""
    if "s" not in _CACHE:
        d = crd_dir()
        _CACHE["s"] = load_schemas(d) if d else {}
    return _CACHE["s"]
