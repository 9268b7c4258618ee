"""The live control plane: HTTP+JSON on loopback (``http.serve_http`` serving ``routes.Routes``),
and the CLI that talks to it. Imports nothing, as every package ``__init__`` here
(broker_emu/__init__.py says why)."""
