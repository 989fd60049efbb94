"""HuggingFace ids (``<org>/<name>[@<revision>]``) resolved from the local hub cache, offline.

The cache is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``; a
repository lives in ``models--<org>--<name>/`` with ``refs/<revision>`` holding a commit hash
and ``snapshots/<commit>/config.json`` the file (the layout ``huggingface_hub`` writes). Nothing
here opens a connection: a model that is not in the cache is an error that says where it
looked.

Example:
    >>> parse_hub_id("Qwen/Qwen2.5-7B-Instruct@main")
    ('Qwen/Qwen2.5-7B-Instruct', 'main')
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import SpecError, UnknownIdError
from .model import ModelSpec

# HF repo ids: org and name of letters, digits, "-", "_", "."; a revision is a branch, tag or
# commit (branches may hold "/", e.g. refs/pr/1)
_HUB_ID = re.compile(r"^([A-Za-z0-9][\w.-]*)/([\w.-]+)(?:@([\w./-]+))?$")


def parse_hub_id(text: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` of ``<org>/<name>[@<revision>]``, or None when ``text`` is not of
    that form (a file name such as ``dir/config.json`` is not)."""
    if len(text) > 300:  # HF caps org and name at 96 characters each
        return None
    m = _HUB_ID.match(text.strip())
    if not m or m.group(2).lower().endswith((".json", ".yaml", ".yml")):
        return None
    if ".." in text:  # a revision names a ref or a snapshot, never a path out of the repo
        return None
    return f"{m.group(1)}/{m.group(2)}", m.group(3)


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """The HuggingFace hub cache: ``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
    ``~/.cache/huggingface/hub`` (``huggingface_hub``'s order)."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def _read_ref(repo_dir: Path, revision: str) -> str | None:
    ref = repo_dir / "refs" / revision
    if ref.is_file():
        return ref.read_text(encoding="utf-8").strip() or None
    return None


def cached_config_path(
    repo_id: str, revision: str | None = None, cache: Path | None = None
) -> Path:
    """The cached ``config.json`` of ``repo_id`` at ``revision`` (a branch or tag in ``refs/``,
    or a commit hash): without one, ``refs/main``, else the only or newest snapshot holding a
    config.json. Raises UnknownIdError naming the cache directory when it is not there."""
    cache = hub_cache_dir() if cache is None else cache
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    at = f"@{revision}" if revision else ""
    offline = "no network access is attempted; download it first (e.g. `hf download"
    hint = f"{offline} {repo_id} config.json`) or set HF_HUB_CACHE / HF_HOME"
    if not repo_dir.is_dir():
        raise UnknownIdError(
            f"unknown model {repo_id + at!r}: not a bundled id or a config.json path, and not "
            f"in the local HuggingFace cache {cache} (no {repo_dir.name}/ there); {hint}"
        )
    snapshots = repo_dir / "snapshots"
    if revision:
        commit = _read_ref(repo_dir, revision) or revision
        config = snapshots / commit / "config.json"
        if not config.is_file():
            refs = sorted(p.name for p in (repo_dir / "refs").glob("*") if p.is_file())
            raise UnknownIdError(
                f"model {repo_id!r}: revision {revision!r} has no config.json in the local "
                f"HuggingFace cache {repo_dir} (refs: {', '.join(refs) or 'none'}); {hint}"
            )
        return config
    main = _read_ref(repo_dir, "main")
    if main and (snapshots / main / "config.json").is_file():
        return snapshots / main / "config.json"
    found = [p for p in snapshots.glob("*/config.json") if p.is_file()]
    if not found:
        raise UnknownIdError(
            f"model {repo_id!r}: no snapshot with a config.json in the local HuggingFace cache "
            f"{repo_dir}; {hint}"
        )
    return max(found, key=lambda p: (p.stat().st_mtime, p.parent.name))


def load_hub_model(text: str) -> ModelSpec:
    """The model of a HuggingFace id from the local cache; its ``id`` is ``<org>/<name>`` and
    its ``source`` the cached config.json (with ``hf_quant_config.json`` read when present)."""
    from .model import load_model  # the file loader; model.py imports this module lazily

    parsed = parse_hub_id(text)
    if parsed is None:
        raise SpecError(f"{text!r} is not a HuggingFace id of the form <org>/<name>[@<revision>]")
    repo_id, revision = parsed
    config = cached_config_path(repo_id, revision)
    spec = load_model(config)
    at = f"@{revision}" if revision else ""
    return dataclasses.replace(
        spec,
        id=repo_id,
        name=repo_id,
        source=f"HuggingFace cache {repo_id}{at}: {config}",
    )
