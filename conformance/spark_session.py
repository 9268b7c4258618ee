"""One way to get a SparkSession for campaigns and the data source: loopback only, workers on
the running interpreter, quiet, no UI, no Maven.

``local[*]`` by default; ``master`` selects a cluster (``spark://host:7077``...), whose executors
need broker-emu installed in the Python they run (docs/campaigns.md), or a Spark Connect server
(``sc://host:15002``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from conformance.extras import JAVA_FOR_SPARK, SPARK

LOOPBACK = "127.0.0.1"


class SparkUnavailable(RuntimeError):
    """pyspark (the spark extra) or the Java runtime Spark starts is missing; the message says which."""


def check_spark(master: str) -> None:
    """Before anything is started: pyspark importable and, unless Spark Connect runs the JVM
    elsewhere, a java to start."""
    if importlib.util.find_spec("pyspark") is None:
        raise SparkUnavailable(SPARK)
    home = os.environ.get("JAVA_HOME")
    has_java = bool(home and (Path(home) / "bin" / "java").exists()) or shutil.which("java") is not None
    if not master.startswith("sc://") and not has_java:
        raise SparkUnavailable(JAVA_FOR_SPARK)


def on_this_machine(master: str) -> bool:
    """local[...], or a cluster whose master listens on loopback (conformance/campaign/standalone.py):
    the driver then binds to loopback too."""
    return master.startswith("local") or master.startswith((f"spark://{LOOPBACK}:", "spark://localhost:"))


def prepare_environment(master: str) -> None:
    """Before the JVM starts: the driver binds to loopback and Python workers run this very
    interpreter (a different one would lack trio and broker-emu)."""
    if on_this_machine(master):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        # local workers import the same broker-emu as the driver (a checkout may shadow the install)
        root = str(Path(__file__).resolve().parents[2])
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if root not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, paths)])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # a user's --packages/--jars in the environment would send the JVM to Maven
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)


def get_session(master: str | None = None, app_name: str = "broker-emu", parallelism: int | None = None,
                extra_conf: dict[str, str] | None = None):
    master = master or "local[*]"
    check_spark(master)
    prepare_environment(master)
    from pyspark.sql import SparkSession

    if master.startswith("sc://"):
        # Spark Connect: the server owns its configuration, logging and UI; campaigns use only
        # DataFrame APIs (mapInArrow, Parquet, SQL), which Connect supports
        return SparkSession.builder.remote(master).appName(app_name).getOrCreate()

    log_conf = f"-Dlog4j2.configurationFile=file:{Path(__file__).with_name('log4j2.properties')}"
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.driver.extraJavaOptions", log_conf)
               .config("spark.executor.extraJavaOptions", log_conf)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")   # we print our own progress
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.shuffle.partitions", str(parallelism or 8)))
    if on_this_machine(master):
        builder = builder.config("spark.driver.host", LOOPBACK).config("spark.driver.bindAddress", LOOPBACK)
    if parallelism:
        builder = builder.config("spark.default.parallelism", str(parallelism))
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")
