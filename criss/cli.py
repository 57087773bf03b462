"""The ``criss`` command: thin click commands over the library."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import click

from criss.cli_options import (
    benchmark_option,
    idle_wait_option,
    parse_conf,
    parse_tables,
    parse_variants,
)
from criss.errors import CrissError
from criss.workload.streams import STREAMS

STREAM_CHOICES = STREAMS


def _library_errors(func):
    """Turn Criss's own errors into clean CLI errors instead of tracebacks."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except CrissError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="criss")
def main() -> None:
    """Criss: automatic reuse of intermediate results for Spark SQL."""


@main.command()
@benchmark_option("TPC-H (tpchgen-cli) or TPC-DS (tpcgen-cli).")
@click.option("--sf", type=float, default=1.0, show_default=True, help="Scale factor.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the Parquet files go [default: ./data/<BENCHMARK>/sf<SF>].",
)
@_library_errors
def datagen(benchmark: str, sf: float, data_dir: Path | None) -> None:
    """Generate benchmark Parquet data (reused when already complete)."""
    from criss.workload.benchmarks import parquet_data

    click.echo(parquet_data(benchmark).ensure(sf, data_dir))


@main.command()
@benchmark_option("TPC-H, or TPC-DS (Spark's query files; random and zipf streams).")
@click.option(
    "--stream",
    type=click.Choice(STREAM_CHOICES),
    default="zipf",
    show_default=True,
    help="Which seeded query stream to replay.",
)
@click.option(
    "--queries",
    "n_queries",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    help="Number of queries in the stream.",
)
@click.option("--sf", type=float, default=1.0, show_default=True, help="Scale factor.")
@click.option("--seed", type=int, default=42, show_default=True, help="Stream seed.")
@click.option(
    "--mode",
    type=click.Choice(["spark", "criss", "both"]),
    default="both",
    show_default=True,
    help="Plain Spark, Criss, or both side by side in one run.",
)
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="Write the results JSON here."
)
@click.option(
    "--home",
    type=click.Path(path_type=Path),
    default=None,
    help="Criss home (catalog and cache), printed at the end with the commands that "
    "look inside it [default: a fresh temporary directory].",
)
@click.option(
    "--warm", is_flag=True, help="Keep what --home already caches instead of clearing it."
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Data directory [default: ./data/<BENCHMARK>/sf<SF>].",
)
@click.option(
    "--zipf-skew",
    type=float,
    default=1.0,
    show_default=True,
    help="Zipf exponent for --stream zipf.",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option(
    "--conf",
    "conf_pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra Spark setting (repeatable), e.g. spark.sql.shuffle.partitions=16.",
)
@click.option(
    "--warmup/--no-warmup",
    default=True,
    show_default=True,
    help="Run each distinct statement once, untimed, before the replay (JVM and page cache).",
)
@click.option(
    "--variant",
    "variant_specs",
    multiple=True,
    metavar="NAME:KEY=VALUE[,KEY=VALUE]",
    help="Also replay a Criss configuration side by side as mode criss-NAME (repeatable), "
    "e.g. disk:media=disk or recycler:policy=recycler.",
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "application", "session"]),
    default="auto",
    show_default=True,
    help="application: each mode in a Spark application of its own, so none runs on code "
    "another compiled; session: all modes on one SparkSession; auto: application on a "
    "local master, session on a cluster (whose cores go to the first application).",
)
@click.option(
    "--replicas",
    type=click.IntRange(1, 4),
    default=1,
    show_default=True,
    help="Spark applications per mode (with application isolation): two applications "
    "running the same plans differ by several percent, so telling modes apart by less "
    "needs more than one of each; the further ones are modes MODE#2, MODE#3, ...",
)
@idle_wait_option
@click.option("--quiet", is_flag=True, help="No progress bar or per-query table.")
@_library_errors
def replay(
    benchmark: str,
    stream: str,
    n_queries: int,
    sf: float,
    seed: int,
    mode: str,
    out: Path | None,
    home: Path | None,
    warm: bool,
    data_dir: Path | None,
    zipf_skew: float,
    master: str,
    conf_pairs: tuple[str, ...],
    warmup: bool,
    variant_specs: tuple[str, ...],
    isolation: str,
    replicas: int,
    idle_wait: float,
    quiet: bool,
) -> None:
    """Replay a TPC-H or TPC-DS query stream; report per-query times, totals and the ratio."""
    from criss.console import ReplayProgress, print_next_steps, print_replay_summary
    from criss.workload.replay import ReplayConfig, run_replay, write_results

    variants = parse_variants(variant_specs)
    modes = (("spark", "criss") if mode == "both" else (mode,)) + tuple(variants)
    config = ReplayConfig(
        stream=stream,
        queries=n_queries,
        sf=sf,
        seed=seed,
        modes=modes,
        home=home,
        warm=warm,
        data_dir=data_dir,
        zipf_skew=zipf_skew,
        warmup=warmup,
        variants=variants,
        benchmark=benchmark,
        isolation=isolation,
        master=master,
        spark_conf=parse_conf(conf_pairs),
        idle_wait=idle_wait,
        replicas=replicas,
    )
    with ReplayProgress(n_queries, config.modes, enabled=not quiet) as progress:
        spark = _replay_spark(config, progress.console if not quiet else None)
        result = run_replay(spark, config, on_query=progress.update, on_warmup=progress.warmup)
    print_replay_summary(result, per_query=not quiet)
    if out:
        write_results(result, out)
        click.echo(f"results written to {out}")
    if not quiet:
        print_next_steps(result.get("homes", {}), str(out.parent) if out else None)
    _fail_on_mismatch(result)


def _replay_spark(config: Any, console: Any | None) -> Any:
    """The SparkSession a replay in one session runs on (None: each mode starts its own
    application), saying on ``console`` which it is."""
    from criss.sparksession import local_spark

    if config.isolation != "session":
        if console is not None:
            console.print(f"starting a Spark application ({config.master}) for each mode ...")
        return None
    if console is not None:
        console.print(f"starting Spark ({config.master}) ...")
    return local_spark(
        "criss-replay", master=config.master, conf=config.spark_conf, fixed_heap=True
    )


def _home_option(func):
    """``--home``: the Criss home to work on (default: the one sessions use by default)."""
    from criss.config import default_home

    return click.option(
        "--home",
        type=click.Path(path_type=Path, file_okay=False),
        default=default_home,
        show_default="~/.cache/criss",
        help="Criss home (holds catalog.db, cache.db and the disk tier).",
    )(func)


def _json_flag(func):
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        func
    )


@main.command("ls")
@_home_option
@_json_flag
@_library_errors
def ls(home: Path, as_json: bool) -> None:
    """List cached entries, highest benefit first: partition strip, size, rows, reusable."""
    from criss.inspect import load_entries

    entries = load_entries(home)
    if as_json:
        click.echo(json.dumps(entries, indent=1))
        return
    from criss.console import print_entries

    print_entries(entries)


@main.command()
@_home_option
@_json_flag
@_library_errors
def stats(home: Path, as_json: bool) -> None:
    """Summarize a home: tiers, entries, partitions, reuse counters and time saved."""
    from criss.inspect import load_overview

    overview = load_overview(home)
    if as_json:
        click.echo(json.dumps(overview, indent=1))
        return
    from criss.console import print_overview

    print_overview(overview)


@main.command()
@click.argument("sql")
@_home_option
@click.option(
    "--tpch-sf", type=float, default=None, help="Register the TPC-H tables at this scale factor."
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="TPC-H data directory for --tpch-sf, generated there when missing "
    "[default: ./data/tpch/sf<SF>, printed].",
)
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="NAME=PATH",
    help="Register a Parquet file or folder as view NAME (repeatable).",
)
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@_library_errors
def explain(
    sql: str,
    home: Path,
    tpch_sf: float | None,
    data_dir: Path | None,
    tables: tuple[str, ...],
    master: str,
) -> None:
    """Show how Criss plans SQL against a home: per operator, reused, cached, or why not.

    A dry run: the query's result is never computed, and nothing is cached, recomputed,
    promoted or recorded in the QTree or the query log; the plan shows what a real run
    would reuse ("WOULD REUSE") and cache ("WOULD CACHE").
    """
    import criss
    from criss.sparksession import local_spark

    views = parse_tables(tables)
    tpch_dir = _tpch_data(tpch_sf, data_dir) if tpch_sf is not None else None
    spark = local_spark("criss-explain", master=master)
    if tpch_dir is not None:
        from criss.workload.tpch.data import register_views

        register_views(spark, tpch_dir)
    for name, path in views.items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    from criss.console import phase_log

    with phase_log(), criss.session(spark, home=str(home), dry_run=True) as cs:
        df = _spark_errors(cs.sql, sql)
        click.echo(cs.explain(df))


def _tpch_data(sf: float, data_dir: Path | None) -> Path:
    """TPC-H data at ``sf``; generating it is said on stderr, with the folder it goes to."""
    from criss.workload.tpch.data import data_dir_for, ensure_tpch, is_complete

    where = Path(data_dir) if data_dir else data_dir_for(sf)
    if not is_complete(where, sf):
        click.echo(
            f"TPC-H SF{sf:g} tables: generating them into {where.resolve()} "
            "(once; --data-dir chooses another folder)",
            err=True,
        )
    return ensure_tpch(sf, where, quiet=True)


def _spark_errors(func, *args: Any) -> Any:
    """Spark's own errors (unknown table, bad SQL) as CLI errors with a hint."""
    from pyspark.errors import PySparkException

    try:
        return func(*args)
    except PySparkException as exc:
        raise click.ClickException(
            f"Spark cannot plan this query: {str(exc).strip().splitlines()[0]}\n"
            "Register its tables with --tpch-sf SF or --table NAME=PATH."
        ) from exc


@main.command()
@_home_option
@click.option(
    "--tier",
    type=click.Choice(["memory", "disk", "alluxio"]),
    default=None,
    help="Only drop the partitions this tier holds (the QTree and statistics are kept).",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--memory-dir", default=None, help="Memory tier folder, if your sessions set memory_dir."
)
@click.option("--alluxio-url", default=None, help="Alluxio proxy address (for --tier alluxio).")
@_library_errors
def clear(
    home: Path, tier: str | None, yes: bool, memory_dir: str | None, alluxio_url: str | None
) -> None:
    """Drop a home's cached results and QTree (or one tier's partitions), without Spark.

    Entries that a live DataFrame of a running application reads are kept.
    """
    from criss.inspect import clear_home, load_overview

    overview = load_overview(home)
    if tier:
        used = next((t for t in overview["tiers"] if t["name"] == tier), None)
        what = f"the {used['partitions'] if used else 0} partitions in the {tier} tier"
    else:
        what = f"all {overview['entries']} cached entries and the QTree"
    if not yes:
        click.confirm(f"Drop {what} of {home}?", abort=True)
    summary = clear_home(home, tier, memory_dir=memory_dir, alluxio_url=alluxio_url)
    before, after = summary["before"], summary["after"]
    click.echo(
        f"cleared {what}: entries {before['entries']} -> {after['entries']}, "
        f"reusable partitions {before['reusable_partitions']} -> "
        f"{after['reusable_partitions']}, QTree operators {before['qtree_operators']} -> "
        f"{after['qtree_operators']}"
    )
    if summary["kept_pinned"]:
        click.echo(
            f"kept {len(summary['kept_pinned'])} entries that a running application is reading"
        )


@main.command()
@_home_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8484,
    show_default=True,
    help="Port to listen on.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (this machine)."
)
@click.option(
    "--results",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder of replay results JSON [default: ./experiments/results when it exists].",
)
@click.option("--memory-capacity", default=None, help="Memory tier quota for its bar, e.g. 2g.")
@click.option("--disk-capacity", default=None, help="Disk tier quota for its bar, e.g. 20g.")
@_library_errors
def dashboard(
    home: Path,
    port: int,
    host: str,
    results: Path | None,
    memory_capacity: str | None,
    disk_capacity: str | None,
) -> None:
    """Serve a read-only web dashboard of a home: overview, QTree, entries, queries, replays.

    Needs Flask (pip install 'criss[dashboard]'). Add ?refresh=5 to a page's address to
    reload it every 5 seconds while a replay runs.
    """
    _require_flask()
    from werkzeug.serving import run_simple

    from criss.config import parse_bytes
    from criss.dashboard import create_app, default_results_dir

    capacities = {
        "memory": parse_bytes(memory_capacity, "--memory-capacity"),
        "disk": parse_bytes(disk_capacity, "--disk-capacity"),
    }
    app = create_app(home, results or default_results_dir(), capacities=capacities)
    if not home.is_dir():
        click.echo(f"no Criss home at {home} yet: pages will say so until a session creates it")
    click.echo(f"Criss dashboard for {home}: http://{host}:{port}/ (Ctrl-C stops it)")
    run_simple(host, port, app, threaded=True)


@main.group()
def cluster() -> None:
    """A Spark standalone cluster on this machine (a master and workers on 127.0.0.1)."""


def _cluster_dir(func):
    return click.option(
        "--dir",
        "directory",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("/tmp/criss-cluster"),
        show_default=True,
        help="Where the cluster keeps its logs, work directories and pids.",
    )(func)


@cluster.command("start")
@_cluster_dir
@click.option("--workers", type=int, default=2, show_default=True)
@click.option("--cores", type=int, default=1, show_default=True, help="Task slots per worker.")
@click.option(
    "--memory", default="3g", show_default=True, help="Memory each worker offers executors."
)
@_library_errors
def cluster_start(directory: Path, workers: int, cores: int, memory: str) -> None:
    """Start the master and workers; print the master URL for `--master`."""
    from criss.cluster import LoopbackCluster, master_status, read_state

    try:
        running = read_state(directory)
    except CrissError:
        running = None
    if running is not None and master_status(running.web_url) is not None:
        raise click.ClickException(
            f"a cluster started from {directory} is running ({running.master_url}): "
            f"stop it first with `criss cluster stop --dir {directory}`"
        )
    url = LoopbackCluster(directory, workers=workers, cores=cores, memory=memory).start()
    click.echo(url)


@cluster.command("status")
@_cluster_dir
@_library_errors
def cluster_status(directory: Path) -> None:
    """The master URL and how many workers are alive."""
    from criss.cluster import alive_workers, master_status, read_state

    state = read_state(directory)
    status = master_status(state.web_url)
    if status is None:
        raise click.ClickException(f"the master at {state.web_url} does not answer")
    click.echo(f"{state.master_url}: {alive_workers(status)} of {state.workers} workers alive")


@cluster.command("stop")
@_cluster_dir
@_library_errors
def cluster_stop(directory: Path) -> None:
    """Stop the master and the workers started from ``--dir`` (by their pids)."""
    from criss.cluster import stop_cluster

    click.echo(f"stopped {stop_cluster(directory).master_url}")


#: How to add the dashboard's web stack, said whenever it is missing.
DASHBOARD_INSTALL = "pip install 'criss[dashboard]'"


def _require_flask() -> None:
    """A missing Flask (or its Werkzeug) is a CLI error giving the install command."""
    try:
        import flask  # noqa: F401
        import werkzeug.serving  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(
            f"criss dashboard needs Flask, which is not installed ({exc}). Install it with:\n"
            f"  {DASHBOARD_INSTALL}"
        ) from exc


def _fail_on_mismatch(result: dict[str, Any]) -> None:
    comparison = result.get("comparison")
    if comparison and not comparison["checksums_match"]:
        raise click.ClickException(
            f"results differ between plain Spark and Criss at stream positions "
            f"{comparison['mismatched_positions']}: {json.dumps(comparison)}"
        )


if __name__ == "__main__":
    main()
