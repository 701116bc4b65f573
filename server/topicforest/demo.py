"""`make demo`: the real server process driven over JSON-RPC, with a readable transcript.

Offline and keyless: the chat "model" is the loopback stub replaying the bundled conversation's
recorded assistant turns through the real litellm HTTP path, and topic summaries come from the
offline extractive summarizer (no summary model configured).
"""

from __future__ import annotations

import json
import sys
import tempfile
import textwrap
import time
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

from topicforest.server.stdio_client import StdioClient
from topicforest.testing.stub_llm import ThreadedStubLLM

P = "topicForest/"
WIDTH = 100


def load_sample() -> dict[str, Any]:
    text = files("topicforest.data").joinpath("sample_conversation.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def heading(text: str) -> None:
    say()
    say(f"== {text} " + "=" * max(0, WIDTH - len(text) - 4))


def clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def wait_for_summaries(client: StdioClient, timeout: float = 60.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        topics: list[dict[str, Any]] = client.request(P + "listTopics", {})["topics"]
        if not any(t["pending"] for t in topics) or time.monotonic() > deadline:
            return topics
        time.sleep(0.05)


def topic_table(client: StdioClient) -> list[dict[str, Any]]:
    listing = client.request(P + "listTopics", {})
    say(f"budget {listing['budget']} tokens; the next render uses {listing['used']}")
    say(f"{'id':>4}  {'title':<44} {'msgs':>4} {'src tok':>7} {'sum tok':>7}  {'state':<8} files")
    for t in listing["topics"]:
        state = (
            "dropped"
            if t["dropped"]
            else "pinned"
            if t["pinned"]
            else "pending"
            if t["pending"]
            else "ok"
        )
        say(
            f"{t['id']:>4}  {clip(t['title'], 44):<44} {t['messageCount']:>4} "
            f"{t['sourceTokens']:>7} {t['summaryTokens']:>7}  {state:<8} "
            f"{clip(', '.join(t['files'][:3]), 30)}"
        )
    topics: list[dict[str, Any]] = listing["topics"]
    return topics


def show_render(client: StdioClient, label: str) -> dict[str, Any]:
    render: dict[str, Any] = client.request(P + "renderContext", {"threadId": "demo"})
    modes = ", ".join(f"#{t['id']} {t['mode']} ({t['tokens']})" for t in render["topics"])
    say(f"{label}: {render['tokens']}/{render['budget']} tokens; topics: {modes or 'none'}")
    if render["omittedTopics"]:
        say(f"    omitted for lack of room: {render['omittedTopics']}")
    return render


def main() -> int:
    sample = load_sample()
    turns = [(m["role"], m["content"]) for m in sample["messages"]]
    heading("Topic Forest demo (offline: loopback stub model, extractive summaries)")
    say(f"conversation: {sample.get('project', sample.get('id', 'sample'))}")
    say(f"{len(turns)} messages; labelled topics: {', '.join(t['name'] for t in sample['topics'])}")

    with ThreadedStubLLM(chunks=5) as stub, tempfile.TemporaryDirectory() as folder:
        stub.script(*[text for role, text in turns if role == "assistant"])
        # Summaries settle after 1 s of quiet rather than a minute, so the demo need not wait.
        client = StdioClient(env={**stub.env, "TOPICFOREST_SETTLE_SECONDS": "1"})
        try:
            started = time.perf_counter()
            client.initialize(
                [Path(folder)],
                {
                    "chatModel": "openai/demo-model",
                    "summaryModels": [],  # offline summaries (unset: the chat model writes them)
                    "apiBase": stub.base_url,
                    "storePath": str(Path(folder) / ".store"),  # leave no trace after the demo
                },
            )
            elapsed = 1000 * (time.perf_counter() - started)
            say(f"server process started and answered initialize in {elapsed:.0f} ms")
            run(client, turns, sample)
        finally:
            client.close()
    return 0


def against_labels(client: StdioClient, live: list[dict[str, Any]], sample: dict[str, Any]) -> None:
    """How the topics match the sample's own labels (message ids follow the replay's order)."""
    heading("Topics against the conversation's labels (chatter left out of purity)")
    names = {t["id"]: t["name"] for t in sample["topics"]}
    labels = [m["topic"] for m in sample["messages"]]
    majority = 0
    labelled = 0
    for topic in live:
        preview = client.request(P + "previewTopic", {"topicId": topic["id"]})
        found = Counter(labels[m["id"] - 1] for m in preview["messages"] if m["id"] <= len(labels))
        subjects = Counter({k: v for k, v in found.items() if k})
        majority += max(subjects.values(), default=0)
        labelled += sum(subjects.values())
        parts = [f"{names[k]} ×{v}" for k, v in subjects.most_common()]
        parts += [f"chatter ×{found[None]}"] if found[None] else []
        say(f"  #{topic['id']:<4} {clip(topic['title'], 34):<34} {', '.join(parts)}")
    purity = majority / labelled if labelled else 0.0
    say(f"{len(live)} topics for {len(names)} labelled subjects; purity {purity:.2f}")


def answer_questions(client: StdioClient, sample: dict[str, Any]) -> None:
    """What the model would see for a few of the sample's questions (passage recall)."""
    heading("Questions about earlier facts (topicForest/renderContext with the question)")
    facts = sample["facts"]
    kept = 0
    for fact in facts:
        render = client.request(
            P + "renderContext", {"threadId": "demo", "query": fact["question"]}
        )
        text = "\n".join(m["content"] for m in render["messages"]).lower()
        kept += all(s.lower() in text for s in fact["must_contain"])
    say(f"{kept} of {len(facts)} planted facts are in what the model would receive with the")
    say("question as the query (without one, each topic shows its summary and key lines)")
    fact = facts[0]
    render = client.request(P + "renderContext", {"threadId": "demo", "query": fact["question"]})
    lines = render["messages"][0]["content"].splitlines() if render["messages"] else []
    needle = fact["must_contain"][0].lower()
    say(f"e.g. {fact['question']!r}:")
    quoted = ("| user", "| assistant", "| - ")  # recalled originals and key lines first
    hits = sorted((line for line in lines if needle in line.lower()), key=lambda line: (
        not line.startswith(quoted), len(line)))  # fmt: skip
    for line in hits[:2]:
        say("    " + clip(line, WIDTH - 4))


def run(client: StdioClient, turns: list[tuple[str, str]], sample: dict[str, Any]) -> None:
    heading("Replaying the conversation through topicForest/chat")
    deltas: list[Any] = []
    client.on_notification = lambda method, params: (
        deltas.append(params) if method == P + "chatDelta" else None
    )
    users = [(i, text) for i, (role, text) in enumerate(turns) if role == "user"]
    for n, (index, text) in enumerate(users, 1):
        deltas.clear()
        result = client.request(
            P + "chat", {"threadId": "demo", "turnId": f"turn-{index}", "message": text}
        )
        if n <= 3 or n == len(users):
            say(f"[{n}/{len(users)}] you: {clip(text, 80)}")
            say(
                f"        model: {clip(result['reply'], 72)}  "
                f"({len(deltas)} deltas; context {result['context']['tokens']} tokens, "
                f"{len(result['context']['topics'])} topics)"
            )
        elif n == 4:
            say("        …")
    client.on_notification = None

    heading("Topics (topicForest/listTopics, after background summaries)")
    topics = wait_for_summaries(client)
    topics = topic_table(client)
    live = [t for t in topics if not t["dropped"]]
    if not live:
        say("no topics formed")
        return
    biggest = max(live, key=lambda t: t["messageCount"])
    against_labels(client, live, sample)
    answer_questions(client, sample)

    heading(f"Preview topic {biggest['id']} (topicForest/previewTopic)")
    preview = client.request(P + "previewTopic", {"topicId": biggest["id"]})
    say("summary:")
    lines = textwrap.wrap(preview["topic"]["summary"] or "(pending)", WIDTH - 4)
    for line in lines[:5] + ([lines[5] + " …"] if len(lines) > 6 else lines[5:6]):
        say("    " + line)  # a cut summary says so: "You said: In" read as a broken one
    say(f"first of its {len(preview['messages'])} original messages:")
    for m in preview["messages"][:3]:
        say(f"    #{m['id']} {m['role']}: {clip(m['content'], WIDTH - 20)}")

    heading(f"Drop topic {biggest['id']}, then restore it")
    before = show_render(client, "render before drop ")
    client.request(P + "dropTopic", {"topicId": biggest["id"]})
    after = show_render(client, "render after drop  ")
    own = next((t["tokens"] for t in before["topics"] if t["id"] == biggest["id"]), 0)
    others = sum(t["tokens"] for t in after["topics"]) - sum(
        t["tokens"] for t in before["topics"] if t["id"] != biggest["id"]
    )
    say(
        f"    topic {biggest['id']} ({own} tokens) left the render; the render changed by "
        f"{after['tokens'] - before['tokens']:+d} tokens because the other topics' summaries, "
        f"cut to their shares, took back {others} tokens of the freed room"
    )
    client.request(P + "restoreTopic", {"topicId": biggest["id"]})
    show_render(client, "render after restore")

    heading(f"Expand topic {biggest['id']} (originals verbatim until collapsed)")
    expanded = client.request(P + "expandTopic", {"topicId": biggest["id"]})
    say(f"expandTopic returned {len(expanded['messages'])} original messages")
    show_render(client, "render while expanded")
    client.request(P + "collapseTopic", {"topicId": biggest["id"]})
    show_render(client, "render after collapse")

    heading("Search (topicForest/searchTopics)")
    query = biggest["files"][0] if biggest["files"] else biggest["title"].split(",")[0]
    found = client.request(P + "searchTopics", {"query": query, "limit": 3})
    for r in found["results"]:
        say(f"    {r['score']:.2f}  #{r['topic']['id']} {clip(r['topic']['title'], 60)}")
    say(f"(query: {query!r})")


if __name__ == "__main__":
    sys.exit(main())
