"""`:checkhealth topicforest`, and threads from Neovim: a new one, rename, delete, the picker."""

from __future__ import annotations

import shutil
from pathlib import Path

from topicforest import __version__
from topicforest.testing.stub_llm import ThreadedStubLLM

from .conftest import ERROR, PLUGIN, Nvim, model_settings, setup_plugin
from .test_chat import send, turn_done


def test_checkhealth_names_neovim_the_server_and_the_model(
    nvim: Nvim, workspace: Path, stub: ThreadedStubLLM
) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    nvim.command("checkhealth topicforest")
    report = "\n".join(nvim.lines())
    assert "OK Neovim 0.11.4" in report
    assert f"OK topicforest {__version__} (Python" in report
    assert "OK chat model: openai/stub-chat at " + stub.base_url in report
    assert "ERROR" not in report


def test_checkhealth_without_a_server_or_model_says_what_to_do(nvim: Nvim, workspace: Path) -> None:
    setup_plugin(nvim, workspace, cmd=["topicforest-not-installed-here", "serve"])
    nvim.command("checkhealth topicforest")
    report = "\n".join(nvim.lines())
    assert '"topicforest-not-installed-here" is not executable or not on PATH' in report
    assert "pipx install" in report
    assert "WARNING no chat model" in report


PICK = """
-- vim.ui.select / vim.ui.input answered as a user would: the item whose label has `choice`
local choices = ...
vim.ui.select = function(items, opts, on_choice)
  local want = table.remove(choices, 1)
  for i, item in ipairs(items) do
    local label = opts.format_item and opts.format_item(item) or item
    if label:find(want, 1, true) then return on_choice(item, i) end
  end
  error('no item ' .. want)
end
vim.ui.input = function(_, on_confirm) on_confirm(table.remove(choices, 1)) end
"""


def test_threads_new_rename_and_delete(nvim: Nvim, workspace: Path, stub: ThreadedStubLLM) -> None:
    setup_plugin(nvim, workspace, model_settings(stub))
    nvim.command("TopicForestChat")
    buf = send(nvim, "First thread: the lexer")
    turn_done(nvim, buf, 1)
    first = nvim.lua("return require('topicforest').thread()")

    # + New thread: an empty chat, then a second conversation
    nvim.lua(PICK, ["+ New thread"])
    nvim.command("TopicForestThreads")
    nvim.until(
        "return require('topicforest').thread() ~= ..."
        " and not vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), select(2, ...))",
        first,
        "First thread: the lexer",
    )
    send(nvim, "Second thread: the parser")
    turn_done(nvim, buf, 1)
    second = nvim.lua("return require('topicforest').thread()")
    assert second != first and "First thread: the lexer" not in nvim.lines(buf)

    # rename the first from the picker
    nvim.lua(PICK, ["First thread", "Rename", "Lexer talk"])
    nvim.command("TopicForestThreads")
    nvim.until(
        "local r = require('topicforest').threads()"
        " for _, t in ipairs(r.threads) do if t.title == 'Lexer talk' then return true end end"
    )
    # open it: the chat shows its messages
    nvim.lua(PICK, ["Lexer talk", "Open"])
    nvim.command("TopicForestThreads")
    nvim.until(
        "return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), ...)",
        "First thread: the lexer",
    )
    # delete it: gone from the store, and the chat moves to a new thread
    nvim.lua(PICK, ["Lexer talk", "Delete", "Delete"])
    nvim.command("TopicForestThreads")
    nvim.until(
        "local r = require('topicforest').threads()"
        " return #r.threads == 1 and r.threads[1].threadId == ...",
        second,
    )
    nvim.until("return require('topicforest').thread() ~= ...", first)
    assert nvim.notes(ERROR) == []


def test_help_tags_build_and_open(nvim: Nvim, tmp_path: Path) -> None:
    # a copy: :helptags writes a tags file next to the help, never into the checkout
    doc = tmp_path / "help" / "doc"
    doc.mkdir(parents=True)
    shutil.copy(PLUGIN / "doc" / "topicforest.txt", doc)
    nvim.lua("vim.opt.runtimepath:append(...)", str(doc.parent))
    nvim.command(f"helptags {doc}")
    for tag in ("topicforest", "topicforest-api", ":TopicForestAsk", "topicforest-install"):
        nvim.command(f"help {tag}")
        assert nvim.lua("return vim.bo.filetype") == "help"
        assert nvim.lua("return vim.fn.expand('%:t')") == "topicforest.txt"
