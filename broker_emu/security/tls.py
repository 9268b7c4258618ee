"""TLS material for SSL and SASL_SSL listeners: a certificate authority made for this cluster
(``trustme``, on the maintained ``cryptography`` package), a server certificate it signs for the
listeners' host names, and ``ca.pem`` written out for clients (ssl.ca.location, ssl_cafile,
Java's PEM trust store).

Mutual TLS (Kafka's ``ssl.client.auth``: ``required``, ``requested`` or ``none``): the listener asks
for a client certificate and checks it against the same CA, which also issues one for each name in
``emu.tls.client.certs`` (``<name>.crt`` and ``<name>.key`` beside ``ca.pem``). On an SSL listener
the principal is the certificate's subject, as Kafka's DefaultKafkaPrincipalBuilder makes it with
the default ``ssl.principal.mapping.rules``: ``User:CN=alice,OU=client,O=broker-emu``; without a
certificate ``User:ANONYMOUS``. On SASL_SSL the SASL login names the principal.
"""

from __future__ import annotations

import functools
import os
import shutil
import ssl
import tempfile

# trustme and cryptography are imported where a TLS listener needs them: every cluster imports
# this module, and they cost `broker-emu serve` about 35 ms of its start on a plain listener

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
ANONYMOUS = "User:ANONYMOUS"


@functools.lru_cache(maxsize=1024)
def principal_of(der: bytes | None) -> str:
    """The principal of a connection whose client showed this certificate (DER), or none."""
    if not der:
        return ANONYMOUS
    from cryptography import x509
    # RFC 4514 order (most specific first), as Java's X500Principal.getName() writes RFC 2253
    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()


class ListenerTls:
    def __init__(self, host: str, directory: str = "", client_auth: str = "none", client_certs: tuple[str, ...] = ()):
        self._owned = not directory          # a folder of our own goes when the cluster stops
        self.directory = directory or tempfile.mkdtemp(prefix="broker-emu-tls-")
        os.makedirs(self.directory, exist_ok=True)
        import trustme
        # ECDSA keys: made in milliseconds, where RSA takes a good part of a second
        self._ca = trustme.CA(organization_name="broker-emu", organization_unit_name="test CA",
                              key_type=trustme.KeyType.ECDSA)
        names = sorted({host, "127.0.0.1", "localhost", "::1"})
        self._cert = self._ca.issue_cert(*names, key_type=trustme.KeyType.ECDSA)
        self.ca_path = os.path.join(self.directory, "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_path)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._cert.configure_cert(self.context)
        self.client_auth = client_auth
        self.context.verify_mode = CLIENT_AUTH[client_auth]
        if client_auth != "none":
            self._ca.configure_trust(self.context)
        self.client_paths: dict[str, tuple[str, str]] = {}   # name -> (certificate, key)
        for name in client_certs:
            self.issue_client_cert(name)

    def issue_client_cert(self, name: str) -> tuple[str, str]:
        """A client certificate for ``name`` (CN=name,OU=client,O=broker-emu), written out as
        ``<name>.crt`` and ``<name>.key``; their paths."""
        import trustme
        # a subject alternative name too: with none, trustme writes an empty SAN extension, which
        # Java refuses ("bad certificate"; RFC 5280 wants at least one name in it)
        leaf = self._ca.issue_cert(f"{name}.client.broker-emu.test", common_name=name, organization_name="broker-emu",
                                   organization_unit_name="client", key_type=trustme.KeyType.ECDSA)
        cert, key = (os.path.join(self.directory, f"{name}.{ext}") for ext in ("crt", "key"))
        leaf.cert_chain_pems[0].write_to_path(cert)
        leaf.private_key_pem.write_to_path(key)
        self.client_paths[name] = (cert, key)
        return cert, key

    def write_server_keystore(self, path: str) -> str:
        """The listener's private key and certificate chain in one PEM file (what a Kafka broker
        takes as ``ssl.keystore.type=PEM`` + ``ssl.keystore.location``), so a real broker can serve
        the same CA's clients (tests/realkafka/test_mtls_ab.py)."""
        # Java's PEM key store reads unencrypted PKCS#8 only ("BEGIN PRIVATE KEY"); trustme writes
        # the traditional "BEGIN EC PRIVATE KEY"
        from cryptography.hazmat.primitives import serialization
        key = serialization.load_pem_private_key(self._cert.private_key_pem.bytes(), None)
        pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
        with open(path, "wb") as out:
            out.write(pkcs8 + b"".join(pem.bytes() for pem in self._cert.cert_chain_pems))
        return path

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)
