"""One redaction for every message that can carry a server's, a proxy's or a kubeconfig's text.

An API server's error body is echoed into our one-line errors, an event message into ``status``, a
kubeconfig's server URL into "cannot reach" lines; any of them can hold a credential (an echoing
proxy returns the request's ``Authorization: Bearer ...``; a server URL can carry
``user:password@``). :func:`redact` masks every shape of the table in
``workshop_lib.facts.secret_shapes`` and :func:`one_line` also keeps the text to one bounded line.
``workshop_lib.cli.main`` passes every error message through :func:`redact` before printing it.
"""

from __future__ import annotations

import re
from typing import Any

from .facts.secret_shapes import SHAPES, URL_SCHEME, looks_random

MASK = "<redacted>"
_URL_USERINFO = re.compile(rf"({URL_SCHEME})[^\s/@]*@")
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}")
# Candidate random tokens in free text: no '/' or '.', so paths and file names are never candidates,
# and hex digests (image digests, commit ids) are left alone: in a message they are not secrets.
_WORDS = re.compile(r"[A-Za-z0-9+=_-]{32,}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
# "password=...", "api_key='...'" or JSON's "token": "..." in server text: the value after a
# credential's name (a bare "token: x" is left alone: the kit's own hints read "secret: SECRET-NAME").
_CRED = r"(?:access[_-]?|api[_-]?|secret[_-]?|private[_-]?|client[_-]?)?(?:token|password|passwd|secret|api[_-]?key|access[_-]?key)"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b\u2028\u2029]")
_NAMED = re.compile(rf"""(?i)(\b{_CRED}\s*=\s*["']?|"{_CRED}"\s*:\s*")([^\s"',;&}}]{{4,}})""")


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``<redacted>`` (URL userinfo dropped)."""
    if not text:
        return text
    out = _URL_USERINFO.sub(rf"\1{MASK}@", str(text))
    out = _BEARER.sub(rf"\1\2{MASK}", out)
    out = _NAMED.sub(rf"\1{MASK}", out)
    for shape in SHAPES:
        out = shape.pattern.sub(MASK, out)
    return _WORDS.sub(
        lambda m: m.group(0) if _HEX.match(m.group(0)) or not looks_random(m.group(0)) else MASK, out
    )


def one_line(text: str, limit: int = 300) -> str:
    """A redacted, single-line, bounded version of ``text`` (server text is never trusted to be short)."""
    flat = _CONTROL.sub("?", redact(str(text)).replace("\r\n", " ").replace("\n", " "))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def redact_tree(obj: Any) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings) with :func:`redact` applied to every string."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_tree(v) for v in obj]
    return obj
