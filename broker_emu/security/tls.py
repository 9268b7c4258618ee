"""TLS material for SSL and SASL_SSL listeners: a certificate authority made for this cluster
(``trustme``, on the maintained ``cryptography`` package), a server certificate it signs for the
listeners' host names, and ``ca.pem`` written out for clients (ssl.ca.location, ssl_cafile,
Java's PEM trust store)."""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile

import trustme


class ListenerTls:
    def __init__(self, host: str, directory: str = ""):
        self._owned = not directory          # a folder of our own goes when the cluster stops
        self.directory = directory or tempfile.mkdtemp(prefix="broker-emu-tls-")
        os.makedirs(self.directory, exist_ok=True)
        # ECDSA keys: made in milliseconds, where RSA takes a good part of a second
        self._ca = trustme.CA(organization_name="broker-emu", organization_unit_name="test CA",
                              key_type=trustme.KeyType.ECDSA)
        names = sorted({host, "127.0.0.1", "localhost", "::1"})
        self._cert = self._ca.issue_cert(*names, key_type=trustme.KeyType.ECDSA)
        self.ca_path = os.path.join(self.directory, "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_path)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._cert.configure_cert(self.context)

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)
