"""What goes wrong is said in Neovim, never thrown: a provider error, no server on PATH, a server
that exits at start or dies mid-turn, a buffer outside any workspace root. (The `nvim` fixture
also fails any test that left a Lua traceback in :messages.)"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import ERROR, Nvim, model_settings, setup_plugin, wait_for
from .test_chat import send, turn_done


def error_lines(nv: Nvim, buf: int) -> list[str]:
    return [line for line in nv.lines(buf) if line.startswith("> **Error:**")]


def test_a_provider_error_is_shown_in_the_chat_and_the_next_turn_works(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    stub.fail_kind("chat", "status", status=500, message="the provider is down")
    nvim.command("TopicForestChat")
    buf = send(nvim, "Why does the build fail?")
    turn_done(nvim, buf, 1)
    [shown] = error_lines(nvim, buf)
    assert "the provider is down" in shown
    [note] = nvim.notes(ERROR)
    assert note.startswith("Topic Forest: chat: ") and "the provider is down" in note
    assert "apiBase" in note  # what to check, not only what failed

    stub.script("It builds now.")
    send(nvim, "And now?")
    turn_done(nvim, buf, 2)
    assert "It builds now." in nvim.lines(buf)


def test_no_chat_model_says_how_to_set_one(nvim: Nvim, workspace: Path) -> None:
    setup_plugin(nvim, workspace)
    result, err = nvim.api("chat", "hello")
    assert result is None and err["code"] == -32003
    assert "chatModel" in err["message"] and "setup()" in err["hint"]


def test_no_server_on_path(nvim: Nvim, workspace: Path) -> None:
    setup_plugin(nvim, workspace, cmd=["topicforest-not-installed-here", "serve"])
    nvim.command("TopicForestChat")
    nvim.command("TopicForestTopics")
    notes = nvim.notes(ERROR)
    assert len(notes) == 2, notes
    for note in notes:
        assert '"topicforest-not-installed-here" is not executable or not on PATH' in note
        assert "pipx install" in note
    _, err = nvim.api("list_topics")
    assert "not on PATH" in err["message"]


def test_a_server_that_exits_at_start(nvim: Nvim, workspace: Path) -> None:
    setup_plugin(nvim, workspace, cmd=[sys.executable, "-c", "import sys; sys.exit(3)"])
    _, err = nvim.api("list_topics")
    assert err["message"] == "the server stopped (exit code 3)", err
    assert ":TopicForestLog" in err["hint"]
    nvim.command("TopicForestTopics")
    nvim.until(
        "for _, n in ipairs(_G.notes) do"
        " if n.message:find('the server stopped (exit code 3)', 1, true) then return true end end"
    )


def server_pids(nvim_pid: int) -> list[int]:
    """The `topicforest serve` processes Neovim started (its children, from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == nvim_pid and b"topicforest" in cmdline and b"serve" in cmdline:
            pids.append(int(entry.name))
    return pids


def test_a_server_killed_mid_turn(nvim: Nvim, workspace: Path, stub: ThreadedStubLLM) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    stub.fail_kind("chat", "hang")  # the reply never comes: the turn is in flight
    nvim.command("TopicForestChat")
    buf = send(nvim, "Tell me about app/db.py")
    wait_for(lambda: any("Tell me about" in str(r) for r in stub.requests))  # the model is asked
    [pid] = server_pids(int(nvim.lua("return vim.fn.getpid()")))
    os.kill(pid, signal.SIGKILL)
    turn_done(nvim, buf, 1)
    [shown] = error_lines(nvim, buf)
    assert "the server stopped (signal 9)" in shown
    assert any("the server stopped (signal 9)" in n for n in nvim.notes(ERROR))

    # the next message starts a new server, and its memory has the question stored before
    stub.script("Here it is again.")
    send(nvim, "Again, please")
    turn_done(nvim, buf, 2)
    assert "Here it is again." in nvim.lines(buf)
    history, _ = nvim.api("history")
    assert "Tell me about app/db.py" in [m["content"] for m in history["messages"]]


def test_a_buffer_outside_any_workspace(nvim: Nvim, tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    nvim.command(f"cd {loose}")
    nvim.command("TopicForestChat")
    [note] = nvim.notes(ERROR)
    assert "no workspace root" in note and "root_markers" in note
    _, err = nvim.api("render_context")
    assert "no workspace root" in err["message"]
    assert nvim.lua("return #vim.lsp.get_clients()") == 0
