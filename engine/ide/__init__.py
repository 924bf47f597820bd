"""The IDE entry point: Turnstile as an Agent Client Protocol agent (``turnstile acp``).

``server`` serves the protocol over stdio; ``agent`` answers its methods; ``sessions`` maps an
editor's session onto a chain of runs (one per prompt) in the store; ``turns`` drives a
prompt's runs through the ``Runs`` front door; ``updates`` turns run events and stored
messages into ``session/update`` notifications; ``tools`` shows a call (kind, locations,
diff) from its tool's spec; ``permissions`` asks the editor about parked calls; ``files``
reads and writes through the editor's buffers. Only this package imports the SDK.
"""
