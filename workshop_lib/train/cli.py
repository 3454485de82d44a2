"""Subcommands of the ``train`` room (registered by ``workshop_lib.cli``)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
