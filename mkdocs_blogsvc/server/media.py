"""Placeholder: being written."""

from typing import Any


def register(app: Any, db: Any) -> None:
    """Attach this module's routes to the app."""
