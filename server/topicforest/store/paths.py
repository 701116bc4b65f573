"""Where a workspace's memory lives: one database file per workspace folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

APP_NAME = "topicforest"
GLOBAL_WORKSPACE = "<global>"  # memory used when the editor has no workspace folder


def workspace_key(workspace: str | os.PathLike[str] | None) -> str:
    """A stable short hash of the (resolved) workspace folder, used as the file name."""
    name = GLOBAL_WORKSPACE if workspace is None else str(Path(workspace).expanduser().resolve())
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def default_store_dir() -> Path:
    import platformdirs  # only needed when no storePath is set

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "workspaces"


def store_path(
    workspace: str | os.PathLike[str] | None, store_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The database file for `workspace`; `store_dir` is the `topicForest.storePath` setting."""
    base = Path(store_dir).expanduser() if store_dir else default_store_dir()
    return base / f"{workspace_key(workspace)}.sqlite3"
