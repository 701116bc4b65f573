"""Two conversations replayed as one workspace's memory (`--back-to-back`)."""

from __future__ import annotations

from topicforest.eval.dataset import (
    SAMPLE,
    Conversation,
    back_to_back,
    back_to_back_pairs,
    load_conversation,
)


def test_back_to_back_keeps_each_conversation_s_labels_and_facts(tiny: Conversation) -> None:
    sample = load_conversation(SAMPLE)
    joined = back_to_back(tiny, sample)
    n = len(tiny.messages)
    assert len(joined.messages) == n + len(sample.messages)
    assert [m.index for m in joined.messages] == list(range(len(joined.messages)))
    # the two never share a topic label, and chatter stays chatter
    first = {m.topic for m in joined.messages[:n] if m.topic}
    second = {m.topic for m in joined.messages[n:] if m.topic}
    assert first and second and not first & second
    assert set(joined.topics) == first | second | {f"{sample.id}/{t}" for t in sample.topics}
    assert [m.topic is None for m in joined.messages] == [
        m.topic is None for m in (*tiny.messages, *sample.messages)
    ]
    # every fact still points at the message that states it
    assert len(joined.facts) == len(tiny.facts) + len(sample.facts)
    for fact in joined.facts:
        text = joined.messages[fact.msg_index].content.lower()
        assert all(key.lower() in text for key in fact.must_contain)
    assert len({f.id for f in joined.facts}) == len(joined.facts)


def test_pairs_leave_an_odd_last_conversation_out(tiny: Conversation) -> None:
    sample = load_conversation(SAMPLE)
    pairs = back_to_back_pairs([tiny, sample, tiny])
    assert [p.id for p in pairs] == [f"{tiny.id}+{sample.id}"]
