"""The pure session layer: events, the append-only log, surface fold and projections.

No I/O, no threads, no textual. Events are plain JSON dicts (``type, seq, time, data`` plus the
optional ``surfaceOp``, ``sourceEventSeqs``, ``ignorable``) exactly as dsh stores them.

Modules: ``jsonutil`` (JS-compatible JSON text, lossless rule), ``events`` (vocabulary), ``headers``
(session header), ``rows`` (packed chunk rows), ``legacy`` (v0 import + refusals), ``repair`` (crash
closers), ``surface`` (surface fold, frozen messages), ``invariants`` (envelope/payload/turn-step rules),
``folds`` (request header, title, todos, ...), ``log`` (:class:`~dsh_tui.session.log.Session`).
"""
