"""Try each configured model in order; the offline summarizer is the floor that never fails."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from topicforest.engine.summarize.base import (
    SummarizationFailed,
    Summarizer,
    SummaryRequest,
    SummaryResult,
)
from topicforest.engine.summarize.extractive import ExtractiveSummarizer

log = logging.getLogger(__name__)


class CascadeSummarizer:
    def __init__(self, summarizers: Sequence[Summarizer], *, offline_floor: bool = True) -> None:
        self.summarizers = list(summarizers)
        if offline_floor:
            self.summarizers.append(ExtractiveSummarizer())
        self.name = " > ".join(s.name for s in self.summarizers)

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        errors: list[str] = []
        for summarizer in self.summarizers:
            try:
                return await summarizer.summarize(request)
            except Exception as exc:  # any provider failure moves down the cascade
                log.warning("summarizer %s failed: %s", summarizer.name, _short(exc))
                errors.append(f"{summarizer.name}: {_short(exc)}")
        raise SummarizationFailed("; ".join(errors) or "no summarizer configured")


def build_cascade(models: Sequence[str], api_base: str | None = None) -> CascadeSummarizer:
    from topicforest.engine.summarize.litellm_summarizer import LiteLLMSummarizer

    return CascadeSummarizer([LiteLLMSummarizer(m, api_base=api_base) for m in models])


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 300 else text[:297] + "..."
