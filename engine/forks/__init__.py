"""Forks: a new run from any step of a stored one, its workspace rebuilt from the ledger."""
