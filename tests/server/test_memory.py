"""WorkspaceMemory without a server: background upkeep, events, and a close that never hangs."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from topicforest.engine.state import StateDelta
from topicforest.engine.window import ContextWindow
from topicforest.testing.stub_llm import StubLLM
from topicforest.workspace.events import ProgressStage
from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.settings import Settings
from topicforest.workspace.upkeep import Upkeep

from .conftest import SAMPLE


class Recorder:
    def __init__(self) -> None:
        self.changes: list[tuple[str, list[int] | None]] = []
        self.progress: list[ProgressStage] = []

    def topics_changed(self, key: str, reason: str, ids: list[int] | None) -> None:
        self.changes.append((reason, ids))

    def summarizing(self, key: str, stage: ProgressStage, message: str, percentage: int) -> None:
        self.progress.append(stage)

    def threads_changed(self, key: str, thread_id: str | None, appended: list[str]) -> None:
        self.changes.append(("threads", None))


def busy_memory(listener: Recorder | None = None) -> WorkspaceMemory:
    """A started memory with 30 sample messages, whose quiet spells are a fraction of a second."""
    memory = WorkspaceMemory("k", Settings(history_budget=512), listener=listener, persist=False)
    memory.idle_seconds = 0.05
    memory.settle_seconds = 0.2
    memory.start()
    for role, text in SAMPLE[:30]:
        memory.append("t", role, text)
    return memory


async def test_upkeep_graduates_and_summarizes_in_the_background() -> None:
    events = Recorder()
    memory = busy_memory(events)
    try:
        assert memory.window.dirty_topic_ids() == []  # nothing graduates inside append

        async def settled() -> None:  # summaries applied, and the progress report closed
            while (
                not memory.topics()
                or memory.window.dirty_topic_ids()
                or events.progress[-1:] != ["end"]
            ):
                await asyncio.sleep(0.01)

        await asyncio.wait_for(settled(), 120)  # a hang guard: a loaded machine is slow
        assert all(t.summary for t in memory.topics())
        reasons = {reason for reason, _ in events.changes}
        assert {"graduated", "summarized"} <= reasons
        assert events.progress[0] == "begin" and events.progress[-1] == "end"
        assert [m.content for m in memory.history("t")] == [text for _, text in SAMPLE[:30]]
    finally:
        await memory.close()


async def test_key_lines_are_ranked_when_the_user_pauses_not_after_every_change() -> None:
    """Ranking a big topic's key lines costs milliseconds in every window of a team, and the
    next graduation makes it stale: upkeep collects lines after each change, ranks when idle."""
    memory = WorkspaceMemory("k", Settings(history_budget=512), persist=False)
    try:
        for role, text in SAMPLE[:40]:
            memory.append("t", role, text, wake=False)
        await memory.maintain()
        window = memory.window
        assert window.topic_ids() and all(
            window.key_lines(r) is not None for r in window.topic_ids()
        )
        assert not window.key_lines_ranked()
        await memory.maintain(idle=True)
        assert window.key_lines_ranked()
    finally:
        await memory.close()


async def test_close_never_hangs_whatever_the_loop_was_doing() -> None:
    # Regression: on Python 3.11 a cancel landing as `wait_for` finished was swallowed and close()
    # waited forever. Close at many points of the upkeep cycle.
    for i in range(100):
        memory = WorkspaceMemory("k", Settings(history_budget=256), persist=False)
        memory.idle_seconds = 0.001
        memory.start()
        memory.append("t", "user", f"store/db.py uses sqlite WAL, attempt {i}")
        await asyncio.sleep(0.0005 * (i % 7))
        await asyncio.wait_for(memory.close(), 2)
        assert not memory.upkeep.running


async def test_the_next_render_follows_every_change() -> None:
    memory = busy_memory()
    thread = memory.session.own_threads[0]
    try:

        def fresh() -> bool:
            plain, of_thread = memory.next_render(), memory.next_render(thread)
            return plain == memory.render() and of_thread == memory.render(thread_id=thread)

        await asyncio.sleep(0)
        while not memory.topics() or memory.window.dirty_topic_ids():
            assert fresh()
            await asyncio.sleep(0.01)
        assert fresh()
        first = memory.topics()[0].id
        memory.drop(first)
        assert fresh()
        memory.restore(first)
        assert fresh()
        memory.pin(first)
        assert fresh()
        memory.expand(first)
        assert fresh()
        memory.active_file = "app/middleware/ratelimit.py"
        assert fresh()
        memory.configure(Settings(history_budget=1024))
        assert fresh()
    finally:
        await memory.close()


async def test_a_chat_turn_sends_before_it_fsyncs_and_acknowledges_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_fsyncs: list[float] = []  # fsyncs that held the event loop up
    loop_thread = threading.get_ident()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if threading.get_ident() == loop_thread:
            loop_fsyncs.append(time.time())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    async with StubLLM() as stub:
        settings = Settings(chat_model="openai/c", api_base=stub.base_url, store_path=str(tmp_path))
        memory = WorkspaceMemory(tmp_path.as_uri(), settings)
        memory.start()
        try:
            await memory.chat("t", "1", "warm up: the first turn creates the WAL")
            received = time.time()
            outcome = await memory.chat("t", "2", "Where is parse_config defined?")
            store = memory.binding.store if memory.binding else None
            assert store is not None and store._synced == store._commits  # acked means on disk
            # Nothing held the loop on an fsync between the question and the request going out;
            # the question's own fsync overlapped the model call, in a worker thread.
            sent = stub.requests[-1].started
            assert not [t for t in loop_fsyncs if received <= t < sent]
            assert [m.id for m in memory.history("t")][-2:] == [
                outcome.user_message.id,
                outcome.reply_message.id if outcome.reply_message else -1,
            ]
        finally:
            await memory.close()


async def test_upkeep_never_starts_while_a_turn_is_sending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[bool] = []  # for each upkeep round: was every turn's request out?
    real_maintain = Upkeep.maintain

    async def maintain(self: Upkeep, **kwargs: bool) -> None:
        starts.append(self.gate.is_open)
        await real_maintain(self, **kwargs)

    monkeypatch.setattr(Upkeep, "maintain", maintain)
    async with StubLLM(chunks=3, chunk_latency=0.005) as stub:
        settings = Settings(chat_model="openai/c", api_base=stub.base_url, history_budget=512)
        memory = WorkspaceMemory("k", settings, persist=False)
        memory.start()
        try:
            for wave in range(4):  # turns overlap: some stream (and wake upkeep) while others send
                await asyncio.gather(
                    *(
                        memory.chat(f"t{i}", f"{wave}-{i}", text)
                        for i, (_, text) in enumerate(SAMPLE[wave * 6 : wave * 6 + 6])
                    )
                )
            await asyncio.sleep(0.1)
        finally:
            await memory.close()
    assert starts and all(starts)


async def test_upkeep_goes_on_while_a_turn_hangs_before_sending() -> None:
    """Upkeep waits for a turn's request to leave, but a model endpoint that never accepts the
    connection holds it back only briefly: topics keep forming while that turn hangs."""
    with socket.socket() as endpoint:
        endpoint.bind(("127.0.0.1", 0))
        endpoint.listen(0)
        port = endpoint.getsockname()[1]
        queued = [socket.socket() for _ in range(4)]  # fill its accept queue: connects now hang
        for client in queued:
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
        settings = Settings(
            chat_model="openai/c", api_base=f"http://127.0.0.1:{port}/v1", history_budget=512
        )
        memory = WorkspaceMemory("k", settings, persist=False)
        memory.start()
        turn = asyncio.create_task(memory.chat("t", "1", "Where is parse_config defined?"))
        try:
            await asyncio.sleep(0.3)
            assert not turn.done() and not memory.gate.is_open  # stuck connecting
            for role, text in SAMPLE[:30]:
                memory.append("u", role, text)  # wakes upkeep, which has graduating to do
            for _ in range(100):
                if memory.window.forest.live_roots():
                    break
                await asyncio.sleep(0.05)
            assert memory.window.forest.live_roots()  # topics formed within seconds
            assert not turn.done()  # while the turn still hangs
        finally:
            turn.cancel()
            await memory.close()
            for client in queued:
                client.close()


async def test_renders_are_prepared_after_a_reload_before_anyone_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another window's commit, once loaded, is prepared for the next render before the loop
    can run a turn (or the client hears of it): a turn that came first paid for it."""
    events: list[tuple[str, int]] = []  # (what, id of the window), in order
    real_apply, real_prepare = ContextWindow.apply, ContextWindow.prepare_render

    def apply(self: ContextWindow, delta: StateDelta) -> None:
        events.append(("loaded", id(self)))
        real_apply(self, delta)

    def prepare_render(self: ContextWindow) -> None:
        events.append(("prepared", id(self)))
        real_prepare(self)

    monkeypatch.setattr(ContextWindow, "apply", apply)
    monkeypatch.setattr(ContextWindow, "prepare_render", prepare_render)

    class Listener(Recorder):
        def topics_changed(self, key: str, reason: str, ids: list[int] | None) -> None:
            if reason == "external":
                events.append(("told", id(b.window)))

    settings = Settings(history_budget=512, store_path=str(tmp_path))
    a = WorkspaceMemory(tmp_path.as_uri(), settings)
    b = WorkspaceMemory(tmp_path.as_uri(), settings, listener=Listener())
    a.start()
    b.start()
    try:
        for role, text in SAMPLE[:30]:
            a.append("t", role, text)
        async with asyncio.timeout(120):
            while len(b.history("t")) < 30 or ("told", id(b.window)) not in events:
                await asyncio.sleep(0.05)
    finally:
        await a.close()
        await b.close()
    ours = [what for what, window in events if window == id(b.window)]
    told = [i for i, what in enumerate(ours) if what == "told"]
    assert told
    for i in told:  # the last load before each telling was prepared for before it
        loaded = max(j for j in range(i) if ours[j] == "loaded")
        assert "prepared" in ours[loaded:i], ours


async def test_an_early_answers_refresh_leaves_the_preparation_to_upkeep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before its tasks start, a window answers from the store after a `refresh`: in a window
    just opened that preparation would be the whole memory's, and the answer would wait."""
    prepared: list[ContextWindow] = []
    real_prepare = ContextWindow.prepare_render

    def prepare_render(self: ContextWindow) -> None:
        prepared.append(self)
        real_prepare(self)

    monkeypatch.setattr(ContextWindow, "prepare_render", prepare_render)
    settings = Settings(history_budget=512, store_path=str(tmp_path))
    a = WorkspaceMemory(tmp_path.as_uri(), settings)
    b = WorkspaceMemory(tmp_path.as_uri(), settings, listener=Recorder())
    a.open_store()
    b.open_store()  # what `early` does: no tasks yet
    try:
        for role, text in SAMPLE[:30]:
            a.append("t", role, text)
        b.refresh()
        assert len(b.history("t")) == 30 and b.window not in prepared
    finally:
        await a.close()
        await b.close()


async def test_once_summaries_are_done_quiet_upkeep_changes_nothing() -> None:
    """A tree that holds still: with no new message, the rounds a long quiet spell brings
    (idle and settle: re-clustering, summaries of every dirty topic, key lines) leave every
    topic's id, title, members and summary as they were."""
    memory = WorkspaceMemory("k", Settings(history_budget=512), persist=False)
    for role, text in SAMPLE:
        memory.append("t", role, text, wake=False)

    def tree() -> list[tuple[object, ...]]:
        return [
            (t.id, t.title, t.summary, t.message_count, t.pending, t.dropped)
            for t in memory.topics()
        ]

    for _ in range(50):  # what upkeep does after the user's last message, driven to the end
        await memory.upkeep.maintain(idle=True, settle=True)
        if not memory.window.dirty_topic_ids() and not memory.window.refine_pending:
            break
    settled = tree()
    assert len(settled) >= 2 and not any(t[4] for t in settled)
    for _ in range(5):
        await memory.upkeep.maintain(idle=True, settle=True)
        assert tree() == settled
    await memory.close()
