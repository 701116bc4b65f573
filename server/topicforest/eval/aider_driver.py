"""Replay conversations through aider's real `ChatSummary` (run with the aider venv's python).

`make eval` builds `.venv-aider` with aider-chat and runs this file there as a subprocess, so aider
never enters the project's venv and this script imports nothing from topicforest. It reads one JSON
job list on stdin and writes one JSON result list on stdout:

    in:  {"base_url": ..., "api_key": ..., "max_input_tokens": N,
          "jobs": [{"id": ..., "model": ..., "budget": N, "messages": [{"role", "content"}]}]}
    out: {"aider": "<version>", "results": [{"id", "context": [{"role", "content"}],
          "calls", "failed", "input_tokens", "output_tokens"}]}

Each job is replayed as aider's coder keeps its chat history: messages in order; after each
exchange (an assistant message, or the last message), if `too_big(done_messages)`, then
`done_messages = summarize(done_messages)` (aider does this in a background thread and applies the
result when the history has not changed meanwhile; here it always finishes first).

`StubModel` is the small model adapter ChatSummary needs in place of aider's `Model`:
`token_count` is a copy of topicforest.engine.tokens.estimate_tokens (the estimator the eval
counts everything with; copied so this script needs only aider), applied to a message's content
as the eval's flat reimplementation counts it; `simple_send_with_retries` POSTs the request to
the loopback stub's /chat/completions with urllib and reads the usage it reports.
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.request
from importlib.metadata import version
from typing import Any


def estimate_tokens(text: str) -> int:
    """A copy of topicforest.engine.tokens.estimate_tokens (keep the two identical)."""
    if text.isascii():
        return (len(text) + 2) // 3 + 1
    ascii_chars = len(text.encode("ascii", "ignore"))
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_chars
    return (ascii_chars + 2) // 3 + other_bytes + 1


class StubModel:
    """The part of aider's `Model` that `ChatSummary` uses, talking to the loopback stub."""

    def __init__(self, name: str, base_url: str, api_key: str, max_input_tokens: int) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.info = {"max_input_tokens": max_input_tokens}
        self.calls = 0
        self.failed = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def token_count(self, message: Any) -> int:
        """Tokens of a message's content, a string, or a list of messages (summed)."""
        if isinstance(message, list):
            return sum(self.token_count(m) for m in message)
        if isinstance(message, dict):
            return estimate_tokens(str(message.get("content") or ""))
        return estimate_tokens(str(message))

    def simple_send_with_retries(self, messages: list[dict[str, str]]) -> str:
        body = json.dumps({"model": self.name, "messages": messages}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=body,
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self.api_key}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                answer = json.load(response)
        except Exception:
            self.failed += 1
            raise
        usage = answer.get("usage") or {}
        self.calls += 1
        self.input_tokens += int(usage.get("prompt_tokens") or 0)
        self.output_tokens += int(usage.get("completion_tokens") or 0)
        return str(answer["choices"][0]["message"]["content"])


def replay(job: dict[str, Any], base_url: str, api_key: str, max_input: int) -> dict[str, Any]:
    from aider.history import ChatSummary

    model = StubModel(str(job["model"]), base_url, api_key, max_input)
    summarizer = ChatSummary([model], max_tokens=int(job["budget"]))
    messages = job["messages"]
    done: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        done.append({"role": message["role"], "content": message["content"]})
        end_of_exchange = message["role"] == "assistant" or index == len(messages) - 1
        if end_of_exchange and summarizer.too_big(done):
            done = summarizer.summarize(done)
    return {
        "id": job["id"],
        "context": done,
        "calls": model.calls,
        "failed": model.failed,
        "input_tokens": model.input_tokens,
        "output_tokens": model.output_tokens,
    }


def main() -> int:
    if sys.argv[1:] == ["--check"]:  # can this interpreter run aider's ChatSummary?
        from aider.history import ChatSummary  # noqa: F401

        print(json.dumps({"aider": version("aider-chat")}))
        return 0
    spec = json.load(sys.stdin)
    results = []
    # aider prints its own notes (a failed summary) to stdout: keep stdout for the JSON answer.
    with contextlib.redirect_stdout(sys.stderr):
        for job in spec["jobs"]:
            results.append(
                replay(job, spec["base_url"], spec["api_key"], int(spec["max_input_tokens"]))
            )
    json.dump({"aider": version("aider-chat"), "results": results}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
