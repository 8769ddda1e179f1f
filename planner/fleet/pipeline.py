"""The Spark pipeline around the pure planner: plan one cluster or a whole fleet in one job.

Extract, transform and load are kept apart:

- *extract* (:func:`read_snapshots`): one snapshot JSON file, a directory of them (the cluster id
  is the file name), JSON lines or Parquet with a ``cluster_id`` column and the snapshot's
  ``brokers`` and ``partitions`` as nested columns.
- *transform* (pure ``DataFrame -> DataFrame`` functions): :func:`normalise`,
  :func:`broker_rows`, :func:`partition_rows`, :func:`validation_errors`, :func:`broker_state`,
  :func:`rack_state`, :func:`topic_state`, :func:`plan_clusters` (each cluster is planned inside
  an executor: ``cogroup(...).applyInPandas`` calls the same :func:`kafka_replica_assignor.planner.solving.planning.make_plan`
  and :func:`kafka_replica_assignor.planner.report.outputs.render_outputs` as the command line, so the files are
  byte-identical), :func:`plan_rows`, :func:`metrics`.
- *load* (:func:`run_pipeline`): ``<out>/<cluster id>/`` gets the plan files of each cluster,
  ``<out>/_tables/`` the Parquet tables (metrics, plans, broker/rack/topic state, errors) and
  ``<out>/fleet-report.md`` one line per cluster.

Nothing here calls ``.master()``: ``python -m kafka_replica_assignor.planner.fleet.pipeline`` runs on ``local[*]`` and
``spark-submit --master ...`` runs the same job on a cluster. The job is not iterative, so it
has no join + checkpoint chain; invalid clusters are dropped with an anti join.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if __name__ == "__main__" and not __package__:
    # ``spark-submit planner/fleet/pipeline.py``: import the package from its root, not this folder
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from kafka_replica_assignor.cluster.snapshot import BrokerEntry, ClusterSnapshot, PartitionEntry, check_log_dirs
from kafka_replica_assignor.planner.report.outputs import render_outputs, write_outputs
from kafka_replica_assignor.planner.request import PlanRequest, add_request_arguments, request_from_args
from kafka_replica_assignor.planner.solving.planning import make_plan

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

APP_NAME = "replica-assignor-planner"

BROKER_TYPE = ("struct<id:long,rack:string,alive:boolean,host:string,port:long,capacity_bytes:long,"
               "log_dirs:array<string>,network_in_capacity:double,network_out_capacity:double>")
PARTITION_TYPE = ("struct<topic:string,partition:long,replicas:array<long>,leader:long,"
                  "isr:array<long>,size_bytes:long,log_dirs:array<string>,bytes_in_per_s:double,"
                  "bytes_out_per_s:double>")
BROKER_RATES = ("network_in_capacity", "network_out_capacity")
PARTITION_RATES = ("bytes_in_per_s", "bytes_out_per_s")
SNAPSHOT_SCHEMA = (f"cluster_id string, brokers array<{BROKER_TYPE}>, "
                   f"partitions array<{PARTITION_TYPE}>, _corrupt_record string")

PLANNED_FIELDS = (
    ("cluster_id", "string"), ("status", "string"), ("error", "string"), ("brokers", "int"),
    ("alive_brokers", "int"), ("partitions", "long"), ("replicas", "long"),
    ("replica_moves", "long"), ("repairs", "long"), ("leader_changes", "long"),
    ("partitions_reassigned", "long"), ("replicas_min_before", "long"),
    ("replicas_max_before", "long"), ("replicas_min_after", "long"), ("replicas_max_after", "long"),
    ("leaders_min_after", "long"), ("leaders_max_after", "long"), ("bounds", "map<string,long>"),
    ("notes", "array<string>"), ("seconds", "double"), ("cpu_seconds", "double"),
    ("files", "array<struct<name:string,content:binary>>"),
    ("changes", "array<struct<topic:string,partition:long,before:array<long>,after:array<long>>>"),
)
PLANNED_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in PLANNED_FIELDS)
PLANNED_COLUMNS = tuple(name for name, _ in PLANNED_FIELDS)


def session() -> SparkSession:
    """The Spark session: local[*] under plain python, whatever spark-submit says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.appName(APP_NAME)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# -- extract -------------------------------------------------------------------------------
def read_snapshots(spark: SparkSession, path: str) -> DataFrame:
    """Raw snapshots, one row per cluster: ``cluster_id``, ``brokers``, ``partitions``."""
    from pyspark.sql import functions as F

    if not os.path.exists(path):
        raise ValueError(f"no such file or directory: {path}")
    names = sorted(os.listdir(path)) if os.path.isdir(path) else [os.path.basename(path)]
    if any(n.endswith(".parquet") for n in names) or (os.path.isdir(path) and any(
            n.startswith("part-") and n.endswith(".parquet") for n in names)):
        raw = spark.read.parquet(path)
        missing = {"cluster_id", "brokers", "partitions"} - set(raw.columns)
        if missing:
            raise ValueError(f"{path}: Parquet fleet needs columns {sorted(missing)}")
        return _conform(raw).select("cluster_id", "brokers", "partitions",
                                    F.lit(None).cast("string").alias("_corrupt_record"))
    lines = [n for n in names if n.endswith((".jsonl", ".ndjson"))]
    files = [n for n in names if n.endswith(".json")]
    if lines:
        target = path if not os.path.isdir(path) else [os.path.join(path, n) for n in lines]
        return (spark.read.schema(SNAPSHOT_SCHEMA)
                .option("columnNameOfCorruptRecord", "_corrupt_record").json(target))
    if not files:
        raise ValueError(f"{path}: no .json, .jsonl, .ndjson or .parquet snapshot found")
    target = path if not os.path.isdir(path) else [os.path.join(path, n) for n in files]
    raw = (spark.read.schema(SNAPSHOT_SCHEMA).option("multiLine", True)
           .option("columnNameOfCorruptRecord", "_corrupt_record").json(target))
    from_name = F.regexp_extract(F.input_file_name(), r"([^/]+)\.json$", 1)
    return raw.withColumn("cluster_id", F.coalesce(F.col("cluster_id"), from_name))


def _conform(raw: DataFrame) -> DataFrame:
    """A Parquet fleet's ``brokers`` and ``partitions`` with every field of the JSON schema (the
    optional ones, such as ``capacity_bytes``, null where the file has none)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StructType

    wanted = StructType.fromDDL(SNAPSHOT_SCHEMA)
    if not isinstance(wanted, StructType):
        raise TypeError("SNAPSHOT_SCHEMA is a struct")
    out = raw
    for column in ("brokers", "partitions"):
        want = wanted[column].dataType
        have = raw.schema[column].dataType
        if not (isinstance(want, ArrayType) and isinstance(have, ArrayType)
                and isinstance(want.elementType, StructType) and isinstance(have.elementType, StructType)):
            raise ValueError(f"Parquet fleet: '{column}' must be an array of structs")
        out = out.withColumn(column, F.transform(column, _filled(want.elementType, set(have.elementType.fieldNames()))))
    return out


def _filled(element: StructType, present: set[str]) -> Callable[[Column], Column]:
    """A struct of ``element``'s fields, taking those in ``present`` from the input, null otherwise."""
    from pyspark.sql import functions as F

    def fill(x: Column) -> Column:
        return F.struct(*((x[f.name] if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
                          for f in element.fields))

    return fill


# -- transform -----------------------------------------------------------------------------
def normalise(raw: DataFrame) -> DataFrame:
    """Trimmed cluster ids, empty racks as null, brokers alive unless said otherwise."""
    from pyspark.sql import functions as F

    brokers = F.transform("brokers", lambda b: F.struct(
        b["id"].alias("id"),
        F.when(F.trim(b["rack"]) == "", None).otherwise(b["rack"]).alias("rack"),
        F.coalesce(b["alive"], F.lit(True)).alias("alive"),
        b["host"].alias("host"), b["port"].alias("port"), b["capacity_bytes"].alias("capacity_bytes"),
        b["log_dirs"].alias("log_dirs"), *(b[c].alias(c) for c in BROKER_RATES)))
    return (raw.withColumn("cluster_id", F.trim("cluster_id"))
            .withColumn("brokers", brokers))


def broker_rows(clusters: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (clusters.select("cluster_id", F.explode_outer("brokers").alias("b"))
            .where(F.col("b").isNotNull())
            .select("cluster_id", "b.id", "b.rack", "b.alive", "b.host", "b.port", "b.capacity_bytes",
                    "b.log_dirs", *(f"b.{c}" for c in BROKER_RATES)))


def partition_rows(clusters: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (clusters.select("cluster_id", F.explode("partitions").alias("p"))
            .select("cluster_id", "p.topic", "p.partition", "p.replicas", "p.leader", "p.isr",
                    "p.size_bytes", "p.log_dirs", *(f"p.{c}" for c in PARTITION_RATES)))


def validation_errors(clusters: DataFrame, brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """One row per problem: ``cluster_id``, ``error``. Empty for a valid fleet."""
    from pyspark.sql import functions as F

    problems = [
        clusters.where(F.col("_corrupt_record").isNotNull())
        .select("cluster_id", F.lit("not a valid snapshot JSON document").alias("error")),
        clusters.where(F.col("cluster_id").isNull() | (F.col("cluster_id") == ""))
        .select(F.lit("").alias("cluster_id"), F.lit("a snapshot without cluster_id").alias("error")),
        clusters.where(F.col("brokers").isNull() & F.col("_corrupt_record").isNull())
        .select("cluster_id", F.lit("snapshot needs a 'brokers' list").alias("error")),
        brokers.where(F.col("id").isNull() | (F.col("id") < 0))
        .select("cluster_id", F.lit("a broker id is missing, negative or not an integer").alias("error")),
        brokers.where(F.col("capacity_bytes") < 0)
        .select("cluster_id", F.concat(F.lit("broker "), F.col("id").cast("string"),
                                       F.lit(" has a negative capacity_bytes")).alias("error")),
        brokers.groupBy("cluster_id", "id").count().where("count > 1")
        .select("cluster_id", F.concat(F.lit("duplicate broker id "), F.col("id").cast("string")).alias("error")),
        partitions.where(F.col("topic").isNull() | (F.col("topic") == "") | F.col("partition").isNull()
                         | (F.col("partition") < 0) | F.col("replicas").isNull() | (F.size("replicas") == 0)
                         | F.exists("replicas", lambda r: r.isNull()))
        .select("cluster_id", F.lit("a partition lacks a topic, a partition number or replicas").alias("error")),
        partitions.where(F.col("size_bytes") < 0)
        .select("cluster_id", F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                                       F.lit(" has a negative size_bytes")).alias("error")),
        brokers.where(F.exists("log_dirs", lambda d: d.isNull() | ~d.startswith("/")))
        .select("cluster_id", F.concat(F.lit("broker "), F.col("id").cast("string"),
                                       F.lit(" log_dirs: a log directory must be an absolute path")).alias("error")),
        brokers.where(F.size(F.array_distinct("log_dirs")) != F.size("log_dirs"))
        .select("cluster_id", F.concat(F.lit("broker "), F.col("id").cast("string"),
                                       F.lit(" log_dirs: a log directory listed twice")).alias("error")),
        partitions.where(F.col("log_dirs").isNotNull() & (F.size("log_dirs") != F.size("replicas")))
        .select("cluster_id", F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                                       F.lit(": log_dirs has "), F.size("log_dirs").cast("string"),
                                       F.lit(" entries for "), F.size("replicas").cast("string"),
                                       F.lit(" replicas (one per replica)")).alias("error")),
        partitions.where(F.exists("log_dirs", lambda d: d.isNotNull() & ~d.startswith("/")))
        .select("cluster_id", F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                                       F.lit(": a log directory must be an absolute path")).alias("error")),
        partitions.where(F.size(F.array_distinct("replicas")) != F.size("replicas"))
        .select("cluster_id", F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                                       F.lit(" lists a broker twice")).alias("error")),
        partitions.groupBy("cluster_id", "topic", "partition").count().where("count > 1")
        .select("cluster_id", F.concat(F.lit("duplicate partition "), F.col("topic"), F.lit("-"),
                                       F.col("partition").cast("string")).alias("error")),
    ]
    problems += [frame.where(_bad_rate(F.col(c))).select("cluster_id", F.concat(*label, F.lit(
        f" {c} must be a finite number >= 0 (bytes per second)")).alias("error"))
        for frame, label, columns in (
            (brokers, (F.lit("broker "), F.col("id").cast("string")), BROKER_RATES),
            (partitions, (F.col("topic"), F.lit("-"), F.col("partition").cast("string")), PARTITION_RATES))
        for c in columns]
    out = problems[0]
    for df in problems[1:]:
        out = out.unionByName(df)
    return out


def _bad_rate(value: Column) -> Column:
    """A rate or a network capacity that is negative, NaN or infinite (the JSON reader takes
    ``NaN`` and ``Infinity``); null is "not given"."""
    from pyspark.sql import functions as F

    return value.isNotNull() & ((value < 0) | F.isnan(value) | (F.abs(value) == float("inf")))


def broker_state(brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """Per cluster and broker: rack, alive, replicas, preferred leaders (unknown ids too)."""
    from pyspark.sql import functions as F

    slots = partitions.select("cluster_id", F.posexplode("replicas").alias("slot", "id"))
    counts = slots.groupBy("cluster_id", "id").agg(
        F.count("*").alias("replicas"),
        F.sum(F.when(F.col("slot") == 0, 1).otherwise(0)).alias("leaders"))
    return (brokers.select("cluster_id", "id", "rack", "alive")
            .join(counts, ["cluster_id", "id"], "full_outer")
            .select("cluster_id", "id", "rack",
                    F.when(F.col("alive").isNull(), F.lit("unknown"))
                    .when(F.col("alive"), F.lit("alive")).otherwise(F.lit("dead")).alias("status"),
                    F.coalesce("replicas", F.lit(0)).alias("replicas"),
                    F.coalesce("leaders", F.lit(0)).alias("leaders")))


def rack_state(brokers_state: DataFrame) -> DataFrame:
    """Per cluster and rack: alive brokers, replicas and leaders on them, replicas per broker."""
    from pyspark.sql import functions as F

    alive = brokers_state.where(F.col("status") == "alive")
    return (alive.groupBy("cluster_id", F.coalesce("rack", F.lit("(no rack)")).alias("rack"))
            .agg(F.count("*").alias("brokers"), F.sum("replicas").alias("replicas"),
                 F.sum("leaders").alias("leaders"))
            .withColumn("replicas_per_broker", F.round(F.col("replicas") / F.col("brokers"), 3)))


def topic_state(brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """Per cluster and topic: partitions, replicas, least and most replicas on an alive broker."""
    from pyspark.sql import functions as F

    per_broker = (partitions.select("cluster_id", "topic", F.explode("replicas").alias("id"))
                  .groupBy("cluster_id", "topic", "id").count())
    alive = brokers.where("alive").select("cluster_id", "id")
    topics = partitions.select("cluster_id", "topic").distinct()
    grid = (topics.join(alive, "cluster_id")
            .join(per_broker, ["cluster_id", "topic", "id"], "left")
            .groupBy("cluster_id", "topic")
            .agg(F.min(F.coalesce("count", F.lit(0))).alias("broker_min"),
                 F.max(F.coalesce("count", F.lit(0))).alias("broker_max")))
    sizes = partitions.groupBy("cluster_id", "topic").agg(
        F.count("*").alias("partitions"), F.sum(F.size("replicas")).alias("replicas"))
    return sizes.join(grid, ["cluster_id", "topic"], "left")


def _optional(value: Any) -> int | None:
    """A nullable long column's value (pandas turns a null into NaN or None)."""
    return None if value is None or (isinstance(value, float) and value != value) else int(value)


def _rate(value: Any) -> float | None:
    """A nullable double column's value: a rate or a capacity in bytes/s."""
    return None if value is None or value != value else float(value)


def _rates(frame: pd.DataFrame, columns: tuple[str, ...]) -> list[tuple[float | None, ...]]:
    """Per row, the rates of ``columns`` (None each when the frame has not got them)."""
    if not all(c in frame for c in columns):
        return [(None,) * len(columns)] * len(frame)
    return list(zip(*([_rate(v) for v in frame[c].tolist()] for c in columns), strict=True))


def _ids(values: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in values)


def cluster_snapshot(brokers: pd.DataFrame, partitions: pd.DataFrame) -> ClusterSnapshot:
    """The snapshot of one cluster from its broker and partition rows (the columns of
    :func:`broker_rows` and :func:`partition_rows`): what the command line reads from a file."""
    def text(value: Any) -> str | None:
        return value if isinstance(value, str) else None

    def paths(values: Any) -> tuple[str | None, ...] | None:
        return None if values is None else tuple(map(text, values))

    def checked(topic: str, number: int, replicas: tuple[int, ...], dirs: tuple[str | None, ...] | None
                ) -> tuple[str | None, ...] | None:
        problem = None if dirs is None else check_log_dirs(replicas, dirs)
        if problem:     # the rows were validated already: the same check as a snapshot file's
            raise ValueError(f"{topic}-{number}: {problem}")
        return dirs

    broker_dirs = [paths(d) for d in (brokers["log_dirs"].tolist() if "log_dirs" in brokers else [None] * len(brokers))]
    partition_dirs = [paths(d) for d in (partitions["log_dirs"].tolist() if "log_dirs" in partitions
                                         else [None] * len(partitions))]
    return ClusterSnapshot(
        tuple(BrokerEntry(int(i), text(rack), bool(alive), text(host), _optional(port), _optional(capacity),
                          dirs, *net)   # validated: no null in a broker's list
              for i, rack, alive, host, port, capacity, dirs, net in zip(
                  brokers["id"].tolist(), brokers["rack"].tolist(), brokers["alive"].tolist(),
                  brokers["host"].tolist(), brokers["port"].tolist(), brokers["capacity_bytes"].tolist(),
                  broker_dirs, _rates(brokers, BROKER_RATES), strict=True)),
        tuple(PartitionEntry(topic, int(number), _ids(replicas), _optional(leader),
                             None if isr is None else _ids(isr), _optional(size),
                             checked(topic, int(number), _ids(replicas), dirs), *rate)
              for topic, number, replicas, leader, isr, size, dirs, rate in zip(
                  partitions["topic"].tolist(), partitions["partition"].tolist(),
                  partitions["replicas"].tolist(), partitions["leader"].tolist(),
                  partitions["isr"].tolist(), partitions["size_bytes"].tolist(), partition_dirs,
                  _rates(partitions, PARTITION_RATES), strict=True)),
    )


def _spread(snapshot: ClusterSnapshot, alive: list[int], leaders: bool = False) -> tuple[int, int]:
    count = (Counter(p.replicas[0] for p in snapshot.partitions) if leaders
             else Counter(b for p in snapshot.partitions for b in p.replicas))
    values = [count[b] for b in alive] or [0]
    return min(values), max(values)


def planned_row(cluster_id: str, snap: ClusterSnapshot, request: PlanRequest, charts: bool) -> dict[str, Any]:
    """Plan one cluster with the command line's own :func:`make_plan` and
    :func:`render_outputs`: one row of ``PLANNED_SCHEMA`` (a failure is a row too)."""
    started, cpu = time.perf_counter(), time.process_time()
    row: dict[str, Any] = dict.fromkeys(PLANNED_COLUMNS)
    row.update(cluster_id=cluster_id, status="planned")
    try:
        result = make_plan(snap, request)
        files = render_outputs(result, request, charts=charts)
    except Exception as exc:  # one broken cluster must not fail the fleet
        row.update(status="failed", error=f"{type(exc).__name__}: {exc}",
                   seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu)
        return row
    alive = [b.id for b in snap.brokers if b.alive]
    before_of = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    changed = result.changed()
    row.update(
        brokers=len(snap.brokers), alive_brokers=len(alive), partitions=len(snap.partitions),
        replicas=sum(len(p.replicas) for p in snap.partitions),
        replica_moves=result.replica_moves, repairs=result.repairs,
        leader_changes=result.leader_changes, partitions_reassigned=len(changed),
        bounds=dict(result.bounds), notes=list(result.notes),
        seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu,
        files=[{"name": k, "content": v} for k, v in files.items()],
        changes=[{"topic": p.topic, "partition": p.partition,
                  "before": list(before_of[(p.topic, p.partition)]), "after": list(p.replicas)}
                 for p in changed],
    )
    row["replicas_min_before"], row["replicas_max_before"] = _spread(snap, alive)
    row["replicas_min_after"], row["replicas_max_after"] = _spread(result.after, alive)
    row["leaders_min_after"], row["leaders_max_after"] = _spread(result.after, alive, leaders=True)
    return row


def _plan_group(request: PlanRequest, charts: bool) -> Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]:
    """The function each executor runs for one cluster: its rows in, one planned row out."""

    def plan(partitions: pd.DataFrame, brokers: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        cluster_id = str(partitions["cluster_id"].iloc[0] if len(partitions) else brokers["cluster_id"].iloc[0])
        try:
            snap = cluster_snapshot(brokers, partitions)
        except ValueError as exc:
            row: dict[str, Any] = dict.fromkeys(PLANNED_COLUMNS)
            row.update(cluster_id=cluster_id, status="failed", error=f"{type(exc).__name__}: {exc}")
            return pd.DataFrame([row])
        return pd.DataFrame([planned_row(cluster_id, snap, request, charts)])

    return plan


def plan_clusters(brokers: DataFrame, partitions: DataFrame, request: PlanRequest, *,
                  charts: bool = True) -> DataFrame:
    """One planned row per cluster (see ``PLANNED_SCHEMA``), each planned in an executor."""
    from pyspark.sql import functions as F

    def fresh(df: DataFrame) -> DataFrame:  # both sides come from one DataFrame: new column ids
        return df.select(*(F.col(c).alias(c) for c in df.columns))   # keep the cogroup unambiguous

    return (fresh(partitions).groupBy("cluster_id")
            .cogroup(fresh(brokers).groupBy("cluster_id"))
            .applyInPandas(_plan_group(request, charts), PLANNED_SCHEMA))


def plan_rows(planned: DataFrame) -> DataFrame:
    """The reassignment of the whole fleet as a table: one row per changed partition."""
    from pyspark.sql import functions as F

    return (planned.select("cluster_id", F.explode("changes").alias("c"))
            .select("cluster_id", "c.topic", "c.partition", "c.before", "c.after"))


def metrics(planned: DataFrame) -> DataFrame:
    return planned.drop("files", "changes")


# -- load ----------------------------------------------------------------------------------
class Progress:
    """A progress bar on stderr for the Spark jobs of one job group (polls the status tracker)."""

    def __init__(self, spark: SparkSession, group: str, label: str, enabled: bool) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.group, self.label, self.enabled = group, label, enabled
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Progress:
        if self.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.stop.set()
            self.thread.join()
            self._draw(final=True)

    def _counts(self) -> tuple[int, int]:
        done = total = 0
        for job in self.tracker.getJobIdsForGroup(self.group):
            info = self.tracker.getJobInfo(job)
            for stage in (info.stageIds if info else ()):
                s = self.tracker.getStageInfo(stage)
                if s is not None:
                    done += s.numCompletedTasks
                    total += s.numTasks
        return done, total

    def _draw(self, final: bool = False) -> None:
        done, total = self._counts()
        if final:
            done = total
        width = 30
        filled = int(width * done / total) if total else 0
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks")
        if final:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def _run(self) -> None:
        shown = None
        while not self.stop.wait(0.5):
            counts = self._counts()
            if counts != shown and counts[1]:
                shown = counts
                self._draw()


def run_pipeline(source: str, out: str, request: PlanRequest, *, charts: bool = True,
                 progress: bool = False, spark: SparkSession | None = None) -> str:
    """Plan every cluster of ``source`` into ``out``; returns a one-line summary.

    ``out`` is a local (or shared, mounted) directory: the per-cluster files are written by the
    driver, the tables by Spark; planned rows are staged as Parquet beside ``out``."""
    spark = spark or session()
    raw = read_snapshots(spark, source)
    single = not os.path.isdir(source) and source.endswith(".json")
    clusters = normalise(raw).cache()
    n_clusters = clusters.count()
    if n_clusters == 0:
        raise ValueError(f"{source}: no snapshot found")
    parallel = spark.sparkContext.defaultParallelism
    spark.conf.set("spark.sql.shuffle.partitions", str(max(1, min(n_clusters, 4 * parallel))))
    brokers = broker_rows(clusters)
    partitions = partition_rows(clusters)
    errors = validation_errors(clusters, brokers, partitions).cache()
    bad = errors.select("cluster_id").distinct()
    if single and errors.limit(1).count():
        raise ValueError(f"{source}: {errors.collect()[0]['error']}")
    good_brokers = brokers.join(bad, "cluster_id", "left_anti")
    good_partitions = partitions.join(bad, "cluster_id", "left_anti")
    tables = os.path.join(out, "_tables")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".planned-", dir=parent)   # beside out, never inside
    try:
        group = f"plan-{os.getpid()}-{time.monotonic_ns()}"
        spark.sparkContext.setJobGroup(group, f"plan {n_clusters} cluster(s)")
        # one task per cluster (up to 16 per core) and no coalescing of the "small" shuffle
        # partitions: a cluster is seconds of Python, and the cores must share them evenly
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, min(n_clusters, 16 * parallel))))
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        with Progress(spark, group, f"planning {n_clusters} cluster(s)", progress):
            plan_clusters(good_brokers, good_partitions, request, charts=charts) \
                .write.mode("overwrite").parquet(staging)
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, min(n_clusters, 4 * parallel))))
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
        spark.sparkContext.setJobGroup("load", "write tables")
        planned = spark.read.parquet(staging)
        if single:
            row = planned.collect()[0]
            if row["status"] != "planned":
                raise ValueError(f"{source}: {row['error']}")
            write_outputs({f["name"]: bytes(f["content"]) for f in row["files"]}, out)
            return (f"{row['replica_moves']} replica move(s) ({row['repairs']} repairs), "
                    f"{row['leader_changes']} leader change(s), {row['partitions_reassigned']} "
                    f"partition(s) reassigned; wrote {len(row['files'])} files to {out} (Spark)")
        return _load_fleet(spark, planned, clusters_count=n_clusters, brokers=brokers,
                           partitions=partitions, errors=errors, out=out, tables=tables,
                           request=request)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        errors.unpersist()
        clusters.unpersist()


def _load_fleet(spark: SparkSession, planned: DataFrame, *, clusters_count: int, brokers: DataFrame,
                partitions: DataFrame, errors: DataFrame, out: str, tables: str,
                request: PlanRequest) -> str:
    from pyspark.sql import functions as F

    n_clusters = clusters_count
    metrics(planned).write.mode("overwrite").parquet(os.path.join(tables, "metrics"))
    plan_rows(planned).write.mode("overwrite").parquet(os.path.join(tables, "plans"))
    state = broker_state(brokers, partitions)
    state.write.mode("overwrite").parquet(os.path.join(tables, "broker_state"))
    rack_state(state).write.mode("overwrite").parquet(os.path.join(tables, "rack_state"))
    topic_state(brokers, partitions).write.mode("overwrite").parquet(os.path.join(tables, "topic_state"))
    errors.write.mode("overwrite").parquet(os.path.join(tables, "errors"))
    for row in planned.select("cluster_id", "status", "files").toLocalIterator():
        if row["status"] == "planned":
            write_outputs({f["name"]: bytes(f["content"]) for f in row["files"]},
                          os.path.join(out, _safe(row["cluster_id"])))
    rows = planned.select("cluster_id", "status", "error", "replica_moves", "repairs",
                          "leader_changes", "seconds").orderBy("cluster_id").collect()
    invalid = errors.groupBy("cluster_id").agg(F.first("error").alias("error")).orderBy("cluster_id").collect()
    _fleet_report(out, request, rows, invalid)
    failed = sum(1 for r in rows if r["status"] != "planned") + len(invalid)
    moves = sum(r["replica_moves"] or 0 for r in rows)
    changes = sum(r["leader_changes"] or 0 for r in rows)
    return (f"{len(rows) - failed + len(invalid)} of {n_clusters} cluster(s) planned: {moves} replica "
            f"move(s), {changes} leader change(s); wrote {out}"
            + (f"; {failed} failed (see fleet-report.md)" if failed else ""))


def _safe(cluster_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in cluster_id) or "_"


def _fleet_report(out: str, request: PlanRequest, rows: Iterable[Row], invalid: Iterable[Row]) -> None:
    lines = [f"# Fleet plan: {request.mode}", "",
             "| cluster | status | replica moves | repairs | leader changes | seconds |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "planned":
            lines.append(f"| [{r['cluster_id']}]({_safe(r['cluster_id'])}/report.md) | planned | "
                         f"{r['replica_moves']} | {r['repairs']} | {r['leader_changes']} | {r['seconds']:.2f} |")
        else:
            lines.append(f"| {r['cluster_id']} | failed: {r['error']} | - | - | - | - |")
    for r in invalid:
        lines.append(f"| {r['cluster_id']} | invalid: {r['error']} | - | - | - | - |")
    with open(os.path.join(out, "fleet-report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m kafka_replica_assignor.planner.fleet.pipeline --fleet DIR --mode cluster --out DIR`` (local[*]), or the same
    arguments after ``spark-submit --master spark://HOST:7077 planner/fleet/pipeline.py``."""
    ap = argparse.ArgumentParser(prog="kafka_replica_assignor.planner.fleet.pipeline", description=__doc__.splitlines()[0])
    ap.add_argument("--fleet", required=True, help="snapshot file or directory (JSON, JSON lines, Parquet)")
    add_request_arguments(ap)
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-charts", action="store_true")
    a = ap.parse_args(argv)
    try:
        request = request_from_args(a, a.fleet)
        summary = run_pipeline(a.fleet, a.out, request, charts=not a.no_charts, progress=True)
    except (ValueError, OSError) as exc:
        print(f"kafka_replica_assignor.planner.fleet.pipeline: error: {exc}", file=sys.stderr)
        return 2
    print(summary)
    return 0 if "failed" not in summary else 1


if __name__ == "__main__":
    from kafka_replica_assignor.planner.fleet.pipeline import (
        main as package_main,  # one module, run with -m or as a file
    )

    sys.exit(package_main())
