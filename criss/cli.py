"""The ``criss`` command: thin click commands over the library."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import click

from criss.errors import CrissError

STREAM_CHOICES = ("random", "zipf", "random-v", "no-repeat")


def _library_errors(func):
    """Turn Criss's own errors into clean CLI errors instead of tracebacks."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except CrissError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _parse_conf(pairs: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--conf")
        conf[key.strip()] = value.strip()
    return conf


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="criss")
def main() -> None:
    """Criss: automatic reuse of intermediate results for Spark SQL."""


@main.command()
@click.option("--sf", type=float, default=1.0, show_default=True, help="TPC-H scale factor.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the Parquet files go [default: ./data/tpch/sf<SF>].",
)
@_library_errors
def datagen(sf: float, data_dir: Path | None) -> None:
    """Generate TPC-H Parquet data with tpchgen-cli (reused when already complete)."""
    from experiments.tpch.data import ensure_tpch

    click.echo(ensure_tpch(sf, data_dir))


@main.command()
@click.option(
    "--stream",
    type=click.Choice(STREAM_CHOICES),
    default="zipf",
    show_default=True,
    help="Which seeded TPC-H query stream to replay.",
)
@click.option(
    "--queries",
    "n_queries",
    type=click.IntRange(1),
    default=100,
    show_default=True,
    help="Number of queries in the stream.",
)
@click.option("--sf", type=float, default=1.0, show_default=True, help="TPC-H scale factor.")
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
    help="Criss home (catalog and cache) [default: a fresh temporary directory].",
)
@click.option(
    "--warm", is_flag=True, help="Keep what --home already caches instead of clearing it."
)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="TPC-H data directory [default: ./data/tpch/sf<SF>].",
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
@click.option("--quiet", is_flag=True, help="No progress bar or per-query table.")
@_library_errors
def replay(
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
    quiet: bool,
) -> None:
    """Replay a TPC-H query stream and report per-query times, totals and the ratio."""
    from criss.console import ReplayProgress, print_replay_summary
    from criss.sparksession import local_spark
    from experiments.replay import ReplayConfig, run_replay, write_results

    modes = ("spark", "criss") if mode == "both" else (mode,)
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
    )
    spark = local_spark("criss-replay", master=master, conf=_parse_conf(conf_pairs))
    with ReplayProgress(n_queries, modes, enabled=not quiet) as progress:
        result = run_replay(spark, config, on_query=progress.update)
    if out:
        write_results(result, out)
    print_replay_summary(result, per_query=not quiet)
    if out:
        click.echo(f"results written to {out}")
    _fail_on_mismatch(result)


def _fail_on_mismatch(result: dict[str, Any]) -> None:
    comparison = result.get("comparison")
    if comparison and not comparison["checksums_match"]:
        raise click.ClickException(
            f"results differ between plain Spark and Criss at stream positions "
            f"{comparison['mismatched_positions']}: {json.dumps(comparison)}"
        )


if __name__ == "__main__":
    main()
