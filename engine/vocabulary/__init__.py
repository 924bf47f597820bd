"""The words every layer shares: exceptions, the values of a run and its events, path globs,
hints, the version, and the SQLite files this process holds. Imports nothing of the engine."""
