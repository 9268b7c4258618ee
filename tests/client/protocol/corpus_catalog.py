"""The request corpus: where it lives, how its files are named, and what each frame shows.

``tests/client/protocol/corpus/<client>/<ApiName>-v<version>-<n>.bin`` holds one request frame as a real
client sent it to broker-emu (without its 4-byte size prefix). ``tools/capture_corpus.py``
writes them and ``MANIFEST.json``; ``test_corpus.py`` reads them. Both use this module, so the
tool keeps what the test checks for: ``categories`` names what a frame covers (the Metadata
topic-list forms, the Produce codecs, Fetch session fields, ...), ``signature`` is the shape the
tool deduplicates on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.protocol import ApiKey, records
from client.protocol.codec import decode_request, decode_request_header
from client.protocol.compression import NAMES as CODEC_NAMES
from client.protocol.errors import ProtocolError

CORPUS = Path(__file__).resolve().parent / "corpus"
MANIFEST = CORPUS / "MANIFEST.json"
ANOMALIES = CORPUS / "ANOMALIES.json"
# every client the tool drives; "ours-*" are broker-emu's own client, both faces
CLIENTS = ("kcat", "confluent-kafka", "kafka-python", "aiokafka", "kafkajs", "ours-blocking", "ours-async")
# ListOffsets timestamps with a meaning (ListOffsetsRequest.EARLIEST_TIMESTAMP and friends)
LIST_OFFSETS_SPECS = {-1: "latest", -2: "earliest", -3: "max-timestamp", -4: "earliest-local", -5: "latest-tiered"}


@dataclass(frozen=True)
class CorpusFrame:
    client: str
    path: Path
    data: bytes

    @property
    def api_key(self) -> int:
        return int.from_bytes(self.data[0:2], "big", signed=True)

    @property
    def api_version(self) -> int:
        return int.from_bytes(self.data[2:4], "big", signed=True)

    @property
    def where(self) -> str:
        """Client, API and version, as ANOMALIES.json names them."""
        return where(self.client, self.api_key, self.api_version)

    @property
    def name(self) -> str:
        """What a failure message shows: client, API, version and file."""
        return f"{self.where} ({self.path.name})"


def where(client: str, api_key: int, version: int) -> str:
    return f"{client}/{api_name(api_key)} v{version}"


def api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).api_name
    except ValueError:
        return f"ApiKey{api_key}"


def file_name(api_key: int, version: int, n: int) -> str:
    return f"{api_name(api_key)}-v{version}-{n}.bin"


def load(corpus: Path = CORPUS) -> list[CorpusFrame]:
    return [CorpusFrame(d.name, f, f.read_bytes()) for d in sorted(corpus.iterdir()) if d.is_dir()
            for f in sorted(d.glob("*.bin"))]


def expected_anomalies(path: Path = ANOMALIES) -> dict[str, list[str]]:
    """``"<client>/<ApiName> v<version>"`` -> the anomalies its frames may show."""
    entries = json.loads(path.read_text())["expected"]
    return {e["where"]: e["anomalies"] for e in entries}


# -- what the emulator makes of a frame ----------------------------------------------------------

class Refused(Exception):
    """The emulator would close the connection on this frame instead of answering it."""


def emulator_reads(data: bytes) -> tuple[Any, Any, list[str]]:
    """(header, body, anomalies) as broker-emu's server reads a request
    (``server.Connection._process``): the header, the version against the range the emulator
    registers, then the body, leniently as Kafka reads it (``codec.decode_request``). A too-new
    ApiVersions is answered (KIP-511), so it is accepted with body None. Raises ``Refused``."""
    from broker_emu.handler_catalog import register_all
    from broker_emu.registry import REGISTRY

    register_all()
    anomalies: list[str] = []
    try:
        header = decode_request_header(data, anomalies)
    except ProtocolError as exc:
        raise Refused(f"corrupt request header: {exc}") from None
    try:
        reg = REGISTRY.get(ApiKey(header.api_key))
    except ValueError:
        reg = None
    if reg is None or not reg.min_version <= header.api_version <= reg.max_version:
        if header.api_key == ApiKey.API_VERSIONS and reg is not None and header.api_version > reg.max_version:
            return header, None, anomalies
        raise Refused(f"unsupported API key {header.api_key} version {header.api_version}")
    try:
        _, body = decode_request(data, header, anomalies=anomalies)
    except ProtocolError as exc:
        raise Refused(f"malformed request: {exc}") from None
    return header, body, anomalies


# -- what a frame covers --------------------------------------------------------------------------

def categories(api_key: int, version: int, body: Mapping[str, Any]) -> set[str]:
    """Coverage labels: the API name, plus the forms the corpus must show for a few APIs."""
    name = api_name(api_key)
    out = {name}
    if api_key == ApiKey.METADATA:
        out.add(f"Metadata topics={_metadata_topics(version, body)}")
    elif api_key == ApiKey.PRODUCE:
        out |= _produce(body)
    elif api_key == ApiKey.FETCH:
        out.add(_fetch_session(version, body))
        out.add("Fetch topics by id" if version >= 13 else "Fetch topics by name")  # KIP-516
    elif api_key == ApiKey.DELETE_TOPICS:  # v6+: by name or by id (KIP-516)
        out |= {f"DeleteTopics by {'name' if t.name is not None else 'id'}" for t in body.topics or ()}
        out |= {"DeleteTopics by name" for _ in body.topic_names or ()}
    elif api_key == ApiKey.LIST_OFFSETS:
        out |= {f"ListOffsets {LIST_OFFSETS_SPECS.get(p.timestamp, 'by-time')}"
                for t in body.topics for p in t.partitions}
    return out


def _metadata_topics(version: int, body: Mapping[str, Any]) -> str:
    """null (v1+: every topic), empty (v1+: brokers only; v0: every topic), named or ids
    (v10+: a topic given by id, with a null name)."""
    topics = body["topics"]
    if topics is None:
        return "null"
    if not topics:
        return "empty"
    if any(t.name is None for t in topics):
        return "ids"
    return "named"


def _produce(body: Mapping[str, Any]) -> set[str]:
    out = {f"Produce acks={body.acks}"}
    for topic in body.topic_data:
        for partition in topic.partition_data:
            out |= _batches(partition.records)
    return out


def _batches(data) -> set[str]:
    if not data:
        return set()
    if len(data) > 16 and data[16] != 2:  # a pre-0.11 message set: magic 0 or 1
        return {f"Produce magic={data[16]}"}
    out = set()
    for _, header in records.iter_batches(data):
        out.add(f"Produce codec={CODEC_NAMES.get(header.compression, header.compression)}")
        if header.producer_id >= 0:
            out.add("Produce idempotent")
        if header.is_transactional:
            out.add("Produce transactional")
    return out


def _fetch_session(version: int, body: Mapping[str, Any]) -> str:
    """KIP-227: session_id 0 with epoch 0 asks for a new session, epoch -1 means a full fetch
    without one, a known id with epoch > 0 continues one (the emulator never hands out ids)."""
    if version < 7:
        return "Fetch without session fields"
    if body.session_epoch == -1:
        return "Fetch sessionless"
    if body.session_id == 0 and body.session_epoch == 0:
        return "Fetch session requested"
    return "Fetch session continued"


# -- deduplication ----------------------------------------------------------------------------

def signature(api_key: int, version: int, body: Mapping[str, Any]) -> str:
    """A frame's shape: its categories plus the structure of its body (which fields are null,
    empty or set; zero and negative sentinels such as acks=-1 or epoch -1 by value). Two frames
    of one shape show the codec nothing new, so the tool keeps few of each."""
    return "|".join(sorted(categories(api_key, version, body))) + "|" + _shape(body)


def _shape(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):  # sentinels (-1 none, -2 earliest, ...) and 0 by value
        return str(value) if -8 <= value <= 0 else "pos"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_shape(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + "/".join(sorted({_shape(v) for v in value})) + "]" if value else "[]"
    if isinstance(value, str):
        return "str" if value else "''"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes" if len(value) else "b''"
    return type(value).__name__


def iter_counts(frames: list[CorpusFrame]) -> Iterator[tuple[str, str, int]]:
    """(client, "ApiName vN", how many frames) in file order."""
    counts: dict[tuple[str, str], int] = {}
    for f in frames:
        key = (f.client, f"{api_name(f.api_key)} v{f.api_version}")
        counts[key] = counts.get(key, 0) + 1
    for (client, api), n in counts.items():
        yield client, api, n
