"""The release: one place, read by ``--version``, the OTLP resource and the package metadata
(pyproject's ``version = {attr = "engine.vocabulary.version.__version__"}``, read without
importing)."""

__version__ = "0.1.0"
