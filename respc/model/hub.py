"""Repository ids resolved through the local Hugging Face cache, as `huggingface_hub` lays it out
(`models--org--name/refs/<revision>` naming a commit, `snapshots/<commit>/` holding its files). Nothing is
ever downloaded, and `huggingface_hub` is not needed."""

from __future__ import annotations

import os
import re
from pathlib import Path

from respc._io import InputError

__all__ = ["hub_cache", "is_repo_id", "snapshot"]

# huggingface_hub's rule for repository ids: "name" or "namespace/name", of [\w.-], no "--" or "..".
_REPO_ID = re.compile(r"[A-Za-z0-9_.-]{1,96}(/[A-Za-z0-9_.-]{1,96})?")


def hub_cache() -> Path:
    """The cache folder huggingface_hub uses: `$HF_HUB_CACHE`, else `$HUGGINGFACE_HUB_CACHE`, else
    `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def is_repo_id(text: str) -> bool:
    """Whether `text` is spelled as a repository id ("org/name", or a bare "name")."""
    return (
        bool(_REPO_ID.fullmatch(text)) and "--" not in text and ".." not in text and not text.startswith(".")
    )


def snapshot(repo_id: str, revision: str = "main") -> Path:
    """The cached snapshot folder of `repo_id` at `revision` (a branch or tag its `refs/` records, or a
    commit); one line of `respc.InputError` when the cache does not hold it."""
    cache = hub_cache()
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    if not repo.is_dir():
        raise InputError(
            f"{repo_id}: not a model directory, and not in the local Hugging Face cache ({cache}); respc "
            "never downloads: fetch it first (hf download) or pass the model's directory"
        )
    ref = repo / "refs" / revision
    commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else revision
    folder = repo / "snapshots" / commit
    if not folder.is_dir():
        raise InputError(f"{repo_id}: revision {revision} is not in the local Hugging Face cache ({repo})")
    return folder
