"""docs/benchmarks.md and its PNG figures, written from an Evaluation."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from topicforest.eval.metrics import mcnemar_exact
from topicforest.eval.run import (
    EXTRACTIVE_SUFFIX,
    LABELS,
    SYSTEMS,
    ConversationResult,
    Evaluation,
)
from topicforest.eval.systems import FactTrace

POSITIONS = ("early", "middle", "late")
COLORS = {
    "forest_query": "#2e7d32",
    "forest": "#81c784",
    "flat": "#1565c0",
    "aider": "#ef6c00",
    "truncation": "#9e9e9e",
}


@dataclass(frozen=True)
class Target:
    name: str
    wanted: str
    measured: str
    met: bool


def primary(evaluation: Evaluation) -> list[str]:
    """The systems scored with the primary summarizer, in report order."""
    return [s for s in SYSTEMS if s in evaluation.systems]


def pct(kept: int, total: int) -> str:
    return f"{100 * kept / total:.0f}% ({kept}/{total})" if total else "–"


def rate(pair: tuple[int, int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def pooled_purity(evaluation: Evaluation) -> float:
    """Purity over all labelled messages of all conversations (each conversation its own topics)."""
    total = sum(c.clustering.purity * _labelled(c) for c in evaluation.conversations)
    return total / max(1, sum(_labelled(c) for c in evaluation.conversations))


def _labelled(c: ConversationResult) -> int:
    return c.clustering.labelled


def wait_scale(evaluation: Evaluation) -> float:
    """Multiply measured seconds by this to get simulated seconds (1 with a real model)."""
    return 1.0 if evaluation.options.model else 1.0 / evaluation.options.time_scale


def targets(evaluation: Evaluation) -> list[Target]:
    query = rate(evaluation.survival("forest_query"))
    plain = rate(evaluation.survival("forest"))
    flat = rate(evaluation.survival("flat"))
    forest_in = evaluation.cost("forest").input_tokens
    flat_in = evaluation.cost("flat").input_tokens
    purity = pooled_purity(evaluation)
    out = [
        Target(
            "Fact survival, fact's question as query",
            "≥ 80%",
            pct(*evaluation.survival("forest_query")),
            query >= 0.8,
        ),
        Target(
            "Fact survival, no query, vs flat",
            "≥ flat + 20 pp",
            f"{100 * plain:.0f}% vs {100 * flat:.0f}% ({100 * (plain - flat):+.0f} pp)",
            plain - flat >= 0.2,
        ),
        Target(
            "Summarizer input tokens",
            "≤ 0.8 × flat",
            f"{forest_in:,} vs {flat_in:,} ({forest_in / max(1, flat_in):.2f} × flat)",
            forest_in <= 0.8 * flat_in,
        ),
    ]
    waits = [c.waiting for c in evaluation.conversations if c.waiting]
    if waits:
        if evaluation.options.model:  # real summarizer: compare with its own call times
            worst = max(max(w.forest, default=0.0) for w in waits)
            calls = [d for w in waits for d in (*w.forest_call_seconds, *w.flat_call_seconds)]
            bound = min(calls, default=0.0)
            made = len(calls)
        else:  # stub: the run whose summaries take 1–3 s of real time
            worst = max(max(w.forest_unscaled, default=0.0) for w in waits)
            bound = evaluation.options.summary_latency[0]
            made = sum(w.forest_unscaled_calls for w in waits)
        met = made > 0 and worst < bound
        measured = (
            f"Topic Forest: longest turn {1000 * worst:.0f} ms (render work) with "
            f"{made} summaries running in the background, each ≥ {bound:.2g} s"
        )
        out.append(
            Target(
                "Added wait on the chat critical path",
                "zero (no turn waits for a summary)",
                measured + (": no turn waited" if met else ""),
                met,
            )
        )
    out.append(
        Target(
            "Topic purity (chatter left out)",
            "≥ 0.8",
            f"{purity:.2f} pooled; worst conversation "
            f"{min(c.clustering.purity for c in evaluation.conversations):.2f}",
            purity >= 0.8,
        )
    )
    return out


def write_report(evaluation: Evaluation, out: Path, command: str) -> list[Path]:
    """Write the markdown, its figures and a JSON dump of the results; returns the files."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.with_suffix("")
    figures = _plots(evaluation, stem)
    out.write_text(_markdown(evaluation, command, figures), encoding="utf-8")
    data = stem.with_suffix(".json")
    data.write_text(json.dumps(asdict(evaluation), indent=1, default=str) + "\n", encoding="utf-8")
    return [out, data, *figures.values()]


def _markdown(evaluation: Evaluation, command: str, figures: dict[str, Path]) -> str:
    o = evaluation.options
    convs = evaluation.conversations
    lines: list[str] = []
    add = lines.append
    add("# Benchmarks: Topic Forest vs flat summarization vs truncation")
    add("")
    add(f"Generated by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Every number and")
    add("figure on this page comes from that one run; re-run it to reproduce them.")
    add("")
    add(f"- History budget: **{o.budget} tokens** for every system.")
    summarizer = (
        f"the real model `{o.model}` via litellm"
        if o.model
        else "the loopback stub (`topicforest.testing.stub_llm`) through real litellm HTTP: "
        "a deterministic capacity-limited *lead* summary, about 20% of the transcript's "
        "tokens clamped to 40–400 and never more than the request asks for, made of the "
        "leading sentences of each message in conversation order (the first sentence of "
        "every message, then the second of every message, …). It shares no code with the "
        "engine's summarizers or render, so tuning the engine cannot tune it"
    )
    add(f"- Summarizer, the same for every system: {summarizer}.")
    if "forest_x" in evaluation.systems:
        add(
            "- Second column, marked *(engine's extractive summarizer)*: the same stub answering "
            "with the engine's own extractive scorer (the one the render's digests use), to "
            "show how much a result owes to summarizer and render sharing that scorer."
        )
    add("- Tokens are counted with the engine's estimator (about 3 characters per token).")
    add(
        "- Conversations: "
        + ", ".join(f"`{c.id}` ({c.messages} messages, {len(c.facts)} facts)" for c in convs)
        + "."
    )
    add("")
    add("Run it with `make eval` (all of `../shared/eval/*.json` plus the bundled")
    add("`server/topicforest/data/sample_conversation.json`; more files in the same schema can be")
    add("added as arguments: `make eval ARGS=more.json`, or `--only` for just those). Opt-in,")
    add("never in CI: `python -m topicforest.eval --model <litellm model> [--api-base URL]`")
    add("summarizes with a real model (key from the environment) and writes")
    add("`docs/benchmarks-real.md` instead. A fact may carry an optional `old_must_contain` list,")
    add("the superseded value, used by the old-value check below.")
    add("")
    add("## Systems")
    add("")
    add("1. **Topic Forest** — the engine's `ContextWindow`. Every message is appended as in a")
    add("   chat; after each append, maintenance runs as `WorkspaceMemory` does it (graduate the")
    add("   hot zone's overflow into the forest, then summarize the topics whose unsummarized")
    add("   messages reached a batch); each user turn renders with the message as query.")
    if o.pause:
        add("   After each reply the user pauses longer than the memory's idle time (the usual")
        add("   case: reading the answer takes longer than 2 s), so the idle round runs then")
        add("   (it gives topics with no summary yet their first one). No pause is long enough")
        add("   for the memory's settle round (60 s of quiet), which is not modelled.")
    else:
        add("   Messages come back to back (`--no-pause`): the idle round never runs.")
    add("   At the end it renders once with no query and once per fact with the fact's question")
    add("   as the query (the question itself is not part of the context).")
    add("2. **Flat recursive summarization** — aider's `ChatSummary` loop with the engine's")
    add("   `summarize_flat` (the same code as the render fallback): after each exchange, if the")
    add("   history exceeds the budget, keep the newest half verbatim and summarize the head,")
    add("   recursing up to depth 3. Its context does not depend on the query.")
    add("3. **Truncation** — the newest messages that fit the budget.")
    add("")
    add("A fact survives when every `must_contain` string appears in the final context")
    add("(case-insensitive substring). Early/middle/late is the third of the session holding the")
    add("message that states the fact.")
    add("")
    add("## Targets (issue 6)")
    add("")
    add("| target | wanted | measured | met? |")
    add("|---|---|---|---|")
    for t in targets(evaluation):
        add(f"| {t.name} | {t.wanted} | {t.measured} | {'**yes**' if t.met else '**no**'} |")
    add("")
    add("## Fact survival")
    add("")
    shown = evaluation.systems
    add("| conversation | " + " | ".join(LABELS[s] for s in shown) + " |")
    add("|---|" + "---|" * len(shown))
    for c in convs:
        add(f"| `{c.id}` | " + " | ".join(pct(*c.survival(s)) for s in shown) + " |")
    add("| **all** | " + " | ".join(f"**{pct(*evaluation.survival(s))}**" for s in shown) + " |")
    add("")
    add("By position of the fact in its session (all conversations):")
    add("")
    add("| position | " + " | ".join(LABELS[s] for s in shown) + " |")
    add("|---|" + "---|" * len(shown))
    for p in POSITIONS:
        add(f"| {p} | " + " | ".join(pct(*evaluation.survival(s, p)) for s in shown) + " |")
    add("")
    alternatives = [c.alternative for c in convs if c.alternative]
    if alternatives:
        other = alternatives[0].pause
        add(
            "Sensitivity to the user's pace: Topic Forest replayed "
            + (
                "with a pause after each reply (the memory's idle round)"
                if other
                else "with messages back to back (no idle round)"
            )
            + ", all conversations:"
        )
        add("")
        add("| replay | with query | no query | summarizer calls | input tokens |")
        add("|---|---|---|---|---|")
        facts_total = sum(len(c.facts) for c in convs)
        main_cost = evaluation.cost("forest")
        this = "pause after each reply" if o.pause else "back to back"
        that = "pause after each reply" if other else "back to back"
        add(
            f"| {this} (the tables above) | {pct(*evaluation.survival('forest_query'))} | "
            f"{pct(*evaluation.survival('forest'))} | {main_cost.calls} | "
            f"{main_cost.input_tokens:,} |"
        )
        add(
            f"| {that} | {pct(sum(a.kept_query for a in alternatives), facts_total)} | "
            f"{pct(sum(a.kept_plain for a in alternatives), facts_total)} | "
            f"{sum(a.cost.calls for a in alternatives)} | "
            f"{sum(a.cost.input_tokens for a in alternatives):,} |"
        )
        add("")
    _budget_table(evaluation, add)
    add(_figure(figures, "survival", "Fact survival by position, all conversations.", command))
    add(_figure(figures, "conversations", "Fact survival per conversation.", command))
    add("")
    add("### Superseded facts")
    add("")
    add("For a fact whose value changed during the session, only the latest value counts. The")
    add("table also flags a context that states an old value without the current one")
    add("(**old only**). Old values come from `old_must_contain` when the file gives them, else")
    add("from the superseded message: its tokens shaped like the current value (numbers")
    add("collapsed, units dropped) and within 5× of it — a heuristic, so they are listed.")
    add("")
    add(
        "| conversation | fact | current | old values | "
        + " | ".join(LABELS[s] for s in primary(evaluation))
        + " |"
    )
    add("|---|---|---|---|" + "---|" * len(primary(evaluation)))
    for c in convs:
        for f in c.facts:
            if not f.superseded:
                continue
            cells = [
                "kept" if f.kept[s] else ("**old only**" if f.only_old[s] else "lost")
                for s in primary(evaluation)
            ]
            current = ", ".join(f"`{m}`" for m in f.must_contain)
            old = ", ".join(f"`{v}`" for v in f.old_values) or "–"
            add(f"| `{c.id}` | {f.id} | {current} | {old} | " + " | ".join(cells) + " |")
    add("")
    add("### Paired comparison (McNemar exact test)")
    add("")
    add("Over all facts, paired by fact: *b* = facts only the first system keeps, *c* = facts only")
    add("the second keeps; two-sided exact binomial p-value on b + c discordant pairs.")
    add("")
    add("| comparison | b | c | p-value |")
    add("|---|---|---|---|")
    facts = evaluation.facts()
    for first, second in (
        ("forest_query", "flat"),
        ("forest", "flat"),
        ("forest_query", "truncation"),
        ("flat", "truncation"),
    ):
        only_first, only_second, p_value = mcnemar_exact(
            [f.kept[first] for f in facts], [f.kept[second] for f in facts]
        )
        add(
            f"| {LABELS[first]} vs {LABELS[second]} | {only_first} | {only_second} | "
            f"{p_value:.2g} |"
        )
    add("")
    add("## Topic quality")
    add("")
    add("Each message's topic after the run (the thread's hot zone flushed into the forest at the")
    add("end, as an idle thread is) against the file's labels. Main figures leave chatter")
    add("(`topic: null`) out; the last two columns count chatter as a label of its own.")
    add("Adjusted Rand index and purity are computed in `topicforest.eval.metrics`.")
    add("")
    add(
        "| conversation | labels | Topic Forest topics | purity | ARI "
        "| purity (chatter as label) | ARI (chatter as label) |"
    )
    add("|---|---|---|---|---|---|---|")
    for c in convs:
        k = c.clustering
        add(
            f"| `{c.id}` | {k.labels} | {k.topics} | {k.purity:.2f} | {k.ari:.2f} | "
            f"{k.purity_with_chatter:.2f} | {k.ari_with_chatter:.2f} |"
        )
    add("")
    add("What each Topic Forest topic holds (labels of its messages, `-` = chatter):")
    add("")
    for c in convs:
        parts = []
        for topic, counts in c.clustering.composition.items():
            mix = " ".join(f"{'-' if k == '<chatter>' else k}×{n}" for k, n in counts.items())
            parts.append(f"{topic}: {mix}")
        add(f"- `{c.id}`: " + "; ".join(parts))
    add("")
    add(_figure(figures, "topics", "Purity and ARI per conversation (chatter left out).", command))
    add("")
    add("## Cost")
    add("")
    add("Summarizer calls and tokens as the summarizer reported them (prompt and completion")
    add("tokens, system prompt included), for the whole replay of each conversation.")
    add("")
    add("| conversation | system | calls | input tokens | output tokens |")
    add("|---|---|---|---|---|")
    cost_systems = [
        s
        for s in ("forest", "flat", "aider", "forest_x", "flat_x", "aider_x")
        if s in convs[0].cost
    ]
    for c in convs:
        for s in cost_systems:
            cost = c.cost[s]
            name = _cost_label(s)
            failed = f" ({cost.failed} failed)" if cost.failed else ""
            add(
                f"| `{c.id}` | {name} | {cost.calls}{failed} | {cost.input_tokens:,} | "
                f"{cost.output_tokens:,} |"
            )
    for s in cost_systems:
        total = evaluation.cost(s)
        add(
            f"| **all** | {_cost_label(s)} | {total.calls} | {total.input_tokens:,} | "
            f"{total.output_tokens:,} |"
        )
    add("")
    add("Truncation makes no summarizer calls.")
    add("")
    add(_figure(figures, "cost", "Summarizer tokens per conversation.", command))
    add("")
    add("Per topic (Topic Forest; what `listTopics` reports as `spend`), live topics at the end:")
    add("")
    for c in convs:
        add(f"`{c.id}`:")
        add("")
        add("| topic | title | messages | calls | input tokens | output tokens |")
        add("|---|---|---|---|---|---|")
        for spend in sorted(c.topics, key=lambda x: -x.input_tokens):
            title = spend.title.replace("|", "\\|")
            add(
                f"| {spend.id} | {title} | {spend.messages} | {spend.calls} | "
                f"{spend.input_tokens:,} | {spend.output_tokens:,} |"
            )
        add("")
    waits = [(c, c.waiting) for c in convs if c.waiting]
    if waits:
        scale = wait_scale(evaluation)
        add("## Waiting")
        add("")
        if o.model:
            add(f"Measured in real time with the real summarizer `{o.model}`; the chat model is a")
            add(f"loopback stub with {o.chat_latency * o.time_scale:.2f} s latency.")
        else:
            add(f"Measured in real time with time scaled by {o.time_scale:g}: the summarizer stub")
            add(
                f"answers after {o.summary_latency[0]:g}–{o.summary_latency[1]:g} s "
                f"(simulated; {1000 * o.summary_latency[0] * o.time_scale:.0f}–"
                f"{1000 * o.summary_latency[1] * o.time_scale:.0f} ms real), the chat model stub "
                f"after {o.chat_latency:g} s, and the user sends the next message "
                f"{o.think:g} s after the reply (the worst case for a summarizer the next turn"
            )
            add("waits for). A turn's critical path is the wall time from receiving the user's")
            add("message to starting the model call. Flat waits are summarizer waits and are")
            add(f"shown in simulated seconds (measured × {scale:g}); that multiplies the real")
            add(
                "per-call overhead (HTTP, litellm, the stub's own summarizing: milliseconds) by the"
            )
            add(f"same {scale:g}, so they are slightly pessimistic for flat. Topic Forest's")
            add("critical path holds no summarizer call, only render work (and whatever else")
            add("the shared event loop runs at that moment, the stubs included), so it is shown")
            add("as measured, unscaled.")
        if not o.model:
            add("")
            add("To show Topic Forest adds no wait, it is also replayed with summaries taking")
            add(
                f"{o.summary_latency[0]:g}–{o.summary_latency[1]:g} s of *real* time (unscaled; the"
            )
            add(
                "chat stub still scaled, so summaries lag far behind the conversation): a turn that"
            )
            add("waited for a summary would take at least that long. Column *unscaled run*.")
            add("")
        add("Topic Forest runs the product's `WorkspaceMemory.chat` with its background")
        add("maintenance task; flat runs aider's style: summarizing starts in the background after")
        add("a reply and the next turn waits for it to finish before rendering.")
        add("")
        add(
            "| conversation | turns | Topic Forest: median / max per turn "
            "| Topic Forest summary calls (background) | unscaled run: max per turn (calls) "
            "| flat: turns that waited "
            "| flat: median / max wait | flat: total wait | flat: total wait, 5 s pause (derived) |"
        )
        add("|---|---|---|---|---|---|---|---|---|")
        for c, w in waits:
            waited = [x * scale for x in w.flat if x * scale >= 0.05]
            add(
                f"| `{c.id}` | {len(w.forest)} | {1000 * _median(w.forest):.1f} ms / "
                f"{1000 * max(w.forest, default=0):.1f} ms | {w.forest_summary_calls} | "
                f"{1000 * max(w.forest_unscaled, default=0):.1f} ms ({w.forest_unscaled_calls}) | "
                f"{len(waited)} | {_median(waited):.2f} s / {max(waited, default=0):.2f} s | "
                f"{sum(x * scale for x in w.flat):.1f} s | "
                f"{sum(max(0.0, x * scale - 5) for x in w.flat):.1f} s |"
            )
        add("")
        add("The last column is derived, not measured: each measured flat wait minus a 5 s pause")
        add("the user would spend reading the reply (aider starts summarizing right after a reply,")
        add("so a pause hides up to its own length of the wait).")
        add("")
        add(_figure(figures, "wait", "Time added to each turn's critical path.", command))
        add("")
    add("## Facts Topic Forest loses")
    add("")
    add("For engine work: facts missing from the final render, with where the fact's message")
    add("was (its topic, or the hot zone) and how that topic rendered (`omitted`: not at all).")
    add("")
    add("| conversation | fact | position | needs | topic | with query | without query |")
    add("|---|---|---|---|---|---|---|")
    for c in convs:
        for f in c.facts:
            if f.kept["forest_query"] and f.kept["forest"]:
                continue
            trace = f.trace
            where = "hot zone" if trace and trace.hot else (str(trace.topic) if trace else "?")
            with_query = "kept" if f.kept["forest_query"] else _lost(trace, query=True)
            without = "kept" if f.kept["forest"] else _lost(trace, query=False)
            needs = ", ".join(f"`{m}`" for m in f.must_contain)
            add(
                f"| `{c.id}` | {f.id} | {f.position} | {needs} | {where} | {with_query} | "
                f"{without} |"
            )
    add("")
    return "\n".join(lines)


def _budget_table(evaluation: Evaluation, add: Callable[[str], None]) -> None:
    """Survival at the other budgets of the run, with the main budget's row among them."""
    convs = evaluation.conversations
    swept = sorted({b.budget for c in convs for b in c.budgets} - {evaluation.options.budget})
    if not swept:
        return
    total = sum(len(c.facts) for c in convs)
    rows = {
        evaluation.options.budget: (
            evaluation.survival("forest_query")[0],
            evaluation.survival("forest")[0],
            evaluation.survival("flat")[0],
        )
    }
    for budget in swept:
        runs = [b for c in convs for b in c.budgets if b.budget == budget]
        rows[budget] = (
            sum(r.forest_query for r in runs),
            sum(r.forest for r in runs),
            sum(r.flat for r in runs),
        )
    add("Sensitivity to the history budget: Topic Forest and flat replayed at other budgets")
    add("(same summarizer and pace; `--no-sweep` skips this, `--model` never runs it), all")
    add("conversations:")
    add("")
    add(
        f"| budget | {LABELS['forest_query']} | {LABELS['forest']} | {LABELS['flat']} "
        "| no query − flat |"
    )
    add("|---|---|---|---|---|")
    for budget in sorted(rows):
        query, plain, flat = rows[budget]
        mark = " (the tables above)" if budget == evaluation.options.budget else ""
        gap = 100 * (plain - flat) / total if total else 0.0
        add(
            f"| {budget}{mark} | {pct(query, total)} | {pct(plain, total)} | {pct(flat, total)} "
            f"| {gap:+.0f} pp |"
        )
    add("")


def _cost_label(system: str) -> str:
    return {"forest": "Topic Forest", "forest_x": "Topic Forest" + EXTRACTIVE_SUFFIX}.get(
        system, LABELS.get(system, system)
    )


def _lost(trace: FactTrace | None, *, query: bool) -> str:
    if trace is None:
        return "lost"
    mode = trace.mode_query if query else trace.mode_no_query
    shown = " (its message shown)" if query and trace.message_shown_query else ""
    return f"lost: topic {mode}{shown}"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _figure(figures: dict[str, Path], key: str, caption: str, command: str) -> str:
    path = figures.get(key)
    if path is None:
        return ""
    return f"![{caption}]({path.name})\n\n*{caption} Produced by `{command}`.*\n"


def _plots(evaluation: Evaluation, stem: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: dict[str, Path] = {}
    systems = primary(evaluation)
    width = 0.8 / len(systems)
    middle = (len(systems) - 1) / 2

    def save(fig: object, key: str) -> None:
        path = stem.parent / f"{stem.name}_{key}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")  # type: ignore[attr-defined]
        plt.close(fig)  # type: ignore[arg-type]
        figures[key] = path

    groups = [*POSITIONS, "all"]
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, system in enumerate(systems):
        values = [
            100 * rate(evaluation.survival(system, None if g == "all" else g)) for g in groups
        ]
        xs = [g + (i - middle) * width for g in range(len(groups))]
        ax.bar(xs, values, width, label=LABELS[system], color=COLORS[system])
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("facts kept (%)")
    ax.set_ylim(0, 100)
    ax.axhline(80, color="#2e7d32", linestyle=":", linewidth=1)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"Fact survival at a {evaluation.options.budget}-token budget")
    save(fig, "survival")

    convs = evaluation.conversations
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, system in enumerate(systems):
        values = [100 * rate(c.survival(system)) for c in convs]
        xs = [j + (i - middle) * width for j in range(len(convs))]
        ax.bar(xs, values, width, label=LABELS[system], color=COLORS[system])
    ax.set_xticks(range(len(convs)), [c.id for c in convs], fontsize=8)
    ax.set_ylabel("facts kept (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    ax.set_title("Fact survival per conversation")
    save(fig, "conversations")

    fig, ax = plt.subplots(figsize=(8, 4))
    quality = (
        ("purity", [c.clustering.purity for c in convs]),
        ("ARI", [c.clustering.ari for c in convs]),
    )
    for i, (label, values) in enumerate(quality):
        xs = [j + (i - 0.5) * 0.35 for j in range(len(convs))]
        ax.bar(xs, values, 0.35, label=label)
    ax.axhline(0.8, color="black", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(convs)), [c.id for c in convs], fontsize=8)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    ax.set_title("Topic quality vs labels (chatter left out)")
    save(fig, "topics")

    fig, ax = plt.subplots(figsize=(8, 4))
    for i, (system, kind) in enumerate(
        (("forest", "input"), ("flat", "input"), ("forest", "output"), ("flat", "output"))
    ):
        values = [getattr(c.cost[system], f"{kind}_tokens") for c in convs]
        xs = [j + (i - 1.5) * width for j in range(len(convs))]
        name = "Topic Forest" if system == "forest" else "Flat"
        ax.bar(
            xs,
            values,
            width,
            label=f"{name} {kind}",
            color=COLORS[system],
            hatch="//" if kind == "output" else None,
        )
    ax.set_xticks(range(len(convs)), [c.id for c in convs], fontsize=8)
    ax.set_ylabel("summarizer tokens")
    ax.legend(fontsize=8)
    ax.set_title("Summarizer cost per conversation")
    save(fig, "cost")

    waits = [(c, c.waiting) for c in convs if c.waiting]
    if waits:
        scale = wait_scale(evaluation)
        fig, axes = plt.subplots(len(waits), 1, figsize=(8, 2.2 * len(waits)), squeeze=False)
        for ax, (c, w) in zip(axes[:, 0], waits, strict=True):
            ax.step(
                range(len(w.flat)),
                [x * scale for x in w.flat],
                where="mid",
                label="flat (aider style)",
                color=COLORS["flat"],
            )
            ax.step(
                range(len(w.forest)),
                list(w.forest),
                where="mid",
                label="Topic Forest (measured, unscaled)",
                color=COLORS["forest_query"],
            )
            ax.set_ylabel("s")
            ax.set_title(c.id, fontsize=9)
        axes[0, 0].legend(fontsize=8)
        axes[-1, 0].set_xlabel("user turn")
        fig.suptitle("Time added to the chat critical path per turn")
        fig.tight_layout()
        save(fig, "wait")
    return figures
