"""Lazy access to litellm (it costs seconds and ~160 MB to import, so never at start-up)."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from types import ModuleType

_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Import litellm once, offline-safe and quiet (nothing may reach a stdio JSON-RPC channel)."""
    with _lock:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        with contextlib.redirect_stdout(io.StringIO()):
            import litellm
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        return litellm


def max_input_tokens(model: str) -> int | None:
    """The model's input window per litellm's bundled cost map, if known."""
    try:
        info = load_litellm().get_model_info(model)
    except Exception:
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None
