"""CLI commands that live outside cli.py (each registers itself in cli._register_optional)."""
