"""The capability table's tools: ``check`` (an adapter's N/As against its declaration), ``doc``
(docs/clients.md, ``python -m conformance.capabilities --write/--check docs/clients.md``) and
``pins`` (the versions pinned for each client). The table itself, which every adapter declares,
is ``conformance.client_capabilities``, below the adapters; these read every adapter, above
them."""
