"""A question's recall brings back the exchange after the best one: the best often holds the
diagnosis, and what fixed it comes in the reply to the follow-up, in words of its own."""

from __future__ import annotations

from topicforest.engine import ContextWindow
from topicforest.engine.render_recall import recall_exchanges, recall_hits

from .helpers import UNRELATED, replayed

CRASH = [
    (
        "The nightly import crashes on the supplier feed: a segfault inside libxml2.",
        "A segfault in libxml2 while the nightly import parses the supplier feed is usually "
        "the 2.9.14 regression. Pin lxml to 4.9.2 and run it again.",
    ),
    (
        "pinned lxml to 4.9.2, same segfault in libxml2",
        "Then lxml hits the libxml2 document depth limit: pass XML_PARSE_HUGE and set "
        "max_depth = 4096 in importer/parse.py.",
    ),
]
QUESTION = "Why did the nightly import crash on the supplier feed?"


def recalled_text(window: ContextWindow, room: int) -> str:
    weights = window.embedder.embed_query(QUESTION)
    chosen = recall_exchanges(window, recall_hits(window, weights), room, [])
    return "\n".join(piece.line for pieces in chosen.values() for piece in pieces)


def conversation() -> ContextWindow:
    return replayed(CRASH + UNRELATED * 3)


def test_the_reply_to_the_follow_up_comes_with_the_best_exchange() -> None:
    window = conversation()
    assert window.forest.find(3) == window.forest.find(1)  # the follow-up is on the same topic
    text = recalled_text(window, room=600)
    assert "segfault inside libxml2" in text
    assert "max_depth = 4096" in text  # none of the question's words: it follows the best


def test_a_small_room_is_left_to_the_best_exchange() -> None:
    window = conversation()
    text = recalled_text(window, room=60)  # the best exchange is excerpted to fit
    assert "max_depth = 4096" not in text


# A long question that names what was asked, and a reply in other words: the fix.
ROLLOUT = (
    "Every rollout gives a burst of 502s at the ingress. The manifest, for reference:\n\n"
    "```yaml\n"
    + "".join(f"  - name: sidecar-{n}\n    image: registry/sidecar:{n}.0\n" for n in range(30))
    + "```",
    "Two races during pod termination: in-flight requests are cut off on SIGTERM, and new "
    "requests still arrive for a few seconds after it.\n\n"
    "```yaml\n"
    "spec:\n"
    "  terminationGracePeriodSeconds: 45\n"
    "  containers:\n"
    "    - lifecycle:\n"
    "        preStop:\n"
    '          exec: {command: ["sh", "-c", "sleep 10"]}\n'
    "```\n\n"
    "Spring finishes what is in flight within `timeout-per-shutdown-phase: 25s`.",
)


def test_an_answer_in_other_words_comes_with_the_question_it_answers() -> None:
    window = replayed([ROLLOUT] + UNRELATED * 3)
    weights = window.embedder.embed_query("How did we get rid of the 502s during rollouts?")
    chosen = recall_exchanges(window, recall_hits(window, weights), 300, [])
    text = "\n".join(piece.line for pieces in chosen.values() for piece in pieces)
    assert "user (excerpt): " in text  # the question is too long to quote whole
    assert "terminationGracePeriodSeconds: 45" in text  # the reply shares no word with the query
