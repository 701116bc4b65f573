"""Test support shipped with the package: the loopback OpenAI-compatible stub server."""
