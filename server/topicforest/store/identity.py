"""Who shares a team memory: the repository identity of a workspace folder.

Two clones of one repository, on two machines, must meet in one memory, so the key is the
normalized URL of the folder's git remote (`origin`, else the first remote), not its path:
`git@github.com:Org/Repo.git`, `ssh://git@github.com/Org/Repo` and `https://github.com/Org/Repo/`
are all `github.com/Org/Repo` (user names, passwords, ports and `.git` are dropped; the host is
lower-cased, the path keeps its case). A folder with no remote is keyed by its resolved path,
which only that machine has; no folder at all is the global memory.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from topicforest.store.paths import GLOBAL_WORKSPACE

SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # git@host:org/repo.git


def normalize_remote(url: str) -> str:
    """`host/path` of a git remote URL, comparable across the ways of writing it."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        host, path = (parts.hostname or "").lower(), parts.path
    elif (match := SCP_LIKE.match(url)) and "\\" not in url:
        host, path = match.group(1).lower(), match.group(2)
    else:  # a local path used as a remote
        return str(Path(url).expanduser().resolve())
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return f"{host}/{path}"


def git_remote(folder: str | os.PathLike[str]) -> str | None:
    """The URL of the folder's `origin` remote (else its first one); None without git or one."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "config", "--get-regexp", r"^remote\..*\.url$"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    remotes = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        remotes[key.removeprefix("remote.").removesuffix(".url")] = value
    if not remotes:
        return None
    return remotes.get("origin") or next(iter(remotes.values()))


def repository_identity(folder: str | os.PathLike[str] | None) -> str:
    """The key of a workspace's team memory (see the module docstring)."""
    if folder is None:
        return GLOBAL_WORKSPACE
    remote = git_remote(folder)
    if remote:
        return normalize_remote(remote)
    return str(Path(folder).expanduser().resolve())
