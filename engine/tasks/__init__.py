"""Golden tasks: a task folder (``task.yaml``, its fixture, its recorded turns) and the checks
that judge a finished run. A run started from a task reads the folder here; the eval harness
above runs many of them."""
