"""One module per feature, each with `setup(server)` registering its short handlers.

`app` lists and sets them up. This package imports none of them itself: `early` uses the
memory-only handlers before pygls (which `chat`, `lifecycle` ... import) is loaded.
"""
