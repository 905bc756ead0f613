"""Kubernetes object model: msgspec Structs that decode the API server's JSON directly.

Field names are snake_case in Python and camelCase on the wire; unknown fields are ignored,
so objects from any API server version decode. Everything here is plain data: no I/O.
"""
