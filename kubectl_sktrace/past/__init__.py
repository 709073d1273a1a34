"""The history asked at a time: the cluster as it was at any second, one object's lives, what changed between two
seconds, and the changes after a second as they come (``state``). One implementation of "the state at T" for every
reader: ``get --at``, ``history``, ``diff``, ``get --watch`` and the read-only API server over the past. A wing above
``store`` and ``trace`` (docs/architecture.md); it never writes.
"""
