"""The pure session layer: events, the append-only log, surface fold and projections.

No I/O, no threads, no textual. Events are plain JSON dicts (``type, seq, time, data`` plus the
optional ``surfaceOp``, ``sourceEventSeqs``, ``ignorable``) exactly as dsh stores them.
"""
