"""One soak application: Spark, Criss, threads issuing checked statements."""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from experiments.soak.work import APP_OPTIONS, Work, data_lock


def _dataframe_queries() -> dict[str, Callable[[Any, str], Any]]:
    """DataFrame-API queries by name; each takes the SparkSession and one parameter."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def revenue_by_flag(spark, cutoff):
        line = spark.table("lineitem").filter(F.col("l_shipdate") <= F.lit(cutoff).cast("date"))
        revenue = F.col("l_extendedprice") * (1 - F.col("l_discount"))
        return line.groupBy("l_returnflag", "l_linestatus").agg(
            F.sum(revenue).alias("revenue"), F.count("*").alias("n")
        )

    def orders_by_segment(spark, year):
        orders = spark.table("orders").filter(F.year("o_orderdate") == int(year))
        joined = orders.join(spark.table("customer"), F.col("o_custkey") == F.col("c_custkey"))
        return joined.groupBy("c_mktsegment").agg(
            F.count("*").alias("n"), F.sum("o_totalprice").alias("total")
        )

    def supply_value(spark, nation):
        supplier = spark.table("supplier").join(
            spark.table("nation").filter(F.col("n_name") == nation),
            F.col("s_nationkey") == F.col("n_nationkey"),
        )
        value = supplier.join(spark.table("partsupp"), F.col("s_suppkey") == F.col("ps_suppkey"))
        return (
            value.groupBy("s_name")
            .agg(F.sum(F.col("ps_supplycost") * F.col("ps_availqty")).alias("value"))
            .orderBy(F.desc("value"), "s_name")
            .limit(10)
        )

    def cheapest_per_type(spark, brand):
        ranked = Window.partitionBy("p_type").orderBy("p_retailprice", "p_partkey")
        parts = spark.table("part").filter(F.col("p_brand") == brand)
        return (
            parts.withColumn("rank", F.row_number().over(ranked))
            .filter(F.col("rank") <= 2)
            .select("p_type", "p_partkey", "p_retailprice", "rank")
        )

    return {
        "revenue_by_flag": revenue_by_flag,
        "orders_by_segment": orders_by_segment,
        "supply_value": supply_value,
        "cheapest_per_type": cheapest_per_type,
    }


DATAFRAME_PARAMETERS = {
    "revenue_by_flag": ("1995-06-17", "1997-01-01", "1998-09-02"),
    "orders_by_segment": ("1993", "1995", "1997"),
    "supply_value": ("GERMANY", "CHINA", "BRAZIL"),
    "cheapest_per_type": ("Brand#12", "Brand#23", "Brand#45"),
}


@dataclass
class Query:
    """One statement of the mix: SQL text, or a DataFrame-API query and its parameter."""

    kind: str
    key: str
    sql: str | None = None
    builder: str | None = None
    parameter: str | None = None


def draw_query(rng: random.Random, sf: float, pool: int, qids: tuple[int, ...]) -> Query:
    from criss.workload.tpch.queries import statement

    roll = rng.random()
    if roll < 0.2:
        name = rng.choice(sorted(DATAFRAME_PARAMETERS))
        parameter = rng.choice(DATAFRAME_PARAMETERS[name])
        return Query("dataframe", f"{name}({parameter})", builder=name, parameter=parameter)
    variant = "orig" if roll < 0.65 else rng.choice(("v60", "v30"))
    qid, seed = rng.choice(qids), rng.randrange(pool)
    text = statement(qid, variant, seed=seed, sf=sf).sql
    kind = "tpch" if variant == "orig" else "variant"
    return Query(kind, f"q{qid}-{variant}-p{seed}", sql=text)


def fill_queries(rng: random.Random, count: int) -> list[Query]:
    """Large results, new each time: a burst of them pushes the tiers past their quotas."""
    out = []
    for _ in range(count):
        day = rng.randrange(0, 2000)
        sql = (
            "select l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_comment "
            f"from lineitem where l_shipdate >= date_add(date '1992-01-01', {day}) "
            f"and l_linenumber <= {rng.randint(3, 7)}"
        )
        out.append(Query("fill", f"fill-{day}", sql=sql))
    return out


class Application:
    """One soak application: a SparkSession, a Criss session and its threads."""

    def __init__(self, work: Work, app: str, incarnation: int, args: argparse.Namespace):
        import criss
        from criss.sparksession import local_spark

        self.work, self.app, self.incarnation = work, app, incarnation
        self.args = args
        self.spark = local_spark(f"criss-soak-{app}", conf={"spark.sql.shuffle.partitions": "4"})
        self.version = -1
        self._views = threading.Lock()
        self.refresh_views()
        self.cs = criss.session(
            self.spark,
            home=work.home,
            memory_dir=str(work.memory),
            memory_capacity=args.memory_capacity,
            disk_capacity=args.disk_capacity,
            **APP_OPTIONS[app],
        )
        self.builders = _dataframe_queries()
        self.references: dict[tuple[str, int], list] = {}
        self._events = open(work.events / f"{app}.{incarnation}.jsonl", "a")  # noqa: SIM115
        self._write = threading.Lock()

    def refresh_views(self) -> None:
        """Point the views at the tables' current files (a table owner's REFRESH)."""
        with self._views:
            version = self.work.data_version()
            if version == self.version:
                return
            self.spark.catalog.refreshByPath(str(self.work.data))
            for table in sorted(p.name for p in self.work.data.iterdir() if p.is_dir()):
                self.spark.read.parquet(str(self.work.data / table)).createOrReplaceTempView(table)
            self.version = version

    def emit(self, event: dict) -> None:
        with self._write:
            self._events.write(json.dumps(event, default=str) + "\n")
            self._events.flush()

    def _dataframe(self, query: Query):
        return self.builders[query.builder](self.spark, query.parameter)

    def reference(self, query: Query) -> list:
        key = (query.key, self.version)
        rows = self.references.get(key)
        if rows is None:
            plain = self.spark.sql(query.sql) if query.sql else self._dataframe(query)
            rows = self.references[key] = plain.collect()
        return rows

    def run_one(self, query: Query, thread: int) -> None:
        from criss.workload.rows import row_difference

        with data_lock(self.work, exclusive=False):
            self.refresh_views()
            started = time.perf_counter()
            event = {"t": time.time(), "app": self.app, "thread": thread, "kind": query.kind}
            event.update(key=query.key, version=self.version, incarnation=self.incarnation)
            try:
                df = (
                    self.cs.sql(query.sql)
                    if query.sql
                    else self.cs.dataframe(self._dataframe(query))
                )
                rows = df.collect()
            except Exception as exc:  # Criss raised: an error only if plain Spark does not
                event["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
                try:
                    self.reference(query)
                except Exception as plain_exc:
                    event["plain_error"] = f"{type(plain_exc).__name__}: {str(plain_exc)[:500]}"
                self.emit(event)
                return
            event["seconds"] = round(time.perf_counter() - started, 3)
            record = self.cs.record(df)
            event["fallback"] = bool(record and record.fallback)
            if record is not None:
                event["reused"] = record.counters.get("operators_reused", 0)
                event["cached"] = record.counters.get("operators_cached", 0)
                event["recomputed"] = record.counters.get("partitions_recomputed", 0)
            expected = self.reference(query)
            difference = row_difference(rows, expected)
            if difference is not None:
                event["wrong"] = difference
            self.emit(event)

    def snapshot(self, final: bool = False) -> None:
        """The session's counters and faults so far (a killed incarnation keeps its last)."""
        state = {
            "counters": dict(self.cs.counters),
            "faults": dict(self.cs.cache.faults),
            "final": final,
            "t": time.time(),
        }
        path = self.work.events / f"{self.app}.{self.incarnation}.counters.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(path)

    def claim_fill(self) -> int | None:
        for request in sorted(self.work.control.glob("fill.*.request")):
            claimed = request.with_suffix(f".{self.app}")
            try:
                request.rename(claimed)
            except OSError:
                continue  # the other application took it
            return int(request.name.split(".")[1])
        return None

    def thread_main(self, thread: int) -> None:
        rng = random.Random(f"{self.args.seed}/{self.app}/{self.incarnation}/{thread}")
        last_snapshot = time.monotonic()
        while not self.work.stopping():
            fill = self.claim_fill()
            if fill is not None:
                queries = fill_queries(random.Random(f"{self.args.seed}/fill/{fill}"), 6)
            else:
                queries = [draw_query(rng, self.args.sf, self.args.pool, self.args.queries)]
            for query in queries:
                self.run_one(query, thread)
            if time.monotonic() - last_snapshot > 10:
                with self._write:
                    self.snapshot()
                last_snapshot = time.monotonic()

    def run(self) -> None:
        (self.work.control / f"{self.app}.ready").write_text(str(os.getpid()))
        threads = [
            threading.Thread(target=self.thread_main, args=(i,), name=f"soak-{i}")
            for i in range(self.args.threads)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.snapshot()
        self.cs.close()
        self.snapshot(final=True)
        self.spark.stop()
