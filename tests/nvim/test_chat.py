"""The chat buffer: a reply streamed in through the real server and the stub model."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import ERROR, Nvim, model_settings, setup_plugin, wait_for

# Records the chat buffer's last line after each chatDelta (the plugin's own listener, which
# writes the delta, comes first).
WATCH = """
local buf = ...
_G.states = {}
table.insert(require('topicforest.server').listeners.chatDelta, function()
  local n = vim.api.nvim_buf_line_count(buf)
  table.insert(_G.states, vim.api.nvim_buf_get_lines(buf, n - 1, n, false)[1])
end)
"""


def send(nv: Nvim, text: str) -> int:
    """Types `text` under the chat's last "## You" and presses <CR> in normal mode."""
    buf = int(nv.lua("return vim.api.nvim_get_current_buf()"))
    nv.until("local l = vim.api.nvim_buf_get_lines(0, -3, -1, false) return l[1] == '## You'")
    nv.lua("vim.api.nvim_buf_set_lines(0, -2, -1, false, vim.split(..., '\\n'))", text)
    nv.lua("vim.cmd('stopinsert'); vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)")
    return buf


def turn_done(nv: Nvim, buf: int, turns: int) -> None:
    """Waits until the chat shows `turns` replies and a fresh prompt after the last."""
    nv.until(
        "local l = vim.api.nvim_buf_get_lines(..., 0, -1, false)"
        " local n = 0 for _, x in ipairs(l) do if x == '## Topic Forest' then n = n + 1 end end"
        " return n == select(2, ...) and l[#l - 1] == '## You' and vim.bo[...].modifiable",
        buf,
        turns,
    )


def test_a_reply_streams_into_the_chat_buffer(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    stub.script(
        "Set busy_timeout=5000 in app/db.py next to journal_mode=WAL; it waits for the lock."
    )
    setup_plugin(nvim, workspace, model_settings(stub))
    nvim.command(f"edit {workspace / 'app' / 'db.py'}")
    nvim.command("TopicForestChat")
    assert nvim.lua("return vim.bo.filetype") == "markdown"
    buf = int(nvim.lua("return vim.api.nvim_get_current_buf()"))
    nvim.lua(WATCH, buf)
    send(nvim, "The SQLite database locks when two writers commit: what should app/db.py set?")
    turn_done(nvim, buf, 1)

    lines = nvim.lines(buf)
    reply = lines[lines.index("## Topic Forest") + 1]
    assert (
        reply
        == "Set busy_timeout=5000 in app/db.py next to journal_mode=WAL; it waits for the lock."
    )
    # streamed: after each delta the buffer held a longer part of the reply, the whole at last
    states = nvim.lua("return _G.states")
    assert len(states) >= 2 and states[-1] == reply, states
    assert all(reply.startswith(s) and len(s) < len(t) for s, t in pairwise(states)), states
    # the model got the question with the active file, and the store has the turn
    asked = stub.requests[-1]
    assert "two writers commit" in str(asked)
    history = nvim.lua("return require('topicforest').history()")
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert history["messages"][1]["content"] == reply
    assert nvim.notes(ERROR) == []

    # the chat reopened later shows the thread from the store
    nvim.command("bwipeout!")
    nvim.command("TopicForestChat")
    nvim.until("return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), ...)", reply)


def test_ctrl_c_stops_a_reply_and_the_chat_says_so(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    stub.fail_kind("chat", "hang")  # no reply comes until it is stopped
    nvim.command("TopicForestChat")
    buf = send(nvim, "A question that takes long to answer")
    wait_for(lambda: any("takes long" in str(r) for r in stub.requests))
    nvim.lua("vim.api.nvim_feedkeys(vim.keycode('<C-c>'), 'x', false)")
    turn_done(nvim, buf, 1)
    lines = nvim.lines(buf)
    assert "_(stopped)_" in lines and not any(line.startswith("> **Error") for line in lines)
    assert nvim.notes(ERROR) == []
    history, _ = nvim.api("history")
    assert [m["content"] for m in history["messages"]] == ["A question that takes long to answer"]


def test_ask_sends_the_selected_lines_as_an_attachment(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    nvim.command(f"edit {workspace / 'app' / 'db.py'}")
    nvim.command("4,5TopicForestAsk Why is there no timeout here?")
    buf = int(nvim.lua("return vim.api.nvim_get_current_buf()"))
    turn_done(nvim, buf, 1)
    assert "[attached app/db.py:4-5]" in nvim.lines(buf)
    sent = str(stub.requests[-1])
    assert "### app/db.py:4-5 (selection, python)" in sent
    assert "return sqlite3.connect(path)" in sent
    history, _ = nvim.api("history")
    [ref] = history["messages"][0]["attachments"]
    assert ref["path"] == "app/db.py" and ref["range"] == {"startLine": 3, "endLine": 4}
    assert ref["language"] == "python" and not ref["truncated"]


def test_setup_again_reaches_the_running_server(nvim: Nvim, workspace: Path) -> None:
    setup_plugin(nvim, workspace, {"historyBudget": 512})
    assert nvim.api("list_topics")[0]["budget"] == 512
    setup_plugin(nvim, workspace, {"historyBudget": 1024})
    wait_for(lambda: nvim.api("list_topics")[0]["budget"] == 1024)
    assert nvim.lua("return #vim.lsp.get_clients({ name = 'topicforest' })") == 1


def test_restart_starts_a_new_server_with_the_same_memory(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    _, err = nvim.api("chat", "Remember the port 8443")
    assert err is None
    ids = "return vim.tbl_map(function(c) return c.id end, require('topicforest.server').clients())"
    [first] = nvim.lua(ids)
    nvim.command("TopicForestRestart")
    [second] = nvim.lua(ids)  # the first has exited
    assert second != first
    history, _ = nvim.api("history")
    assert history["messages"][0]["content"] == "Remember the port 8443"


def test_a_you_heading_in_a_message_is_no_prompt(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    stub.script("A heading a model might write:\n## You\nthen more text.", "Fine.", "Ok.")
    setup_plugin(nvim, workspace, model_settings(stub))
    nvim.command("TopicForestChat")
    buf = send(nvim, "first")
    turn_done(nvim, buf, 1)
    # typed in the prompt, a "## You" line is part of the message
    send(nvim, "my notes say\n## You\nand then this")
    turn_done(nvim, buf, 2)
    # reloaded from the store, the stored "## You" lines stay in their messages
    nvim.command("bwipeout!")
    nvim.command("TopicForestChat")
    buf = send(nvim, "third")
    turn_done(nvim, buf, 3)
    history, _ = nvim.api("history")
    assert [m["content"] for m in history["messages"] if m["role"] == "user"] == [
        "first",
        "my notes say\n## You\nand then this",
        "third",
    ]
