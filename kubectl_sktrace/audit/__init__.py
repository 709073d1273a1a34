"""The API server's audit log read into the cache's offline time (``kubectl sktrace backfill``, docs/coverage.md).

Owns: what one line of an ``audit.k8s.io/v1`` log gives (``lines``: pure, bytes in), the forms managed clusters hand
those lines out in (``forms``: pure), reading a log's files, folders, gzip, stdin and object-storage URLs as a stream
of lines (``sources``: its I/O injected), what a gap's logged changes mean beside what a restart reconstructed
(``replay``: pure, the recorder's own rules of ``record/changes``), and the command's whole way (``backfill``:
planning over ``store/backfill``'s reads and writes, one transaction).

May import: the root, ``trace`` (hashes, sanitizing, revisions), ``store`` and ``record`` (its pure rules only).
"""
