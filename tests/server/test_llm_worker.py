"""litellm runs in the worker process: the server process never imports it, and what it did
there (summaries, routes, streams, model windows) it does the same from the worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest
from topicforest.testing.stub_llm import StubLLM
from topicforest.workspace.llm_worker import LLMWorker, WorkerError
from topicforest.workspace.models import WorkerSummarizer

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    from topicforest.testing.stub_llm import StubLLM
    from topicforest.workspace.memory import WorkspaceMemory
    from topicforest.workspace.models import model_window
    from topicforest.workspace.settings import Settings

    async def main() -> None:
        async with StubLLM() as stub:
            os.environ.update(stub.env)  # keys the worker is given with each request
            settings = Settings(
                chat_model="custom_openai/stub-chat",  # not OpenAI-compatible to us: litellm's
                summary_models=("openai/stub-summary",),
                api_base=stub.base_url,
                history_budget=256,
            )
            memory = WorkspaceMemory("k", settings, persist=False)
            for i in range(12):
                await memory.chat("t", str(i), f"How do I configure the pool size {i} in db.py?")
            await memory.maintain(settle=True)
            window = await model_window("gpt-4o-mini")
            await memory.close()
            print(len(stub.calls("chat")), len(stub.calls("summary")), window)
            print("litellm" in sys.modules)

    asyncio.run(main())
    """
)


def test_the_server_process_never_imports_litellm() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    counts, imported = done.stdout.split("\n")[:2]
    chats, summaries, window = counts.split()
    assert int(chats) == 12 and int(summaries) > 0 and int(window) > 0
    assert imported == "False"


def _request() -> SummaryRequest:
    texts = ["The pool size is set in app/db.py with pool_size=20.", "Raise it to 40 for load."]
    messages = tuple(
        Message(i + 1, "t", role, text, float(i), 12)
        for i, (role, text) in enumerate(zip(("user", "assistant"), texts, strict=True))
    )
    return SummaryRequest(messages, None, 64)


async def test_summaries_come_from_the_worker() -> None:
    async with StubLLM() as stub:
        summarizer = WorkerSummarizer("openai/stub-summary", stub.base_url)
        result = await summarizer.summarize(_request())
        assert result.text and result.model == "openai/stub-summary"
        assert len(stub.calls("summary")) == 1


async def test_a_failure_in_the_worker_is_an_error_here_and_it_keeps_serving() -> None:
    worker = LLMWorker()
    async with StubLLM() as stub:
        stub.fail("status", status=500)
        with pytest.raises(WorkerError, match="500"):
            await worker.call("summarize", "openai/stub-summary", stub.base_url, 5.0, _request())
        pid = worker.pid
        assert await worker.call("window", "gpt-4o-mini") > 0
        assert pid is not None and worker.pid == pid  # the same process, still serving
        await worker.close()
        assert worker.pid is None


def test_the_child_has_what_its_requests_use_before_it_serves() -> None:
    """The child's requests run in threads: a module first imported there could meet one another
    thread was importing, half initialized (an ImportError ended the child in a full test run).
    So the worker module imports them itself, in a fresh interpreter's main thread."""
    needed = [
        "topicforest.engine.llm",
        "topicforest.engine.summarize.base",
        "topicforest.engine.summarize.extractive",
        "topicforest.engine.summarize.litellm_summarizer",
    ]
    script = (
        "import sys, topicforest.workspace.llm_worker; "
        f"print([m for m in {needed!r} if m not in sys.modules], 'litellm' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["[]", "False"]  # litellm itself still waits for first use
