"""export → import is lossless; fork diverges without touching the original; the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from topicforest.attachments import Attachment, fit
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.store import Store, StoreError, store_path
from topicforest.store.transfer import export_memory, fork_memory, import_memory

from .conftest import sample_messages, state_of, synthetic


def filled(store: Store) -> None:
    window = store.open_window()
    for i, (role, content) in enumerate(sample_messages() + list(synthetic(60))):
        window.append(f"t{i // 50}", role, content, timestamp=50.0 + i)
        window.graduate()
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    window.drop(window.topic_ids()[0])
    window.pin(window.topic_ids()[-1])


def test_export_import_round_trip_is_lossless(tmp_path: Path) -> None:
    source = Store(tmp_path / "a.sqlite3")
    filled(source)
    sent = fit([Attachment("file", "src/app.py", "import os\n", None, "python")], 4096, len)
    with source.transaction():
        asked = source.open_window().append("t9", "user", "look [attached src/app.py]")
        source.attachments.add(asked.id, sent)
    exported = json.loads(json.dumps(export_memory(source)))  # through real JSON text
    target = Store(tmp_path / "b.sqlite3")
    window = target.open_window()
    assert import_memory(target, exported) == source.message_count()
    assert state_of(window) == state_of(source.open_window())
    assert target.attachments.sent(asked.id) == sent  # what was sent with the question too
    assert export_memory(target) == exported
    del exported["tables"]["attachments"]  # an export made before attachments were exported
    older = Store(tmp_path / "c.sqlite3")
    assert import_memory(older, exported) == source.message_count()
    assert older.attachments.sent(asked.id) == []
    with pytest.raises(StoreError, match="already holds"):
        import_memory(target, exported)


@pytest.mark.parametrize(
    "bad",
    [[], {"format": "other"}, {"format": "topicforest-memory", "schema": 99, "tables": {}}],
)
def test_import_rejects_what_is_not_an_export(tmp_path: Path, bad: object) -> None:
    target = Store(tmp_path / "b.sqlite3")
    with pytest.raises(StoreError):
        import_memory(target, bad)
    assert target.message_count() == 0


def test_import_of_a_broken_export_writes_nothing(tmp_path: Path) -> None:
    source = Store(tmp_path / "a.sqlite3")
    filled(source)
    data = export_memory(source)
    data["tables"]["roots"]["rows"].append(data["tables"]["roots"]["rows"][0])  # duplicate key
    target = Store(tmp_path / "b.sqlite3")
    with pytest.raises(StoreError, match="does not fit"):
        import_memory(target, data)
    assert target.is_empty() and target.meta_int("rev") == 0


def test_fork_diverges_without_touching_the_original(tmp_path: Path) -> None:
    original = Store(tmp_path / "a.sqlite3")
    filled(original)
    before = export_memory(original)
    fork = fork_memory(original, tmp_path / "fork" / "b.sqlite3", "/elsewhere")
    fork_window = fork.open_window()
    assert state_of(fork_window) == state_of(original.open_window())
    fork_window.append("what-if", "user", "What if we switch the invoices API to GraphQL?")
    fork_window.restore(fork_window.topic_ids()[0])
    fork_window.flush_thread("what-if")
    assert original.refresh() is False
    assert export_memory(original) == before
    assert fork.meta("workspace") == "/elsewhere"
    with pytest.raises(StoreError, match="already holds"):
        fork_memory(original, tmp_path / "fork" / "b.sqlite3")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "topicforest", *args], capture_output=True, text=True, timeout=60
    )


def test_cli_topics_export_import_fork(tmp_path: Path) -> None:
    workspace, other, forked = tmp_path / "ws", tmp_path / "ws2", tmp_path / "ws3"
    for folder in (workspace, other, forked):
        folder.mkdir()
    where = ["--store-path", str(tmp_path / "mem")]
    store = Store.for_workspace(workspace, tmp_path / "mem")
    filled(store)
    titles = [t.title for t in store.window.topics()] if store.window else []
    store.close()

    listing = cli("topics", "--workspace", str(workspace), *where)
    assert listing.returncode == 0, listing.stderr
    assert all(title in listing.stdout for title in titles)
    assert "dropped" in listing.stdout and "pinned" in listing.stdout

    dump = tmp_path / "dump.json"
    assert cli("export", "--workspace", str(workspace), *where, "-o", str(dump)).returncode == 0
    done = cli("import", str(dump), "--workspace", str(other), *where)
    assert done.returncode == 0, done.stderr
    assert (
        cli("topics", "--workspace", str(other), *where).stdout.split("\n")[:-2]
        == (listing.stdout.split("\n")[:-2])
    )
    done = cli("fork", "--workspace", str(workspace), *where, "--to", str(forked))
    assert done.returncode == 0, done.stderr
    assert store_path(forked, tmp_path / "mem").exists()

    missing = cli("topics", "--workspace", str(tmp_path), *where)
    assert missing.returncode == 1 and "no memory stored" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    failed = cli("import", str(bad), "--workspace", str(tmp_path), *where)
    assert failed.returncode == 1 and "not JSON" in failed.stderr


def test_cli_moves_a_local_memory_into_the_team_memory(tmp_path: Path, postgres: Any) -> None:
    """`export` the SQLite memory, `import --store-url` it into the repository's team memory: it
    lists the same topics, refuses a second import, and new messages get new ids."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    remote = f"git@example.com:team/{uuid.uuid4().hex}.git"  # a team memory of its own
    subprocess.run(["git", "-C", str(workspace), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(workspace), "remote", "add", "origin", remote], check=True)
    local = ["--workspace", str(workspace), "--store-path", str(tmp_path / "mem")]
    team = ["--workspace", str(workspace), "--store-url", postgres.url()]
    store = Store.for_workspace(workspace, tmp_path / "mem")
    filled(store)
    store.close()

    missing = cli("topics", *team)
    assert missing.returncode == 1 and "no team memory stored" in missing.stderr
    dump = tmp_path / "dump.json"
    assert cli("export", *local, "-o", str(dump)).returncode == 0
    done = cli("import", str(dump), *team)
    assert done.returncode == 0, done.stderr
    listed = [cli("topics", *where).stdout.splitlines() for where in (local, team)]
    assert listed[0][:-1] == listed[1][:-1] and len(listed[0]) > 3  # the last line: where
    again = cli("import", str(dump), *team)
    assert again.returncode == 1 and "already holds a memory" in again.stderr
    refused = cli("fork", *team, "--to", str(tmp_path / "copy"))
    assert refused.returncode == 1 and "export the team memory" in refused.stderr

    messages = json.loads(dump.read_text())["tables"]["messages"]
    imported = max(row[messages["columns"].index("id")] for row in messages["rows"])
    shared = Store.for_workspace(workspace, url=postgres.url())
    try:
        added = shared.open_window().append("after-import", "user", "Are ids still unique?")
        assert added.id > imported
    finally:
        shared.close()
