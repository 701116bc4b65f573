"""A question that asks for a kind of value ("which version", "how big", "how long") gets the
message, and the line of it, that states one: they share few of the question's words."""

from __future__ import annotations

import asyncio

from topicforest.engine.answer_types import asked_for, named_versions, states
from topicforest.engine.config import WindowConfig
from topicforest.engine.passages import excerpt, stem
from topicforest.engine.resolver import resolve_round
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.engine.tokens import estimate_tokens
from topicforest.engine.window import ContextWindow

from .helpers import UNRELATED, replayed


def test_the_kind_of_value_a_question_asks_for() -> None:
    def kinds(question: str, text: str) -> bool:
        return states(text, asked_for(question))

    assert kinds("Which Django version do we pin?", "Django==4.2.11")
    assert kinds("How big is the image now?", "rebuilt: 6.8 GB now")
    assert kinds("How long does the diff take for 1M entries?", "time: [61.3 ms]")
    assert kinds("How often did the loader test fail?", "it failed 1 in 7 runs")
    assert not kinds("How big is the image now?", "the build has 3 stages")
    assert asked_for("What does the dashboard show?") == ()
    # a place: a path, a file, a host and port, a channel; not a method call or a bare word
    assert kinds("Where do Hydra outputs go?", "run.dir: /mnt/runs/${now:%Y-%m-%d}")
    assert kinds("Where was it fixed?", "The fix is in trainer/loop.py: wrap eval in no_grad.")
    assert kinds("Where does paygate export traces to?", 'WithEndpoint("otel-collector:4317")')
    assert kinds("Where are failures posted?", "They go to #data-quality-alerts in Slack.")
    assert not kinds("Where was it fixed?", "We call os.path.join( on every request")
    assert not kinds("Where does the template live?", "Next to the other templates, I think.")
    assert kinds("What memory limit do the web pods have?", "limits: memory: 1536Mi")
    # "size" the verb, and memory as the subject rather than an amount, ask for no size
    assert asked_for("How does the allocator size its pools?") == ()
    assert asked_for("What caused the worker memory leak?") == ()


def test_a_version_asked_for_by_name_is_stated_next_to_that_name() -> None:
    def named(question: str, text: str) -> bool:
        return states(text, named_versions(question))

    django = "Which Django version does hearthware-shop use?"
    assert named(django, "`requirements/base.txt` pins `Django==4.2.11` (the 4.2 LTS line)")
    assert named(django, "We're still on Django 4.2.")
    assert not named(django, "pytest-8.0.2, django: version: 4.2.11")  # a log's field
    assert not named(django, "Prefetch with to_attr has been stable since long before.")
    assert named("Which Great Expectations version is pinned?", "great_expectations==0.18.8")
    assert named("Which AGP and Kotlin versions are in the catalog?", 'kotlin = "2.0.20"')
    assert named("Which version of the SQL Server provider?", "SqlServer 8.0.4")
    # no thing named: no pattern ("which version", "tool and version", a `catalog_version`)
    assert named_versions("Which version do we run?") == ()
    assert named_versions("Which migration tool and version runs them?") == ()
    assert named_versions("How is the stampede after a catalog_version bump prevented?") == ()


def test_an_excerpt_keeps_the_line_that_states_the_kind_of_value_asked_for() -> None:
    text = "\n".join(
        [
            "```",
            "image: 3 stages",
            "image layers: copied from the builder stage, after the venv is created",
            "image after the rebuild: 6.8 GB, down from 14.2 GB",
            "```",
        ]
    )
    stems = {"imag": 2.0}
    room = estimate_tokens("image after the rebuild: 6.8 GB, down from 14.2 GB") + 1
    assert "6.8 GB" in excerpt(text, stems, room, estimate_tokens, asked_for("How big is it?"))
    assert "6.8 GB" not in excerpt(text, stems, room, estimate_tokens)  # the shortest line, else


def test_an_excerpt_for_a_where_question_keeps_the_line_that_names_a_place() -> None:
    place = "traces: exported to otel-collector:4317"
    text = "\n".join(["```", "traces: batched, 512 per export", place, "```"])
    stems = {stem("traces"): 2.0}
    room = estimate_tokens(place) + 1
    where = asked_for("Where are the traces exported?")
    assert excerpt(text, stems, room, estimate_tokens, where) == place
    assert excerpt(text, stems, room, estimate_tokens) != place  # the shorter line, else


SIZE = (
    "How do we slim the docker image for the trainer?",
    "Rebuilt with a multi-stage build: the docker image for the trainer is 6.8 GB now.",
)
OTHER = (
    "Which base does the docker image for the trainer start from?",
    "The docker image for the trainer starts from the CUDA runtime base, pinned by digest.",
)


def test_recall_prefers_the_exchange_that_states_the_kind_of_value_asked_for() -> None:
    # the size is the older of the two; recall has room for one exchange
    window = replayed([SIZE, OTHER, *UNRELATED * 3], budget=180)
    asked = window.render(query="How big is the docker image for the trainer?", thread_id="t")
    assert "6.8 GB" in asked.text()


def test_an_exchange_stating_the_version_asked_for_by_name_comes_first() -> None:
    """ "Which Django version does hearthware-shop use?": the answer says `Django==4.2.11` and
    shares only "version" with it ("django" is in too many messages to count), while the one
    message naming the project outscored it and took the little room there is."""
    window = ContextWindow(WindowConfig(history_budget=256))
    for question, answer in [
        (
            "The category page is slow: 214 SQL queries for one page in django debug toolbar.",
            "Eight queries per card. Use select_related and prefetch_related in the django view.",
        ),
        (
            "which Django are we on? I want to be sure Prefetch with to_attr behaves as you say",
            "`requirements/base.txt` pins `Django==4.2.11` (the 4.2 LTS line) on Python 3.11. "
            "Prefetch with a custom queryset and to_attr has been stable for years, so nothing "
            "version-specific here.",
        ),
        *[
            (
                f"django admin change list for orders is slow again, page {n} takes {n + 2} s",
                f"Add list_select_related to the django admin and cap list_per_page at {20 + n}.",
            )
            for n in range(12)
        ],
        (
            "The README says hearthware-shop ships German and French storefronts next month. "
            "Which shop languages first?",
            "Start with the translation catalogs: run makemessages for de and fr, shop first.",
        ),
        *[
            (
                f"celery worker memory grows by {n + 1}00 MB an hour after the version bump",
                f"Set worker_max_memory_per_child to {n + 2}00000 and restart the pool.",
            )
            for n in range(6)
        ],
    ]:
        window.append("t", "user", question)
        window.append("t", "assistant", answer)
    window.flush_thread("t")
    asyncio.run(resolve_round(window, ExtractiveSummarizer(), force=True))
    asked = window.render(query="Which Django version does hearthware-shop use?", thread_id="t")
    assert "Django==4.2.11" in asked.text()
