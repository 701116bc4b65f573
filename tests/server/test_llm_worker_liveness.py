"""The litellm worker is another process, and may hang or die: every request to it is answered
(its result or an error), a hung or dead worker is replaced, and upkeep never waits on it for
the offline summaries. Real worker processes; stopped (SIGSTOP) to hang, killed to die."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from topicforest.engine.messages import Message
from topicforest.engine.summarize.base import SummaryRequest, SummaryResult
from topicforest.testing.stub_llm import StubLLM
from topicforest.workspace.chat_model import ChatModel, ChatModelError
from topicforest.workspace.llm_worker import HEADER, LLMWorker, WorkerError

HANG = 120  # seconds: bounds a hang only


def _request() -> SummaryRequest:
    texts = ["The pool size is set in app/db.py with pool_size=20.", "Raise it to 40 for load."]
    messages = tuple(
        Message(i + 1, "t", role, text, float(i), 12)
        for i, (role, text) in enumerate(zip(("user", "assistant"), texts, strict=True))
    )
    return SummaryRequest(messages, None, 64)


async def test_a_hung_worker_is_replaced_and_its_request_answered() -> None:
    worker = LLMWorker(liveness=0.2, ping=1.0)
    try:
        assert isinstance(await worker.call("extract", _request()), SummaryResult)
        hung = worker.pid
        assert hung is not None
        os.kill(hung, signal.SIGSTOP)  # alive, but serving nothing
        with pytest.raises(WorkerError, match="ended"):
            await asyncio.wait_for(worker.call("extract", _request(), seconds=3600), HANG)
        result = await asyncio.wait_for(worker.call("extract", _request()), HANG)
        assert isinstance(result, SummaryResult)
        assert worker.pid not in (None, hung)
    finally:
        await worker.close()


def _frame_pipe(process: subprocess.Popen[bytes]) -> Path:
    """The child's end of the pipe its answers come through (from /proc)."""
    assert process.stdout is not None
    pipe = f"pipe:[{os.fstat(process.stdout.fileno()).st_ino}]"
    ends = Path(f"/proc/{process.pid}/fd")
    return next(fd for fd in ends.iterdir() if os.readlink(fd) == pipe and int(fd.name) > 2)


async def test_a_worker_whose_answers_ended_is_replaced_not_written_to() -> None:
    # The child's output ends (here: a garbled frame in it) before the system reports its exit,
    # if ever: the next request must go to a new child, not to the old one, never to answer.
    worker = LLMWorker()
    try:
        await worker.call("extract", _request())
        old = worker._process
        assert old is not None
        with _frame_pipe(old).open("wb") as pipe:
            pipe.write(HEADER.pack(3) + b"???")
        with contextlib.suppress(WorkerError):  # sent before the reader saw the end: refused
            await asyncio.wait_for(worker.call("extract", _request()), HANG)
        result = await asyncio.wait_for(worker.call("extract", _request()), HANG)
        assert isinstance(result, SummaryResult)
        assert worker._process is not old
        while old.returncode is None:  # reaped by the reader: no zombie left behind
            await asyncio.sleep(0.05)
    finally:
        await worker.close()


async def test_the_litellm_path_honours_the_first_byte_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with StubLLM() as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stub")
        stub.fail_kind("chat", "hang")
        model = ChatModel("custom_openai/stub-chat", stub.base_url, 3600, first_byte_timeout=1)
        with pytest.raises(ChatModelError, match="chatFirstByteTimeout"):
            async with asyncio.timeout(HANG):
                async for _ in model.stream([{"role": "user", "content": "hi"}]):
                    pass


UPKEEP = textwrap.dedent(
    """
    import asyncio, os, signal
    from topicforest.testing.stub_llm import StubLLM
    from topicforest.workspace.llm_worker import WORKER
    from topicforest.workspace.memory import WorkspaceMemory
    from topicforest.workspace.settings import Settings

    async def main() -> None:
        WORKER.liveness, WORKER.ping = 0.2, 1.0
        async with StubLLM() as stub:
            os.environ.update(stub.env)
            settings = Settings(
                chat_model="openai/stub-chat",  # the direct path: no worker on the turn
                summary_models=("openai/stub-summary",),
                api_base=stub.base_url,
                history_budget=256,
            )
            memory = WorkspaceMemory("k", settings, persist=False)
            async def turns(first: int) -> int:
                for i in range(first, first + 12):
                    await memory.chat("t", str(i), f"How do I set the pool size {i} in db.py?")
                await memory.maintain(settle=True)
                return sum(t.message_count for t in memory.topics())

            before = await turns(0)  # the worker is up: it made the summaries
            os.kill(WORKER.pid, signal.SIGSTOP)  # and now hung
            after = await turns(100)
            pending = sum(t.pending for t in memory.topics())
            print(before, after, pending)
            await memory.close()
            await WORKER.close()

    asyncio.run(main())
    """
)


def test_upkeep_graduates_and_summarizes_past_a_hung_worker() -> None:
    done = subprocess.run(
        [sys.executable, "-c", UPKEEP], capture_output=True, text=True, timeout=HANG
    )
    assert done.returncode == 0, done.stderr
    before, after, pending = map(int, done.stdout.split())
    assert 0 < before < after  # the later turns graduated too
    assert pending == 0  # and every topic has its summary (the offline floor, made here)
