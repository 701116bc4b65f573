"""Offline summaries a person can read: short first-person sentences that keep names and
numbers, never a comma-separated keyword dump, never a pasted line of code.

Checked on every summary the offline summarizer writes while the bundled sample and the dev
conversations (../shared/eval, skipped where absent) are replayed, and on small cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.passages import OMITTED, condense
from topicforest.engine.summarize.extractive import Digest
from topicforest.engine.tokens import estimate_tokens

from ..conftest import requires_shared_eval, shared_conversations
from .readability import (
    code_line,
    is_code,
    keyword_dump,
    log_noise,
    markup,
    run_on,
    stray_continuation,
)
from .replays import HELD_OUT, SAMPLE, replay_offline


def unreadable(summaries: list[str]) -> list[str]:
    found = []
    for text in summaries:
        if (dump := keyword_dump(text)) is not None:
            found.append(f"keyword dump {dump!r} in: {text[:200]}")
        if (line := code_line(text)) is not None:
            found.append(f"code line {line!r} in: {text[:200]}")
        if (noise := log_noise(text)) is not None:
            found.append(f"log noise {noise!r} in: {text[:200]}")
        if (stray := stray_continuation(text)) is not None:
            found.append(f"continuation alone {stray!r} in: {text[:200]}")
        if (joined := run_on(text)) is not None:
            found.append(f"run-on or label {joined!r} in: {text[:200]}")
        if (marks := markup(text)) is not None:
            found.append(f"markdown marks {marks!r} in: {text[:200]}")
    return found


def test_the_checker_catches_what_the_issue_reported() -> None:
    reported = (
        "I asked you about main.rs, src/config.rs, Cargo.toml. You said: "
        "ExitCode::from(EXIT_ERROR) Also mentioned: MinIO, 4.5.4, src/cli.rs, ArgAction, --jobs."
    )
    assert keyword_dump(reported) and keyword_dump("It uses MinIO, 4.5.4, src/cli.rs, ArgAction, x")
    assert is_code("let len = file.metadata().await?.len();")
    assert is_code("ExitCode::from(EXIT_ERROR)")
    fine = (
        'I asked you about src/s3.rs and reqwest. You said: Pin `reqwest = "0.12.4"` and set '
        "`read_timeout` to 60 s. You showed src/multipart.rs with `MAX_PARTS: u64 = 10_000`."
    )
    assert unreadable([fine]) == []


def test_the_sample_summaries_are_sentences() -> None:
    replay = replay_offline(SAMPLE)
    assert replay.summaries  # the replay summarized its topics
    assert unreadable(replay.summaries) == []


@pytest.mark.parametrize("path", HELD_OUT, ids=lambda p: p.stem)
def test_the_held_out_summaries_are_sentences(path: Path) -> None:
    replay = replay_offline(path)
    assert replay.summaries
    assert unreadable(replay.summaries) == []


@requires_shared_eval
@pytest.mark.parametrize("path", shared_conversations(), ids=lambda p: p.stem)
def test_the_dev_set_summaries_are_sentences(path: Path) -> None:
    replay = replay_offline(path)
    assert replay.summaries
    assert unreadable(replay.summaries) == []


def _messages(*texts: str) -> list[Message]:
    return [
        Message(i + 1, "t", "user" if i % 2 == 0 else "assistant", text, float(i), len(text) // 3)
        for i, text in enumerate(texts)
    ]


def test_a_code_block_is_said_in_a_sentence_that_keeps_its_values_and_file() -> None:
    digest = Digest(
        None,
        _messages(
            "the pool runs out under load, what should app/db.py use?",
            "Raise the pool in `app/db.py`:\n```python\n# app/db.py\n"
            "engine = create_engine(url, pool_size=20, max_overflow=5, poolclass=QueuePool)\n"
            "POOL_RECYCLE = 1800\n```\nThat holds 25 connections at most.",
        ),
    )
    text = digest.summary(200)
    assert unreadable([text]) == [], text
    for name in ("app/db.py", "pool_size=20", "max_overflow=5", "POOL_RECYCLE = 1800", "25"):
        assert name in text, (name, text)
    assert text.startswith("I asked you about app/db.py")


def test_a_pasted_log_is_said_as_a_log_without_its_times_fields_or_ids() -> None:
    digest = Digest(
        None,
        _messages(
            "deploys kill the import job mid-run, log from the job container:\n```\n"
            "2024-03-25T14:02:11.904Z pid=1 tid=2a8 INFO: Shutting down BankImportJob\n"
            "2024-03-25T14:02:19.913Z pid=1 tid=2a8 WARN: Sidekiq::Shutdown in app/jobs/"
            "bank_import_job.rb\n"
            "14:02:21.002 ledgerly-job-3f9a1c0d exited with code 137\n"
            "2024/03/25 14:02:22 docker: container exited\n"
            "usedAt=2024-03-25T14:02:23.118Z reason=drain_timeout userAgent=kamal\n```",
            "Exit code 137 means `docker stop` killed it after its grace period: raise "
            "`drain_timeout` to 30 in config/deploy.yml.",
        ),
    )
    text = digest.summary(200)
    assert unreadable([text]) == [], text
    assert "I pasted a log" in text, text
    assert "BankImportJob" in text, text
    for noise in ("14:02", "pid=1", "tid=2a8", "3f9a1c0d", "/03/25", "118Z", "usedAt="):
        assert noise not in text, (noise, text)


def test_keyword_arguments_and_settings_are_no_record_fields() -> None:
    digest = Digest(
        None,
        _messages(
            "what should the engine use?",
            "```python\n# app/db.py\nengine = create_engine(url, pool_size=20, "
            "max_overflow=5, poolclass=QueuePool)\n```",
        ),
    )
    text = digest.summary(200)
    for name in ("pool_size=20", "max_overflow=5"):
        assert name in text, (name, text)


def test_the_mark_of_a_condensed_paste_is_no_sentence_of_its_summary() -> None:
    long_reply = "Split the import into batches of 500 rows in `app/importer.py`." + OMITTED
    text = Digest(None, _messages("the import is slow", long_reply)).summary(200)
    assert "more lines" not in text, text
    assert "app/importer.py" in text, text


def test_a_continuation_of_an_earlier_summary_never_stands_alone() -> None:
    earlier = (
        "Title: Descriptor sets\nI asked you about src/vk/pool.cpp. "
        "You showed src/vk/pool.cpp with `kMaxSets = 1024`, `VkDescriptorPool` and "
        "`vkAllocateDescriptorSets`. It also has `VK_ERROR_OUT_OF_POOL_MEMORY`, `poolSizes` and "
        "`maxSets`."
    )
    later = _messages(
        "the pool still runs out after a resize, with `VK_ERROR_FRAGMENTED_POOL` on frame 300",
        "Allocate per frame from `FrameDescriptorAllocator` in src/vk/frame_alloc.cpp and reset "
        "the whole pool with `vkResetDescriptorPool` at frame start; keep `kFramesInFlight = 2`.",
    )
    for room in range(16, 120, 4):
        text = Digest(earlier, later).summary(room)
        assert stray_continuation(text) is None, (room, text)


LONG_REPLY = (
    "The pool runs dry because every request holds a connection for the whole render. "
    "Give the engine a bounded pool and recycle idle connections:\n\n"
    "```python\n# app/db.py\n"
    + "".join(
        f"# step {n}: keep the pool warm under load while the importer runs\n" for n in range(12)
    )
    + "engine = create_engine(url, pool_size=20, max_overflow=5)\n"
    "POOL_RECYCLE = 1800\n```\n\n"
    "Then `SELECT count(*) FROM pg_stat_activity` should stay under 25 during the import. "
    + "It is the same advice as before for the worker and the scheduler alike. "
    * 6
)


def test_a_condensed_reply_keeps_its_code_in_a_fence_and_its_summary_says_it() -> None:
    condensed = condense(LONG_REPLY, 120, estimate_tokens)
    assert estimate_tokens(condensed) <= 120
    assert "\n```\n" in "\n" + condensed + "\n", condensed  # a fence of its own
    assert "\nPOOL_RECYCLE = 1800\n" in condensed, condensed  # a code line on a line of its own
    text = Digest(None, _messages("the pool runs dry under load", condensed)).summary(120)
    assert unreadable([text]) == [], text
    assert "You showed" in text and "POOL_RECYCLE = 1800" in text, text


def test_a_sentence_that_opens_a_block_ends_and_the_block_is_said_by_its_file() -> None:
    reply = (
        "Give the replayer its own container factory whose error handler only logs:\n\n"
        "```java\nfactory.setCommonErrorHandler(new LoggingErrorHandler());\n"
        "factory.setConcurrency(DLT_CONSUMERS);\n```\n\n"
        "That keeps a poison record from blocking the partition."
    )
    condensed = "(src/main/java/app/DltConfig.java)\n" + reply.split("\n\n", 1)[1]
    for text in (reply, reply.split("\n\n", 1)[0] + "\n\n" + condensed):
        summary = Digest(None, _messages("replayed 3,412 records, 51 duplicates", text)).summary(90)
        assert unreadable([summary]) == [], summary
    assert "only logs." in Digest(None, _messages("replay?", reply)).summary(200)
    labelled = Digest(None, _messages("replay?", condensed)).summary(90)
    assert "You showed src/main/java/app/DltConfig.java with" in labelled, labelled


def test_a_condensed_list_keeps_its_items_and_paragraphs_apart() -> None:
    reply = (
        "Each of these hits the database once per product:\n"
        "- `product.images.first`: one query\n"
        "- `product.tags.all`: one query\n"
        "- `get_absolute_url` uses `self.category.slug`: one more\n\n"
        "Fetch everything up front with `prefetch_related`.\n\n"
        "```python\n" + "".join(f"row_{n} = fetch({n})\n" for n in range(40)) + "```"
    )
    condensed = condense(reply, 120, estimate_tokens)
    assert "\n- `product.tags.all`: one query\n" in condensed, condensed
    assert "one more\nFetch everything" in condensed, condensed
    text = Digest(None, _messages("the product grid is slow", condensed)).summary(200)
    assert unreadable([text]) == [], text
    assert " - `" not in text and "one more Fetch" not in text, text


def test_a_sentence_ending_in_code_ends_before_the_next_speaker() -> None:
    messages = _messages(
        "so ~130k points in one `<LineChart>`",
        "Downsample before rendering with LTTB: `lttb(points, 1000)` keeps the peaks.",
    )
    text = Digest(None, messages).summary(200)
    assert "`<LineChart>`. You said:" in text, text
    assert unreadable([text]) == [], text


def test_bold_markers_are_no_part_of_a_sentence() -> None:
    reply = (
        "**Retry window.** Raise `max_retries` to 6 with `retry_backoff_max=600`.\n\n"
        "- **Review notes**: say where account deletion lives; the globs stay `src/**`."
    )
    text = Digest(None, _messages("SES throttles us", reply)).summary(200)
    assert unreadable([text]) == [], text
    assert "Raise `max_retries` to 6" in text and "Review notes: say" in text, text


def test_a_shebang_names_no_file() -> None:
    script = "```python\n#!/usr/bin/env python3\n# tools/check_size.py\nLIMIT_KB = 448\n```"
    text = Digest(None, _messages("how do we stop the image outgrowing flash?", script)).summary(60)
    assert "/usr/bin/env" not in text and "tools/check_size.py" in text, text


def test_a_markdown_table_is_said_as_a_table() -> None:
    reply = (
        "Which errors map to which HTTP status:\n\n"
        "| reason | status | retry |\n|---|---|---|\n"
        "| `CARD_DECLINED` | 402 | no |\n| `IDEMPOTENCY_KEY_REUSED` | 422 | no |\n"
        "| `ACQUIRER_TIMEOUT` | 503 | yes |\n"
    )
    text = Digest(None, _messages("what status does a decline get?", reply)).summary(120)
    assert unreadable([text]) == [], text
    assert "You showed a table with" in text and "CARD_DECLINED" in text, text
    assert "|" not in text, text


def test_a_lead_names_files_before_word_pairs_with_a_slash() -> None:
    digest = Digest(
        None,
        _messages(
            "NAT data processing is $2,200 a month: reads/writes to S3, or begin/commit/rollback "
            "chatter? reads/writes mostly, I think",
            "Mostly reads/writes from the apps: add an S3 gateway endpoint in "
            "`envs/prod/network/endpoints.tf` next to `terraform-aws-modules/vpc/aws`.",
        ),
    )
    assert digest.lead == (
        "I asked you about envs/prod/network/endpoints.tf and terraform-aws-modules/vpc/aws."
    ), digest.lead


def test_a_lead_names_the_projects_files_before_those_of_a_pasted_trace() -> None:
    trace = (
        "spec fails with this:\n```\nActsAsTenant::Errors::NoTenantSet\n"
        "/usr/local/bundle/gems/acts_as_tenant-1.0.1/lib/acts_as_tenant/model_extensions.rb:29\n"
        "/usr/local/bundle/gems/activerecord-7.1.3.2/lib/active_record/scoping/default.rb:150\n```"
    )
    digest = Digest(
        None,
        _messages(
            trace,
            "Set the tenant in `spec/support/tenant.rb` before each system spec, and keep "
            "`config.require_tenant = true` in `config/initializers/acts_as_tenant.rb`.",
        ),
    )
    assert digest.lead == (
        "I asked you about spec/support/tenant.rb and config/initializers/acts_as_tenant.rb."
    ), digest.lead
