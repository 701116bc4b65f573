"""`attachments.fit`: every attachment within one budget, cut at a line with a visible marker."""

from __future__ import annotations

from topicforest.attachments import Attachment, fit, request_text, user_text, with_references
from topicforest.engine.tokens import estimate_tokens as count

LONG = "\n".join(f"    total_{i} = compute(row_{i}, factor={i})" for i in range(300))


def test_small_ones_go_whole_and_the_big_one_is_cut_with_its_line_numbers() -> None:
    small = Attachment("selection", "a.py", "x = 1", (0, 0), "python")
    big = Attachment("selection", "src/app.py", LONG, (99, 398), "python")
    sent = fit([big, small], 500, count)
    assert sum(s.ref.tokens for s in sent) <= 500
    cut, whole = sent
    assert not whole.ref.truncated and "x = 1" in whole.text
    assert cut.ref.truncated and cut.text.startswith("### src/app.py:100-399 (selection, python)")
    kept = cut.text.count("total_")
    # file lines 100.. were sent; the marker names the first line not sent and the last one
    assert f"… [truncated: lines {100 + kept}–399 of src/app.py not sent]" in cut.text
    assert fit([big], 100_000, count)[0].text.count("total_") == 300  # room: all of it


def test_no_room_is_said_not_hidden() -> None:
    many = [Attachment("file", f"f{i}.py", LONG) for i in range(20)]
    sent = fit(many, 256, count)
    assert all(s.ref.truncated for s in sent)
    assert all("not sent" in s.text for s in sent)


def test_a_fence_inside_the_code_cannot_close_the_block() -> None:
    text = "```\nnot the end\n```"
    body = fit([Attachment("file", "README.md", text)], 4096, count)[0].text
    assert "````\n```\nnot the end\n```\n````" in body


def test_references_come_off_for_the_history_and_the_request() -> None:
    sent = fit([Attachment("problems", "src/a.py", "src/a.py:3:1 error E1")], 4096, count)
    refs = [s.ref for s in sent]
    stored = with_references("what is wrong?", refs)
    assert stored == "what is wrong?\n\n[attached problems of src/a.py]"
    assert user_text(stored, refs) == "what is wrong?"
    request = request_text(stored, refs, [s.text for s in sent])
    assert request.startswith("what is wrong?\n\nAttached from the editor")
    assert "[attached" not in request and "src/a.py:3:1 error E1" in request
