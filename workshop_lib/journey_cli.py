"""``workshop run-notebooks``: the whole workshop, headless (registered by ``workshop_lib.cli``)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run-notebooks``; the papermill machinery is imported only when it runs."""
