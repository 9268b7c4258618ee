"""Histories as Parquet: one row per operation (conformance/chaos/history.py ``Op``), a poll's
records as a nested list, and what identifies the run on every row (``client``, ``seed``,
``plant``: the planted bug, "" for none). One file per seed, ``DIR/history-<client>-<seed>.parquet``
(``-<plant>`` appended when one is planted), so a directory of them is one Spark DataFrame
(conformance/chaos/checker_spark.py) and a file reads back into the same ``History``."""

from __future__ import annotations

import pathlib
from typing import Any

from conformance.chaos.history import History, Op, Read

RUN_COLUMNS = (("client", "string"), ("seed", "int64"), ("plant", "string"))
OP_COLUMNS = (("index", "int64"), ("process", "string"), ("type", "string"), ("f", "string"), ("time", "float64"),
              ("topic", "string"), ("partition", "int32"), ("offset", "int64"), ("key", "binary"),
              ("value", "binary"), ("error", "string"), ("txn", "int64"), ("invoke", "int64"))
READ_COLUMNS = (("topic", "string"), ("partition", "int32"), ("offset", "int64"), ("key", "binary"),
                ("value", "binary"))


def arrow_schema():
    import pyarrow as pa

    def typed(columns):
        return [pa.field(name, getattr(pa, kind)()) for name, kind in columns]
    records = pa.list_(pa.struct(typed(READ_COLUMNS)))
    return pa.schema(typed(RUN_COLUMNS) + typed(OP_COLUMNS) + [pa.field("records", records),
                                                                  pa.field("detail", pa.string())])


def file_name(client: str, seed: int, plant: str = "") -> str:
    return f"history-{client}-{seed}" + (f"-{plant}" if plant else "") + ".parquet"


def rows(history: History, *, client: str, seed: int, plant: str = "") -> list[dict[str, Any]]:
    out = []
    for op in history.ops:
        row: dict[str, Any] = {"client": client, "seed": seed, "plant": plant}
        row.update({name: getattr(op, name) for name, _ in OP_COLUMNS})
        row["records"] = None if op.records is None else [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": r.key, "value": r.value}
            for r in op.records]
        row["detail"] = op.detail
        out.append(row)
    return out


def write_parquet(history: History, directory: str | pathlib.Path, *, client: str, seed: int, plant: str = "") -> str:
    """Write one seed's history into ``directory``; returns the file's path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = pathlib.Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name(client, seed, plant)
    table = pa.Table.from_pylist(rows(history, client=client, seed=seed, plant=plant), schema=arrow_schema())
    pq.write_table(table, path)
    return str(path)


def read_parquet(path: str | pathlib.Path) -> dict[tuple[str, int, str], History]:
    """Every history in a file or a directory of them, by (client, seed, plant)."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(path), schema=arrow_schema())
    out: dict[tuple[str, int, str], History] = {}
    for row in sorted(table.to_pylist(), key=lambda r: (r["client"], r["seed"], r["plant"], r["index"])):
        history = out.setdefault((row["client"], row["seed"], row["plant"]), History(lambda: 0.0))
        records = row["records"]
        fields = {name: row[name] for name, _ in OP_COLUMNS}
        fields["records"] = None if records is None else [Read(**r) for r in records]
        fields["detail"] = row["detail"]
        history.ops.append(Op(**fields))
    return out
