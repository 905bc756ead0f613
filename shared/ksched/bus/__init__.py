"""The bus layer: NATS subjects, messages and helpers every ksched service talks through.

- ``ksched.bus.subjects``  subject / stream / KV names under a prefix (``Subjects``), token escaping
- ``ksched.bus.messages``  every message (versioned msgspec Structs, msgpack), ``encode`` / ``decode``
- ``ksched.bus.endpoints`` every subject bound to its message types (what Bus and jetstream take)
- ``ksched.bus.connect``   ``connect(...) -> Bus``: publish / request / subscribe endpoints, readiness, close
- ``ksched.bus.handlers``  guarded subscriber callbacks (bad messages logged, counted, never fatal)
- ``ksched.bus.jetstream`` streams, deduplicated publish, pull consumers, ordered replay, typed KV
- ``ksched.bus.streams``   the stream and consumer configurations
- ``ksched.bus.bootstrap`` chunked, compressed full-state transfers (snapshot, pending pods)
- ``ksched.bus.embedded``  a real nats-server child process (``EmbeddedNats``)

docs/bus.md lists every subject with its producer, consumers, message and delivery guarantee.
"""
