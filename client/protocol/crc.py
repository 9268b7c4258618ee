"""CRC-32C (Castagnoli), the checksum of every record batch: the ``crc32c`` package's C function.

It is loaded from the package's extension module directly, without the package's ``__init__``,
which imports ``importlib.metadata`` (and the e-mail parser behind it) only to read its own version:
16 ms of the ~200 ms a ``broker-emu serve`` takes to start (``python -X importtime``). Should the
package ever move its extension, the plain import is the fallback.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from typing import Callable


def _load() -> Callable[..., int]:
    spec = importlib.util.find_spec("crc32c")   # finds the package without importing it
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_crc32c{suffix}"
            if path.exists():
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", str(path))
                extension = importlib.util.spec_from_loader(loader.name, loader)
                if extension is None:
                    break
                module = importlib.util.module_from_spec(extension)
                loader.exec_module(module)
                return module.crc32c
    from crc32c import crc32c as fallback
    return fallback


crc32c = _load()
