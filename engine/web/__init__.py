"""The web console (``python -m engine serve``): runs, one run live, and parked approvals.

An ASGI app on starlette, served by uvicorn; pages are rendered on the server with Jinja2 and
kept live by Server-Sent Events read from the store, so the console and the runs may be
different processes. Every asset is package data: nothing is fetched from elsewhere.
"""
