"""The pure-Python engine: forest, embedding, window and summarizers (no pygls import)."""

from topicforest.engine.config import WindowConfig
from topicforest.engine.errors import EngineError, InvalidMessage, UnknownTopic
from topicforest.engine.messages import Message, MessageLog, Role
from topicforest.engine.render import RenderedContext
from topicforest.engine.window import ContextWindow, TopicView

__all__ = [
    "ContextWindow",
    "EngineError",
    "InvalidMessage",
    "Message",
    "MessageLog",
    "RenderedContext",
    "Role",
    "TopicView",
    "UnknownTopic",
    "WindowConfig",
]
