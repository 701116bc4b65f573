"""Threads are per person in a shared memory: every read of another person's thread (its
history, the context a request of it would carry, listTopics' figure of it) shows none of its
hot messages."""

from __future__ import annotations

from pathlib import Path

from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.settings import Settings

SECRET = "My private note: the staging password hint is tangerine."


def _memory(folder: Path, user: str) -> WorkspaceMemory:
    memory = WorkspaceMemory(
        folder.as_uri(), Settings(store_path=str(folder / ".store"), user=user)
    )
    memory.open_store()
    return memory


async def test_another_persons_thread_is_not_read_through_a_render(tmp_path: Path) -> None:
    alice, bob = _memory(tmp_path, "alice"), _memory(tmp_path, "bob")
    try:
        alice.append("alice-thread", "user", SECRET)
        bob.refresh()
        assert bob.history("alice-thread") == []  # hidden, as it was
        for rendered in (bob.render(thread_id="alice-thread"), bob.next_render("alice-thread")):
            assert all(SECRET not in m["content"] for m in rendered.messages)
            assert rendered.hot_message_ids == []
        # its owner still gets it
        assert any(SECRET in m["content"] for m in alice.render(thread_id="alice-thread").messages)
    finally:
        await alice.close()
        await bob.close()
