"""Topic titles a person would recognise: the summary model's own title (same call), else a
phrase the topic's messages use, with the file or name it is most about."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.keylines import phrases
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize.base import (
    SummaryResult,
    model_title,
    split_title,
    summary_body,
)
from topicforest.engine.summarize.extractive import ExtractiveSummarizer
from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer
from topicforest.engine.titles import names_something
from topicforest.testing.stub_llm import STUB_API_KEY, StubLLM, stub_title

from ..conftest import requires_shared_eval, shared_conversations
from .replays import SAMPLE, replay_offline


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", STUB_API_KEY)  # litellm wants one; the stub ignores it


def test_a_title_line_is_read_and_kept_out_of_the_summary() -> None:
    text = "Title: Redis rate limiting per API key, fixed window, and more\nI asked you ..."
    assert model_title(text) == "Redis rate limiting per API key,"  # six words at most
    assert summary_body(text) == "I asked you ..."
    assert model_title("I asked you about Title: x") is None
    assert summary_body("I asked you ...") == "I asked you ..."


def replay_sample(window: ContextWindow, *, key_lines: bool = True) -> None:
    """The sample replayed and settled; `key_lines`: key-line upkeep has collected it all."""
    for message in json.loads(SAMPLE.read_text())["messages"]:
        window.append("chat", message["role"], message["content"], timestamp=message["index"])
        window.graduate()
        window.refine(budget_seconds=math.inf)
    window.flush_thread("chat")
    window.refine(budget_seconds=math.inf, settle=True)
    if key_lines:
        window.prepare_key_lines(budget_seconds=math.inf)


async def test_the_summary_model_titles_the_topic_in_the_same_call(stub_env: None) -> None:
    async with StubLLM() as stub:
        stub.config.titles = True
        window = ContextWindow(WindowConfig(history_budget=2048))
        replay_sample(window)
        summarizer = LiteLLMSummarizer("openai/stub", api_base=stub.base_url, timeout=5)
        await resolve_all(window, summarizer)
        calls = len(stub.calls("summary"))
        assert calls >= len(window.topic_ids())  # one call per topic at least, none extra
        for view in window.topics():
            summary = window.summaries[view.id].text
            assert summary.startswith(f"Title: {stub_title(summary_body(summary))}\n")
            assert view.title == model_title(summary)
            assert view.summary is not None and not view.summary.startswith("Title:")
        rendered = window.render(thread_id="chat").text()
        assert "Title:" not in rendered


async def test_offline_titles_are_phrases_of_the_topic_not_identifier_lists() -> None:
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    await resolve_all(window, ExtractiveSummarizer())  # the offline summarizer writes no title
    for view in window.topics():
        assert window.summaries[view.id].text.startswith("Title: ")  # stored with the summary
        phrase, _, name = view.title.partition(" · ")
        assert len(phrase.split()) == 2 and name, view.title
        words = [
            [w.strip(".,;:!?()\"'`").lower() for w in m.content.split()]
            for m in window.members(view.id)
        ]
        pairs = {f"{a} {b}" for ws in words for a, b in itertools.pairwise(ws)}
        assert phrase.lower() in pairs, view.title  # the topic's own words, in its own order


def test_a_title_is_never_numbers_alone() -> None:
    """A benchmark topic full of figures was titled "85, 84, 0.00"."""
    window = ContextWindow(WindowConfig(history_budget=256))
    for i in range(6):
        window.append("t", "user", f"bench {i}: 85, 84, 0.00 and 91.5 vs 12.25", timestamp=i)
        window.append("t", "assistant", f"85 84 0.00 {i}1.25 3.5 and 0.{i}", timestamp=i)
    window.flush_thread("t")
    titles = [window.title(r) for r in window.forest.live_roots()]
    assert titles and all(names_something(t) for t in titles), titles
    assert not names_something("85, 84, 0.00") and not names_something("2.25 GiB · 15m")


def test_a_model_title_of_numbers_alone_gives_way_to_the_topics_names() -> None:
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    job = window.summary_jobs(force=True)[0]
    window.apply_summary(job, SummaryResult("Title: 85, 84, 0.00\nI asked you about it.", "m"))
    assert names_something(window.title(job.topic_id)), window.title(job.topic_id)


def test_two_live_topics_never_share_a_title() -> None:
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    for job in window.summary_jobs(force=True):  # a summary model calling them all the same
        window.apply_summary(job, SummaryResult("Title: Invoicing service\nI asked you.", "m"))
    titles = [window.title(r) for r in window.forest.live_roots()]
    assert len(titles) >= 2 and len(set(titles)) == len(titles), titles
    assert all(t.startswith("Invoicing service (") for t in titles), titles


def test_an_offline_title_leaves_another_topics_subject_to_it() -> None:
    """Two topics titled "Error handler · application.yml (depotId)" and "… (DefaultErrorHandler)":
    a phrase another live topic is titled by is not this one's; its next best is."""
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    said: dict[int, Counter[str]] = {}
    for root in window.forest.live_roots():
        messages = window.log.get_many(window.forest.members(root))
        said[root] = Counter(p for m in messages for p in phrases(m.content))
    titles = {root: window.titles.offline(root, said[root]) for root in said}
    limited = next(r for r, t in titles.items() if t.startswith("Rate limit"))
    other = next(r for r in titles if r != limited)
    job = next(j for j in window.summary_jobs(force=True) if j.topic_id == other)
    window.apply_summary(job, SummaryResult("Title: Rate limit\nI asked you about it.", "m"))
    assert window.title(other) == "Rate limit"
    again = window.titles.offline(limited, said[limited])
    assert not again.startswith("Rate limit") and names_something(again), again


def test_titles_follow_drops_restores_and_new_summaries_at_once() -> None:
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    jobs = window.summary_jobs(force=True)
    for job in jobs:
        window.apply_summary(job, SummaryResult("Title: Invoicing service\nI asked you.", "m"))
    first, *others = [job.topic_id for job in jobs]
    assert window.title(first).startswith("Invoicing service (")
    for root in others:  # only one topic left live with the title: nothing to tell apart
        window.drop(root)
    assert window.title(first) == "Invoicing service"
    window.restore(others[0])
    assert window.title(first).startswith("Invoicing service (")
    window.apply_summary(jobs[0], SummaryResult("Title: Refund webhooks\nI asked you.", "m"))
    assert window.title(first) == "Refund webhooks"
    assert window.title(others[0]) == "Invoicing service"


def test_a_title_follows_a_summary_text_changed_in_place() -> None:
    """A merge appends the absorbed topic's summary to the survivor's text in place (the same
    Summary object): the remembered live titles must see that as a change."""
    window = ContextWindow(WindowConfig(history_budget=2048))
    replay_sample(window)
    jobs = window.summary_jobs(force=True)
    for job in jobs:
        window.apply_summary(job, SummaryResult(f"Title: Topic {job.topic_id}\nI asked you.", "m"))
    root = jobs[0].topic_id
    assert window.title(root) == f"Topic {root}"
    window.summaries[root].text = "Title: Refund webhooks\nI asked you."
    assert window.title(root) == "Refund webhooks"


def live_titles(path: Path) -> list[str]:
    window = replay_offline(path).window
    return [window.title(r) for r in window.forest.live_roots()]


def check_titles(titles: list[str]) -> None:
    assert len(set(titles)) == len(titles), titles  # unique among live topics
    for title in titles:
        assert names_something(title), titles  # never numbers alone
        assert len(title.split()) <= 8 and ", " not in title, titles  # a few words, no list


def test_the_sample_titles_are_a_few_words_unique_and_never_numbers_alone() -> None:
    check_titles(live_titles(SAMPLE))


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_titles_are_a_few_words_unique_and_never_numbers_alone(path: Path) -> None:
    check_titles(live_titles(path))


def test_a_title_loses_only_the_quotes_wrapped_around_all_of_it() -> None:
    """Each end was stripped on its own: a title ending in a quoted name lost its closing
    backtick and kept the opening one."""
    assert (
        model_title("Title: next: `alembic upgrade head`\nbody") == "next: `alembic upgrade head`"
    )
    assert model_title('Title: "Rate limiting"\nbody') == "Rate limiting"
    assert split_title("**Title:** `Rate limiting`\nI asked you ...") == (
        "Rate limiting",
        "I asked you ...",
    )
    assert (
        split_title("Title: “Alembic `env.py` fix”\nI asked you ...")[0] == "Alembic `env.py` fix"
    )


def one_topic(texts: list[str]) -> tuple[ContextWindow, int, Counter[str]]:
    """A window holding `texts` (user and assistant in turn) as one topic, that topic, and the
    phrases its messages say."""
    window = ContextWindow(WindowConfig(history_budget=256))
    for i, text in enumerate(texts):
        window.append("t", "user" if i % 2 == 0 else "assistant", text, timestamp=i)
    window.flush_thread("t")
    (root,) = window.forest.live_roots()
    return window, root, Counter(phrase for text in texts for phrase in phrases(text))


def test_an_offline_title_is_a_phrase_naming_a_thing_not_a_filler_one() -> None:
    """Offline titles read "Per frame · bindless.cpp", "Every hour · …", "Deployment goes · …":
    a title phrase has no joining or counting word, and one ending in a word the topic uses as a
    noun is preferred."""
    texts = [
        "Every frame allocates per frame scratch memory, and the deployment goes out per frame.",
        "Make the frame arena 16 MiB per frame; the deployment goes through the arena.",
        "The deployment goes fine now: the frame arena is reset per frame.",
        "Per frame the deployment goes quiet; deployment goes wrong when it overflows.",
    ]
    window, root, said = one_topic(texts)
    assert said["per frame"] == 0 and said["deployment goes"] == 4  # said, but "goes" is no noun
    assert window.titles.best_phrase(said, window.index[root].terms) == "frame arena"


def test_an_offline_title_names_a_file_before_a_folder_like_path() -> None:
    """A progress-bar topic was titled "Progress bar · blue": the last part of a template's
    `cyan/blue`, which looks like a folder, said more often than the file it was in."""
    texts = [
        "The progress bar template: `{wide_bar:.cyan/blue}` in src/progress.rs.",
        "Keep `{wide_bar:.cyan/blue}` for the progress bar; cyan/blue reads well on dark themes.",
        "The progress bar colours stay cyan/blue.",
    ]
    window, root, said = one_topic(texts)
    assert window.index[root].files.most_common(1)[0][0].endswith("cyan/blue")  # said most
    assert window.titles.offline(root, said) == "Progress bar · progress.rs"


async def test_an_offline_title_does_not_depend_on_how_far_key_line_upkeep_got() -> None:
    """The title counted the phrases key-line upkeep had collected by then: the same
    conversation got other titles from run to run in the server ("Host port" or "Shared
    database" for the demo's first topic)."""
    titles = []
    for collect_first in (True, False):
        window = ContextWindow(WindowConfig(history_budget=2048))
        replay_sample(window, key_lines=collect_first)
        await resolve_all(window, ExtractiveSummarizer())
        titles.append(sorted(window.title(r) for r in window.forest.live_roots()))
    assert titles[0] == titles[1]
