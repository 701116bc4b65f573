"""The report's fact-survival sections: per system, conversation, position, pace and budget,
the split check, superseded facts, the paired test, and the facts Topic Forest loses."""

from __future__ import annotations

from topicforest.eval.metrics import mcnemar_exact
from topicforest.eval.run import EXTRACTIVE_SUFFIX, LABELS, Evaluation
from topicforest.eval.scores import POSITIONS, Add, Figure, pct, primary, worst
from topicforest.eval.systems import FactTrace


def fact_survival(evaluation: Evaluation, add: Add, figure: Figure) -> None:
    """Facts kept per system, conversation, position, pace and budget; the split check,
    superseded facts and the paired test."""
    o = evaluation.options
    convs = evaluation.conversations
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
    add(figure("survival", "Fact survival by position, all conversations."))
    add(figure("conversations", "Fact survival per conversation."))
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


def _survival_table(
    evaluation: Evaluation, systems: list[str], add: Add, short: bool = False
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


def _split_section(evaluation: Evaluation, add: Add) -> None:
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


def _budget_table(evaluation: Evaluation, add: Add) -> None:
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


def _lost(trace: FactTrace | None, *, query: bool) -> str:
    if trace is None:
        return "lost"
    mode = trace.mode_query if query else trace.mode_no_query
    shown = " (its message shown)" if query and trace.message_shown_query else ""
    return f"lost: topic {mode}{shown}"


def lost_facts(evaluation: Evaluation, add: Add, figure: Figure) -> None:
    """The facts Topic Forest loses, and where their messages went."""
    convs = evaluation.conversations
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
