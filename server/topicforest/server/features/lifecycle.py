"""initialize / initialized / shutdown, workspace folders and settings.

`initialize` only records folders and settings: litellm is warmed afterwards in its worker
process (when a model is configured), so the handshake stays fast and turns never share the
interpreter with its import.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from topicforest.server.notify import TOPICS_CHANGED
from topicforest.workspace.llm_worker import WORKER
from topicforest.workspace.models import model_window
from topicforest.workspace.settings import SECTION, Settings
from topicforest.workspace.upkeep import freeze_heap

if TYPE_CHECKING:
    from topicforest.server.server import TopicForestServer

log = logging.getLogger(__name__)


def setup(server: TopicForestServer) -> None:
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)


def initialize(ls: TopicForestServer, params: types.InitializeParams) -> None:
    folders = [folder.uri for folder in params.workspace_folders or []]
    options = params.initialization_options
    ls.pending_messages = ls.workspaces.initialize(folders, params.root_uri, options)


def initialized(ls: TopicForestServer, params: types.InitializedParams) -> None:
    ls.log_bridge_loop(asyncio.get_running_loop())
    ls.workspaces.start()
    for message in ls.pending_messages:
        ls.show(message)
    ls.pending_messages = []
    freeze_heap()  # pygls and the opened memories
    warm(ls)


async def shutdown(ls: TopicForestServer, params: None) -> None:
    await ls.workspaces.close()
    await WORKER.close()


async def did_change_configuration(
    ls: TopicForestServer, params: types.DidChangeConfigurationParams
) -> None:
    settings = params.settings
    if _lacks_section(settings) and _can_pull(ls):
        pulled = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
        settings = pulled[0] if pulled else None
    chosen = _memory_choice(ls.settings)
    for message in apply_settings(ls, settings):
        ls.show(message)
    if _memory_choice(ls.settings) != chosen and ls.workspaces.started:  # open that memory
        for memory in await ls.workspaces.reopen():
            ls.notifier.topics_changed(memory.key, "configured", None)
            ls.notifier.threads_changed(memory.key, None, [])
    warm(ls)


def _memory_choice(settings: Settings) -> tuple[str | None, ...]:
    """The settings that choose which memory a workspace opens."""
    return (settings.store_path, settings.store_url, settings.user)


async def did_change_folders(
    ls: TopicForestServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for folder in params.event.removed:
        await ls.workspaces.remove(folder.uri)
        ls.protocol.notify(
            TOPICS_CHANGED, {"workspaceUri": folder.uri, "reason": "workspaceRemoved"}
        )
    for folder in params.event.added:
        ls.workspaces.add(folder.uri)
        ls.protocol.notify(TOPICS_CHANGED, {"workspaceUri": folder.uri, "reason": "workspaceAdded"})
    freeze_heap()


def apply_settings(ls: TopicForestServer, raw: Any) -> list[str]:
    """Validate and apply; returns messages for the user (invalid values keep the old ones)."""
    messages = ls.workspaces.apply(raw)
    for memory in ls.workspaces.memories.values():
        ls.notifier.topics_changed(memory.key, "configured", None)
    return messages


def warm(ls: TopicForestServer) -> None:
    """Start litellm's worker process and learn the chat model's window, if a model is set."""
    settings = ls.settings
    if not settings.chat_model and not settings.summarizers:
        return

    async def run() -> None:
        # Routes first (an `openai/<name>` with an api base needs no litellm: at once), so the
        # first turn finds its route resolved and aiohttp loaded and frozen out of the heap.
        for memory in list(ls.workspaces.memories.values()):
            await memory.chat_model.route()
        freeze_heap()  # aiohttp, routes
        window = settings.window_for(settings.chat_model) or await model_window(
            settings.chat_model, settings.api_base_for(settings.chat_model or "")
        )
        if ls.settings is settings:  # not superseded meanwhile
            ls.workspaces.configure(settings, window)
            for memory in list(ls.workspaces.memories.values()):
                await memory.chat_model.route()  # the configured model may have changed
            log.info("litellm ready; chat model window: %s tokens", window or "unknown")
        freeze_heap()

    ls.spawn(run(), "warm-litellm")


def _lacks_section(settings: Any) -> bool:
    return not isinstance(settings, dict) or SECTION not in settings


def _can_pull(ls: TopicForestServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.configuration)
