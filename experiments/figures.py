"""The paper's evaluation (§3), one command per experiment, results and plots committed.

    python -m experiments.figures run fig5        # Criss vs plain Spark, result cache, oracle
    python -m experiments.figures run fig6        # storage media: hybrid / memory / disk
    python -m experiments.figures run fig10       # benefit model: Criss vs Recycler
    python -m experiments.figures run fig14       # reuse granularity: partition vs operator
    python -m experiments.figures run drift       # drift streams: Criss, result cache, oracle
    python -m experiments.figures run overhead    # no-repeat stream + planning overhead
    python -m experiments.figures run pressure    # fig10 + fig14 side by side in one run
    python -m experiments.figures plot            # redraw every PNG from the committed JSON

Each experiment is one or more side-by-side replays (``criss.workload.replay``): plain Spark
and every Criss configuration, each in a local Spark application of its own, alternating
query by query, after an untimed warm-up pass, with checksums compared query by query. The
JSON lands in ``experiments/results/<experiment>-<stream>-sf<SF>-<N>.json`` with a PNG next
to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from criss.cli_options import idle_wait_option
from criss.workload.idle import IDLE_WAIT_SECONDS
from experiments.summary import replica_views, statement_keys, summarize

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RESULTS = Path(__file__).resolve().parent / "results"

#: The paper's cache sizes scaled to SF1 (§3.2: 100 GB of data, 3 GB of memory for
#: Random-QS/Zipf-QS and 18 GB for Random-QS-v, and a cache too small for what the benefit
#: model selects on Random-QS-v). Criss writes 81-94 MB on Random-QS-v at SF1 (measured
#: 2026-11-23; 420 MB before results were kept small), so the tight cache holds half of it.
SMALL_MEMORY = "64m"
TIGHT_CACHE = {"memory_capacity": "16m", "disk_capacity": "24m"}


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    streams: tuple[str, ...]
    #: Criss configurations besides plain Spark: mode name → options.
    modes: dict[str, dict[str, Any]]
    labels: dict[str, str] = field(default_factory=dict)

    def variants(self) -> dict[str, dict[str, Any]]:
        return {m: o for m, o in self.modes.items() if m != "criss"}

    def label(self, mode: str) -> str:
        return self.labels.get(mode, mode)


EXPERIMENTS = {
    e.name: e
    for e in (
        Experiment(
            "fig5",
            "Criss vs plain Spark, an exact-result cache and the oracle",
            ("random", "zipf", "random-v"),
            {"criss": {}, "criss-results": {"reuse_scope": "results"}},
            {"spark": "plain Spark", "criss": "Criss", "criss-results": "result cache"},
        ),
        Experiment(
            "fig6",
            f"Storage media with a small memory quota ({SMALL_MEMORY})",
            ("random-v",),
            {
                "criss": {"memory_capacity": SMALL_MEMORY},
                "criss-memory": {"media": "memory", "memory_capacity": SMALL_MEMORY},
                "criss-disk": {"media": "disk"},
            },
            {
                "spark": "plain Spark",
                "criss": "hybrid",
                "criss-memory": "memory only",
                "criss-disk": "disk only",
            },
        ),
        Experiment(
            "fig10",
            "Benefit model: Criss vs Recycler, cache smaller than the working set",
            ("random-v",),
            {"criss": dict(TIGHT_CACHE), "criss-recycler": {**TIGHT_CACHE, "policy": "recycler"}},
            {"spark": "plain Spark", "criss": "Criss benefit", "criss-recycler": "Recycler"},
        ),
        Experiment(
            "fig14",
            "Reuse granularity: partition vs operator, cache smaller than the working set",
            ("random-v",),
            {
                "criss": dict(TIGHT_CACHE),
                "criss-operator": {**TIGHT_CACHE, "granularity": "operator"},
            },
            {"spark": "plain Spark", "criss": "partition", "criss-operator": "operator"},
        ),
        Experiment(
            "pressure",
            "Figs. 10 and 14 in one run: benefit model and granularity under a tight cache",
            ("random-v",),
            {
                "criss": dict(TIGHT_CACHE),
                "criss-recycler": {**TIGHT_CACHE, "policy": "recycler"},
                "criss-operator": {**TIGHT_CACHE, "granularity": "operator"},
            },
            {
                "spark": "plain Spark",
                "criss": "Criss (benefit, partition)",
                "criss-recycler": "Recycler",
                "criss-operator": "operator granularity",
            },
        ),
        Experiment(
            "drift",
            "Parameter drift: fresh qgen parameters each time, and a few hot ones",
            ("drift", "drift-hot"),
            {"criss": {}, "criss-results": {"reuse_scope": "results"}},
            {"spark": "plain Spark", "criss": "Criss", "criss-results": "result cache"},
        ),
        Experiment(
            "overhead",
            "Overhead on a stream without repeats",
            ("no-repeat",),
            {"criss": {}},
            {"spark": "plain Spark", "criss": "Criss"},
        ),
    )
}


def result_path(
    experiment: str, stream: str, sf: float, queries: int, out_dir: Path = RESULTS
) -> Path:
    return Path(out_dir) / f"{experiment}-{stream}-sf{sf:g}-{queries}.json"


# --- running -------------------------------------------------------------------------------------


def run_experiment(
    experiment: Experiment,
    *,
    sf: float,
    queries: int,
    seed: int,
    master: str = "local[2]",
    quiet: bool = False,
    out_dir: Path = RESULTS,
    spark: SparkSession | None = None,
    data_dir: Path | None = None,
    idle_wait: float = IDLE_WAIT_SECONDS,
) -> list[Path]:
    """Run ``experiment``'s replays; write JSON and PNG per stream; return the JSON paths.

    Without ``spark``, each mode runs in a local Spark application of its own, like the
    replay CLI's; with one, every mode runs on it.
    """
    from criss.console import ReplayProgress, print_replay_summary
    from criss.workload.replay import ReplayConfig, run_replay, write_results

    written = []
    for stream in experiment.streams:
        modes = ("spark", *experiment.modes)
        config = ReplayConfig(
            stream=stream,
            queries=queries,
            sf=sf,
            seed=seed,
            modes=modes,
            warmup=True,
            data_dir=data_dir,
            criss_options=experiment.modes.get("criss", {}),
            variants=experiment.variants(),
            isolation="session" if spark is not None else "application",
            master=master,
            spark_conf={"spark.sql.shuffle.partitions": "8"},
            idle_wait=idle_wait,
        )
        with ReplayProgress(queries, modes, enabled=not quiet) as progress:
            result = run_replay(spark, config, on_query=progress.update)
        result["experiment"] = experiment.name
        result["summary"] = summarize(result)
        out = write_results(result, result_path(experiment.name, stream, sf, queries, out_dir))
        print_replay_summary(result, per_query=False)
        plot_result(result, out.with_suffix(".png"))
        written.append(out)
        mismatched = [
            m for m, c in result.get("comparisons", {}).items() if not c["checksums_match"]
        ]
        if mismatched:
            raise click.ClickException(f"results differ from plain Spark in {mismatched}")
    return written


# --- plots ---------------------------------------------------------------------------------------


def plot_result(result: dict[str, Any], out: Path) -> Path:
    """Total time per mode (with the oracle) and cumulative time along the stream."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    experiment = EXPERIMENTS.get(result.get("experiment", ""), None)
    label = experiment.label if experiment else (lambda m: m)
    summary = result.get("summary") or summarize(result)
    modes = list(result["modes"])
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = [label(m) for m in modes]
    totals = [result["modes"][m]["total_seconds"] for m in modes]
    if summary.get("oracle_seconds") is not None and result.get("experiment") in ("fig5", "drift"):
        names.append("oracle")
        totals.append(summary["oracle_seconds"])
    drawn = bars.bar(names, totals, color=["#999999"] + ["#3a7dc9"] * (len(totals) - 1))
    plain = summary["plain_seconds"]
    for rect, total in zip(drawn, totals, strict=True):
        saved = 1 - total / plain if plain else 0.0
        note = (
            ""
            if rect is drawn[0]
            else f"\n{saved:.0%} saved"
            if saved >= 0
            else f"\n{-saved:.0%} slower"
        )
        bars.annotate(
            f"{total:.0f} s{note}",
            (rect.get_x() + rect.get_width() / 2, rect.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    bars.set_ylim(0, max(totals) * 1.18)
    bars.set_ylabel("total seconds (lower is better)")
    bars.set_title(f"{result['stream']} - SF{result['sf']:g}, {result['queries']} queries")
    for mode in modes:
        running, acc = [], 0.0
        for q in result["modes"][mode]["queries"]:
            acc += q["seconds"]
            running.append(acc)
        lines.plot(range(1, len(running) + 1), running, label=label(mode))
    lines.set_xlabel("query position")
    lines.set_ylabel("cumulative seconds")
    lines.legend()
    title = experiment.title if experiment else result.get("experiment", "replay")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


# --- command line --------------------------------------------------------------------------------


@click.group()
def main() -> None:
    """Run the paper's experiments and redraw their plots."""


@main.command("run")
@click.argument("name", type=click.Choice(sorted(EXPERIMENTS)))
@click.option("--sf", type=float, default=1.0, show_default=True, help="TPC-H scale factor.")
@click.option("--queries", type=int, default=100, show_default=True, help="Stream length.")
@click.option("--seed", type=int, default=42, show_default=True, help="Stream seed.")
@click.option("--master", default="local[2]", show_default=True, help="Spark master.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@idle_wait_option
@click.option(
    "--out-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=RESULTS,
    show_default="experiments/results",
    help="Where the JSON and PNG go.",
)
@click.option(
    "--stream",
    "streams",
    multiple=True,
    help="Run only these of the experiment's streams (repeatable); default: all of them.",
)
def run(
    name: str,
    sf: float,
    queries: int,
    seed: int,
    master: str,
    quiet: bool,
    idle_wait: float,
    out_dir: Path,
    streams: tuple[str, ...],
) -> None:
    """Run experiment NAME; write its JSON and PNG (default under experiments/results/)."""
    experiment = EXPERIMENTS[name]
    unknown = set(streams) - set(experiment.streams)
    if unknown:
        raise click.BadParameter(
            f"{name} runs {', '.join(experiment.streams)}, not {', '.join(sorted(unknown))}",
            param_hint="--stream",
        )
    if streams:
        experiment = replace(experiment, streams=tuple(streams))
    for path in run_experiment(
        experiment,
        sf=sf,
        queries=queries,
        seed=seed,
        master=master,
        quiet=quiet,
        out_dir=out_dir,
        idle_wait=idle_wait,
    ):
        click.echo(f"wrote {path} and {path.with_suffix('.png').name}")


@main.command("plot")
def plot() -> None:
    """Redraw the PNG of every committed experiment result."""
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        if result.get("experiment") in EXPERIMENTS:
            result["summary"] = summarize(result)
            click.echo(f"drew {plot_result(result, path.with_suffix('.png'))}")


@main.command("profile")
@click.argument("result_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", default="criss", show_default=True, help="Criss mode to profile.")
def profile(result_file: Path, mode: str) -> None:
    """Where a Criss mode's time goes on first occurrences (vs plain Spark) and on repeats."""
    result = json.loads(result_file.read_text())
    click.echo(profile_text(result, mode))


def profile_text(result: dict[str, Any], mode: str = "criss") -> str:
    plain, mine = result["modes"]["spark"]["queries"], result["modes"][mode]["queries"]
    seen: set[str] = set()
    lines = [f"{'query':<10}{'plain s':>9}{'Criss s':>9}{'plan s':>8}{'mat s':>8}  cached  written"]
    totals = {"first": [0.0, 0.0, 0.0, 0.0], "repeat": [0.0, 0.0, 0.0, 0.0]}
    for key, a, b in zip(statement_keys(result), plain, mine, strict=True):
        kind = "repeat" if key in seen else "first"
        seen.add(key)
        info = b.get("criss") or {}
        row = [
            a["seconds"],
            b["seconds"],
            info.get("planning_seconds") or 0.0,
            info.get("materialize_seconds") or 0.0,
        ]
        totals[kind] = [t + v for t, v in zip(totals[kind], row, strict=True)]
        if kind == "first":
            name = a["query"] + ("" if a["variant"] == "orig" else "-" + a["variant"])
            lines.append(
                f"{name:<10}{row[0]:>9.2f}{row[1]:>9.2f}{row[2]:>8.2f}{row[3]:>8.2f}"
                f"  {info.get('operators_cached', 0):>6}  {info.get('bytes_written', 0) or 0:>9}"
            )
    for kind, (p, c, pl, ma) in totals.items():
        lines.append(
            f"{kind + ' (all)':<10}{p:>9.1f}{c:>9.1f}{pl:>8.1f}{ma:>8.1f}"
            f"  ratio {c / p if p else float('nan'):.2f}"
        )
    return "\n".join(lines)


@main.command("seeds")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", default="criss", show_default=True, help="Criss mode to report.")
def seeds(files: tuple[Path, ...], mode: str) -> None:
    """One markdown row per replay (stream, seed): time saved, share of the oracle and
    first occurrences against plain Spark, to quote the worst seed of each stream. A replay
    with several applications per mode (``--replicas``) has a row per pair of them and one
    for their mean."""
    click.echo(
        "| stream | SF | queries | seed | plain (s) | Criss (s) | saved | oracle saved "
        "| share of oracle | first occurrences Criss / plain "
        f"| repeats served (plain >= {SERVED_MIN_SECONDS} s) | after actions (s) | file |"
    )
    click.echo("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in files:
        for label, result in replica_views(json.loads(path.read_text()), mode):
            name = f"{path.name} ({label})" if label else path.name
            click.echo(_seed_row(result, mode, name))


def _seed_row(result: dict[str, Any], mode: str, name: str) -> str:
    summary = summarize(result)
    row, plain = summary["modes"][mode], summary["modes"]["spark"]
    served, repeats = repeats_served(result, mode)
    return (
        f"| {result['stream']} | {result['sf']:g} | {result['queries']} | {result['seed']} "
        f"| {plain['total_seconds']:.1f} | {row['total_seconds']:.1f} "
        f"| {row['time_saved']:.1%} | {summary.get('oracle_time_saved', 0):.1%} "
        f"| {row.get('oracle_share', '')} "
        f"| {row['first_seconds'] / plain['first_seconds']:.3f} "
        f"| {served}/{repeats} | {row.get('background_seconds') or 0:.1f} | `{name}` |"
    )


#: A repeat "worth serving" took at least this long in plain Spark (issue 22's target).
SERVED_MIN_SECONDS = 0.3


def repeats_served(
    result: dict[str, Any], mode: str = "criss", min_seconds: float = SERVED_MIN_SECONDS
) -> tuple[int, int]:
    """(served, worth serving): repeated statements that took ``min_seconds`` or more in
    plain Spark, and how many of them ``mode`` served from the cache (reused an operator).
    A statement plain Spark rejects (TPC-DS q12's division by zero at SF 0.01, under ANSI
    mode) has no result to serve: it is not counted."""
    plain, mine = result["modes"]["spark"]["queries"], result["modes"][mode]["queries"]
    seen: set[str] = set()
    served = worth = 0
    for key, a, b in zip(statement_keys(result), plain, mine, strict=True):
        repeat = key in seen
        seen.add(key)
        if repeat and a["seconds"] >= min_seconds and not a.get("error"):
            worth += 1
            served += bool((b.get("criss") or {}).get("operators_reused"))
    return served, worth


@main.command("table")
def table() -> None:
    """Print the markdown tables of every committed experiment result (for RESULTS.md)."""
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        experiment = EXPERIMENTS.get(result.get("experiment", ""))
        if experiment is None:
            continue
        click.echo(markdown_table(result, experiment, path.name))


def markdown_table(result: dict[str, Any], experiment: Experiment, filename: str) -> str:
    summary = summarize(result)
    lines = [
        f"**{experiment.name}** - {experiment.title}; stream {result['stream']}, "
        f"SF{result['sf']:g}, {result['queries']} queries, seed {result['seed']} "
        f"(`results/{filename}`, {result['created'][:10]})",
        "",
        "| mode | total (s) | speed-up | time saved | first occurrences (s) | repeats (s) "
        "| share of oracle | planning median / p95 (ms) | written (MB) | checksums |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, row in summary["modes"].items():
        planning = row.get("planning_ms")
        written = row.get("bytes_written")
        cells = [
            experiment.label(mode),
            f"{row['total_seconds']:.1f}",
            f"{row['speedup']:.2f}x",
            f"{row['time_saved']:.1%}",
            f"{row['first_seconds']:.1f}",
            f"{row['repeat_seconds']:.1f}",
            str(row.get("oracle_share", "")),
            f"{planning['median']:.0f} / {planning['p95']:.0f}" if planning else "",
            f"{written / 1e6:.0f}" if written is not None else "",
            "" if mode == "spark" else "equal" if row.get("checksums_match") else "DIFFER",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if summary.get("oracle_seconds") is not None:
        lines.append(
            f"| oracle | {summary['oracle_seconds']:.1f} | "
            f"{summary['plain_seconds'] / summary['oracle_seconds']:.2f}x "
            f"| {summary['oracle_time_saved']:.1%} | | | 1 | | | |"
        )
    kinds = {m: r["reuse_kinds"] for m, r in summary["modes"].items() if r.get("reuse_kinds")}
    if kinds:
        names = list(next(iter(kinds.values())))
        lines += ["", "| reuse kind | " + " | ".join(names) + " |"]
        lines.append("|---" * (len(names) + 1) + "|")
        for mode, counts in kinds.items():
            cells = [experiment.label(mode), *(str(counts[n]) for n in names)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
