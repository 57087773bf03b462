"""Options and argument parsers the ``criss`` commands share (and the experiments' CLI)."""

from __future__ import annotations

import click

from criss.workload.benchmarks import BENCHMARKS
from criss.workload.idle import IDLE_WAIT_SECONDS


def parse_conf(pairs: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--conf")
        conf[key.strip()] = value.strip()
    return conf


def benchmark_option(help_text: str):
    return click.option(
        "--benchmark",
        type=click.Choice(BENCHMARKS),
        default="tpch",
        show_default=True,
        help=help_text,
    )


def idle_wait_option(func):
    """``--idle-wait SECONDS``, for every command that replays a stream."""
    return click.option(
        "--idle-wait",
        type=click.FloatRange(min=0),
        default=IDLE_WAIT_SECONDS,
        show_default=True,
        metavar="SECONDS",
        help="Before each timed statement wait, untimed, up to this long for the machine's "
        "CPUs to be idle (what the last statement's application still does would land in "
        "the next one's time); 0: do not wait.",
    )(func)


def parse_variants(specs: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``disk:media=disk,disk_capacity=1g`` → {"criss-disk": {"media": "disk", ...}}."""
    variants: dict[str, dict[str, str]] = {}
    for spec in specs:
        name, sep, settings = spec.partition(":")
        pairs = [p.partition("=") for p in settings.split(",") if p.strip()]
        if not sep or not name.strip() or any(not eq or not k.strip() for k, eq, _ in pairs):
            raise click.BadParameter(
                f"expected NAME:KEY=VALUE[,KEY=VALUE], got {spec!r}", param_hint="--variant"
            )
        variants[f"criss-{name.strip()}"] = {k.strip(): v.strip() for k, _, v in pairs}
    return variants


def parse_tables(pairs: tuple[str, ...]) -> dict[str, str]:
    views = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise click.BadParameter(f"expected NAME=PATH, got {pair!r}", param_hint="--table")
        views[name.strip()] = path.strip()
    return views
