"""The command line (``turnstile``, ``python -m engine``): argument parsing and commands in
``main``; live output, ``show`` and stream rendering beside it. Nothing else imports it."""
