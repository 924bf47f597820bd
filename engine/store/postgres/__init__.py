"""The PostgreSQL store (``PostgresStore``): the same tables as SQLite's, on a server many
machines share. ``store`` is the store, ``errors`` the translation of ``psycopg``'s errors;
importing this package imports ``psycopg``."""

from engine.store.postgres.store import MIGRATIONS, SCHEMA_VERSION, SQL, PostgresStore

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQL", "PostgresStore"]
