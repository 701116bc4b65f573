"""The report's PNG figures (matplotlib, imported only when drawing)."""

from __future__ import annotations

from pathlib import Path

from topicforest.eval.run import LABELS, Evaluation
from topicforest.eval.scores import POSITIONS, primary, rate, wait_scale

COLORS = {
    "forest_query": "#2e7d32",
    "forest": "#81c784",
    "flat": "#1565c0",
    "aider": "#ef6c00",
    "truncation": "#9e9e9e",
}


def figure_markdown(figures: dict[str, Path], key: str, caption: str, command: str) -> str:
    path = figures.get(key)
    if path is None:
        return ""
    return f"![{caption}]({path.name})\n\n*{caption} Produced by `{command}`.*\n"


def plots(evaluation: Evaluation, stem: Path) -> dict[str, Path]:
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
