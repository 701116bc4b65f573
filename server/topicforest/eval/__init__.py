"""The evaluation: Topic Forest vs flat recursive summarization vs truncation on the same work.

`python -m topicforest.eval [conversation.json ...]` (or `make eval`) replays each conversation
through the three systems with the same history budget and the same summarizer, scores what each
would send to the model, and writes docs/benchmarks.md with PNG plots.
"""
