"""The model providers behind ``engine.models``' protocol: Anthropic, OpenAI-compatible servers,
the scripted replay of recorded turns, Python functions, and the factory that picks one."""
