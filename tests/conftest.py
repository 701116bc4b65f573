"""Shared test helpers: where ../shared/eval lives, and loading its conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_EVAL = REPO.parent / "shared" / "eval"


def shared_conversations() -> list[Path]:
    return sorted(SHARED_EVAL.glob("*.json")) if SHARED_EVAL.is_dir() else []


def load_conversation(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


requires_shared_eval = pytest.mark.skipif(
    not shared_conversations(),
    reason=f"labelled eval conversations not found at {SHARED_EVAL} "
    "(CI has ../shared beside the repo)",
)
