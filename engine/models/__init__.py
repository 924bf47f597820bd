"""The model protocol every provider speaks (``base``), the settings of one call (``options``),
run-unique tool-call ids (``callids``) and the price table (``prices``); the providers
themselves live in ``engine.providers``."""
