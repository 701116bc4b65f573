"""The evaluation end to end on a tiny conversation (real litellm to the loopback stub)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.engine.config import WindowConfig
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.engine.tokens import estimate_tokens
from topicforest.eval import cli
from topicforest.eval.aider_baseline import aider_python
from topicforest.eval.dataset import SAMPLE, Conversation, load_conversation
from topicforest.eval.run import EXTRACTIVE_SYSTEMS, SYSTEMS, Options, evaluate
from topicforest.eval.systems import run_flat, run_topic_forest, run_truncation
from topicforest.testing.stub_llm import StubLLM, ThreadedStubLLM

BUDGET = 320  # small enough that the tiny conversation must be summarized


@pytest.mark.usefixtures("stub_key")
async def test_systems_on_the_tiny_conversation(tiny: Conversation) -> None:
    async with StubLLM() as stub:
        summarizer = LiteLLMSummarizer("openai/stub-summary", api_base=stub.base_url)
        # Small summary batches so this short conversation gets summarized at all.
        config = WindowConfig(history_budget=BUDGET, summary_batch_tokens=64)
        forest = await run_topic_forest(tiny, summarizer, BUDGET, config=config)
        forest_calls = len(stub.calls("summary"))
        flat = await run_flat(tiny, summarizer, BUDGET)
    truncation = run_truncation(tiny, BUDGET)

    # Costs are what the stub actually served, per system.
    assert forest.cost.calls == forest_calls > 0
    assert flat.cost.calls == len(stub.calls("summary")) - forest_calls > 0
    served = sum(r.prompt_tokens for r in stub.calls("summary")[:forest_calls])
    assert forest.cost.input_tokens == served
    # Per-topic spend adds up to what the window paid (no fallback renders here).
    assert forest.fallback_renders == 0
    assert sum(t.calls for t in forest.topics) == forest.cost.calls
    # Every system stays within the budget.
    assert forest.max_render_tokens <= BUDGET
    assert estimate_tokens(flat.context) <= BUDGET
    assert estimate_tokens(truncation.context) <= BUDGET
    # Truncation keeps the end and loses the start; the forest renders something for each fact.
    assert "ttl=60" in truncation.context and "maxsize=128" not in truncation.context
    assert set(forest.context_by_fact) == {f.id for f in tiny.facts}
    assert len(forest.clusters) == len(tiny.messages)


@pytest.mark.usefixtures("stub_key")
async def test_evaluate_scores_every_fact_and_measures_waiting(tiny: Conversation) -> None:
    options = Options(budget=BUDGET, time_scale=0.002, summary_latency=(0.05, 0.1))
    evaluation = await evaluate([tiny], options)
    (result,) = evaluation.conversations
    assert [f.id for f in result.facts] == ["F1", "F2", "F3", "F4"]
    # aider's column is there exactly when its venv is (`make eval` builds it; CI need not)
    with_aider = aider_python().exists()
    expected = {s for s in SYSTEMS + EXTRACTIVE_SYSTEMS if with_aider or not s.startswith("aider")}
    for fact in result.facts:
        assert set(fact.kept) == expected == set(evaluation.systems)
    superseded = next(f for f in result.facts if f.superseded)
    assert superseded.old_values == ["ttl=300"]
    assert 0 < result.clustering.purity <= 1 and -1 <= result.clustering.ari <= 1
    assert result.clustering.labels == 2
    assert result.waiting is not None
    turns = sum(1 for m in tiny.messages if m.role == "user")
    assert len(result.waiting.forest) == len(result.waiting.flat) == turns
    assert len(result.waiting.forest_unscaled) == turns
    assert result.waiting.flat_summary_calls > 0
    # The budget sweep replays at each other budget; one that holds the whole conversation
    # keeps every fact in both systems.
    assert [b.budget for b in result.budgets] == list(options.sweep)
    roomy = result.budgets[-1]
    assert roomy.forest == roomy.forest_query == roomy.flat == len(tiny.facts)
    # The deterministic part does not depend on the run.
    again = await evaluate([tiny], Options(budget=BUDGET, waiting=False))
    assert [f.kept for f in again.conversations[0].facts] == [f.kept for f in result.facts]


def test_cli_writes_report_and_figures(
    tmp_path: Path, tiny_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.md"
    args = ["--only", str(tiny_path), "--budget", "320", "--out", str(out), "--time-scale", "0.002"]
    assert cli.main([*args, "--no-external"]) == 0
    text = out.read_text()
    assert "## Targets (issue 10)" in text and "| **all** |" in text and "| **worst** |" in text
    assert "python -m topicforest.eval --only" in text  # each figure names its command
    for key in ("survival", "conversations", "topics", "cost", "wait"):
        png = tmp_path / f"bench_{key}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png.name})" in text
    assert "| 320 (the tables above) |" in text and "| 4096 |" in text  # budget sweep
    assert (tmp_path / "bench.json").exists()
    assert "Topic Forest (question as query)" in capsys.readouterr().out


def test_cli_rejects_a_bad_file_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x", "messages": [], ')
    assert cli.main(["--only", str(bad), "--out", str(tmp_path / "b.md"), "--no-external"]) == 2
    assert "cannot read conversation" in capsys.readouterr().err
    assert not (tmp_path / "b.md").exists()


def test_quick_prints_the_compact_table_and_writes_no_report(
    tmp_path: Path, tiny_path: Path, capsys: pytest.CaptureFixture[str], stub_key: None
) -> None:
    args = ["--only", str(tiny_path), "--budget", "320", "--out", str(tmp_path / "q.md")]
    assert cli.main([*args, "--quick", "--no-aider", "--no-external"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("conversation"))
    assert head.split()[1:] == ["query", "no", "query", "purity", "ARI", "in/flat", "largest"]
    assert sum(line.startswith(("pooled ", "worst ")) for line in lines) == 2
    assert any(line.startswith("tiny") for line in lines)
    assert not list(tmp_path.iterdir())  # no report, no figures


def test_sample_conversation_follows_the_schema() -> None:
    conv = load_conversation(SAMPLE)
    assert 60 <= len(conv.messages) <= 90 and 3 <= len(conv.topics) <= 4
    assert 10 <= len(conv.facts) <= 15
    assert {conv.position(f) for f in conv.facts} == {"early", "middle", "late"}
    assert sum(m.topic is None for m in conv.messages) >= len(conv.messages) // 6
    assert any(f.superseded_msg_index is not None for f in conv.facts)


def test_shared_dev_set_loads(shared_eval: Path) -> None:
    for path in sorted(shared_eval.glob("*.json")):
        conv = load_conversation(path)
        assert conv.facts and conv.messages


@pytest.mark.usefixtures("stub_key")
def test_opt_in_model_path_summarizes_through_the_given_model(
    tmp_path: Path, tiny_path: Path
) -> None:
    # Any OpenAI-compatible server works as the "real" model; here it is a second stub.
    with ThreadedStubLLM() as server:
        out = tmp_path / "real.md"
        args = ["--only", str(tiny_path), "--budget", "320", "--out", str(out)]
        args += ["--model", "openai/my-model", "--api-base", server.base_url, "--no-waiting"]
        assert cli.main(args) == 0
        assert {r.model for r in server.calls("summary")} == {"my-model"}
    text = out.read_text()
    assert "the real model `openai/my-model`" in text
    assert "Sensitivity to the history budget" not in text  # no sweep: real calls cost money
