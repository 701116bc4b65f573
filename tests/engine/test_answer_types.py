"""A question that asks for a kind of value ("which version", "how big", "how long") gets the
message, and the line of it, that states one: they share few of the question's words."""

from __future__ import annotations

from topicforest.engine.answer_types import asked_for, states
from topicforest.engine.passages import excerpt, stem
from topicforest.engine.tokens import estimate_tokens

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
