"""Render is a function of the window's view: it changes no window state (its digest cache
aside) and returns what it found out; the window's own `render` records the wish for a flat
summary that the resolver acts on."""

from __future__ import annotations

import asyncio

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.render import render
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer

from .helpers import persisted

SUBJECTS = ["alpha", "bravo", "charlie", "delta"]


def crowded_window() -> ContextWindow:
    """A topic whose header alone leaves no room in a small budget: none fits."""
    window = ContextWindow(WindowConfig(history_budget=128))
    for s in SUBJECTS:
        path = f"services/{s}_gateway/handlers/{s}_gateway_request_payload_schema_validator.py"
        window.append("t", "user", f"In {path} the {s}_validate_payload_schema fails " * 3)
        window.append("t", "assistant", f"Fix {s}_validate_payload_schema in {path} " * 3)
    window.flush_thread("t")
    return window


def test_render_changes_no_window_state_and_returns_the_fallback_wish() -> None:
    window = crowded_window()
    before = persisted(window)
    rendered = render(window, query="validator")
    assert rendered.fallback and not rendered.topics  # topics exist, none fitted
    assert not window.wants_fallback  # render itself records nothing on the window
    assert persisted(window) == before


def test_the_windows_render_asks_the_resolver_for_a_flat_summary() -> None:
    window = crowded_window()
    assert window.render().fallback
    assert window.wants_fallback
    asyncio.run(resolve_round(window, ExtractiveSummarizer()))
    assert not window.wants_fallback and window.fallback_summary
