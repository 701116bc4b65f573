"""One memory, two editors: Neovim and a second server process on the same workspace and store
(as a VS Code window would be). A drop in either reaches the other as topicsChanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topicforest.server.protocol import PREFIX
from topicforest.server.stdio_client import StdioClient
from topicforest.testing.stub_llm import STUB_API_KEY, ThreadedStubLLM

from .conftest import ERROR, Nvim, model_settings, setup_plugin, wait_for
from .test_topics import converse, press, row, row_dropped

RECORD = """
_G.changes = {}
table.insert(require('topicforest.server').listeners.topicsChanged, function(params)
  table.insert(_G.changes, params.reason)
end)
"""


def test_a_drop_in_either_editor_reaches_the_other(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    settings = model_settings(stub, historyBudget=256, storePath=str(workspace.parent / "store"))
    setup_plugin(nvim, workspace, settings)
    nvim.lua(RECORD)
    converse(nvim, stub)
    nvim.command("TopicForestTopics")
    topics = nvim.api("list_topics")[0]["topics"]
    topic_id = topics[0]["id"]

    env = {"OPENAI_API_KEY": STUB_API_KEY, "TOPICFOREST_SETTLE_SECONDS": "2"}
    with StdioClient(env=env) as other:
        other.initialize([workspace], settings)

        def other_topic() -> dict[str, Any] | None:
            listed = other.request(PREFIX + "listTopics", {})["topics"]
            return next((t for t in listed if t["id"] == topic_id), None)

        wait_for(other_topic)  # the other window sees the memory Neovim wrote

        # dropped in the other window: Neovim hears of it and its list says so
        other.request(PREFIX + "dropTopic", {"topicId": topic_id})
        nvim.until("return vim.tbl_contains(_G.changes, 'external')")
        wait_for(lambda: row_dropped(nvim, topic_id))
        listed = nvim.api("list_topics")[0]
        assert next(t for t in listed["topics"] if t["id"] == topic_id)["dropped"]
        assert topic_id not in [t["id"] for t in listed["rendered"]]

        # restored from Neovim's list: the other window gets topicsChanged and sees it back
        seen = len(other.notifications)
        press(nvim, row(nvim, topic_id), "r")
        wait_for(
            lambda: any(
                name == PREFIX + "topicsChanged" and params["reason"] == "external"
                for name, params in other.notifications[seen:]
            )
        )
        wait_for(lambda: not (other_topic() or {"dropped": True})["dropped"])
    assert nvim.notes(ERROR) == []
