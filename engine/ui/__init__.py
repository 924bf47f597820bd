"""The run's face: the command line, the live console, plain output, printed views."""
