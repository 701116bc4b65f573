"""The hot zone in a render: a question that reaches back to older work gets the room of the
hot zone's exchanges that have nothing to do with it; the rest stays verbatim."""

from __future__ import annotations

from topicforest.engine import ContextWindow
from topicforest.engine.hot_zone import yield_to_question
from topicforest.engine.messages import Message

from .helpers import message, replayed

OLD_WORK = [
    (
        "How do we rotate the Grafana admin password?",
        "Run `grafana-cli admin reset-admin-password`"
        " on the grafana pod; the vault path is `secret/ops/grafana`.",
    ),
    (
        "And where does the Grafana dashboard JSON live?",
        "Under `ops/grafana/dashboards/`, one file per dashboard, provisioned by the sidecar.",
    ),
]
HOT_WORK = [
    (
        "The webpack build of the storefront is slow again",
        "Turn on `cache: { type: 'filesystem' }` in webpack.config.js so rebuilds reuse modules.",
    ),
    (
        "Now the storefront bundle is 2 MB",
        "Split vendor chunks with `splitChunks` and lazy-load the checkout route.",
    ),
]
QUESTION = "What was the vault path for the Grafana admin password?"


def worked(budget: int = 700) -> ContextWindow:
    """The old work graduated, the hot work still hot."""
    window = replayed(OLD_WORK, budget)
    for question, answer in HOT_WORK:
        window.append("t", "user", question)
        window.append("t", "assistant", answer)
    return window


def test_a_question_that_reaches_back_takes_the_room_of_unrelated_hot_exchanges() -> None:
    window = worked()
    hot = window.hot_messages("t")
    assert len(hot) == 4  # both storefront exchanges are hot
    asked = window.render(query=QUESTION, thread_id="t")
    assert asked.hot_message_ids == [m.id for m in hot[2:]]  # the newest exchange stays
    assert "secret/ops/grafana" in asked.text()
    # without a question, or with one about the hot work, the hot zone is whole
    assert window.render(thread_id="t").hot_message_ids == [m.id for m in hot]
    about_hot = window.render(query="Why is the webpack storefront build slow?", thread_id="t")
    assert about_hot.hot_message_ids == [m.id for m in hot]


def test_in_a_chat_turn_the_question_and_the_exchange_it_follows_stay() -> None:
    window = worked()
    question = window.append("t", "user", QUESTION)  # a turn stores the question, then renders
    hot = window.hot_messages("t")
    asked = window.render(query=QUESTION, thread_id="t")
    assert asked.hot_message_ids == [m.id for m in hot[2:]]
    assert asked.hot_message_ids[-1] == question.id
    assert "secret/ops/grafana" in asked.text()


def packed(*turns: tuple[str, str]) -> list[tuple[Message, str]]:
    return [(message(i, role, text), text) for i, (role, text) in enumerate(turns)]


WEBPACK = (("user", "the webpack build is slow"), ("assistant", "use the filesystem cache"))
BUNDLE = (("user", "and the bundle size?"), ("assistant", "split chunks"))


def kept(hot: list[tuple[Message, str]], joins: bool = False) -> list[int]:
    weights = {"grafana": 3.0, "vault": 4.0, "password": 2.5}
    used = sum(m.tokens + 4 for m, _ in hot)
    rest, left = yield_to_question(hot, used, weights, lambda terms: joins)
    assert left == sum(m.tokens + 4 for m, _ in rest)
    return [m.id for m, _ in rest]


def test_every_unrelated_exchange_yields_even_after_one_that_bears_on_the_question() -> None:
    vault = (("user", "where is the vault?"), ("assistant", "in ops"))
    hot = packed(
        *WEBPACK, *vault, *BUNDLE, ("user", "thanks, and lint?"), ("assistant", "run eslint")
    )
    # the vault exchange bears on the question and stays; the bundle one after it does not
    # (it kept its room when only the oldest exchanges yielded); the newest exchange stays
    assert kept(hot) == [2, 3, 6, 7]
    # an exchange that would join the recalled topic stays too
    assert kept(hot, joins=True) == list(range(8))


def test_the_exchange_a_follow_up_question_answers_stays() -> None:
    follow_up = packed(
        *WEBPACK, *BUNDLE, ("user", "what about the vault password?")
    )  # no reply yet
    assert kept(follow_up) == [2, 3, 4]
    # the newest exchange with a reply stays even when nothing bears on the question
    assert kept(packed(("user", "lint?"), ("assistant", "run eslint"))) == [0, 1]


def test_a_reply_whose_question_was_left_out_yields_like_an_exchange() -> None:
    opens_with_a_reply = packed(WEBPACK[1], *BUNDLE)  # the reply's question did not fit
    assert kept(opens_with_a_reply) == [1, 2]
