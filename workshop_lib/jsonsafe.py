"""JSON has no NaN or Infinity: the one place that turns non-finite numbers into null.

Every ``--json`` output goes through it (``workshop_lib.cli_output.dumps_json``), and so does the monitor's
``ParsedLog.to_json`` for callers that serialise it themselves; a diverged loss therefore reads as
``null`` (and is counted in the summary) instead of a token strict JSON parsers reject.
"""

from __future__ import annotations

import math
from typing import Any


def json_safe(obj: Any) -> Any:
    """Replace NaN/Inf with None everywhere in nested dicts, lists and tuples."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj
