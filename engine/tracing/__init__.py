"""What a run leaves to look at: the trace, redaction, OTLP export, stream events."""
