"""An exchange is recalled for its best match: a question that names the subject and an answer
that names it again are one match said twice, not two."""

from __future__ import annotations

from topicforest.engine.render_recall import exchange_score, recall_exchanges, recall_hits

from .helpers import UNRELATED, replayed

QUESTION = "Why does the invoice email queue grow in Redis?"
ANSWER = (  # the fact, after a question in other words
    "deployed. also: memory keeps climbing a little every day",
    "The invoice email queue will grow in Redis forever: set removeOnComplete.",
)
SUBJECT = (  # the subject named twice, and no answer
    "Is the invoice queue on its own?",
    "No, the email worker shares Redis with the cache.",
)


def test_the_lesser_match_of_an_exchange_counts_in_part() -> None:
    assert exchange_score(3.0, 1.0) == exchange_score(1.0, 3.0)
    assert 3.0 < exchange_score(3.0, 1.0) < 4.0


def test_an_answer_outranks_a_question_and_reply_that_only_name_the_subject() -> None:
    # apart (the subject's exchange is no follow-up of the answer's) and newer (no help from age)
    window = replayed([ANSWER, *UNRELATED, SUBJECT, *UNRELATED * 2])
    recall = recall_hits(window, window.embedder.embed_query(QUESTION))
    chosen = recall_exchanges(window, recall, 100, [])
    pieces = [piece for topic in chosen.values() for piece in topic]
    assert pieces[0].line == f"| user: {ANSWER[0]}"  # first, with the most room
    assert "removeOnComplete" in pieces[1].line
