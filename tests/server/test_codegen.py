"""The code generated from the protocol table (wire.py, protocol.json, the client's protocol.ts)
is current, and handlers can only be registered with their method's generated types."""

from __future__ import annotations

from typing import Any

import pytest

from topicforest.server import codegen, early, wire
from topicforest.server.protocol import BY_NAME, METHODS, PREFIX
from topicforest.server.rpc import check_handler


def test_the_generated_files_are_what_the_table_makes_now() -> None:
    assert codegen.stale() == [], "run: python -m topicforest.server.codegen --write"


def test_every_client_method_has_params_whose_fields_follow_the_table() -> None:
    for method in METHODS:
        if method.direction != "clientToServer":
            continue
        fields = list(wire.PARAMS[method.name].__dataclass_fields__)
        assert fields == [codegen.snake(p.name) for p in method.params], method.name


def test_the_early_column_decides_what_early_answers() -> None:
    early_methods = {m.name for m in METHODS if m.early}
    assert set(early.EARLY_REQUESTS) | set(early.EARLY_NOTIFICATIONS) == early_methods
    assert PREFIX + "listTopics" in early.EARLY_REQUESTS
    assert PREFIX + "chat" not in early.EARLY_REQUESTS  # it needs pygls (and writes)


def test_a_handler_typed_against_another_method_is_refused() -> None:
    def list_topics(ls: Any, p: wire.ListTopicsParams) -> wire.ListTopicsResult:
        raise AssertionError("never called")

    check_handler(list_topics, BY_NAME[PREFIX + "listTopics"])  # its own method: fine
    with pytest.raises(TypeError, match="PreviewTopicParams"):
        check_handler(list_topics, BY_NAME[PREFIX + "previewTopic"])

    def untyped(ls: Any, p: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="ListTopicsParams"):
        check_handler(untyped, BY_NAME[PREFIX + "listTopics"])


@pytest.mark.parametrize(
    ("expression", "typescript"),
    [
        ("string|null", "string | null"),
        ("integer[]", "number[]"),
        ("{topic: Topic, score: number}[]", "{ topic: Topic; score: number; }[]"),
        ('"a"|"b"', "'a' | 'b'"),
    ],
)
def test_type_expressions_of_the_table(expression: str, typescript: str) -> None:
    assert codegen.ts(codegen.parse(expression)) == typescript


def test_an_unreadable_type_expression_is_an_error() -> None:
    with pytest.raises(ValueError, match="unreadable"):
        codegen.parse("Topic[")
