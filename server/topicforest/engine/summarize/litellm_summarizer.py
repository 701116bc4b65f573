"""Topic summaries from a real model through litellm (any provider string)."""

from __future__ import annotations

from typing import Any

from topicforest.engine.llm import load_litellm, provider_kwargs
from topicforest.engine.summarize.base import (
    SUMMARIZE_PROMPT,
    TITLE_PREFIX,
    SummaryRequest,
    SummaryResult,
    split_title,
)
from topicforest.engine.summarize.readable import looks_like_code
from topicforest.engine.tokens import estimate_tokens

OVERSIZE = 2  # a reply this many times its max_tokens (estimated) ignored the limit


class LiteLLMSummarizer:
    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        timeout: float = 60.0,
        api_key: str | None = None,
    ) -> None:
        self.name = model
        self.model = model
        self.api_base = api_base
        self.timeout = timeout
        self._api_key = api_key  # the client's, if it gave one (else litellm's environment)

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        litellm = load_litellm()
        kwargs: dict[str, Any] = {"timeout": self.timeout, "num_retries": 0}
        kwargs.update(provider_kwargs(self.model, self.api_base, self._api_key))
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
        title, body = split_title(strip_fences(str(response.choices[0].message.content or "")))
        title = sanitize_title(title or "") or None
        # A reply that is no summary moves the cascade on to the next summarizer (at last the
        # offline one): nothing, no words, only code, or far more than was asked for.
        lines = [line for line in body.splitlines() if line.strip()]
        if not any(c.isalpha() for c in body) or all(looks_like_code(line) for line in lines):
            raise ValueError(f"{self.model} returned no summary")
        if estimate_tokens(body) > OVERSIZE * max(64, request.target_tokens * 2):
            raise ValueError(f"{self.model} returned {estimate_tokens(body)} tokens of summary")
        text = f"{TITLE_PREFIX} {title}\n{body}" if title else body
        usage = getattr(response, "usage", None)
        return SummaryResult(
            text=text,
            model=self.model,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )


def sanitize_title(title: str) -> str:
    """One printable line (it is stored as the summary's first line)."""
    return " ".join("".join(c if c.isprintable() else " " for c in title).split())


def strip_fences(text: str) -> str:
    """The prompt forbids fenced code; enforce it so a summary never opens a block."""
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("```"))
