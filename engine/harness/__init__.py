"""Whole-run testing: golden tasks, their checks, evals, replay, fault injection."""
