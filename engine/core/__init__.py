"""The run's core: transitions, the runner's step protocol, the ledger, the context window."""
