"""The local sqlite cache: the only package that imports ``sqlite3``.

``schema`` holds the migrations and documents every table; ``connection`` opens, checks, migrates and
locks a cache file. Typed reads and writes for the recorder, status, export and prune live in modules of
their own here, all on top of ``connection.Cache``.
"""

from kubectl_sktrace.store.connection import Cache, WriterLock, from_db_hash, open_cache, open_cache_readonly, to_db_hash
from kubectl_sktrace.store.schema import SCHEMA_VERSION

__all__ = ["Cache", "WriterLock", "SCHEMA_VERSION", "from_db_hash", "open_cache", "open_cache_readonly", "to_db_hash"]
