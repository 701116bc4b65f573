"""The report's external-set section: aider PR #4940's conversations, its targets and JSON.

`External` is the set's evaluation, or the reason it was not run (the report says which).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from topicforest.eval.external import EXTERNAL, UPSTREAM
from topicforest.eval.external_run import ExternalEvaluation, ExternalResult
from topicforest.eval.scores import Add
from topicforest.eval.targets import Target

External = ExternalEvaluation | str
# ../shared/external/README.md: the answer-key rule against the upstream judge's verdicts
# (tests/eval/test_external.py checks it on the set: 238 of 266).
JUDGE_AGREEMENT = "89.5%"


def share(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def pct1(pair: tuple[int, int]) -> str:
    return f"{100 * share(pair):.1f}% ({pair[0]}/{pair[1]})" if pair[1] else "–"


def kept(r: ExternalResult, key: str) -> tuple[int, int]:
    return getattr(r, key) or 0, r.questions


def largest_shares(ext: ExternalEvaluation) -> list[float]:
    return [r.largest_share for r in ext.results]


def empty_lines(ext: ExternalEvaluation) -> int:
    return sum(r.empty_lines for r in ext.results)


def has_aider(ext: ExternalEvaluation) -> bool:
    return any(r.aider is not None for r in ext.results)


def external_targets(ext: External) -> list[Target]:
    """Issue 26's external-set targets; NOT MEASURED (with the reason) when the set was not run."""
    wanted = [
        ("External: question as query", "≥ 95% pooled"),
        ("External: question as query, worst conversation", "≥ 85%"),
        ("External: no query vs aider ChatSummary (real)", "≥ aider + 15 pp (pooled)"),
        ("External: no query, worst conversation", "≥ 25%"),
        ("External: largest topic, share of the messages", "≤ 35% (median conversation)"),
        ("External: empty summary lines", "none"),
    ]
    if isinstance(ext, str):
        return [Target(name, want, f"not measured ({ext})", None) for name, want in wanted]
    query, low_query = ext.pooled("kept_query"), ext.worst("kept_query")
    plain, low_plain = ext.pooled("kept_plain"), ext.worst("kept_plain")
    median = statistics.median(largest_shares(ext))
    versus: tuple[str, bool | None]
    if has_aider(ext):
        aider = ext.pooled("aider")
        gap = share(plain) - share(aider)
        versus = (
            f"{pct1(plain)} vs {pct1(aider)} ({100 * gap:+.1f} pp)",
            gap >= 0.15 - 1e-9,
        )
    else:
        versus = (f"not measured ({ext.aider_note})", None)
    values: list[tuple[str, bool | None]] = [
        (pct1(query), share(query) >= 0.95),
        (
            f"{pct1(kept(low_query, 'kept_query'))} (`{low_query.id}`)",
            share(kept(low_query, "kept_query")) >= 0.85,
        ),
        versus,
        (
            f"{pct1(kept(low_plain, 'kept_plain'))} (`{low_plain.id}`)",
            share(kept(low_plain, "kept_plain")) >= 0.25,
        ),
        (
            f"median {100 * median:.0f}%, max {100 * max(largest_shares(ext)):.0f}%",
            median <= 0.35,
        ),
        (f"{empty_lines(ext)} over all renders", empty_lines(ext) == 0),
    ]
    return [
        Target(name, want, measured, met)
        for (name, want), (measured, met) in zip(wanted, values, strict=True)
    ]


def external_section(ext: External, add: Add) -> None:
    """Per conversation, pooled and worst; the upstream figures beside ours."""
    add("## External set: conversations nobody here wrote")
    add("")
    if isinstance(ext, str):
        add(f"Not run: {ext}.")
        add("")
        return
    data = ext.data
    add(f"The {len(data.conversations)} conversations and {data.questions} questions of aider")
    add(f"PR #4940's union-find experiment (`{EXTERNAL}`, see its `SOURCE.md`), replayed as")
    add("Topic Forest is above (the engine's window with the memory's upkeep, a pause after each")
    add(
        f"reply) at {ext.budget} tokens with the same independent lead-sentence summarizer; aider's"
    )
    add(f"real `ChatSummary` on the same summarizer: {ext.aider_note}. Each question's")
    add("`expected_answer` becomes answer keys by the rule of `../shared/external/README.md`; a")
    add(
        "question is kept when every key is in the final context. "
        f"{data.answerable} of {data.questions} are answerable (left out, their keys not all in"
    )
    add(
        "the conversation: "
        + ", ".join(f"`{u.conversation}` {u.question} {u.answer!r}" for u in data.unanswerable)
        + ")."
    )
    add("")
    aider = has_aider(ext)
    add(
        "| conversation | messages | questions | with query | no query | aider ChatSummary "
        "| topics | messages in topics | largest topic | empty summary lines |"
    )
    add("|---|---|---|---|---|---|---|---|---|---|")

    def cell(pair: tuple[int, int], shown: bool = True) -> str:
        return pct1(pair) if shown else "–"

    for r in ext.results:
        add(
            f"| `{r.id}` | {r.messages} | {r.questions} | {cell(kept(r, 'kept_query'))} | "
            f"{cell(kept(r, 'kept_plain'))} | {cell(kept(r, 'aider'), r.aider is not None)} | "
            f"{r.topics} | {r.in_topics} | {100 * r.largest_share:.0f}% | {r.empty_lines} |"
        )
    shares = largest_shares(ext)
    add(
        f"| **all** | {sum(r.messages for r in ext.results)} | {data.answerable} | "
        f"**{pct1(ext.pooled('kept_query'))}** | **{pct1(ext.pooled('kept_plain'))}** | "
        f"**{cell(ext.pooled('aider'), aider)}** | {sum(r.topics for r in ext.results)} | "
        f"{sum(r.in_topics for r in ext.results)} | median {100 * statistics.median(shares):.0f}% "
        f"| {empty_lines(ext)} |"
    )

    def low(key: str) -> str:
        r = ext.worst(key)
        return f"{cell(kept(r, key))} `{r.id}`"

    add(
        f"| **worst** | | | {low('kept_query')} | {low('kept_plain')} | "
        f"{low('aider') if aider else '–'} | | | max {100 * max(shares):.0f}% | "
        f"{max(r.empty_lines for r in ext.results)} |"
    )
    add("")
    add("*largest topic*: messages in the conversation's largest topic at the end, as a share")
    add("of its messages (the rest are in smaller topics or the hot zone). *empty summary lines*:")
    add("quoted summary lines with nothing after the `| ` prefix, over the no-query render and")
    add("every question's render.")
    add("")
    add("Beside the published figures:")
    add("")
    add("| system | kept | scored by | on whose histories |")
    add("|---|---|---|---|")
    add(f"| Topic Forest, no query | {pct1(ext.pooled('kept_plain'))} | answer-key rule | ours |")
    if aider:
        add(
            f"| aider `ChatSummary` (real) | {pct1(ext.pooled('aider'))} | answer-key rule | ours |"
        )
    for name, k, n in UPSTREAM:
        add(f"| upstream {name} | {pct1((k, n))} | their LLM judge | theirs |")
    add("")
    add("The upstream figures are not strictly comparable with ours: they are their LLM judge's")
    add("verdicts on their own compressed histories (made with their summarizer model) over all")
    add(f"{data.questions} questions, while ours are the mechanical answer-key rule, which agrees")
    add(f"with their judge on {JUDGE_AGREEMENT} of its verdicts, over the {data.answerable}")
    add("answerable questions, on histories made with the stub's independent summarizer. Like for")
    add("like is Topic Forest against aider's `ChatSummary` in the rows above it: same rule, same")
    add("summarizer, same budget.")
    add("")


def external_json(ext: External) -> dict[str, Any]:
    """The JSON dump's `external` entry (the conversations' text left out: it is in the set)."""
    if isinstance(ext, str):
        return {"not_run": ext}
    data = ext.data
    return {
        "source": str(EXTERNAL),
        "budget": ext.budget,
        "aider_note": ext.aider_note,
        "seconds": round(ext.seconds, 1),
        "questions": data.questions,
        "answerable": data.answerable,
        "unanswerable": [asdict(u) for u in data.unanswerable],
        "results": [asdict(r) for r in ext.results],
        "upstream": [{"system": s, "correct": k, "questions": n} for s, k, n in UPSTREAM],
        "targets": [asdict(t) | {"verdict": t.verdict} for t in external_targets(ext)],
    }
