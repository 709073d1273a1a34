"""The cache: the only package that imports ``sqlite3`` and ``psycopg``.

``schema`` holds the migrations and documents every table (``pgschema`` their PostgreSQL twins); ``engine``
says what every open cache offers, ``connection`` opens, checks, migrates and locks a cache file, ``postgres``
a history in a PostgreSQL database, and ``opening`` picks between them. Typed reads and writes for the
recorder, status, export and prune live in modules of their own here, all on top of ``engine.Cache``.
"""

from kubectl_sktrace.store.connection import WriterLock, from_db_hash, remove_unused, to_db_hash
from kubectl_sktrace.store.engine import Cache
from kubectl_sktrace.store.opening import open_cache, open_cache_readonly
from kubectl_sktrace.store.schema import SCHEMA_VERSION

__all__ = ["Cache", "WriterLock", "SCHEMA_VERSION", "from_db_hash", "open_cache", "open_cache_readonly", "remove_unused", "to_db_hash"]
