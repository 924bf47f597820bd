"""The SQL both stores share: the statements (``statements``, written once, in each database's
dialect), the row codecs (``rows``) and the store built on them (``store.SqlStore``), which
``SqliteStore`` and ``PostgresStore`` extend with their connections, schemas and transactions."""
