"""Topics from Neovim: listed once a conversation graduates, the list's keys (preview, drop,
restore) and what the model sees next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topicforest.testing.stub_llm import ThreadedStubLLM

from ..server.conftest import CONVERSATION
from .conftest import ERROR, Nvim, model_settings, setup_plugin, wait_for


def converse(nv: Nvim, stub: ThreadedStubLLM) -> None:
    """The conversation through the Lua API (synchronous calls), until topics have formed."""
    stub.script(*[text for role, text in CONVERSATION if role == "assistant"])
    for role, text in CONVERSATION:
        if role == "user":
            result, err = nv.api("chat", text)
            assert err is None and not result["cancelled"], err
    nv.until("local r = require('topicforest').list_topics() return r and #r.topics >= 2")


def row(nv: Nvim, topic_id: int) -> int:
    """The topic list's line (1-based) showing topic `topic_id`."""
    for number, line in enumerate(nv.lines(), start=1):
        if f" #{topic_id} " in line:
            return number
    raise AssertionError(f"no row for topic {topic_id}: {nv.lines()}")


def row_dropped(nv: Nvim, topic_id: int) -> bool:
    return "dropped" in nv.lines()[row(nv, topic_id) - 1]


def press(nv: Nvim, line: int, keys: str) -> None:
    nv.lua("vim.api.nvim_win_set_cursor(0, { ..., 0 })", line)
    nv.lua("vim.api.nvim_feedkeys(vim.keycode(...), 'x', false)", keys)


def render() -> str:
    return "return require('topicforest').render_context()"


def sent_ids(context: dict[str, Any]) -> list[int]:
    return [t["id"] for t in context["topics"]]


def test_topics_listed_dropped_and_restored_from_the_list(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub, historyBudget=256))
    converse(nvim, stub)
    listed = nvim.lua("return require('topicforest').list_topics()")

    nvim.command("TopicForestTopics")
    lines = nvim.until(
        "local l = vim.api.nvim_buf_get_lines(0, 0, -1, false)"
        " return l[1]:find('tokens in the next request', 1, true) and #l >= 4 and l"
    )
    assert lines[0].startswith("Topic Forest · ")
    for topic in listed["topics"]:
        line = lines[row(nvim, topic["id"]) - 1]
        assert topic["title"][:20] in line, (topic["title"], line)
    rendered = {t["id"]: t for t in listed["rendered"]}
    assert rendered, listed
    topic_id = next(iter(rendered))
    assert f"{rendered[topic_id]['tokens']} tok" in lines[row(nvim, topic_id) - 1]

    before = nvim.lua(render())
    assert topic_id in sent_ids(before)

    # d on its row: it leaves what the model sees, and the row says so
    press(nvim, row(nvim, topic_id), "d")
    wait_for(lambda: row_dropped(nvim, topic_id))
    dropped = nvim.lua(render())
    assert topic_id not in sent_ids(dropped)
    assert dropped["tokens"] != before["tokens"]

    # r brings it back
    press(nvim, row(nvim, topic_id), "r")
    nvim.until(
        "local r = require('topicforest').render_context()"
        " for _, t in ipairs(r.topics) do if t.id == ... then return true end end",
        topic_id,
    )
    wait_for(lambda: not row_dropped(nvim, topic_id))

    # P pins it, e expands it (its originals are sent), c collapses it, P again unpins
    def topic() -> dict[str, Any]:
        listed = nvim.api("list_topics")[0]
        return next(t for t in listed["topics"] if t["id"] == topic_id)

    press(nvim, row(nvim, topic_id), "P")
    wait_for(lambda: topic()["pinned"] and "[pinned" in nvim.lines()[row(nvim, topic_id) - 1])
    press(nvim, row(nvim, topic_id), "e")
    wait_for(lambda: topic()["expanded"])
    modes = {t["id"]: t["mode"] for t in nvim.lua(render())["topics"]}
    assert modes[topic_id] == "expanded"
    wait_for(lambda: " full" in nvim.lines()[row(nvim, topic_id) - 1])
    press(nvim, row(nvim, topic_id), "c")
    wait_for(lambda: not topic()["expanded"])
    press(nvim, row(nvim, topic_id), "P")
    wait_for(lambda: not topic()["pinned"])

    # <CR> previews it in a float: its summary and its messages
    list_buf = nvim.lua("return vim.api.nvim_get_current_buf()")
    press(nvim, row(nvim, topic_id), "<CR>")
    preview = nvim.until(
        "local w = vim.api.nvim_get_current_win()"
        " return vim.api.nvim_win_get_config(w).relative ~= '' and"
        " vim.api.nvim_buf_get_lines(0, 0, -1, false)"
    )
    assert "## Summary" in preview
    assert any(line.startswith("## Source messages (") for line in preview)
    press(nvim, 1, "q")
    assert nvim.lua("return vim.api.nvim_get_current_buf()") == list_buf

    # C: what the model sees next, as renderContext says
    press(nvim, row(nvim, topic_id), "C")
    context = nvim.until(
        "local l = vim.api.nvim_buf_get_lines(0, 0, -1, false)"
        " return l[1] == '# What the model sees' and #l > 5 and l"
    )
    now = nvim.lua(render())
    assert f"**{now['tokens']} of {now['budget']} tokens**" in "\n".join(context)
    assert any(line.startswith(f"- Topic {topic_id} · ") for line in context)

    # another tab, a file of the same root: the same server serves it
    nvim.command(f"tabnew {workspace / 'app' / 'db.py'}")
    nvim.command("TopicForestChat")
    assert nvim.lua("return #require('topicforest.server').clients()") == 1
    assert nvim.notes(ERROR) == []


def test_an_unknown_topic_is_an_error_returned_and_shown_not_thrown(
    nvim: Nvim, workspace: Path
) -> None:
    setup_plugin(nvim, workspace)
    result, err = nvim.api("drop", 424242)
    assert result is None
    assert err["code"] == -32001 and "424242" in err["message"]
    assert "merged" in err["hint"]


def test_reshapes_are_said_in_the_list_and_the_preview(nvim: Nvim) -> None:
    """Topic.reshapes as the VS Code client says them: a recent split or merge among the row's
    states, every change with its time in the preview."""
    nvim.lua("package.path = vim.env.TOPICFOREST_NVIM_PLUGIN .. '/lua/?.lua;' .. package.path")
    at = 1_700_000_000
    topic = {
        "id": 7, "title": "Checkout", "summary": "s", "messageCount": 4, "sourceTokens": 10,
        "summaryTokens": 2, "pending": False, "pinned": False, "expanded": False,
        "dropped": False, "files": [],
        "reshapes": [
            {"kind": "movedIn", "otherId": 3, "otherTitle": None, "messages": 2, "at": at},
            {"kind": "splitOff", "otherId": 3, "otherTitle": "Stripe\nwebhooks", "messages": 6,
             "at": at - 60},
        ],
    }  # fmt: skip
    ui = "local ui = require('topicforest.ui') "
    assert nvim.lua(ui + "return ui.recent_reshape(...)", topic, at + 5) == "split"
    assert nvim.lua(ui + "return ui.recent_reshape(...)", topic, at + 3600) is None
    lines = nvim.lua("return require('topicforest.topics').preview_lines(..., {})", topic)
    start = lines.index("Reshaped by new messages:")
    assert lines[start + 2 : start + 4] == [
        "- 2023-11-14 22:13: 2 messages moved in from topic 3.",
        '- 2023-11-14 22:12: Split off "Stripe webhooks" (6 messages).',
    ]
