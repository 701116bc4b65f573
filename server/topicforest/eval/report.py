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
from topicforest.eval.split import DEFAULT, HalfScore, SplitCheck
from topicforest.eval.systems import Cost, FactTrace

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
    met: bool | None  # None: not measured in this run (the row says why)

    @property
    def verdict(self) -> str:
        return {True: "MET", False: "NOT MET", None: "NOT MEASURED"}[self.met]


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


def pooled_ari(evaluation: Evaluation) -> float:
    """Per-conversation ARI weighted by labelled messages (ARI over one concatenation of all
    conversations would count every cross-conversation pair as agreement and flatter it)."""
    total = sum(c.clustering.ari * _labelled(c) for c in evaluation.conversations)
    return total / max(1, sum(_labelled(c) for c in evaluation.conversations))


def _labelled(c: ConversationResult) -> int:
    return c.clustering.labelled


def topic_ratio(c: ConversationResult) -> float:
    """Topics at the end (chatter-only ones included) per labelled subject."""
    return c.clustering.topics / max(1, c.clustering.labels)


def worst(evaluation: Evaluation, system: str) -> ConversationResult:
    """The conversation where `system` keeps the smallest share of facts (first on ties)."""
    return min(evaluation.conversations, key=lambda c: rate(c.survival(system)))


def wait_scale(evaluation: Evaluation) -> float:
    """Multiply measured seconds by this to get simulated seconds (1 with a real model)."""
    return 1.0 if evaluation.options.model else 1.0 / evaluation.options.time_scale


def _gap_target(evaluation: Evaluation, flat: str) -> Target:
    plain = rate(evaluation.survival("forest"))
    name = f"Fact survival, no query, vs {LABELS[flat]}"
    if flat not in evaluation.systems:
        return Target(name, "≥ flat + 20 pp", f"not measured ({evaluation.aider_note})", None)
    other = rate(evaluation.survival(flat))
    return Target(
        name,
        "≥ flat + 20 pp (pooled)",
        f"{100 * plain:.0f}% vs {100 * other:.0f}% ({100 * (plain - other):+.0f} pp)",
        plain - other >= 0.2 - 1e-9,
    )


def targets(evaluation: Evaluation) -> list[Target]:
    """Issue 10's targets, measured with the primary (independent) summarizer."""
    convs = evaluation.conversations
    query = rate(evaluation.survival("forest_query"))
    low = worst(evaluation, "forest_query")
    forest_in = evaluation.cost("forest").input_tokens
    flat_in = evaluation.cost("flat").input_tokens
    versus_aider = ""
    if "aider" in evaluation.systems:
        aider_in = evaluation.cost("aider").input_tokens
        versus_aider = f"; aider {aider_in:,} ({forest_in / max(1, aider_in):.2f} × aider)"
    purity, ari = pooled_purity(evaluation), pooled_ari(evaluation)
    most = max(convs, key=topic_ratio)
    out = [
        Target(
            "Fact survival, fact's question as query",
            "≥ 85% pooled",
            pct(*evaluation.survival("forest_query")),
            query >= 0.85,
        ),
        Target(
            "Fact survival, fact's question as query, worst conversation",
            "≥ 70%",
            f"{pct(*low.survival('forest_query'))} (`{low.id}`)",
            rate(low.survival("forest_query")) >= 0.7,
        ),
        _gap_target(evaluation, "flat"),
        _gap_target(evaluation, "aider"),
        Target(
            "Topic purity (chatter left out)",
            "≥ 0.85 pooled",
            f"{purity:.2f} pooled; worst conversation "
            f"{min(c.clustering.purity for c in convs):.2f}",
            purity >= 0.85,
        ),
        Target(
            "Adjusted Rand index (chatter left out)",
            "≥ 0.6 pooled",
            f"{ari:.2f} pooled (weighted by labelled messages); worst conversation "
            f"{min(c.clustering.ari for c in convs):.2f}",
            ari >= 0.6,
        ),
        Target(
            "Topics per labelled subject",
            "≤ 1.5 in every conversation",
            f"at most {topic_ratio(most):.1f} (`{most.id}`: {most.clustering.topics} topics, "
            f"{most.clustering.labels} subjects)",
            topic_ratio(most) <= 1.5,
        ),
        Target(
            "Summarizer input tokens",
            "≤ 0.8 × flat",
            f"{forest_in:,} vs flat {flat_in:,} ({forest_in / max(1, flat_in):.2f} × flat)"
            + versus_aider,
            forest_in <= 0.8 * flat_in,
        ),
    ]
    waits = [c.waiting for c in convs if c.waiting]
    if waits:
        if evaluation.options.model:  # real summarizer: compare with its own call times
            longest = max(max(w.forest, default=0.0) for w in waits)
            calls = [d for w in waits for d in (*w.forest_call_seconds, *w.flat_call_seconds)]
            bound = min(calls, default=0.0)
            made = len(calls)
        else:  # stub: the run whose summaries take 1–3 s of real time
            longest = max(max(w.forest_unscaled, default=0.0) for w in waits)
            bound = evaluation.options.summary_latency[0]
            made = sum(w.forest_unscaled_calls for w in waits)
        met = made > 0 and longest < bound
        measured = (
            f"Topic Forest: longest turn {1000 * longest:.0f} ms (render work) with "
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
    else:
        out.append(
            Target(
                "Added wait on the chat critical path",
                "zero (no turn waits for a summary)",
                "not measured (--no-waiting)",
                None,
            )
        )
    return out


def summary_lines(evaluation: Evaluation) -> list[str]:
    """What the command prints: pooled survival, a per-conversation table, and the targets."""
    convs = evaluation.conversations
    lines = [f"{'system (pooled)':76} facts kept"]
    lines += [f"{LABELS[s]:76} {pct(*evaluation.survival(s))}" for s in evaluation.systems]
    shown = primary(evaluation)
    short = {"forest_query": "query", "forest": "no query", "flat": "flat", "aider": "aider"}
    short |= {"truncation": "trunc", "forest_x": "no query(x)", "flat_x": "flat(x)"}
    columns = shown + [s for s in ("forest_x", "flat_x") if s in evaluation.systems]
    head = "".join(f"{short[s]:>12}" for s in columns)
    lines += ["", f"{'conversation':22}{head}{'purity':>8}{'ARI':>7}{'topics/subj':>13}"]

    def row(name: str, cells: list[str], purity: str, ari: str, ratio: str) -> str:
        body = "".join(f"{x:>12}" for x in cells)
        return f"{name:22}{body}{purity:>8}{ari:>7}{ratio:>13}"

    for c in convs:
        k = c.clustering
        cells = [f"{100 * rate(c.survival(s)):.0f}%" for s in columns]
        lines.append(row(c.id, cells, f"{k.purity:.2f}", f"{k.ari:.2f}", f"{topic_ratio(c):.1f}"))
    pooled = [f"{100 * rate(evaluation.survival(s)):.0f}%" for s in columns]
    lines.append(
        row("all", pooled, f"{pooled_purity(evaluation):.2f}", f"{pooled_ari(evaluation):.2f}", "")
    )
    lows = [f"{100 * rate(worst(evaluation, s).survival(s)):.0f}%" for s in columns]
    lines.append(
        row(
            "worst",
            lows,
            f"{min(c.clustering.purity for c in convs):.2f}",
            f"{min(c.clustering.ari for c in convs):.2f}",
            f"{max(topic_ratio(c) for c in convs):.1f}",
        )
    )
    lines.append("")
    for target in targets(evaluation):
        lines.append(f"{target.verdict:12} {target.name}: {target.measured}")
    lines += ["", *split_lines(evaluation.split)]
    return lines


def split_lines(check: SplitCheck | None) -> list[str]:
    """The split check as printed (and quoted in the report)."""
    if check is None or check.held_default is None or check.held_tuned is None:
        return ["split check: not run"]
    lines = [
        f"split check: tune on {', '.join(check.tune)}",
        f"             report on {', '.join(check.held_out)}",
        "tuning half (objective: worst-conversation survival with query, then pooled no query):",
    ]
    for score in check.grid:
        mark = "  <- chosen" if score.settings == check.chosen else ""
        lines.append(f"  {score.settings.text():36} {_half(score)}{mark}")
    lines.append("held-out half:")
    lines.append(f"  {'default ' + DEFAULT.text():44} {_half(check.held_default)}")
    lines.append(f"  {'tuned   ' + check.chosen.text():44} {_half(check.held_tuned)}")
    return lines


def _half(score: HalfScore) -> str:
    return (
        f"query {pct(*score.query):13} worst {100 * score.worst_query:3.0f}% "
        f"no query {pct(*score.plain):13} purity {score.purity:.2f} ARI {score.ari:.2f}"
    )


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
    add(
        "# Benchmarks: Topic Forest vs flat summarization (reimplemented and aider's) vs truncation"
    )
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
    add(f"- aider's real `ChatSummary`: {evaluation.aider_note}.")
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
    add("2. **Flat recursive summary (reimplementation)** — aider's `ChatSummary` loop with the")
    add("   engine's `summarize_flat` (the same code as the render fallback): after each exchange,")
    add("   if the history exceeds the budget, keep the newest half verbatim and summarize the")
    add("   head, recursing up to depth 3. Its context does not depend on the query.")
    add("3. **aider ChatSummary (real)** — aider-chat's own `aider.history.ChatSummary`, run in")
    add("   its own venv (`.venv-aider`, built by `make eval`) by")
    add("   `server/topicforest/eval/aider_driver.py` as aider's coder uses it: after each")
    add(
        "   exchange, if `too_big(done_messages)`, then `done_messages = summarize(done_messages)`."
    )
    add("   Its model is a small adapter: the engine's token estimate (copied) and a POST of")
    add("   aider's own summarize request to the same loopback stub, which answers it with the")
    add("   same summarizer (aider asks for no size, so the stub's 20% rule alone sets it).")
    add("4. **Truncation** — the newest messages that fit the budget.")
    add("")
    add("Threads: a conversation whose messages carry a `thread` is replayed into one chat")
    add("thread per `thread`, in index order, and each user turn renders for its own thread. The")
    add("final renders (no query, and per fact) are for the thread of the conversation's last")
    add("message — the thread the user is in when asking — so other threads' hot zones are not")
    add("in them (in the product, a thread sees its own hot zone and the shared forest). Flat,")
    add("aider and truncation keep one history of every message in index order: they have no")
    add("notion of threads.")
    add("")
    add("A fact survives when every `must_contain` string appears in the final context")
    add("(case-insensitive substring). Early/middle/late is the third of the session holding the")
    add("message that states the fact.")
    add("")
    add("## Targets (issue 10)")
    add("")
    add(f"At {o.budget} tokens, over every conversation, with the primary summarizer above.")
    add("")
    add("| target | wanted | measured | met? |")
    add("|---|---|---|---|")
    for t in targets(evaluation):
        met = {True: "**yes**", False: "**no**", None: "not measured"}[t.met]
        add(f"| {t.name} | {t.wanted} | {t.measured} | {met} |")
    add("")
    add("## Fact survival")
    add("")
    shown = primary(evaluation)
    _survival_table(evaluation, shown, add)
    extractive = [s for s in evaluation.systems if s.endswith("_x")]
    if extractive:
        add("The same systems with the engine's extractive scorer as the summarizer (the one")
        add("the render's digests use; not the independent summarizer the targets are judged on):")
        add("")
        _survival_table(evaluation, extractive, add, short=True)
    add("*worst*: each column's lowest conversation (named), so a column's worst may be a")
    add("different conversation from its neighbour's.")
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
    _split_section(evaluation, add)
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
    pairs = [
        ("forest_query", "flat"),
        ("forest", "flat"),
        ("forest", "aider"),
        ("forest_query", "truncation"),
        ("flat", "aider"),
        ("flat", "truncation"),
    ]
    for first, second in pairs:
        if second not in evaluation.systems:
            continue
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
    add("Each message's topic after the run (every thread's hot zone flushed into the forest at")
    add("the end, as an idle thread is) against the file's labels. Main figures leave chatter")
    add("(`topic: null`) out; the last two columns count chatter as a label of its own.")
    add("Adjusted Rand index and purity are computed in `topicforest.eval.metrics`; pooled")
    add("figures weight each conversation by its labelled messages. *Topics* counts every topic")
    add("at the end, chatter-only ones included.")
    add("")
    add(
        "| conversation | labelled subjects | Topic Forest topics | topics / subjects | purity "
        "| ARI | purity (chatter as label) | ARI (chatter as label) |"
    )
    add("|---|---|---|---|---|---|---|---|")
    for c in convs:
        k = c.clustering
        add(
            f"| `{c.id}` | {k.labels} | {k.topics} | {topic_ratio(c):.1f} | {k.purity:.2f} | "
            f"{k.ari:.2f} | {k.purity_with_chatter:.2f} | {k.ari_with_chatter:.2f} |"
        )
    most = max(convs, key=topic_ratio)
    impure = min(convs, key=lambda c: c.clustering.purity)
    chance = min(convs, key=lambda c: c.clustering.ari)
    subjects = sum(c.clustering.labels for c in convs)
    topics = sum(c.clustering.topics for c in convs)
    add(
        f"| **all** | {subjects} | {topics} | {topics / max(1, subjects):.1f} | "
        f"**{pooled_purity(evaluation):.2f}** | **{pooled_ari(evaluation):.2f}** | | |"
    )
    add(
        f"| **worst** | | | {topic_ratio(most):.1f} `{most.id}` | {impure.clustering.purity:.2f} "
        f"`{impure.id}` | {chance.clustering.ari:.2f} `{chance.id}` | | |"
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
    add("Summarizer calls and input tokens as the summarizer reported them (prompt tokens,")
    add("system prompt included), for the whole replay of each conversation; output tokens are")
    add("in the JSON next to this page.")
    add("")
    cost_systems = [
        s
        for s in ("forest", "flat", "aider", "forest_x", "flat_x", "aider_x")
        if s in convs[0].cost
    ]
    add("| conversation | " + " | ".join(_cost_label(s) for s in cost_systems) + " |")
    add("|---|" + "---|" * len(cost_systems))

    def cell(cost: Cost) -> str:
        failed = f" ({cost.failed} failed)" if cost.failed else ""
        return f"{cost.calls}{failed} calls, {cost.input_tokens:,} in"

    for c in convs:
        add(f"| `{c.id}` | " + " | ".join(cell(c.cost[s]) for s in cost_systems) + " |")
    add("| **all** | " + " | ".join(f"**{cell(evaluation.cost(s))}**" for s in cost_systems) + " |")
    ratios = []
    for s in cost_systems:
        flat = evaluation.cost("flat_x" if s.endswith("_x") else "flat").input_tokens
        ratios.append(f"{evaluation.cost(s).input_tokens / max(1, flat):.2f}")
    add("| input × flat (same summarizer) | " + " | ".join(ratios) + " |")
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


def _survival_table(
    evaluation: Evaluation, systems: list[str], add: Callable[[str], None], short: bool = False
) -> None:
    """Facts kept per conversation, pooled, and in each column's worst conversation."""
    labels = [LABELS[s].removesuffix(EXTRACTIVE_SUFFIX) if short else LABELS[s] for s in systems]
    add("| conversation | " + " | ".join(labels) + " |")
    add("|---|" + "---|" * len(systems))
    for c in evaluation.conversations:
        add(f"| `{c.id}` | " + " | ".join(pct(*c.survival(s)) for s in systems) + " |")
    add("| **all** | " + " | ".join(f"**{pct(*evaluation.survival(s))}**" for s in systems) + " |")
    cells = []
    for s in systems:
        low = worst(evaluation, s)
        cells.append(f"{pct(*low.survival(s))} `{low.id}`")
    add("| **worst** | " + " | ".join(cells) + " |")
    add("")


def _split_section(evaluation: Evaluation, add: Callable[[str], None]) -> None:
    check = evaluation.split
    if check is None or check.held_default is None or check.held_tuned is None:
        return
    add("### Split check: tuned on one half, reported on the other")
    add("")
    add("Engine settings (`WindowConfig`) tuned on half of the conversations (sorted by id,")
    add("alternating: " + ", ".join(f"`{i}`" for i in check.tune) + ") by picking, from a")
    add("small grid, the best worst-conversation survival with the question as query, then the")
    add("best pooled survival without a query; the other half (")
    add(", ".join(f"`{i}`" for i in check.held_out) + ") is reported with the default and the")
    add("tuned settings. A tuned setting that does much better on its own half than on the")
    add("held-out one is fitted to those conversations. `--no-split` skips this.")
    add("")
    add("| half | settings | with query | worst with query | no query | purity | ARI |")
    add("|---|---|---|---|---|---|---|")
    rows = [("tuning", s) for s in check.grid]
    rows += [("held out, default", check.held_default), ("held out, tuned", check.held_tuned)]
    for half, score in rows:
        chosen = " (chosen)" if half == "tuning" and score.settings == check.chosen else ""
        add(
            f"| {half} | {score.settings.text()}{chosen} | {pct(*score.query)} | "
            f"{100 * score.worst_query:.0f}% `{score.worst_id}` | {pct(*score.plain)} | "
            f"{score.purity:.2f} | {score.ari:.2f} |"
        )
    add("")


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
    ax.axhline(85, color="#2e7d32", linestyle=":", linewidth=1)  # the with-query target
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
    ax.axhline(0.85, color="C0", linestyle=":", linewidth=1)  # purity target
    ax.axhline(0.6, color="C1", linestyle=":", linewidth=1)  # ARI target
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
