"""The engine state contract (engine/state.py) against both stores: every field `PERSISTED`
lists survives a save and a load, whole (a new window) and as a delta (a window that was open),
and the list names every field of the state and of its records."""

from __future__ import annotations

import asyncio

from topicforest.engine.resolver import refresh_fallback, resolve_all
from topicforest.engine.state import NOT_PERSISTED, PERSISTED, WindowState, field_types
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.window import ContextWindow
from topicforest.store import Store

from ..engine.helpers import persisted
from .conftest import Memory, sample_messages, synthetic


def feed(window: ContextWindow, messages: list[tuple[str, str]], first: float = 1000.0) -> None:
    for i, (role, content) in enumerate(messages):
        window.append(f"thread-{(i // 8) % 2}", role, content, timestamp=first + i)
        window.graduate()


def exercised(values: dict[str, object]) -> list[str]:
    """The persisted fields no value in `values` sets (so a round trip would not test them)."""
    missing = []
    for name, spec in PERSISTED.items():
        value = values[name]
        if spec.record is None:
            missing += [] if value else [name]
            continue
        assert isinstance(value, dict)
        missing += [
            f"{name}.{field}"
            for field in spec.fields
            if not any(record[field] for record in value.values())
        ]
    return missing


def test_every_persisted_field_round_trips(memory: Memory) -> None:
    writer: Store = memory.open()
    window = writer.open_window()
    feed(window, sample_messages() + list(synthetic(120)))
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    feed(window, list(synthetic(16, seed=3)), first=2000.0)  # members no summary covers yet
    ids = window.topic_ids()
    window.drop(ids[0])
    window.pin(ids[1])
    window.expand(ids[2])
    asyncio.run(refresh_fallback(window, ExtractiveSummarizer()))  # committed on its own
    written = persisted(window)
    assert exercised(written) == []

    reader = memory.open().open_window()  # a whole load
    assert persisted(reader) == written

    feed(window, list(synthetic(40, seed=5)), first=3000.0)  # then deltas: grown topics,
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))  # new summaries and IDF,
    window.pin(ids[1], False)  # flags changed back
    window.restore(ids[0])
    window.set_fallback_summary(None)
    assert persisted(window) != written
    assert reader.store.refresh()
    assert persisted(reader) == persisted(window)


def test_persisted_names_every_field_of_the_state_and_its_records() -> None:
    state_fields = set(field_types(WindowState))
    assert set(PERSISTED) | set(NOT_PERSISTED) == state_fields
    assert not set(PERSISTED) & set(NOT_PERSISTED)
    for name, spec in PERSISTED.items():
        if spec.record is None:
            assert not spec.fields and not spec.derived, name
            continue
        record_fields = set(field_types(spec.record))
        assert set(spec.fields) | set(spec.derived) == record_fields, name
        assert not set(spec.fields) & set(spec.derived), name
