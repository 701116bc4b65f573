"""The project's held-out samples (`data/held_out`): conversations in the dev set's schema,
written by engineers who had not read the engine. `--held-out` reports them; nothing tunes to
them."""

from __future__ import annotations

import pytest

from topicforest.eval import cli
from topicforest.eval.dataset import SAMPLE, held_out_paths, load_conversation


def test_the_held_out_samples_follow_the_schema_and_differ_from_the_bundled_one() -> None:
    paths = held_out_paths()
    assert len(paths) >= 2
    ids = {load_conversation(path).id for path in paths}
    assert len(ids) == len(paths) and load_conversation(SAMPLE).id not in ids
    for path in paths:
        conversation = load_conversation(path)
        assert len(conversation.topics) >= 5 and len(conversation.facts) >= 25
        for fact in conversation.facts:  # each fact is stated in its own message
            text = conversation.messages[fact.msg_index].content.lower()
            assert all(key.lower() in text for key in fact.must_contain), fact.id


def test_held_out_reports_only_the_held_out_samples(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--held-out", "--no-aider"]) == 0
    out = capsys.readouterr().out
    for path in held_out_paths():
        assert load_conversation(path).id in out
    assert "sample_conversation" not in out and "dev_" not in out
    assert "pooled: query" in out
