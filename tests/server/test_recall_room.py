"""A chat turn about older work, through the workspace and the loopback model: the request the
model receives carries what the question recalls, in the room of an older hot exchange that has
nothing to do with it, and keeps the exchange the question follows."""

from __future__ import annotations

from pathlib import Path

from topicforest.testing.stub_llm import StubLLM
from topicforest.workspace.memory import WorkspaceMemory
from topicforest.workspace.settings import Settings

from ..engine.test_hot_zone import HOT_WORK, OLD_WORK, QUESTION


async def test_the_models_request_trades_an_unrelated_hot_exchange_for_the_recalled_fact(
    tmp_path: Path,
) -> None:
    async with StubLLM() as stub:
        settings = Settings(
            chat_model="openai/c",
            api_base=stub.base_url,
            store_path=str(tmp_path),
            history_budget=700,
            summary_models=(),  # offline summaries: the request is about the render
        )
        memory = WorkspaceMemory(tmp_path.as_uri(), settings)
        memory.start()
        try:
            for question, answer in OLD_WORK:
                memory.append("t", "user", question)
                memory.append("t", "assistant", answer)
            memory.window.flush_thread("t")  # as an idle thread's is: the old work graduates
            for question, answer in HOT_WORK:
                memory.append("t", "user", question)
                memory.append("t", "assistant", answer)
            await memory.chat("t", "turn-1", QUESTION)
            sent = "\n".join(str(m["content"]) for m in stub.calls("chat")[-1].messages)
            assert "secret/ops/grafana" in sent  # recalled from the graduated work
            assert HOT_WORK[0][0] not in sent  # the older storefront exchange gave its room
            assert HOT_WORK[1][0] in sent and HOT_WORK[1][1] in sent  # the newest one stayed
            assert QUESTION in sent
        finally:
            await memory.close()
