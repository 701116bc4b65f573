"""The Topic Forest language server (pygls 2).

`app` wires, `features/` handle requests, `protocol` defines the wire format.
"""
