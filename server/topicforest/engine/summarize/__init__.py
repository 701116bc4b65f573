"""Summarizers behind one async interface: LLM cascade, offline extractive, flat recursive."""

from topicforest.engine.summarize.base import (
    SummarizationFailed,
    Summarizer,
    SummaryRequest,
    SummaryResult,
)
from topicforest.engine.summarize.cascade import CascadeSummarizer
from topicforest.engine.summarize.extractive import ExtractiveSummarizer

__all__ = [
    "CascadeSummarizer",
    "ExtractiveSummarizer",
    "SummarizationFailed",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
]
