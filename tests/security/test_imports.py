"""An export file is untrusted input: an inconsistent one is refused before anything is written
(imported, it answered every later chat turn with an internal error, on a team memory
everyone's), and a hostile one gets a one-line error from the CLI, not a traceback."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.store.test_transfer import filled
from topicforest.store import Store, StoreError
from topicforest.store.transfer import export_memory, import_memory


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = Store(tmp_path_factory.mktemp("source") / "a.sqlite3")
    filled(store)
    data = export_memory(store)
    store.close()
    return data


def rows(data: dict[str, Any], table: str) -> tuple[dict[str, int], list[list[Any]]]:
    entry = data["tables"][table]
    return {c: i for i, c in enumerate(entry["columns"])}, entry["rows"]


def topic_names_nothing(data: dict[str, Any]) -> None:
    column, messages = rows(data, "messages")
    member = next(r for r in messages if r[column["root_id"]] not in (None, r[0]))
    member[column["root_id"]] = 999_999


def summary_covers_nothing(data: dict[str, Any]) -> None:
    column, summaries = rows(data, "summaries")
    covered = column["covered"]
    summaries[0][covered] = json.dumps([*json.loads(summaries[0][covered]), 999_999])


def pending_names_nothing(data: dict[str, Any]) -> None:
    data["tables"]["pending"]["rows"].append([999_999, "{}", 1])


def topic_without_members(data: dict[str, Any]) -> None:
    column, messages = rows(data, "messages")
    hot = next(r for r in messages if r[column["root_id"]] is None)
    data["tables"]["roots"]["rows"].append([hot[0], 99, 1, 1, 0, 0, 0, 1])


TAMPERS: list[Callable[[dict[str, Any]], None]] = [
    topic_names_nothing,
    summary_covers_nothing,
    pending_names_nothing,
    topic_without_members,
]


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda f: f.__name__)
def test_an_inconsistent_export_is_refused_and_nothing_written(
    tmp_path: Path, export: dict[str, Any], tamper: Callable[[dict[str, Any]], None]
) -> None:
    data = copy.deepcopy(export)
    tamper(data)
    target = Store(tmp_path / "b.sqlite3")
    with pytest.raises(StoreError, match=r"no such|does not match"):
        import_memory(target, data)
    assert target.is_empty() and target.meta_int("rev") == 0


def test_a_consistent_export_imports_and_serves_turns(
    tmp_path: Path, export: dict[str, Any]
) -> None:
    target = Store(tmp_path / "b.sqlite3")
    window = target.open_window()
    assert import_memory(target, copy.deepcopy(export)) == len(export["tables"]["messages"]["rows"])
    window.append("t0", "user", "And the pool size again?")
    assert window.render(query="pool size", thread_id="t0").messages


def cli_import(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    dump = tmp_path / "dump.json"
    dump.write_text(text)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    where = ["--workspace", str(workspace), "--store-path", str(tmp_path / "mem")]
    return subprocess.run(
        [sys.executable, "-m", "topicforest", "import", str(dump), *where],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_refuses_a_hostile_export_in_one_line(
    tmp_path: Path, export: dict[str, Any]
) -> None:
    deep = cli_import(tmp_path, "[" * 100_000 + "]" * 100_000)
    data = copy.deepcopy(export)
    rows(data, "messages")[1][0][0] = 2**63  # an id no database integer holds
    huge = cli_import(tmp_path, json.dumps(data))
    for done in (deep, huge):
        assert done.returncode == 1
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "nested too deeply" in deep.stderr and "out of range" in huge.stderr
