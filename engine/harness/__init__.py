"""Whole-run testing: evals over golden tasks (``evals``) and the replay of a stored run."""
