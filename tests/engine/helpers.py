"""Small synthetic coding conversations for engine tests."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import TypeVar

from topicforest.engine import ContextWindow, Message, WindowConfig
from topicforest.engine.messages import InMemoryMessageLog
from topicforest.engine.state import PERSISTED
from topicforest.engine.tokens import estimate_tokens

TOPICS = {
    "loader": (
        "The DataLoader in data/loader.py::build_loader uses num_workers={n} and "
        "pin_memory; the collate function pad_collate pads defect boxes for batch {n}.",
        "Set persistent_workers=True in build_loader and prefetch_factor={n} so the GPU "
        "stays busy.",
    ),
    "docker": (
        "The Dockerfile base image nvidia/cuda:12.1.1-runtime needs shm-size {n}g for docker run.",
        "Add a .dockerignore for outputs/ and use a multi-stage Dockerfile; image is {n} GB now.",
    ),
    "auth": (
        "The auth token refresh in src/auth/refreshAccessToken.ts races when {n} tabs are open.",
        "Guard refreshAccessToken with a shared refreshPromise so only one POST "
        "/auth/refresh runs.",
    ),
}


T = TypeVar("T")


def finished(steps: Generator[None, None, T]) -> T:
    """What a re-clustering step generator returns, run to its end (upkeep runs it in slices)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


class CountingLog(InMemoryMessageLog):
    """The engine's log, remembering which messages were read, and in how many reads (a store
    reads them from disk, or from a database server: a round trip each)."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []
        self.reads = 0

    def get_many(self, message_ids: Iterable[int]) -> list[Message]:
        ids = list(message_ids)
        self.read += ids
        self.reads += 1
        return super().get_many(ids)


# Exchanges on another subject: what a test's own exchanges sit among.
UNRELATED = [
    ("The storefront webpack build is slow", "Turn on the filesystem cache in webpack.config.js."),
    ("And the bundle?", "Split vendor chunks and lazy-load the checkout route."),
]


def replayed(exchanges: Iterable[tuple[str, str]], budget: int = 2048) -> ContextWindow:
    """A window whose thread "t" said `exchanges` (question, answer) and graduated them all."""
    window = ContextWindow(WindowConfig(history_budget=budget))
    for question, answer in exchanges:
        window.append("t", "user", question)
        window.append("t", "assistant", answer)
    window.flush_thread("t")
    return window


def message(id_: int, role: str, text: str) -> Message:
    """A message of thread "t", its tokens estimated."""
    return Message(id_, "t", role, text, 0.0, estimate_tokens(text))


def exchange(topic: str, n: int) -> tuple[str, str]:
    user, reply = TOPICS[topic]
    return user.format(n=n), reply.format(n=n)


def filled_window(budget: int = 1024, rounds: int = 6, **config: object) -> ContextWindow:
    window = ContextWindow(WindowConfig(history_budget=budget, **config))  # type: ignore[arg-type]
    t = 0.0
    for i in range(rounds):
        for topic in TOPICS:
            user, reply = exchange(topic, i + 2)
            window.append("main", "user", user, timestamp=t)
            window.append("main", "assistant", reply, timestamp=t + 1)
            t += 2
            window.graduate()
    return window


def persisted(window: ContextWindow) -> dict[str, object]:
    """Every value `PERSISTED` lists, from the window's state view, in comparable form: a
    record by its persisted fields, a mapping as a dict."""
    state = window.state()
    values: dict[str, object] = {}
    for name, spec in PERSISTED.items():
        value = getattr(state, name)
        if spec.record is None:
            values[name] = dict(value) if isinstance(value, Mapping) else value
        else:
            values[name] = {
                key: {field: _plain(getattr(record, field)) for field in spec.fields}
                for key, record in value.items()
            }
    return values


def _plain(value: object) -> object:
    return list(value) if isinstance(value, list) else value
