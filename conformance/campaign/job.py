"""The Spark side of a campaign: runs as a DataFrame, executed by ``mapInArrow`` (works through
Spark Connect too), rows written once as Parquet, read back for every aggregate."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from conformance.campaign.execute import ROW_FIELDS

TRACES = "traces"          # DIR/traces/record=run|event/family=.../part-*.parquet
PARTITION_COLUMNS = ("record", "family")


def arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64()}
    return pa.schema([(name, types[kind]) for name, kind in ROW_FIELDS])


def spark_schema() -> str:
    return ", ".join(f"{name} {kind}" for name, kind in ROW_FIELDS)


def _execute_batches(scale: float) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run_batches(batches):
        import pyarrow as pa

        from conformance.campaign.execute import execute

        schema = arrow_schema()
        for batch in batches:
            for run in batch.to_pylist():
                rows = execute(run, scale)
                yield pa.RecordBatch.from_pylist(rows, schema=schema)
    return run_batches


class Progress:
    """Terminal progress from Spark's status tracker (tasks are chunks of runs)."""

    def __init__(self, spark, total_runs: int, out=sys.stderr, every_s: float = 0.5):
        self._tracker = spark.sparkContext.statusTracker()
        self._total = total_runs
        self._out = out
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.perf_counter()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        print(file=self._out)

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            done = tasks = 0
            for stage_id in self._tracker.getActiveStageIds():
                info = self._tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    tasks += info.numTasks
            if tasks:
                runs = int(self._total * done / tasks)
                bar = "#" * int(30 * done / tasks)
                print(f"\r[{bar:<30}] tasks {done}/{tasks}, ~{runs}/{self._total} runs, "
                      f"{time.perf_counter() - self._start:.0f} s", end="", file=self._out, flush=True)


def run_campaign(spark, runs: list[dict[str, Any]], out_dir: str, *, parallelism: int | None = None,
                 scale: float = 30.0, progress: bool = True) -> str:
    """Execute every run on Spark and write all rows once; returns the Parquet directory."""
    import pandas as pd

    from conformance.spark_session import is_connect

    path = f"{out_dir.rstrip('/')}/{TRACES}"
    slots = parallelism or (4 if is_connect(spark) else spark.sparkContext.defaultParallelism)
    # a few tasks per slot: balance uneven runs, and progress moves in small steps
    tasks = max(1, min(len(runs), slots * 4))
    frame = spark.createDataFrame(pd.DataFrame(runs), "run_id long, scenario string, family string, client string, "
                                  "params string, seed long, rep int")
    rows = frame.repartition(tasks).mapInArrow(_execute_batches(scale), spark_schema())
    writer = rows.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS)
    if progress and not is_connect(spark):   # a Connect client has no status tracker
        with Progress(spark, len(runs)):
            writer.parquet(path)
    else:
        writer.parquet(path)
    return path
