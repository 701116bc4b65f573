"""Attachments are the repository's text, sent as quoted data: whatever they hold, fitting them
is bounded work and their quoting holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from topicforest.attachments import Attachment, fence_for, fit
from topicforest.engine.tokens import estimate_tokens as count

HANG = 120  # seconds: bounds a hang only (the fit below takes milliseconds)


def test_a_long_backtick_run_is_fenced_in_one_pass() -> None:
    # 1 MB of ordinary lines, then a run of 200,000 backticks: growing the fence a backtick at
    # a time rescanned the megabyte once per backtick (hours); one pass takes milliseconds.
    script = textwrap.dedent(
        """
        from topicforest.attachments import Attachment, fit
        from topicforest.engine.tokens import estimate_tokens as count
        text = "x = 1  # plain code\\n" * 50_000 + "`" * 200_000
        sent = fit([Attachment("file", "a.md", text)], 10_000_000, count)[0].text
        print(sent.splitlines()[1].count("`"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["200001"]


def test_the_fence_is_longer_than_every_run() -> None:
    assert fence_for([]) == "```"
    assert fence_for(["a `b` c", "``"]) == "```"
    assert fence_for(["````", "x ``````` y"]) == "`" * 8


def test_a_cut_attachment_of_backticks_still_fits_its_room() -> None:
    text = "\n".join("`" * (i % 50) for i in range(5000))
    sent = fit([Attachment("file", "a.md", text)], 2000, count)[0]
    assert sent.ref.truncated and sent.ref.tokens <= 2000
    assert "[truncated: lines" in sent.text
