"""The external set (aider PR #4940's conversations): its answer-key rule, loader and replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from topicforest.eval import cli
from topicforest.eval.dataset import DatasetError
from topicforest.eval.external import (
    ExternalSet,
    answer_keys,
    load_external,
    missing,
    parse_external,
)
from topicforest.eval.external_run import (
    ExternalEvaluation,
    empty_summary_lines,
    evaluate_external,
    external_lines,
    replay,
)
from topicforest.eval.metrics import contains_all
from topicforest.eval.run import STUB_SUMMARY_MODEL
from topicforest.testing.stub_llm import StubLLM

AIDER17 = Path(__file__).resolve().parents[2].parent / "shared" / "external" / "aider17"


@pytest.mark.parametrize(
    ("answer", "keys"),
    [
        # at most 5 words: the whole phrase, one key
        ("helpers.py", ("helpers.py",)),
        ("a mock", ("mock",)),  # leading article stripped
        ("The pathlib module.", ("pathlib module",)),  # and edge punctuation
        ("Too many open files", ("Too many open file",)),  # plain last word > 4 letters: no "s"
        ("5 seconds", ("5 second",)),
        ("two runs", ("two runs",)),  # 4 letters: kept
        ("the process", ("process",)),  # "ss" is not a plural
        ("--max-old-space-size=4096", ("--max-old-space-size=4096",)),  # not a plain word
        ("name 'platform_system' is not defined", ("name 'platform_system' is not defined",)),
        # longer: quoted spans, then identifier-like tokens, then the longest plain words
        ("'NoneType' object has no attribute 'user'", ("NoneType", "user", "attribute")),
        (
            "AttributeError: module ssl has no attribute HAS_SNI",
            ("AttributeError", "HAS_SNI", "attribute"),
        ),
        (
            "RuntimeError: dictionary changed size during iteration",
            ("RuntimeError", "dictionary", "iteration"),
        ),
        (
            "Deprecate request.json in favor of request.get_json()",
            ("request.json", "request.get_json()", "Deprecate"),
        ),
        (
            "increase the retry count because of flaky network timeouts",
            ("increase", "timeout", "because"),  # stop words out; ties keep their order
        ),
        ("", ()),
    ],
)
def test_answer_keys_follow_the_readme_rule(answer: str, keys: tuple[str, ...]) -> None:
    assert answer_keys(answer) == keys


def _conversation(conv_id: str = "demo-1") -> dict[str, object]:
    turns = [
        ("user", "The upload fails with a SecurityError in helpers.py."),
        ("assistant", "Then safe_join rejects the path; use pathlib to normalize it."),
        ("user", "Which test doubles should we use?"),
        ("assistant", "A mock of os.path keeps them independent of the layout."),
    ]
    return {"id": conv_id, "messages": [{"role": r, "content": c} for r, c in turns]}


QUESTIONS = [
    {"id": "q1", "question": "Which exception?", "expected_answer": "SecurityError"},
    {"id": "q2", "question": "Which module?", "expected_answer": "the pathlib"},
    {"id": "q3", "question": "What did the tests use?", "expected_answer": "a mock"},
    {"id": "q4", "question": "Which port?", "expected_answer": "8080"},  # not in the chat
]


def test_parse_external_keeps_the_answerable_questions_and_lists_the_others() -> None:
    conv, lost = parse_external(_conversation(), QUESTIONS, "demo")
    assert [f.id for f in conv.facts] == ["q1", "q2", "q3"]
    assert [f.msg_index for f in conv.facts] == [0, 1, 3]  # the message stating each answer
    assert conv.facts[1].must_contain == ("pathlib",)
    assert [(u.question, u.keys) for u in lost] == [("q4", ("8080",))]
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    ("raw", "asked"),
    [
        ({"id": "x", "messages": [{"role": "system", "content": "hi"}]}, []),
        ({"id": "x", "messages": [{"role": "user", "content": "  "}]}, []),
        ({"messages": []}, []),
        (_conversation(), {"not": "a list"}),
        (_conversation(), [{"id": "q1"}]),
    ],
)
def test_parse_external_rejects_malformed_data(raw: object, asked: object) -> None:
    with pytest.raises(DatasetError):
        parse_external(raw, asked, "bad.json")


def _write_set(root: Path, *convs: dict[str, object]) -> Path:
    (root / "conversations" / "questions").mkdir(parents=True)
    for conv in convs:
        name = f"{conv['id']}.json"
        (root / "conversations" / name).write_text(json.dumps(conv))
        (root / "conversations" / "questions" / name).write_text(json.dumps(QUESTIONS))
    return root


def test_load_external_reads_the_aider17_layout(tmp_path: Path) -> None:
    data = load_external(_write_set(tmp_path, _conversation("a-1"), _conversation("b-2")))
    assert [c.id for c in data.conversations] == ["a-1", "b-2"]
    assert (data.questions, data.answerable) == (8, 6)
    assert [u.conversation for u in data.unanswerable] == ["a-1", "b-2"]


def test_missing_says_why(tmp_path: Path) -> None:
    assert missing(_write_set(tmp_path / "here", _conversation())) is None
    reason = missing(tmp_path / "absent")
    assert reason is not None and "not found" in reason


def test_empty_summary_lines_counts_quoted_lines_with_nothing_after_the_prefix() -> None:
    text = "## Topic 1\n| I fixed helpers.py.\n| \n|\n\n| - uses pathlib\nplain line"
    assert empty_summary_lines(text) == 2


async def test_replay_runs_the_real_window_and_scores_each_question(stub_key: None) -> None:
    conv, _ = parse_external(_conversation(), QUESTIONS, "demo")
    async with StubLLM() as stub:
        from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer

        summarizer = LiteLLMSummarizer(STUB_SUMMARY_MODEL, api_base=stub.base_url)
        result = await replay(conv, summarizer, 2048)
    # Four short messages fit 2,048 tokens: every answerable question is kept either way.
    assert (result.questions, result.kept_query, result.kept_plain) == (3, 3, 3)
    assert result.messages == 4 and result.largest <= result.in_topics <= 4
    assert result.empty_lines == 0


def test_the_command_prints_the_external_table(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stub_key: None,
) -> None:
    root = _write_set(tmp_path, _conversation("a-1"), _conversation("b-2"))
    monkeypatch.setattr(cli, "EXTERNAL", root)
    assert cli.main(["--external-only", "--no-aider", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "6 of 8 questions answerable" in out and "a-1/q4 '8080'" in out
    assert "pooled   query 100.0% (6/6); no query 100.0% (6/6); aider –" in out
    assert "union-find 39.7% (54/136), aider recursive 41.2% (56/136)" in out
    assert sum(line.startswith(("a-1 ", "b-2 ")) for line in out.splitlines()) == 2


def test_the_command_skips_the_external_set_when_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "EXTERNAL", tmp_path / "absent")
    assert cli.main(["--external-only"]) == 0
    assert "external set skipped:" in capsys.readouterr().err


@pytest.fixture
def aider17() -> Path:
    if missing(AIDER17):
        pytest.skip(f"the external set is not present at {AIDER17}")
    return AIDER17


def test_the_rule_on_the_real_set_matches_its_readme(aider17: Path) -> None:
    """133 of 136 answerable, and 89.5% agreement with the upstream judge on those."""
    data = load_external(aider17)
    assert (len(data.conversations), data.questions, data.answerable) == (17, 136, 133)
    assert sorted(u.answer for u in data.unanswerable) == [
        "5 seconds",
        "80 characters",
        "Incorrect reference counting",
    ]
    agree = total = 0
    for conv in data.conversations:
        verdicts = json.loads((aider17 / "quality" / f"judgments-{conv.id}.json").read_text())
        for system in ("union_find", "recursive"):
            kept = json.loads((aider17 / "quality" / f"{system}-{conv.id}.json").read_text())
            context = "\n".join(m["content"] for m in kept["compressed_history"])
            judged = {v["question_id"]: v["verdict"] for v in verdicts if v["system"] == system}
            for fact in conv.facts:
                agree += contains_all(context, fact.must_contain) == (judged[fact.id] == "CORRECT")
                total += 1
    assert (agree, total) == (238, 266)  # 89.5%


def test_external_lines_name_the_worst_conversation(aider17: Path, stub_key: None) -> None:
    full = load_external(aider17)
    data = ExternalSet(full.conversations[:2], 16, [])  # two replays keep the test short
    evaluation: ExternalEvaluation = evaluate_external(data, aider=False, jobs=1)
    lines = external_lines(evaluation)
    low = evaluation.worst("kept_plain")
    assert any(line.startswith("worst") and f"({low.id})" in line for line in lines)
    assert all(
        r.questions == len(c.facts)
        for r, c in zip(evaluation.results, data.conversations, strict=True)
    )
