"""The composition root: one run's machine, model, tools, policy and sandbox, wired for the store
the caller opened (``compose``), and the runner built from those parts (``wiring``)."""
