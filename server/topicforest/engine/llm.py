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
        # litellm's DEV mode loads a `.env` found from its own folder upwards into os.environ
        os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
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


def provider_kwargs(model: str, api_base: str | None, api_key: str | None = None) -> dict[str, str]:
    """litellm arguments for reaching `model`, shared by chat and summaries.

    `api_key`: the key the client gave for this provider and endpoint (else litellm reads the
    environment). A self-hosted OpenAI-compatible server (`openai/<name>` with an api base)
    usually needs no key, but litellm's openai provider refuses to run without one: give it a
    placeholder unless there is a real key.
    """
    kwargs = {"api_base": api_base} if api_base else {}
    if api_key:
        kwargs["api_key"] = api_key
    elif api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        kwargs["api_key"] = "no-key-needed"
    return kwargs
