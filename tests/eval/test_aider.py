"""aider's real ChatSummary baseline, run by the driver in aider's own venv (never built here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.engine.tokens import estimate_tokens
from topicforest.eval import aider_driver
from topicforest.eval.aider_baseline import (
    AiderJob,
    AiderUnavailable,
    aider_python,
    check_aider,
    run_aider,
)
from topicforest.eval.dataset import Conversation
from topicforest.eval.run import Options, evaluate
from topicforest.testing.stub_llm import AIDER_SUMMARIZE_PROMPT, STUB_API_KEY, StubLLM

BUDGET = 320
needs_aider = pytest.mark.skipif(
    not aider_python().exists(),
    reason=f"{aider_python()} absent: `make eval` builds aider's venv (tests never build it)",
)


def test_the_drivers_token_estimate_is_the_engines() -> None:
    for text in ["", "abc", "x" * 1000, "naïve café ✓", "def f(x):\n    return x  # ok"]:
        assert aider_driver.estimate_tokens(text) == estimate_tokens(text)


@needs_aider
async def test_aiders_chat_summary_replays_the_tiny_conversation(tiny: Conversation) -> None:
    assert await check_aider() == "0.86.2"
    async with StubLLM() as stub:
        (run,) = await run_aider([AiderJob(tiny, "stub-summary", BUDGET)], stub.base_url, "k")
    calls = stub.calls()
    # Every call is aider's own summarize request, answered by the stub's lead summary.
    assert calls and all(r.kind == "summary" and r.model == "stub-summary" for r in calls)
    assert all(AIDER_SUMMARIZE_PROMPT in r.messages[0]["content"] for r in calls)
    assert calls[0].messages[1]["content"].startswith("# USER\n" + tiny.messages[0].content)
    # Cost is what the stub reported; the final context is aider's: its summary prefix first,
    # the newest messages verbatim at the end, within the budget.
    assert run.cost.calls == len(calls) and run.cost.failed == 0
    assert run.cost.input_tokens == sum(r.prompt_tokens for r in calls)
    assert run.cost.output_tokens == sum(r.completion_tokens for r in calls)
    assert run.context.startswith("I spoke to you previously about a number of things.\n")
    assert run.context.endswith(tiny.messages[-1].content)
    assert estimate_tokens(run.context) <= BUDGET + 20  # aider's own check counts per message


@needs_aider
@pytest.mark.usefixtures("stub_key")
async def test_the_evaluation_scores_aider_under_both_summarizers(tiny: Conversation) -> None:
    evaluation = await evaluate([tiny], Options(budget=BUDGET, waiting=False, sweep=()))
    assert evaluation.aider_note == "aider-chat 0.86.2"
    assert {"aider", "aider_x"} <= set(evaluation.systems)
    (result,) = evaluation.conversations
    assert result.cost["aider"].calls > 0 and result.cost["aider_x"].calls > 0
    assert all({"aider", "aider_x"} <= set(f.kept) for f in result.facts)


@pytest.mark.usefixtures("stub_key")
async def test_without_aiders_venv_the_column_is_left_out_with_a_note(
    tiny: Conversation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOPICFOREST_AIDER_PYTHON", str(tmp_path / "missing" / "python"))
    with pytest.raises(AiderUnavailable, match="not found"):
        await check_aider()
    async with StubLLM() as stub:
        with pytest.raises(AiderUnavailable):
            await run_aider([AiderJob(tiny, "stub-summary", BUDGET)], stub.base_url, STUB_API_KEY)
    evaluation = await evaluate([tiny], Options(budget=BUDGET, waiting=False, sweep=()))
    assert "column omitted" in evaluation.aider_note and "not found" in evaluation.aider_note
    assert not any(s.startswith("aider") for s in evaluation.systems)
    assert all("aider" not in f.kept for f in evaluation.conversations[0].facts)
