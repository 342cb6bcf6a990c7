"""CLI commands (being written)."""

from csro.cli._app import app  # noqa: F401
