"""What the command prints: pooled survival, the per-conversation table, targets, split check."""

from __future__ import annotations

from topicforest.eval.run import LABELS, Evaluation
from topicforest.eval.scores import (
    pct,
    pooled_ari,
    pooled_purity,
    primary,
    rate,
    topic_ratio,
    worst,
)
from topicforest.eval.split import DEFAULT, HalfScore, SplitCheck
from topicforest.eval.targets import Target, issue26_targets, targets


def summary_lines(evaluation: Evaluation, external: list[Target] | None = None) -> list[str]:
    """What the command prints: pooled survival, a per-conversation table, and the targets
    (issue 10's, issue 26's on the dev set, and `external`: the external set's, when given)."""
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
    groups = [("issue 10", targets(evaluation)), ("issue 26, dev set", issue26_targets(evaluation))]
    if external is not None:
        groups.append(("issue 26, external set", external))
    for name, group in groups:
        lines.append(f"targets ({name}):")
        lines += [f"{t.verdict:12} {t.name}: {t.measured}" for t in group]
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
