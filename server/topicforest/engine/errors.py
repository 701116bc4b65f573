"""Exceptions the engine raises for bad input; each leaves all state unchanged."""


class EngineError(Exception):
    """Base class for errors caused by the caller, not by a bug."""


class InvalidMessage(EngineError, ValueError):
    """A message is empty, too large, binary or otherwise unusable."""


class UnknownTopic(EngineError, KeyError):
    """No live or dropped topic has this id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown topic"
