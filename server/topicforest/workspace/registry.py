"""One WorkspaceMemory per workspace folder, plus a global one when no folder is open."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from topicforest.workspace.errors import UnknownWorkspace
from topicforest.workspace.events import MemoryListener
from topicforest.workspace.keys import NO_KEYS, ApiKeys
from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.redact import hide
from topicforest.workspace.settings import Settings, parse_settings

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
        self.keys = NO_KEYS  # the client's API keys: in memory only (`keys.py`)
        self.memories: dict[str, WorkspaceMemory] = {}  # by _key, in folder order
        self.stores_open = False  # memories open their store when added (see open_stores)
        self.started = False
        self._initialized: tuple[object, list[str]] | None = None

    def attach(self, listener: MemoryListener) -> None:
        """The listener of every memory, present and future (the server, once it exists)."""
        self.listener = listener
        for memory in self.memories.values():
            memory.listener = listener

    # -- initialize ------------------------------------------------------------------------
    def initialize(self, folders: Sequence[str], root_uri: str | None, options: Any) -> list[str]:
        """Open the client's folders and apply its settings; returns messages for the user.

        `early` runs this before pygls is loaded, then pygls is handed the same `initialize`
        again: the same arguments a second time change nothing and log nothing.
        """
        arguments = (list(folders), root_uri, options)
        if self._initialized is not None and self._initialized[0] == arguments:
            return list(self._initialized[1])
        for uri in folders:
            self.add(uri)
        if not folders and root_uri:
            self.add(root_uri)
        messages = self.apply(options)
        self._initialized = (arguments, messages)
        return list(messages)

    def apply(self, raw: Any) -> list[str]:
        """Validate and apply settings; returns messages for the user (invalid values keep the
        previous ones)."""
        update = parse_settings(raw, self.settings)
        for warning in update.warnings:
            log.warning("%s", warning)
        self.configure(update.settings, self.max_input_tokens)
        return [f"Topic Forest settings: {e}" for e in update.errors]

    # -- folders ---------------------------------------------------------------------------
    def add(self, uri: str) -> WorkspaceMemory:
        key = _key(uri)
        memory = self.memories.get(key)
        if memory is None:
            memory = WorkspaceMemory(uri, self.settings, listener=self.listener)
            memory.configure(self.settings, self.max_input_tokens, self.keys)
            self.memories[key] = memory
            if self.started:
                memory.start()
            elif self.stores_open:
                memory.open_store()
            log.info("workspace memory opened for %s", uri)
        return memory

    async def reopen(self) -> list[WorkspaceMemory]:
        """The settings that choose a workspace's memory (`storePath`, `storeUrl`, `user`)
        changed: close every memory (its threads' hot zones stay in the old one) and open it again
        with them. Returns the reopened memories."""
        reopened = []
        for key, memory in list(self.memories.items()):
            await memory.close()
            del self.memories[key]
            reopened.append(self.add(memory.key))
        return reopened

    async def remove(self, uri: str) -> None:
        memory = self.memories.pop(_key(uri), None)
        if memory is not None:
            await memory.close()
            log.info("workspace memory closed for %s", uri)

    def open_stores(self) -> None:
        """Open every memory's store now (no event loop needed; `start` begins their tasks)."""
        self.stores_open = True
        for memory in self.memories.values():
            memory.open_store()

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
            raise UnknownWorkspace(
                uri, f"unknown workspaceUri {uri!r}; open workspace folders: {known}"
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
    def set_keys(self, keys: ApiKeys) -> None:
        """The client's API keys, replacing those it gave before, for every memory."""
        hide(keys.values())  # before any use: no error or log line can show one
        self.keys = keys
        for memory in self.memories.values():
            memory.configure(self.settings, self.max_input_tokens, keys)

    def configure(self, settings: Settings, max_input_tokens: int | None = None) -> None:
        self.settings = settings
        self.max_input_tokens = max_input_tokens
        for memory in self.memories.values():
            memory.configure(settings, self.max_input_tokens)
