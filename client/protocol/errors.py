"""Codec-level errors: malformed bytes, unknown APIs and versions."""


class ProtocolError(Exception):
    """Base class of every error the codec raises."""


class CorruptFrameError(ProtocolError):
    """Bytes that do not decode as the named API/version; says where decoding failed."""

    def __init__(self, what: str, api_key: int | None, version: int | None, offset: int, reason: str):
        self.what = what
        self.api_key = api_key
        self.version = version
        self.offset = offset
        self.reason = reason
        super().__init__(
            f"corrupt {what} (api_key={api_key}, version={version}) at byte {offset}: {reason}"
        )


class UnknownApiError(ProtocolError):
    def __init__(self, api_key: int):
        self.api_key = api_key
        super().__init__(f"unknown API key {api_key}")


class UnsupportedCodecVersionError(ProtocolError):
    """An (API, version) the codec has no schema for. Not ``client.errors.UnsupportedVersionError``,
    which is a broker's UNSUPPORTED_VERSION answer (code 35)."""

    def __init__(self, api_key: int, version: int, supported: tuple[int, int]):
        self.api_key = api_key
        self.version = version
        self.supported = supported
        super().__init__(
            f"API key {api_key} version {version} is not supported "
            f"(codec handles {supported[0]}..{supported[1]})"
        )
