"""What the offline digest keeps when a topic has to fit a small share of the render."""

from __future__ import annotations

import asyncio

import pytest

from topicforest.engine import ContextWindow, WindowConfig
from topicforest.engine.messages import Message
from topicforest.engine.render import fit_summary
from topicforest.engine.resolver import resolve_all
from topicforest.engine.summarize import ExtractiveSummarizer
from topicforest.engine.summarize.base import summary_body
from topicforest.engine.summarize.extractive import LEAD, Digest, entities


def _messages(*texts: str) -> list[Message]:
    return [
        Message(i + 1, "t", "user" if i % 2 == 0 else "assistant", text, float(i), len(text) // 3)
        for i, text in enumerate(texts)
    ]


def test_entities_keep_urls_settings_and_quantities_whole() -> None:
    found = entities(
        "Proxy /graphql to http://localhost:4000/graphql with changeOrigin, then run "
        "--shm-size=8g and num_workers=6; the image is 6.8 GB for 43,200 rows, 320px wide. "
        "The types are hand-written."
    )
    for whole in (
        "http://localhost:4000/graphql",
        "--shm-size=8g",
        "num_workers=6",
        "6.8 GB",
        "43,200",
        "320px",
    ):
        assert whole in found
    # no fragments: the tail of a hyphenated word is not a flag, a URL is not split up
    assert "-written" not in found and "//localhost" not in found and "200" not in found


def test_a_member_after_a_call_or_subscript_is_no_dotfile() -> None:
    """`expect(total).toBe(3)` listed ".toBe" among a topic's named things, as if it were a
    dotfile like `.env`."""
    found = entities(
        'expect(total).toBe(3); email = r["emailAddress"].lower(); items.flatMap(f). '
        "Put it in .env, not .gitignore or .github/workflows/ci.yml."
    )
    assert not {".toBe", ".lower", ".flatMap"} & set(found)
    assert {".env", ".gitignore", ".github/workflows/ci.yml"} <= set(found)


def test_a_log_line_names_its_timestamp_once_and_no_keyword() -> None:
    """A log line's `2024-03-15T19:02:11.022Z` counted as five names ("2024", "03", "15T19",
    …), and SELECT, WHERE and INFO as names of the project: a key line is ranked by the things
    it names, so timestamped log lines and SQL outranked settings."""
    log = "2024-03-15T19:02:11.022Z web-7c9d8f6b5-7hv4n INFO order HW-1187710 marked paid"
    assert entities(log) == ("2024-03-15T19:02:11.022Z", "web-7c9d8f6b5-7hv4n", "1187710")
    assert entities("at 10:02:31.449, released 2024-03-26") == ("10:02:31.449", "2024-03-26")
    query = "SELECT order_id FROM orders_orderline WHERE status = 'PAID' LIMIT 25"
    assert entities(query) == ("order_id", "orders_orderline", "PAID", "25")


def test_an_argument_cut_short_at_an_expression_is_no_setting() -> None:
    """`email=r["emailAddress"]` was listed as the setting "email=r" (23 times over the dev
    set's renders): a value that opens a subscript, a call or a prefixed string is cut short."""
    found = entities(
        'obj = Suppression(email=r["emailAddress"].lower()); key=f"price:{pk}"; x=foo.bar(1) '
        "with 'force=True', `retries=3` and stacklevel=2."
    )
    assert not any(name.startswith(("email=", "key=", "x=")) for name in found)
    assert {"force=True", "retries=3", "stacklevel=2"} <= set(found)


def test_a_dotfile_or_relative_path_keeps_its_leading_dot() -> None:
    """`.github/workflows/ci.yml` read as `github/workflows/ci.yml`, and `./run.sh` as the
    absolute `/run.sh`: a summary named files that do not exist. An ellipsis is no dot."""
    text = "Edit .github/workflows/ci.yml and .env, then ./scripts/run.sh and ../lib/util.py."
    assert entities(text) == (
        ".github/workflows/ci.yml",
        ".env",
        "./scripts/run.sh",
        "../lib/util.py",
    )
    assert entities("then ...src/app.py failed") == ("src/app.py",)


def test_kebab_case_names_are_named_things_and_hyphenated_words_are_not() -> None:
    """Infrastructure names its resources in kebab case (`name = "gha-helm-deploy"` named
    nothing, so a render's cut could not offer it); "hand-written" is still a word."""
    found = entities(
        'Set name = "gha-helm-deploy", keep the pw-prod-vpc-endpoints stack, add `django-filter`; '
        "the read-only, hand-written role stays."
    )
    assert {"gha-helm-deploy", "pw-prod-vpc-endpoints", "django-filter"} <= set(found)
    assert not {"read-only", "hand-written"} & set(found)


# Eight exchanges of one topic; each names its own module and several more things after it.
EXCHANGES = [
    f"In src/step{i}.py rename load_{i} to fetch_{i}, keep retry_{i} and cache_{i} as they are."
    for i in range(8)
]


def test_a_small_cut_names_something_from_every_exchange() -> None:
    """Room for about a dozen names: the first of each exchange, not all of the latest ones."""
    digest = Digest(None, _messages(*EXCHANGES))
    text = digest.select(60, sentence_share=0.0)
    for i in range(8):
        assert f"src/step{i}.py" in text


def test_names_an_earlier_summary_listed_each_count_on_their_own() -> None:
    """A rolling summary's list of names stands for many earlier sentences, not for one."""
    earlier = "I asked you about alpha. Also mentioned: " + ", ".join(
        f"old_name_{i}" for i in range(8)
    )
    digest = Digest(earlier + ".", _messages(*EXCHANGES))
    text = digest.select(90, sentence_share=0.0)
    assert sum(f"old_name_{i}" in text for i in range(8)) >= 3
    assert all(f"src/step{i}.py" in text for i in range(8))


def test_listed_names_read_in_conversation_order() -> None:
    text = Digest(None, _messages(*EXCHANGES)).select(60, sentence_share=0.0)
    listed = text.split("Also mentioned: ", 1)[1].rstrip(".").split(", ")
    assert [n for n in listed if n.startswith("src/")] == [f"src/step{i}.py" for i in range(8)]


def test_a_cut_keeps_the_newer_of_two_values() -> None:
    digest = Digest(
        None,
        _messages(
            "Set request_timeout_ms=100 for now.",
            "ok",
            "Raise it: request_timeout_ms=250 after the test.",
        ),
    )
    text = digest.select(16, sentence_share=0.0)
    assert "request_timeout_ms=250" in text and "request_timeout_ms=100" not in text


def test_chatter_only_gets_room_left_over() -> None:
    names = ", ".join(f"opt_{i}" for i in range(30))
    digest = Digest(None, _messages(f"Configure {names} in conf/app.yaml today please.", "Cool."))
    assert "Cool" not in digest.select(40)
    assert "Cool" in digest.select(2000)  # with room to spare it may still appear


def test_a_repeated_line_is_kept_once() -> None:
    line = "ENV PATH=/opt/venv/bin:$PATH"
    digest = Digest(None, _messages(f"```\n{line}\n```", f"```\n{line}\nRUN make\n```"))
    assert digest.select(400).count(line) == 1


def test_the_lead_names_files_and_code_before_numbers() -> None:
    """A summary's lead says what the topic is about: its files and code names, not the API
    acronym or the number that happened to be repeated most ("about API, 60, /minute")."""
    digest = Digest(
        None,
        _messages(
            "The API limit is 60 per minute; the API returns 429 after 60 calls in 60 s.",
            "Count in app/middleware/ratelimit.py with INCR; the API key is rl_key.",
            "Keep app/middleware/ratelimit.py small: API checks call rate_limit() once.",
        ),
    )
    lead = digest.summary(200).split(". ")[0]
    assert lead.startswith(f"{LEAD} app/middleware/ratelimit.py and ")
    assert "60" not in lead and "/minute" not in lead


def test_the_lead_names_what_many_messages_mention_not_a_stack_trace() -> None:
    """A pasted stack trace names its frames' files over and over, in one message: the lead
    names the file the conversation keeps coming back to (e.g. is no name either)."""
    frames = "\n".join(
        f'  File "/usr/lib/python3/site-packages/sqlalchemy/engine/base.py", line {n}, in execute'
        for n in range(1810, 1816)
    )
    digest = Digest(
        None,
        _messages(
            "Invoice totals are off by a cent in app/billing/invoice.py, e.g. for 3 lines.",
            f"It fails with this:\n```\nTraceback (most recent call last):\n{frames}\n```",
            "Round once in app/billing/invoice.py, at the end, with Decimal.quantize.",
            "done, app/billing/invoice.py rounds once now",
        ),
    )
    lead = digest.summary(200).split(". ")[0]
    assert lead.startswith(f"{LEAD} app/billing/invoice.py and ")
    assert "e.g" not in lead


def test_render_cut_spends_no_room_on_a_lead() -> None:
    """The topic header already names the topic; a cut summary goes straight to the facts."""
    window = ContextWindow(WindowConfig(history_budget=1024))
    for i, text in enumerate(EXCHANGES):
        window.append("t", "user", text, timestamp=float(i))
        window.append("t", "assistant", f"Done, step {i} passes.", timestamp=float(i))
    window.flush_thread("t")
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    (root,) = window.forest.live_roots()
    summary = summary_body(window.summaries[root].text)  # the title line is stored first
    assert summary.startswith(LEAD)  # a summary shown on its own leads with what it is about
    cut = fit_summary(window, root, summary, 40)
    assert cut and LEAD not in cut


def test_render_cut_does_not_repeat_what_the_header_names() -> None:
    window = ContextWindow(WindowConfig(history_budget=1024))
    for i, text in enumerate(EXCHANGES):
        window.append("t", "user", f"build_loader again: {text}", timestamp=float(i))
        window.append("t", "assistant", "Done, build_loader passes.", timestamp=float(i))
    window.flush_thread("t")
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    (root,) = window.forest.live_roots()
    assert "build_loader" in window.title(root)
    cut = fit_summary(window, root, summary_body(window.summaries[root].text), 40)
    assert "src/step7.py" in cut and "build_loader" not in cut


def test_no_query_render_keeps_facts_from_the_whole_topic() -> None:
    """A long topic cut to its share still names its early exchanges, not only the last ones.

    Three of eight: the stored summary is now sentences a person reads, and three of these fill
    its 110 tokens (a list of every name held all eight; on the dev set the sentences keep as
    many facts: docs/benchmarks.md)."""
    window = ContextWindow(WindowConfig(history_budget=512))
    for i, text in enumerate(EXCHANGES * 2):
        window.append("t", "user", text.replace("step", f"s{i // 8}_step"), timestamp=float(i))
        window.append("t", "assistant", "Done.", timestamp=float(i))
        window.graduate()
    asyncio.run(resolve_all(window, ExtractiveSummarizer()))
    text = window.render(thread_id="t").text()
    early = [f"src/s0_step{i}.py" for i in range(8)]
    assert sum(path in text for path in early) >= 3, text


def test_a_cut_lists_no_bare_one_or_two_digit_numbers() -> None:
    """A render's cut summary read "Also mentioned: 14, ApiClient, 8.8, 15s, 15." and
    "…, 06, 00, CPU, 38.": a number of one or two digits alone names nothing."""
    digest = Digest("We set the pool to 14 and a 15s timeout on port 8000 since 2024 (06:00).", [])
    also = digest.select(20, 0.0)
    assert also.startswith("Also mentioned:")
    names = also.removeprefix("Also mentioned:").rstrip(".").split(", ")
    assert [n.strip() for n in names] == ["15s", "8000", "2024"]


def test_a_rebuilt_digest_does_not_cut_the_same_messages_again() -> None:
    """A render rebuilds a topic's digest whenever its question recalls one of the quotable
    messages (left out of the digest): the messages it had cut before are not cut again, and
    the rebuilt digest is the one a fresh cut makes."""
    from topicforest.engine.summarize import extractive

    texts = [f"Use `pw-prod-{i}` on port 54{i:02d}. Then run make deploy-{i}." for i in range(12)]
    texts.append("x" * (extractive.CACHED_MESSAGE + 1) + ". Too long to remember.")
    messages = _messages(*texts)
    extractive._cached_units.cache_clear()
    fresh = Digest("Earlier: we set up the VPC.", messages, "Deploys")
    cut = extractive._cached_units.cache_info()
    rebuilt = Digest("Earlier: we set up the VPC.", messages[1:], "Deploys")
    again = extractive._cached_units.cache_info()
    assert cut.misses == 13  # every message but the one too long to remember, and the summary
    assert (again.hits, again.misses) == (12, 13)
    extractive._cached_units.cache_clear()
    uncached = Digest("Earlier: we set up the VPC.", messages[1:], "Deploys")
    assert (rebuilt.units, rebuilt.sources) == (uncached.units, uncached.sources)
    assert rebuilt.select(60) == uncached.select(60) and rebuilt.summary(80) == uncached.summary(80)
    assert len(fresh.units) > len(rebuilt.units)


def test_a_digest_extended_by_new_messages_is_the_one_built_from_all_of_them() -> None:
    """A render digests a dirty topic again each time upkeep graduates an exchange into it: the
    digest it had is extended with the new messages, and must be the digest of all of them
    (sentences said again, the summary's place, recency, names offered and their order)."""
    texts = [
        f"Use `pw-prod-{i % 5}` on port 54{i:02d}. Then run make deploy-{i % 3}. Cool."
        for i in range(14)
    ]
    messages = _messages(*texts)
    summary = "We set up the VPC in infra/vpc.tf. Also mentioned: subnet_a, 10.0.0.0/16."
    for earlier in (0, 2):
        whole = Digest(summary, messages, "Deploys · deploy-1", earlier)
        part = Digest(summary, messages[:5], "Deploys · deploy-1", earlier)
        assert part.lead  # a cached lead is the part's, not the grown digest's
        before = (list(part.units), part.select(60))
        grown = part.extended(messages[5:9]).extended(messages[9:])
        for name in ("units", "sources", "found", "costs", "ranked", "named", "entities"):
            assert getattr(grown, name) == getattr(whole, name), name
        assert grown.entity_costs == whole.entity_costs and grown.first_seen == whole.first_seen
        assert grown.select(60) == whole.select(60) and grown.select(200, 0.25) == whole.select(
            200, 0.25
        )
        assert grown.summary(80) == whole.summary(80) and grown.lead == whole.lead
        assert (part.units, part.select(60)) == before  # the part is left as it was


def test_a_digest_does_not_extend_before_the_summary_has_its_place() -> None:
    """The first `earlier` messages go before the summary's sentences: a digest that has not
    read them all cannot be extended (the summary's sentences would move)."""
    digest = Digest("We set up the VPC.", _messages("Use port 5400.", "Cool."), earlier=3)
    with pytest.raises(ValueError):
        digest.extended(_messages("Use port 5401."))
