"""Settings of the `topicForest` section, validated key by key (jedi-language-server style).

One typed converter (`CONVERTER`) turns the client's JSON into `Settings`; `window_config`
turns settings into the engine's `WindowConfig`.

The wire uses camelCase keys. `parse_settings` never raises: an invalid value is reported and the
previous value of that key stays in force; unknown keys are reported as warnings. API keys are
never settings: they come from the environment, or from the client over the protocol
(`topicForest/setApiKeys`, kept in memory only: `keys.py`).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import attrs
import cattrs

from topicforest.engine.config import WindowConfig, auto_history_budget

SECTION = "topicForest"
SECRET_KEY = re.compile(r"(api_?key|secret|token|password)", re.IGNORECASE)
KEY_HINT = " (API keys are never settings: the environment's, or the client's key store)"


def _model(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not (0 < len(value.strip()) <= 200):
        raise ValueError(f"{attribute.name} must be a non-empty model string")


def _models(_: object, attribute: attrs.Attribute[Any], value: tuple[str, ...] | None) -> None:
    if value is None:  # unset: the chat model summarizes (see `Settings.summarizers`)
        return
    if len(value) > 10 or any(not (0 < len(m.strip()) <= 200) for m in value):
        raise ValueError("must be a list of at most 10 non-empty model strings")


def _api_base(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None:
        check_api_base(value)


def check_api_base(value: str) -> None:
    """An endpoint URL, refused (ValueError) if it is none or carries a credential."""
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("must be an http:// or https:// URL")
    # As storeUrl: a credential in it would be echoed by errors and logs that name the URL.
    parts = urllib.parse.urlsplit(value)
    secret_query = any(SECRET_KEY.search(k) for k in urllib.parse.parse_qs(parts.query))
    if parts.password is not None or secret_query:
        raise ValueError(
            "must not contain a password or key: give the key to the client (Configure Model) "
            "or put it in its environment variable (for example OPENAI_API_KEY), never in settings"
        )


@attrs.frozen
class ModelEntry:
    """A model the client offers (`models`): its own endpoint when given as an object."""

    model: str
    api_base: str | None = None
    own_endpoint: bool = False  # an object entry: its api_base (None: the provider's default)
    max_input_tokens: int | None = None  # its input window, where neither litellm nor the
    # server serving it says (an "auto" history budget is a sixteenth of it)


def _entries(_: object, attribute: attrs.Attribute[Any], value: tuple[ModelEntry, ...]) -> None:
    if len(value) > 50 or any(not (0 < len(e.model.strip()) <= 200) for e in value):
        raise ValueError("must be a list of at most 50 non-empty model strings or objects")
    for entry in value:
        _api_base(None, attribute, entry.api_base)
        window = entry.max_input_tokens
        if window is not None and not 1024 <= window <= 10_000_000:
            raise ValueError("a model's maxInputTokens must be between 1024 and 10000000")


def _budget(_: object, attribute: attrs.Attribute[Any], value: int | str) -> None:
    if value != "auto" and not (isinstance(value, int) and 256 <= value <= 1_000_000):
        raise ValueError('must be "auto" or a number of tokens between 256 and 1000000')


def _attachment_budget(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 256 <= value <= 1_000_000:
        raise ValueError("must be a number of tokens between 256 and 1000000")


def _threshold(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")


def _max_topics(_: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 1 <= value <= 1000:
        raise ValueError("must be between 1 and 1000")


def _store_path(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    # A relative path would resolve against the server's working directory, which the editor
    # chooses (often the workspace folder): refused rather than guessed.
    if value is not None and not os.path.isabs(os.path.expanduser(value)):
        raise ValueError("must be an absolute path (or start with ~)")


def _store_url(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value:  # empty: the embedded SQLite memory
        from topicforest.store.postgres_address import check_url  # needs no psycopg

        check_url(value)


def _user(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not (0 < len(value.strip()) <= 100 and value.isprintable()):
        raise ValueError("must be a non-empty name of at most 100 printable characters")


def _first_byte(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.1 <= value <= 600:
        raise ValueError("must be between 0.1 and 600 seconds")


@attrs.frozen
class Settings:
    chat_model: str | None = attrs.field(default=None, validator=_model)
    # None (unset): the chat model writes summaries and titles; () keeps them offline
    summary_models: tuple[str, ...] | None = attrs.field(default=None, validator=_models)
    api_base: str | None = attrs.field(default=None, validator=_api_base)
    # more models for the client's picker; an object entry carries its own endpoint
    models: tuple[ModelEntry, ...] = attrs.field(default=(), validator=_entries)
    history_budget: int | Literal["auto"] = attrs.field(default="auto", validator=_budget)
    merge_threshold: float = attrs.field(default=0.15, validator=_threshold)
    max_topics: int = attrs.field(default=16, validator=_max_topics)
    store_path: str | None = attrs.field(default=None, validator=_store_path)
    store_url: str | None = attrs.field(default=None, validator=_store_url)
    user: str | None = attrs.field(default=None, validator=_user)
    chat_first_byte_timeout: float = attrs.field(default=30.0, validator=_first_byte)
    # tokens a chat turn's attachments may take, besides the history budget
    attachment_budget: int = attrs.field(default=4096, validator=_attachment_budget)

    @property
    def summarizers(self) -> tuple[str, ...]:
        """The models that write topic summaries (and their titles), in order: `summaryModels`
        when set (`[]`: none, the offline summarizer), else the chat model, if there is one."""
        if self.summary_models is not None:
            return self.summary_models
        return (self.chat_model,) if self.chat_model else ()

    def api_base_for(self, model: str) -> str | None:
        """The endpoint of `model`: its own, if a `models` object entry names it, else
        `apiBase` (which plain string entries, and models no entry names, share)."""
        for entry in self.models:
            if entry.model == model and entry.own_endpoint:
                return entry.api_base
        return self.api_base

    def window_for(self, model: str | None) -> int | None:
        """`model`'s input window as a `models` object entry gives it (`maxInputTokens`)."""
        return next((e.max_input_tokens for e in self.models if e.model == model), None)


attrs.resolve_types(Settings)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


FIELDS: dict[str, attrs.Attribute[Any]] = {camel(a.name): a for a in attrs.fields(Settings)}
DEFAULTS = Settings()


def _strict_converter() -> cattrs.Converter:
    """cattrs would happily turn "3" into 3 or True into 1; settings must have the right type."""
    converter = cattrs.Converter()

    def exact(kind: type) -> Any:
        def hook(value: Any, _: Any) -> Any:
            if isinstance(value, bool) and kind is not bool:
                raise TypeError(f"expected {kind.__name__}, got a boolean")
            if kind is float and isinstance(value, int):
                return float(value)
            if not isinstance(value, kind):
                raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
            return value

        return hook

    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, exact(kind))

    def sequence(value: Any, _: Any) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise TypeError("expected a list of strings")
        return tuple(value)

    converter.register_structure_hook_func(
        lambda t: t in (tuple[str, ...], tuple[str, ...] | None), sequence
    )

    def budget(value: Any, _: Any) -> int | str:
        if value == "auto" or (isinstance(value, int) and not isinstance(value, bool)):
            return value  # type: ignore[no-any-return]
        raise TypeError('expected "auto" or an integer')

    converter.register_structure_hook_func(lambda t: t == int | Literal["auto"], budget)

    def entries(value: Any, _: Any) -> tuple[ModelEntry, ...]:
        if not isinstance(value, list | tuple):
            raise TypeError("expected a list of model strings or {model, apiBase} objects")
        return tuple(model_entry(item) for item in value)

    converter.register_structure_hook_func(lambda t: t == tuple[ModelEntry, ...], entries)
    return converter


def model_entry(item: Any) -> ModelEntry:
    """`"name"` (shares `apiBase`) or `{"model": "name", "apiBase": "http://..." | null,
    "maxInputTokens": 32768}` (both optional)."""
    if isinstance(item, str):
        return ModelEntry(item.strip())
    if isinstance(item, Mapping) and isinstance(item.get("model"), str):
        base = item.get("apiBase")
        if base is not None and not isinstance(base, str):
            raise TypeError("a model's apiBase must be a string or null")
        window = item.get("maxInputTokens")
        if window is not None and (not isinstance(window, int) or isinstance(window, bool)):
            raise TypeError("a model's maxInputTokens must be a number of tokens")
        base = base.strip() or None if base else None
        return ModelEntry(item["model"].strip(), base, True, window)
    raise TypeError('expected a model string or {"model": ..., "apiBase": ...}')


CONVERTER = _strict_converter()


@dataclass
class SettingsUpdate:
    settings: Settings
    errors: list[str] = field(default_factory=list)  # shown to the user
    warnings: list[str] = field(default_factory=list)  # logged


def section_of(raw: object) -> object:
    """Accept both `{"topicForest": {...}}` and the bare section."""
    if isinstance(raw, Mapping) and SECTION in raw:
        return raw[SECTION]
    return raw


def parse_settings(raw: object, previous: Settings = DEFAULTS) -> SettingsUpdate:
    """Settings from a client payload: absent keys take defaults, invalid ones keep `previous`."""
    raw = section_of(raw)
    if raw is None:
        return SettingsUpdate(previous)
    if not isinstance(raw, Mapping):
        return SettingsUpdate(previous, errors=[f"{SECTION} settings must be an object"])
    update = SettingsUpdate(DEFAULTS)
    for key, value in raw.items():
        attribute = FIELDS.get(key)
        if attribute is None:
            hint = KEY_HINT if SECRET_KEY.search(key) else ""
            update.warnings.append(f"unknown setting {SECTION}.{key} ignored{hint}")
            continue
        try:
            # null means "unset": back to the default
            kind: Any = attribute.type
            typed = attribute.default if value is None else CONVERTER.structure(value, kind)
            changes: dict[str, Any] = {attribute.name: typed}
            update.settings = attrs.evolve(update.settings, **changes)
        except Exception as exc:
            kept = getattr(previous, attribute.name)
            update.errors.append(f"{SECTION}.{key}: {_reason(exc)}; keeping {kept!r}")
            changes = {attribute.name: kept}
            update.settings = attrs.evolve(update.settings, **changes)
    return update


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def to_wire(settings: Settings) -> dict[str, Any]:
    """camelCase dict, for docs and for echoing the settings in force."""
    out: dict[str, Any] = {}
    for key, attribute in FIELDS.items():
        value = getattr(settings, attribute.name)
        if attribute.name == "models":
            value = [entry_wire(e) for e in value]
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def entry_wire(entry: ModelEntry) -> str | dict[str, str | int | None]:
    if not entry.own_endpoint:
        return entry.model
    out: dict[str, str | int | None] = {"model": entry.model, "apiBase": entry.api_base}
    if entry.max_input_tokens is not None:
        out["maxInputTokens"] = entry.max_input_tokens
    return out


def window_config(
    settings: Settings, max_input_tokens: int | None = None, workspace_root: str | None = None
) -> WindowConfig:
    """The engine's configuration for these settings (`auto` budget: from the model's window)."""
    budget = settings.history_budget
    return WindowConfig(
        history_budget=auto_history_budget(max_input_tokens) if budget == "auto" else budget,
        merge_threshold=settings.merge_threshold,
        max_topics=settings.max_topics,
        workspace_root=workspace_root,
    )
