"""The group coordinator: ``coordinator.GroupCoordinator(host)`` holds every group (classic and
KIP-848), ``handlers`` registers the group APIs; coordinator.py says which collaborator does
what. This ``__init__`` imports nothing: it runs before each of the package's modules, so a
re-export here would load the whole coordinator for any one of them."""
