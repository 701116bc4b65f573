"""Why a topic matches a query (engine/matches.py): named files and symbols, answering passages."""

from __future__ import annotations

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.embedding import extract_terms
from topicforest.engine.matches import matches, named


def terms(query: str) -> set[str]:
    return set(extract_terms(query))


def test_a_file_or_symbol_is_named_whole_by_its_name_or_by_all_its_parts() -> None:
    assert named("store/db.py", terms("why does db.py lock?"))
    assert named("store/database.py", terms("the database module"))
    assert named("web/UserTable.tsx", terms("user table re-renders"))
    assert named("busy_timeout", terms("what busy timeout value"))
    assert not named("busy_timeout", terms("a timeout in the tests"))
    assert not named("web/UserTable.tsx", terms("the user list"))


def test_passages_come_from_the_topic_and_answer_the_query() -> None:
    window = ContextWindow(WindowConfig(history_budget=256))
    window.append("t1", "user", "Which port does the metrics exporter in exporter.py use?")
    window.append("t1", "assistant", "It listens on port 9464. Restart it after changing the port.")
    window.append("t1", "user", "And the React UserTable.tsx flickers on every keystroke.")
    window.append("t1", "assistant", "Memoize the rows in UserTable.tsx with useMemo.")
    window.flush_thread("t1")
    roots = window.forest.live_roots()
    found = matches(window, "metrics exporter port", roots)
    passages = [p for m in found.values() for p in m.passages]
    assert any("9464" in p.text for p in passages)
    holding = next(r for r, m in found.items() if any("9464" in p.text for p in m.passages))
    assert "exporter.py" in found[holding].files
    assert all(len(m.passages) <= 2 for m in found.values())
    assert matches(window, "zzz unrelated", roots) == {r: found[r].__class__() for r in roots}
