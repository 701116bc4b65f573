"""`excerpt`: the passages of a recalled message that answer a query."""

from __future__ import annotations

import pytest

from topicforest.engine.passages import excerpt, stem_weights
from topicforest.engine.tokens import estimate_tokens

REPLY = (
    "Good catch. The retry loop never resets its backoff after a success, so once three "
    "requests fail in a row every later request waits the whole window before it tries again "
    "and the worker pool slowly starves."
)


def test_a_message_that_fits_whole_comes_back_whole() -> None:
    # The reported case: a 48-token message, 49 tokens of room, and only its opener came back.
    room = estimate_tokens(REPLY) + 1
    assert excerpt(REPLY, {"catch": 1.0}, room, estimate_tokens) == REPLY


def test_an_excerpt_never_stops_at_an_opener_when_the_next_sentence_fits() -> None:
    text = REPLY + " " + " ".join(["Unrelated closing words about lunch and the weather."] * 4)
    room = estimate_tokens(REPLY) + 1  # the opener and its sentence fit, not the whole message
    got = excerpt(text, {"catch": 1.0}, room, estimate_tokens)
    assert got.startswith("Good catch. The retry loop never resets its backoff"), got
    assert estimate_tokens(got) <= room


def test_no_match_still_means_no_excerpt() -> None:
    assert excerpt(REPLY, {"kubernetes": 1.0}, 500, estimate_tokens) == ""


def test_an_excerpt_never_quotes_a_list_marker_or_a_bracket_alone() -> None:
    text = (
        "Two ways to keep the descriptor pools from running out:\n"
        "1. Grow them: allocate a new pool of twice the size when vkAllocateDescriptorSets fails.\n"
        "2. Reset them every frame, since the sets are rebuilt anyway.\n"
        "```cpp\nif (res == VK_ERROR_OUT_OF_POOL_MEMORY) {\n  grow();\n}\n```"
    )
    got = excerpt(text, {"pool": 2.0, "descriptor": 1.0}, 24, estimate_tokens)
    passages = [p.strip() for p in got.split("…")]
    assert all(any(c.isalpha() for c in p) for p in passages), got


def test_a_line_stating_a_hexadecimal_value_counts_as_stating_a_value() -> None:
    # A service's UUID shares one common word with the question; the lines after it state
    # `key: value` pairs. Hex (a UUID, a hash, 0x31) is a value as much as 300 is.
    text = (
        "Yes, a custom 128-bit service. Pick one random base UUID and number the "
        "characteristics off it:\n\n"
        "- service `8e4f0001-5b1a-4c2e-9d3f-2a6c1e7b0a10`\n"
        "- `...0002...` records: notify, the log stream\n"
        "- `...0003...` control point: write + indicate, commands and their results\n"
        "- `...0004...` live: read, current sample\n\n"
        "The live characteristic returns the same record, so the app needs one decoder."
    )
    query = {"uuid": 3.0, "custom": 1.0, "gatt": 2.0, "service": 1.0, "characteristic": 2.0}
    got = excerpt(text, query, 60, estimate_tokens)
    assert "8e4f0001-5b1a-4c2e-9d3f-2a6c1e7b0a10" in got, got


def test_a_code_line_that_defines_a_name_counts_as_stating_a_value() -> None:
    # The reported case: the excerpt kept the model's fields (`x = models.CharField(...)`,
    # values) and left out the line naming the model the question was about.
    text = (
        "Record each delivery once, keyed on the event id, and ignore a redelivery:\n\n"
        "```python\n"
        "# payments/models.py\n"
        "class ProcessedWebhookEvent(models.Model):\n"
        "    event_id = models.CharField(max_length=255, unique=True)\n"
        "    type = models.CharField(max_length=100)\n"
        "    received_at = models.DateTimeField(auto_now_add=True)\n"
        "    processed_at = models.DateTimeField(null=True, blank=True)\n"
        "    payload = models.JSONField()\n"
        "```\n\n"
        "A duplicate delivery then fails the unique constraint and is logged, not processed."
    )
    query = {"duplicat": 3.0, "delivery": 2.0, "webhook": 1.0}
    got = excerpt(text, query, 60, estimate_tokens)
    assert "class ProcessedWebhookEvent" in got, got


@pytest.mark.parametrize(
    "definition",
    [
        "fun migrate3To4_keepsTrailsAndDefaultsElevation() {",  # Kotlin
        "data class TrailCardUi(",
        "defp start_isolated_plan_cache(_context) do",  # Elixir
        "defmodule Tallyboard.Billing.PlanCache do",
    ],
)
def test_definitions_in_kotlin_and_elixir_count_as_stating_a_value(definition: str) -> None:
    # The reported case: "what's the 3->4 migration test called?" got the test's setup lines
    # and not the `fun` line that names it (Kotlin's `fun`, Elixir's `defp` were not read as
    # definitions, while Python's `def` and Rust's `fn` were).
    text = (
        "The migration test, with the schema the helper checks:\n\n"
        "```kotlin\n"
        "@Test\n"
        f"{definition}\n"
        "    helper.createDatabase(TEST_DB, 3).use { db -> db.execSQL(SEED_SQL) }\n"
        "    val db = helper.runMigrationsAndValidate(TEST_DB, 4, true, MIGRATION_3_4)\n"
        '    db.query("SELECT elevation_gain_m FROM trails").use { c -> check(c) }\n'
        "}\n"
        "```\n\n"
        "Run it on a managed device in CI so a broken migration never ships again."
    )
    query = stem_weights({"migration": 3.0, "test": 1.0, "called": 1.0})
    got = excerpt(text, query, 50, estimate_tokens)
    assert definition.split("(")[0] in got, got


def test_an_excerpt_of_many_separate_lines_stays_within_its_room() -> None:
    # The gaps (" … ") between lines it picks cost tokens too: an excerpt that overran its room
    # was left out whole by the render (as happened to 76 of 7,757 excerpts on the dev set).
    lines = [f"plan_{i} = {i}\n// {'unrelated filler words here ' * 3}" for i in range(30)]
    text = "The plan lines:\n```python\n" + "\n".join(lines) + "\n```"
    for room in range(20, 80):
        got = excerpt(text, {"plan": 2.0}, room, estimate_tokens)
        assert got.startswith("plan_0 = 0 … plan_1 = 1"), (room, got)
        assert estimate_tokens(got) <= room, (room, got)
