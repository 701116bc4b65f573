"""Topic Forest: a union-find chat memory for in-editor coding assistants."""

__version__ = "0.1.0"
