"""Topic summaries from a real model through litellm (any provider string)."""

from __future__ import annotations

from typing import Any

from topicforest.engine.llm import load_litellm, provider_kwargs
from topicforest.engine.summarize.base import SUMMARIZE_PROMPT, SummaryRequest, SummaryResult


class LiteLLMSummarizer:
    def __init__(self, model: str, *, api_base: str | None = None, timeout: float = 60.0) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        self.timeout = timeout

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        litellm = load_litellm()
        kwargs: dict[str, Any] = {"timeout": self.timeout, "num_retries": 0}
        kwargs.update(provider_kwargs(self.model, self.api_base))
        response = await litellm.acompletion(
            model=self.model,
            messages=[
                {"role": "system", "content": SUMMARIZE_PROMPT},
                {
                    "role": "user",
                    "content": f"Summarize in at most {request.target_tokens} tokens:\n\n"
                    + request.transcript(),
                },
            ],
            max_tokens=max(64, request.target_tokens * 2),
            **kwargs,
        )
        text = (response.choices[0].message.content or "").strip()
        if not text:
            raise ValueError(f"{self.model} returned an empty summary")
        usage = getattr(response, "usage", None)
        return SummaryResult(
            text=strip_fences(text),
            model=self.model,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )


def strip_fences(text: str) -> str:
    """The prompt forbids fenced code; enforce it so a summary never opens a block."""
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("```"))
