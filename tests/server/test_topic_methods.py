"""Topic methods end to end: list, preview, drop/restore, pin, expand/collapse, search, threads."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from topicforest.server.protocol import PREFIX, SHAPES

from .conftest import SAMPLE, Client, replay, summarized


@pytest.fixture
def turns() -> list[tuple[str, str]]:
    return SAMPLE[:40]


async def render(client: Client, **params: Any) -> dict[str, Any]:
    return await client.call("renderContext", params)  # type: ignore[no-any-return]


async def test_drop_and_restore_change_the_very_next_render(
    chat_client: Client, stub: Any, turns: list[tuple[str, str]]
) -> None:
    await replay(chat_client, stub, turns)
    topics = await summarized(chat_client)
    before = await render(chat_client)
    shown = [t["id"] for t in before["topics"]]
    assert shown and before["tokens"] <= before["budget"]
    victim = shown[0]

    dropped = (await chat_client.call("dropTopic", {"topicId": victim}))["topic"]
    assert dropped["dropped"] is True and set(dropped) == set(SHAPES["Topic"])
    after = await render(chat_client)
    assert victim not in [t["id"] for t in after["topics"]]
    assert victim not in after["omittedTopics"]
    # Its block is gone at once (the freed room goes to the other topics' shares, so the total
    # need not shrink), and nothing of its summary is left.
    text = "\n".join(m["content"] for m in after["messages"])
    assert f"## Topic {victim}:" in "\n".join(m["content"] for m in before["messages"])
    assert f"## Topic {victim}:" not in text
    assert after["tokens"] <= after["budget"]
    listed = {t["id"]: t for t in (await chat_client.call("listTopics"))["topics"]}
    assert listed[victim]["dropped"] is True and len(listed) == len(topics)
    await chat_client.wait_for(
        PREFIX + "topicsChanged", lambda n: n["reason"] == "dropped" and n["topicIds"] == [victim]
    )

    restored = (await chat_client.call("restoreTopic", {"topicId": victim}))["topic"]
    assert restored["dropped"] is False
    again = await render(chat_client)
    assert victim in [t["id"] for t in again["topics"]] + again["omittedTopics"]


async def test_preview_expand_collapse_and_pin(
    chat_client: Client, stub: Any, turns: list[tuple[str, str]]
) -> None:
    await replay(chat_client, stub, turns)
    topics = await summarized(chat_client)
    topic = max(topics, key=lambda t: t["messageCount"])
    preview = await chat_client.call("previewTopic", {"topicId": topic["id"]})
    assert len(preview["messages"]) == topic["messageCount"]
    assert all(set(m) == set(SHAPES["Message"]) for m in preview["messages"])
    assert {m["content"] for m in preview["messages"]} <= {text for _, text in turns}

    before = await render(chat_client)
    expanded = await chat_client.call("expandTopic", {"topicId": topic["id"]})
    assert expanded["topic"]["expanded"] is True
    after = await render(chat_client)
    modes = {t["id"]: t["mode"] for t in after["topics"]}
    assert modes.get(topic["id"]) == "expanded"
    # What it says it sends is what the render sends, opening question first.
    sent = expanded["messages"]
    assert sent and sent[0] == preview["messages"][0]
    assert all(m in preview["messages"] for m in sent)
    text = after["messages"][0]["content"]
    header = next(line for line in text.splitlines() if line.startswith(f"## Topic {topic['id']}:"))
    if len(sent) < len(preview["messages"]):
        assert f"(expanded: {len(sent)} of {len(preview['messages'])} original" in header
    else:
        assert f"(expanded: {len(sent)} original messages)" in header
    for message in sent:
        assert message["content"].splitlines()[0] in text
    # Topics it pushed out of the request are reported, and the render agrees.
    was = {t["id"] for t in before["topics"]}
    now = {t["id"] for t in after["topics"]}
    assert expanded["pushedOut"] == sorted(was - now - {topic["id"]})
    assert set(expanded["pushedOut"]) <= set(after["omittedTopics"])
    collapsed = await chat_client.call("collapseTopic", {"topicId": topic["id"]})
    assert collapsed["topic"]["expanded"] is False

    last = min(topics, key=lambda t: t["lastTime"])["id"]
    was = {t["id"] for t in (await render(chat_client))["topics"]}
    pinned = await chat_client.call("pinTopic", {"topicId": last})
    assert pinned["topic"]["pinned"] is True
    now = {t["id"] for t in (await render(chat_client))["topics"]}
    assert pinned["pushedOut"] == sorted(was - now - {last})
    assert (await render(chat_client))["topics"][0]["id"] == last  # pinned topics come first
    unpinned = await chat_client.call("pinTopic", {"topicId": last, "pinned": False})
    assert unpinned["topic"]["pinned"] is False
    reasons = [n["reason"] for n in chat_client.notes[PREFIX + "topicsChanged"]]
    assert {"expanded", "collapsed", "pinned", "unpinned"} <= set(reasons)


async def test_search_threads_and_active_file(
    chat_client: Client, stub: Any, turns: list[tuple[str, str]]
) -> None:
    await replay(chat_client, stub, turns[:20], thread="a")
    await replay(chat_client, stub, turns[20:], thread="b")
    topics = await summarized(chat_client)

    named = next(t for t in topics if t["files"])
    found = await chat_client.call("searchTopics", {"query": named["files"][0], "limit": 3})
    assert 0 < len(found["results"]) <= 3
    assert named["id"] in [r["topic"]["id"] for r in found["results"]]
    assert all(r["score"] > 0 for r in found["results"])

    threads = (await chat_client.call("listThreads"))["threads"]
    assert {t["threadId"]: t["messageCount"] for t in threads} == {"a": 20, "b": 20}
    assert all(set(t) == set(SHAPES["Thread"]) for t in threads)
    tail = await chat_client.call("threadHistory", {"threadId": "b", "limit": 2})
    assert [m["content"] for m in tail["messages"]] == [text for _, text in turns[38:40]]
    assert (await chat_client.call("threadHistory", {"threadId": "nope"}))["messages"] == []

    # The active editor file (didOpen) moves a topic naming it to the front of the render.
    by_id = {t["id"]: t for t in topics}
    checked = 0
    for topic in topics:
        path = next((f for f in topic["files"] if "/" in f or "." in f), None)
        if path is None:
            continue
        uri = f"{chat_client.workspace_uri}/{path}"
        chat_client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="x", version=1, text="")
            )
        )
        first = (await render(chat_client))["topics"][0]["id"]
        base = path.rsplit("/", 1)[-1].lower()
        assert any(f.lower().endswith(base) for f in by_id[first]["files"]), (path, first)
        explicit = await render(chat_client, activeFile=uri)
        assert explicit["topics"][0]["id"] == first
        checked += 1
    assert checked
