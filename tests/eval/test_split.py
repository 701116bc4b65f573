"""The split check: tune engine settings on one half of the conversations, report the other."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.eval import cli
from topicforest.eval.dataset import Conversation
from topicforest.eval.run import STUB_SUMMARY_MODEL
from topicforest.eval.split import DEFAULT, Settings, split_check, split_halves
from topicforest.testing.stub_llm import StubLLM

BUDGET = 320


def copies(tiny: Conversation, *ids: str) -> list[Conversation]:
    return [dataclasses.replace(tiny, id=i) for i in ids]


def test_halves_are_sorted_by_id_and_alternate(tiny: Conversation) -> None:
    tune, held = split_halves(copies(tiny, "d", "b", "a", "e", "c"))
    assert [c.id for c in tune] == ["a", "c", "e"] and [c.id for c in held] == ["b", "d"]
    assert split_halves(copies(tiny, "only")) == ([copies(tiny, "only")[0]], [])


@pytest.mark.usefixtures("stub_key")
async def test_the_best_setting_on_the_tuning_half_is_reported_on_the_other(
    tiny: Conversation,
) -> None:
    conversations = copies(tiny, "b", "a", "c")
    grid = (DEFAULT, Settings(0.9, 1), Settings(0.15, 4))
    async with StubLLM() as stub:
        summarizer = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url)
        check = await split_check(conversations, summarizer, BUDGET, True, grid)
        assert await split_check(conversations[:1], summarizer, BUDGET, True, grid) is None
    assert check is not None
    assert check.tune == ["a", "c"] and check.held_out == ["b"]
    assert [s.settings for s in check.grid] == list(grid)
    facts = len(tiny.facts)
    assert all(s.query[1] == s.plain[1] == 2 * facts for s in check.grid)
    # The chosen setting has the best objective; ties keep the earlier grid entry.
    best = max(s.objective() for s in check.grid)
    assert check.chosen == next(s.settings for s in check.grid if s.objective() == best)
    # The held-out half is replayed with the default and the chosen settings.
    assert check.held_default is not None and check.held_tuned is not None
    assert check.held_default.settings == DEFAULT and check.held_tuned.settings == check.chosen
    assert check.held_default.query[1] == facts and check.held_default.worst_id == "b"
    for score in (*check.grid, check.held_default):
        assert 0 < score.purity <= 1 and -1 <= score.ari <= 1
    # Every setting keeps the copies' facts alike: the worst conversation is as good as the pool.
    for score in check.grid:
        assert score.worst_query == score.query[0] / score.query[1]


@pytest.mark.usefixtures("stub_key")
def test_the_command_prints_the_split_check_and_reports_it(
    tmp_path: Path, tiny_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "tiny_b.json"
    other.write_text(json.dumps({**json.loads(tiny_path.read_text()), "id": "tiny_b"}))
    out = tmp_path / "bench.md"
    args = ["--only", str(tiny_path), str(other), "--budget", str(BUDGET), "--out", str(out)]
    args += ["--no-waiting", "--no-sweep", "--no-aider"]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "split check: tune on tiny\n" in printed and "report on tiny_b" in printed
    assert "held-out half:" in printed and "<- chosen" in printed
    assert "### Split check" in out.read_text()
    assert cli.main([*args, "--no-split"]) == 0
    assert "split check: not run" in capsys.readouterr().out
    assert "### Split check" not in out.read_text()
