"""The report's cost and waiting sections: summarizer tokens, and time on the critical path."""

from __future__ import annotations

import statistics

from topicforest.eval.run import EXTRACTIVE_SUFFIX, LABELS, Evaluation
from topicforest.eval.scores import Add, Figure, wait_scale
from topicforest.eval.systems import Cost


def cost(evaluation: Evaluation, add: Add, figure: Figure) -> None:
    """Summarizer calls and tokens per conversation and per topic."""
    convs = evaluation.conversations
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
    add(figure("cost", "Summarizer tokens per conversation."))
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


def waiting(evaluation: Evaluation, add: Add, figure: Figure) -> None:
    """Time added to each turn's critical path."""
    o = evaluation.options
    convs = evaluation.conversations
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
        add(figure("wait", "Time added to each turn's critical path."))
        add("")


def _cost_label(system: str) -> str:
    return {"forest": "Topic Forest", "forest_x": "Topic Forest" + EXTRACTIVE_SUFFIX}.get(
        system, LABELS.get(system, system)
    )


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
