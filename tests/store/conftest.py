"""Store test helpers: realistic conversations and a full dump of a window's state."""

from __future__ import annotations

import contextlib
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from topicforest.engine.centroids import Centroid
from topicforest.engine.window import ContextWindow
from topicforest.store import Store

SUBJECTS = [
    ("server/api/invoices.py", "create_invoice", "postgres", "alembic migration due_date"),
    ("web/src/InvoiceTable.tsx", "useInvoiceQuery", "react", "pagination sorting columns"),
    ("infra/docker-compose.yml", "pg_isready", "docker", "healthcheck port 5433 volume"),
    ("tests/test_billing.py", "test_late_fee", "pytest", "fixture freezegun tmp_path"),
    ("ml/train.py", "build_dataloader", "torch", "batch_size learning_rate cuda"),
    ("auth/session.py", "refresh_token", "jwt", "expiry cookie samesite csrf"),
]


def sample_messages() -> list[tuple[str, str]]:
    """The bundled sample conversation as (role, content) pairs."""
    text = resources.files("topicforest").joinpath("data/sample_conversation.json").read_text()
    return [(m["role"], m["content"]) for m in json.loads(text)["messages"]]


def synthetic(count: int, seed: int = 7) -> Iterator[tuple[str, str]]:
    """`count` user/assistant messages about a handful of code subjects, topic by topic."""
    rng = random.Random(seed)
    for i in range(count // 2):
        path, symbol, library, words = SUBJECTS[(i // 12) % len(SUBJECTS)]
        extra = " ".join(rng.sample(words.split(), 2))
        yield "user", f"In {path}, {symbol} fails with {library} ({extra}); turn {i}?"
        yield "assistant", f"Change {symbol} in {path}: the {library} {extra} setting, step {i}."


def state_of(window: ContextWindow) -> dict[str, Any]:
    """Everything a restart must restore, in comparable form."""
    forest = window.forest
    return {
        # less the reshape notes: what a window saw happen, not stored (engine/reshaping.py)
        "topics": [{**asdict(t), "reshapes": ()} for t in window.topics()],
        "roots": {
            r: (forest.root(r).order, forest.members(r), forest.version(r), forest.root(r).dropped)
            for r in forest.roots()
        },
        "next_order": forest._next_order,
        "summaries": {
            r: (s.text, s.version, sorted(s.covered), s.tokens, s.model)
            for r, s in window.summaries.items()
        },
        "centroids": {r: centroid_state(c) for r, c in window.index.centroids.items()},
        "df": window.embedder.df,
        "idf": dict(window.embedder.idf),
        "n_docs": window.embedder.n_docs,
        "pinned": window.pinned,
        "expanded": window.expanded,
        "pending": {m: dict(t) for m, t in window.pending_terms.items()},
        "hot": {t: [m.id for m in zone] for t, zone in window.hot.items()},
        "hot_tokens": dict(window.hot_tokens),
        "last_planted": window._last_planted,
        "fallback": window.fallback_summary,
        "dirty": window.dirty_topic_ids(),
    }


def centroid_state(c: Centroid) -> tuple[object, ...]:
    files, symbols = list(c.files.items()), list(c.symbols.items())
    return (dict(c.terms), files, symbols, c.tokens, c.first_time, c.last_time)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "memory.sqlite3"


class Memory:
    """One memory on one backend; `open()` gives another Store on it, as another window or
    process would have. `spec` names it for a worker process (a path, or URL#identity)."""

    def __init__(self, kind: str, db_path: Path, url: str | None = None) -> None:
        self.kind = kind
        self.db_path = db_path
        self.url = url
        self.identity = f"example.com/team/{uuid.uuid4().hex}"  # a fresh memory per test
        self.opened: list[Store] = []

    @property
    def spec(self) -> str:
        return str(self.db_path) if self.url is None else f"{self.url}#{self.identity}"

    def open(self, **kwargs: Any) -> Store:
        store = open_spec(self.spec, **kwargs)
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            with contextlib.suppress(Exception):
                store.close()


def open_spec(spec: str, **kwargs: Any) -> Store:
    """A Store on `spec`: a SQLite path, or `postgresql://…#identity`."""
    if spec.startswith("postgresql://"):
        from topicforest.store.postgres import PostgresBackend

        url, identity = spec.split("#", 1)
        return Store(PostgresBackend(url, identity), **kwargs)
    return Store(spec, **kwargs)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """The backend a test runs on, as `topicForest.storeUrl` says it: None for the embedded
    SQLite file, else the URL of a real PostgreSQL (the session's `postgres`)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres").url()
    return url


@pytest.fixture
def memory(store_url: str | None, db_path: Path) -> Iterator[Memory]:
    """The same test on both backends: the embedded SQLite file and a real PostgreSQL."""
    opened = Memory("sqlite" if store_url is None else "postgresql", db_path, store_url)
    yield opened
    opened.close()


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    s = Store(db_path)
    yield s
    s.close()
