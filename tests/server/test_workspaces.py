"""Workspace folders, settings and logs over the real protocol."""

from __future__ import annotations

from pathlib import Path

import pytest_lsp
from lsprotocol import types

from topicforest.server.protocol import PREFIX, UNKNOWN_WORKSPACE
from topicforest.store import Store

from .conftest import CAPABILITIES, CONFIG, Client


@pytest_lsp.fixture(config=CONFIG)
async def bare(lsp_client: Client):  # type: ignore[no-untyped-def]
    """Started by each test itself (it chooses folders and settings)."""
    yield
    await lsp_client.shutdown_session()


async def init(client: Client, folders: list[Path], options: object = None) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=CAPABILITIES,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options=options,
        )
    )


async def test_one_memory_per_folder_and_folder_changes(bare: Client, tmp_path: Path) -> None:
    one, two, three = (tmp_path / n for n in ("one", "two", "three"))
    await init(bare, [one, two], {"topicForest": {"storePath": str(tmp_path / ".store")}})
    for uri, budget in ((one.as_uri(), 0), (two.as_uri(), 0)):
        result = await bare.call("listTopics", {"workspaceUri": uri})
        assert result["topics"] == [] and result["used"] == budget

    bare.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=three.as_uri(), name="three")],
                removed=[types.WorkspaceFolder(uri=two.as_uri(), name="two")],
            )
        )
    )
    await bare.wait_for(PREFIX + "topicsChanged", lambda n: n["reason"] == "workspaceAdded")
    assert "topics" in await bare.call("listTopics", {"workspaceUri": three.as_uri()})
    error = await bare.rpc_error("listTopics", {"workspaceUri": two.as_uri()})
    assert error.code == UNKNOWN_WORKSPACE


async def test_no_folder_uses_a_global_memory(bare: Client, tmp_path: Path) -> None:
    await init(bare, [], {"topicForest": {"storePath": str(tmp_path / ".store")}})
    assert (await bare.call("listThreads"))["threads"] == []
    assert (await bare.call("listTopics", {"workspaceUri": "global"}))["topics"] == []


async def test_invalid_settings_are_shown_and_the_previous_values_kept(
    bare: Client, tmp_path: Path
) -> None:
    await init(
        bare,
        [tmp_path],
        {
            "topicForest": {
                "historyBudget": 4096,
                "maxTopics": "many",
                "apiKey": "sk-x",
                "storePath": str(tmp_path / ".store"),
            }
        },
    )
    assert (await bare.call("listTopics"))["budget"] == 4096
    await bare.until(lambda: any("topicForest.maxTopics" in m.message for m in bare.messages))
    assert any("apiKey" in m.message for m in bare.log_messages)  # unknown key: a warning

    store = str(tmp_path / ".store")
    bare.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"topicForest": {"historyBudget": -5, "storePath": store}}
        )
    )
    await bare.until(
        lambda: any("historyBudget" in m.message and "4096" in m.message for m in bare.messages)
    )
    assert (await bare.call("listTopics"))["budget"] == 4096  # the previous valid value

    bare.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"topicForest": {"historyBudget": 1024, "storePath": store}}
        )
    )
    await bare.wait_for(PREFIX + "topicsChanged", lambda n: n["reason"] == "configured")
    budgets = set()
    for _ in range(50):
        budgets.add((await bare.call("listTopics"))["budget"])
        if 1024 in budgets:
            break
    assert 1024 in budgets


async def test_server_logs_reach_the_client(bare: Client, tmp_path: Path) -> None:
    await init(bare, [tmp_path], {"topicForest": {"storePath": str(tmp_path / ".store")}})
    await bare.until(lambda: any("workspace memory opened" in m.message for m in bare.log_messages))


async def test_a_changed_store_or_user_reopens_the_memory(bare: Client, tmp_path: Path) -> None:
    """storePath, storeUrl and user choose which memory a workspace opens: a change reopens
    it (the VS Code extension restarts the server instead; other clients get this)."""
    folder, first, second = tmp_path / "ws", tmp_path / "first", tmp_path / "second"
    folder.mkdir()
    other = Store.for_workspace(folder, second, user="ann")  # a memory with ann's thread
    try:
        other.open_window().append("ann-1", "user", "How do I rotate the JWT secret?")
    finally:
        other.close()
    await init(bare, [folder], {"topicForest": {"storePath": str(first), "user": "ann"}})
    assert (await bare.call("listThreads"))["threads"] == []

    for settings, threads in (
        ({"storePath": str(second), "user": "ann"}, ["ann-1"]),
        ({"storePath": str(second), "user": "bob"}, []),  # ann's thread is not bob's
        ({"storePath": str(second), "user": "ann"}, ["ann-1"]),
    ):
        bare.notes[PREFIX + "threadsChanged"].clear()
        bare.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"topicForest": settings})
        )
        await bare.wait_for(PREFIX + "threadsChanged", lambda n: n["threadId"] is None)
        listed = (await bare.call("listThreads"))["threads"]
        assert [t["threadId"] for t in listed] == threads, settings
