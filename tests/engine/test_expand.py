"""An expanded topic sends what its header says it sends, its opening question first."""

from __future__ import annotations

import re

from .replays import SAMPLE, replay_offline

HEADER = re.compile(r"^## Topic (\d+): .*\(expanded: (?:(\d+) of )?(\d+) original messages")


def test_an_expanded_topic_says_how_many_originals_it_sends_and_opens_with_its_question() -> None:
    window = replay_offline(SAMPLE, budget=1024).window  # room too small for some topic whole
    partial = 0
    for root in window.forest.live_roots():
        window.expand(root)
        try:
            rendered = window.render(thread_id="main")
        finally:
            window.collapse(root)
        (topic,) = [t for t in rendered.topics if t.id == root]
        (said,) = [m for line in rendered.text().splitlines() if (m := HEADER.match(line))]
        size = window.forest.size(root)
        sent = int(said.group(2) or said.group(3))
        assert int(said.group(3)) == size and sent == len(topic.message_ids), said.group(0)
        assert min(window.forest.members(root)) in topic.message_ids  # the opening question
        partial += sent < size
    assert partial  # the sample has a topic that does not fit whole: the case that was wrong
