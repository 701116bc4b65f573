"""One WorkspaceMemory per workspace folder, plus a global one when no folder is open."""

from __future__ import annotations

import logging
from urllib.parse import unquote

from topicforest.memory import MemoryListener, WorkspaceMemory
from topicforest.server.config import Settings
from topicforest.server.protocol import UNKNOWN_WORKSPACE, ProtocolError

log = logging.getLogger(__name__)
GLOBAL = "global"


def _key(uri: str) -> str:
    """Comparable form of a folder URI (editors differ in escaping and trailing slashes)."""
    return unquote(uri).rstrip("/").lower() if uri.startswith("file:") else uri.rstrip("/")


class Workspaces:
    def __init__(self, listener: MemoryListener | None = None) -> None:
        self.listener = listener
        self.settings = Settings()
        self.max_input_tokens: int | None = None
        self.memories: dict[str, WorkspaceMemory] = {}  # by _key, in folder order
        self.started = False

    # -- folders ---------------------------------------------------------------------------
    def add(self, uri: str) -> WorkspaceMemory:
        key = _key(uri)
        memory = self.memories.get(key)
        if memory is None:
            memory = WorkspaceMemory(uri, self.settings, listener=self.listener)
            memory.configure(self.settings, self.max_input_tokens)
            self.memories[key] = memory
            if self.started:
                memory.start()
            log.info("workspace memory opened for %s", uri)
        return memory

    async def remove(self, uri: str) -> None:
        memory = self.memories.pop(_key(uri), None)
        if memory is not None:
            await memory.close()
            log.info("workspace memory closed for %s", uri)

    def start(self) -> None:
        """Start background maintenance (from the event loop, once initialized)."""
        self.started = True
        for memory in self.memories.values():
            memory.start()

    async def close(self) -> None:
        for memory in list(self.memories.values()):
            await memory.close()

    # -- lookup ----------------------------------------------------------------------------
    def folders(self) -> list[WorkspaceMemory]:
        return [m for k, m in self.memories.items() if k != GLOBAL]

    def resolve(self, uri: str | None) -> WorkspaceMemory:
        """The memory a request names, or the default; unknown URIs are an error."""
        if uri is None:
            folders = self.folders()
            return folders[0] if folders else self.add(GLOBAL)
        memory = self.memories.get(_key(uri))
        if memory is None:
            known = ", ".join(m.key for m in self.folders()) or "none (global memory only)"
            raise ProtocolError(
                UNKNOWN_WORKSPACE,
                f"unknown workspaceUri {uri!r}; open workspace folders: {known}",
                {"workspaceUri": uri},
            )
        return memory

    def for_document(self, uri: str) -> WorkspaceMemory:
        """The folder containing a document (longest match), else the default memory."""
        key = _key(uri)
        best: WorkspaceMemory | None = None
        best_len = -1
        for folder_key, memory in self.memories.items():
            if (
                folder_key != GLOBAL
                and key.startswith(folder_key + "/")
                and len(folder_key) > best_len
            ):
                best, best_len = memory, len(folder_key)
        return best or self.resolve(None)

    # -- settings --------------------------------------------------------------------------
    def configure(self, settings: Settings, max_input_tokens: int | None = None) -> None:
        self.settings = settings
        self.max_input_tokens = max_input_tokens
        for memory in self.memories.values():
            memory.configure(settings, self.max_input_tokens)
