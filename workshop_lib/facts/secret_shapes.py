"""What a credential looks like: one table of value shapes, for ``workshop check`` and for redaction.

A variable's name is not enough to spot a credential (``WANDB_KEY``, ``GH_PAT``, ``DATABASE_URL``
say nothing the name rules in ``nccl_rules`` recognise), and a server's error text has no names at
all. Each row is a shape vendors document for their tokens, or a generic one (credentials in a URL,
a bearer header, a JWT, a long random string). ``workshop check`` flags a literal env value of any
of these shapes, ``workshop render`` refuses to write it, and ``workshop_lib.redact`` masks them in
every message that can carry a server's or a kubeconfig's text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    name: str  # shown in findings: "a Hugging Face token"
    pattern: re.Pattern[str]
    keep: int = 0  # leading characters of a match kept visible when redacting ("Bearer ", "scheme://")


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text)


# A URL's scheme ("https://"), started only where a run of scheme characters starts: "\b" let every
# letter of "a.a.a..." start a scan to the line's end. Redaction keeps it and masks the userinfo.
URL_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"


SHAPES: tuple[Shape, ...] = (
    Shape(
        "a URL with a user and password",
        _re(URL_SCHEME + r"[^\s/@:]*:[^\s/@]+@"),
    ),
    Shape("a bearer token", _re(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{6,}")),
    Shape("a Hugging Face token", _re(r"\bhf_[A-Za-z0-9]{20,}")),
    Shape("a GitHub token", _re(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    Shape("an AWS access key id", _re(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    Shape("an OpenAI/Anthropic-style API key", _re(r"\bsk-[A-Za-z0-9_-]{20,}")),
    Shape("a Slack token", _re(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    Shape("a GitLab token", _re(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    Shape(
        "a JWT (e.g. a Kubernetes service-account token)",
        _re(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    Shape("a private key", _re(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)

# A long random string (an API key with no vendor prefix: W&B's 40 hex digits, an AWS secret key):
# at least this long, only token characters, not a path, and random: hex digits mixing letters and
# digits, or upper case, lower case and digits mixed with high entropy (words and paths are not).
RANDOM_MIN_LENGTH = 32
RANDOM_MIN_BITS_PER_CHAR = 4.0  # bits of entropy per character (random base64: ~5; English: < 4)
HEX_MIN_BITS_PER_CHAR = 3.0  # random hex: ~3.7; "0000...1" or "deadbeef" repeated: far below
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_.-]+$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
RANDOM = "a long random string (an API key or secret)"


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


# A segment that reads as words or a number: "TechPulse", "EKS", "release", "2026".
_WORDY = re.compile(r"^(?:(?:[A-Z]?[a-z]+)+|[A-Z]+|[0-9]+)$")


def _wordy(value: str) -> bool:
    """Whether most of ``value`` is words and numbers between separators (a name, not a token)."""
    parts = re.split(r"[-_./+=:]", value)
    return sum(len(p) for p in parts if len(p) >= 2 and _WORDY.match(p)) >= len(value) / 2


def looks_random(value: str) -> bool:
    """A long run of token characters that is random, not words, a number or a path."""
    v = value.strip()
    if len(v) < RANDOM_MIN_LENGTH or not _TOKEN_CHARS.match(v) or v[0] in "/.~" or _wordy(v):
        return False
    has_digit = any(c.isdigit() for c in v)
    if _HEX.match(v):
        return has_digit and any(c.isalpha() for c in v) and _entropy(v) >= HEX_MIN_BITS_PER_CHAR
    return (
        has_digit
        and any(c.isupper() for c in v)
        and any(c.islower() for c in v)
        and _entropy(v) >= RANDOM_MIN_BITS_PER_CHAR
    )


def shape_of(value: str) -> str | None:
    """The credential shape ``value`` has (the row's description), or None."""
    for shape in SHAPES:
        if shape.pattern.search(value):
            return shape.name
    return RANDOM if looks_random(value) else None
