"""The report's topic-quality section: each conversation's topics against its labels."""

from __future__ import annotations

from topicforest.eval.run import Evaluation
from topicforest.eval.scores import Add, Figure, pooled_ari, pooled_purity, topic_ratio


def topic_quality(evaluation: Evaluation, add: Add, figure: Figure) -> None:
    """Each conversation's topics against its labels."""
    convs = evaluation.conversations
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
    add(figure("topics", "Purity and ARI per conversation (chatter left out)."))
    add("")
