"""The context window a local model server reports, for an `auto` budget litellm cannot size.

litellm knows the windows of hosted models; a model served by Ollama, llama.cpp or LM Studio
(`openai/<name>` or `ollama/<name>` with an api base) is unknown to it, and `auto` fell back to
2048 tokens. These servers say how large a context they run the model with; each is asked in
turn (a server that is not that kind answers 404 at once), with a short deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

PROBE_SECONDS = 3.0
OLLAMA_BASE = "http://localhost:11434"  # litellm's default for ollama/ models without a base
MIN_WINDOW, MAX_WINDOW = 256, 10_000_000


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and MIN_WINDOW <= value <= MAX_WINDOW:
        return value
    return None


def ollama_window(body: Any) -> int | None:
    """`POST /api/show`: the context the model runs with (`num_ctx` among its parameters, as
    Ollama cuts a longer prompt there), else the model's own (`<arch>.context_length`)."""
    if not isinstance(body, dict):
        return None
    for line in str(body.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return _int(int(value.strip()))
    info = body.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                return _int(value)
    return None


def llama_cpp_window(body: Any) -> int | None:
    """`GET /props`: the server's context size (`n_ctx`, per slot in newer builds)."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _int(nested) or _int(body.get("n_ctx"))


def lm_studio_window(body: Any) -> int | None:
    """`GET /api/v0/models/<name>`: the loaded context, else the model's maximum."""
    if not isinstance(body, dict):
        return None
    return _int(body.get("loaded_context_length")) or _int(body.get("max_context_length"))


Probe = tuple[str, Callable[[str, str], str], Callable[[str], Any], Callable[[Any], int | None]]
PROBES: tuple[Probe, ...] = (
    ("POST", lambda root, _: f"{root}/api/show", lambda name: {"model": name}, ollama_window),
    ("GET", lambda root, _: f"{root}/props", lambda _: None, llama_cpp_window),
    ("GET", lambda root, name: f"{root}/api/v0/models/{name}", lambda _: None, lm_studio_window),
)


def served_model(model: str, api_base: str | None) -> tuple[str, str] | None:
    """(server root, model name) to ask, for a model a local server may be serving."""
    provider, _, name = model.partition("/")
    if not name:
        return None
    base = api_base or (OLLAMA_BASE if provider in ("ollama", "ollama_chat") else None)
    if not base or provider not in ("openai", "ollama", "ollama_chat", "lm_studio", "hosted_vllm"):
        return None
    return base.rstrip("/").removesuffix("/v1"), name


async def served_window(
    model: str, api_base: str | None, timeout: float = PROBE_SECONDS
) -> int | None:
    """The window the model's server reports, or None (not a local server, or it does not say)."""
    target = served_model(model, api_base)
    if target is None:
        return None
    root, name = target
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        for method, url, body, read in PROBES:
            try:
                async with session.request(method, url(root, name), json=body(name)) as response:
                    if response.status != 200:
                        continue
                    window = read(await response.json(content_type=None))
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.debug("no context window from the model's server: %s", type(exc).__name__)
                continue
            if window is not None:
                return window
    return None
