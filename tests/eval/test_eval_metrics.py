"""Metric functions against values computed by hand (and by sklearn/scipy for the same inputs)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import cast

import pytest

from topicforest.eval.dataset import Conversation, DatasetError, parse_conversation
from topicforest.eval.metrics import (
    adjusted_rand_index,
    contains_all,
    mcnemar_exact,
    old_values,
    purity,
    shows_only_old,
)
from topicforest.eval.quick import input_ratio
from topicforest.eval.run import ConversationResult
from topicforest.eval.systems import Cost


def test_purity_known_values() -> None:
    assert purity([1, 1, 2, 2], ["a", "a", "b", "b"]) == 1.0
    # cluster 1: a,a,b -> 2; cluster 2: b,c -> 1  => 3/5
    assert purity([1, 1, 1, 2, 2], ["a", "a", "b", "b", "c"]) == pytest.approx(0.6)
    assert purity([1, 2, 3], ["a", "a", "a"]) == 1.0  # singletons are trivially pure
    with pytest.raises(ValueError):
        purity([1], ["a", "b"])


@pytest.mark.parametrize(
    ("clusters", "labels", "expected"),
    [
        ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
        ([0, 0, 1, 1], [1, 1, 0, 0], 1.0),  # label names do not matter
        ([0, 0, 1, 2], [0, 0, 1, 1], 0.5714285714285715),  # sklearn adjusted_rand_score
        ([0, 0, 0, 0], [0, 1, 2, 3], 0.0),
        ([0, 0, 1, 1], [0, 1, 0, 1], -0.5),
        ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2], 0.24242424242424243),
    ],
)
def test_adjusted_rand_index_known_values(
    clusters: list[int], labels: list[int], expected: float
) -> None:
    assert adjusted_rand_index(clusters, labels) == pytest.approx(expected)


def test_mcnemar_exact_known_values() -> None:
    assert mcnemar_exact([True, False], [True, False]) == (0, 0, 1.0)
    a = [True] * 9 + [False]
    b = [False] * 9 + [True]
    only_a, only_b, p = mcnemar_exact(a, b)
    assert (only_a, only_b) == (9, 1)
    assert p == pytest.approx(2 * (math.comb(10, 0) + math.comb(10, 1)) / 2**10)  # 0.0215
    assert mcnemar_exact([True] * 5 + [False] * 5, [False] * 5 + [True] * 5)[2] == 1.0
    # scipy.stats.binomtest(2, 12, 0.5).pvalue == 0.03857421875
    assert mcnemar_exact([True] * 10 + [False] * 2, [False] * 10 + [True] * 2)[2] == pytest.approx(
        0.03857421875
    )


def _conversation(old: str, new: str, extra: dict[str, object] | None = None) -> Conversation:
    raw = {
        "id": "c",
        "messages": [
            {"index": 0, "role": "user", "topic": "T1", "content": old},
            {"index": 1, "role": "assistant", "topic": "T1", "content": new},
        ],
        "facts": [
            {
                "id": "F1",
                "topic": "T1",
                "msg_index": 1,
                "superseded_msg_index": 0,
                "question": "q",
                "answer": "a",
                "must_contain": ["num_workers=6"],
                **(extra or {}),
            }
        ],
    }
    return parse_conversation(json.loads(json.dumps(raw)))


def test_old_values_are_derived_by_shape_and_flagged() -> None:
    conv = _conversation("start with num_workers=8 and seed 7", "use num_workers=6 now")
    fact = conv.facts[0]
    assert old_values(conv, fact) == ["num_workers=8"]
    assert shows_only_old("we set NUM_WORKERS=8", conv, fact)
    assert not shows_only_old("num_workers=8 then num_workers=6", conv, fact)
    assert not shows_only_old("nothing about workers", conv, fact)
    assert not shows_only_old("num_workers=80", conv, fact)  # a different value


def test_old_values_from_the_file_win() -> None:
    conv = _conversation("num_workers=8", "num_workers=6", {"old_must_contain": ["eight"]})
    assert old_values(conv, conv.facts[0]) == ["eight"]


def test_contains_all_is_case_insensitive_substring() -> None:
    assert contains_all("Set MAX_POINTS = 600 in Charts", ["max_points", "600"])
    assert not contains_all("MAX_POINTS = 1000", ["MAX_POINTS", "600"])


def test_a_fact_whose_strings_are_not_in_its_message_is_rejected() -> None:
    raw = {
        "id": "c",
        "messages": [{"index": 0, "role": "user", "topic": None, "content": "hello"}],
        "facts": [
            {"id": "F1", "msg_index": 0, "question": "q", "must_contain": ["absent"]},
        ],
    }
    with pytest.raises(DatasetError, match=r"facts\[0\].*absent"):
        parse_conversation(raw, "x.json")
    raw["messages"][0]["index"] = 3  # type: ignore[index]
    with pytest.raises(DatasetError, match=r"messages\[0\]: index must be 0"):
        parse_conversation(raw, "x.json")


def test_no_summarizer_input_ratio_against_a_system_that_summarized_nothing() -> None:
    def result(forest: int, flat: int) -> ConversationResult:
        cost = {"forest": Cost(input_tokens=forest), "flat": Cost(input_tokens=flat)}
        return cast(ConversationResult, SimpleNamespace(cost=cost))

    assert input_ratio(result(300, 600), "flat") == 0.5
    # at a large budget flat's history may fit: the table showed 2087.00× (tokens / 1)
    assert input_ratio(result(2087, 0), "flat") is None
