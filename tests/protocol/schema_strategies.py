"""Hypothesis strategies generated from the codec's own schemas, per (api, version, direction)."""

from __future__ import annotations

from hypothesis import strategies as st

from client.protocol.messages import ALL_APIS
from client.protocol.schema import Field

INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _scalar(t: str):
    if t in INT_RANGES:
        bits = INT_RANGES[t]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if t == "uint16":
        return st.integers(0, 2**16 - 1)
    if t == "uint32":
        return st.integers(0, 2**32 - 1)
    if t == "float64":
        return st.floats(allow_nan=False, allow_infinity=False)
    if t == "bool":
        return st.booleans()
    if t == "string":
        return st.text(max_size=8)
    if t in ("bytes", "records"):
        return st.binary(max_size=16)
    if t == "uuid":
        return st.uuids()
    raise ValueError(t)


# kio validates meaning, not only layout: these field values are kept meaningful for it
SEMANTIC = {
    "error_code": st.sampled_from([0, 3, 6, 7, 15, 16, 27]),
}


def _semantic(f: Field):
    if f.name in SEMANTIC:
        return SEMANTIC[f.name]
    if f.type == "int64" and ("timestamp" in f.name or f.name.endswith("time_ms")):
        return st.integers(-1, 2**40)
    return None


def field_strategy(f: Field, version: int, depth: int = 0, semantic: bool = False):
    special = _semantic(f) if semantic and not f.is_array and f.type != "struct" else None
    if special is not None:
        return st.one_of(st.none(), special) if f.nullable_in(version) else special
    if f.is_array:
        if f.element_type == "struct":
            elem = struct_strategy(f.fields, version, depth + 1, semantic)
        else:
            elem = _scalar(f.element_type)
        base = st.lists(elem, max_size=2 if depth < 2 else 1)
    elif f.type == "struct":
        base = struct_strategy(f.fields, version, depth + 1, semantic)
    else:
        base = _scalar(f.type)
    if f.nullable_in(version):
        return st.one_of(st.none(), base)
    return base


def struct_strategy(fields, version: int, depth: int = 0, semantic: bool = False):
    present = {f.name: field_strategy(f, version, depth, semantic) for f in fields if f.present_in(version)}
    return st.fixed_dictionaries(present)


def message_strategy(api_key: int, version: int, direction: str, semantic: bool = False):
    api = ALL_APIS[api_key]
    return struct_strategy(api.request if direction == "request" else api.response, version, 0, semantic)


def all_cases():
    for key, api in sorted(ALL_APIS.items()):
        lo, hi = api.version_range
        for version in range(lo, hi + 1):
            for direction in ("request", "response"):
                yield key, version, direction


def contains(expected, actual) -> bool:
    """Every key of ``expected`` is in ``actual`` with an equal value (recursively); ``actual``
    may hold more (defaults of absent fields)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(contains(e, a) for e, a in zip(expected, actual, strict=True))
    return expected == actual
