"""The CRC-32C our codec and the broker use is the crc32c package's, loaded without the package's
__init__ (which costs the emulator's start-up 16 ms for a version string)."""

from __future__ import annotations

import subprocess
import sys

import crc32c as package

from client.protocol.crc import crc32c


def test_the_check_value_and_a_running_crc_agree_with_the_package():
    assert crc32c(b"123456789") == 0xE3069283 == package.crc32c(b"123456789")   # CRC-32C's check value
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    assert crc32c(memoryview(bytearray(b"123456789"))[2:]) == package.crc32c(b"3456789")


def test_loading_it_imports_no_package_metadata():
    code = "import sys; from client.protocol.crc import crc32c; print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
