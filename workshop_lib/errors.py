"""The kit's error types and how the command line reports them.

The contract (docs/cli.md): bad usage or invalid input exits with status 2 and one line on stderr that names
the file, line or field and says how to fix it; any other failure exits 1. Raising
:class:`UsageError` anywhere below the CLI is how a module asks for the first kind.
"""

from __future__ import annotations


class WorkshopError(Exception):
    """A failure the user should see as one line (exit status 1): cluster unreachable, a run failed."""

    exit_code = 1


class UsageError(WorkshopError):
    """Bad usage or invalid input (exit status 2).

    The message must say *where* (file, line, field) and *what to do*, e.g.
    ``"corpus.jsonl:17: key 'text' missing; pass --json-keys with the key your documents use"``.
    """

    exit_code = 2


def where(path: object, line: int | None = None, field: str | None = None) -> str:
    """Format a location prefix such as ``job.yaml: args.micro-batch-size`` for error messages."""
    out = str(path)
    if line is not None:
        out += f":{line}"
    if field:
        out += f": {field}"
    return out
