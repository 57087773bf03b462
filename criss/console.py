"""Terminal output for long runs: a rich progress bar and summary tables."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table


def statement_name(record: dict[str, Any]) -> str:
    """``Q3`` for an original TPC-H statement, ``Q3-v60`` for a variant."""
    variant = record.get("variant")
    return record["query"] + ("" if variant in (None, "orig") else f"-{variant}")


class ReplayProgress:
    """Progress of a replay: query i/N, elapsed time and the time saved so far.

    While it runs, the slow phases' INFO lines (``criss.progress`` logger: data generation,
    warm-up, the once-per-home bandwidth measurement) are printed above the bar, and the
    untimed warm-up has a bar of its own.
    """

    def __init__(self, total: int, modes: tuple[str, ...], *, enabled: bool = True) -> None:
        self.modes = modes
        self.seconds = {m: 0.0 for m in modes}
        self.done = {m: 0 for m in modes}
        self.console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[saving]}"),
            console=self.console,
            disable=not enabled,
            transient=False,
        )
        self._total = total
        self._task: TaskID | None = None
        self._warmup: TaskID | None = None
        self._log = PhaseLog(self.console) if enabled else None

    def __enter__(self) -> ReplayProgress:
        self._progress.__enter__()
        if self._log:
            self._log.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._log:
            self._log.__exit__(*exc)
        self._progress.__exit__(*exc)

    def warmup(self, done: int, total: int) -> None:
        """One more untimed warm-up statement has run (``run_replay``'s ``on_warmup``)."""
        if self._warmup is None:
            self._warmup = self._progress.add_task(
                "warm-up (plain Spark, untimed)", total=total, saving=""
            )
        self._progress.update(self._warmup, completed=done)

    def update(self, mode: str, record: dict[str, Any]) -> None:
        if self._task is None:
            self._task = self._progress.add_task("replay", total=self._total, saving="")
        self.seconds[mode] += record["seconds"]
        self.done[mode] += 1
        position = min(self.done.values())
        self._progress.update(
            self._task,
            completed=position,
            description=f"replay {statement_name(record)}",
            saving=self._saving_text(),
        )

    def _saving_text(self) -> str:
        if len(self.modes) < 2:
            return f"{self.seconds[self.modes[0]]:.1f}s"
        n = min(self.done.values())
        if not n:
            return ""
        other = next((m for m in self.modes if m != "spark"), None)
        if "spark" not in self.seconds or other is None:
            return "  ".join(f"{m} {s:.1f}s" for m, s in self.seconds.items())
        base, mine = self.seconds["spark"], self.seconds[other]
        saved = f"  saved {100 * (1 - mine / base):.0f}%" if base else ""
        return f"spark {base:.1f}s  {other} {mine:.1f}s{saved}"


class PhaseLog:
    """Show the ``criss.progress`` logger's INFO lines on ``console`` while in use."""

    def __init__(self, console: Console) -> None:
        self.handler = RichHandler(
            console=console, show_time=False, show_path=False, show_level=False
        )
        self.logger = logging.getLogger("criss.progress")
        self._level = self.logger.level

    def __enter__(self) -> PhaseLog:
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self._level)


def phase_log() -> PhaseLog | contextlib.nullcontext:
    """The slow phases' lines on stderr when a person watches it (a terminal), for
    commands without a progress bar; nothing when stderr is piped or captured."""
    console = Console(stderr=True)
    return PhaseLog(console) if console.is_terminal else contextlib.nullcontext()


def reuse_summary(summary: dict[str, Any] | None) -> str:
    """What Criss did for one statement, from ``last_query_summary()``: e.g.
    ``reused 2 (8/8 partitions, project-subset) · cached 1``, ``fallback: <why>``, ``-``."""
    if not summary:
        return "-"
    if summary.get("fallback"):
        return f"fallback: {summary['fallback']}"
    parts = []
    reused = summary.get("operators_reused", 0)
    if reused:
        how = []
        recomputed = summary.get("partitions_recomputed", 0)
        hits = summary.get("partitions_reused", 0)
        if hits or recomputed:
            how.append(f"{hits}/{hits + recomputed} partitions")
        how += sorted(
            k.removeprefix("rewrites_").replace("_", "-")
            for k, v in summary.items()
            if k.startswith("rewrites_") and v
        )
        parts.append(f"reused {reused}" + (f" ({', '.join(how)})" if how else ""))
    if summary.get("operators_cached"):
        parts.append(f"cached {summary['operators_cached']}")
    joins = sorted(
        k.removeprefix("joins_").replace("_", "-")
        for k, v in summary.items()
        if k.startswith("joins_") and v
    )
    if joins:
        parts.append("join " + ", ".join(joins))
    if parts:
        return " · ".join(parts)
    seen, matched = summary.get("operators_seen", 0), summary.get("operators_matched", 0)
    return f"nothing ({matched}/{seen} operators seen before)" if seen else "nothing"


def print_replay_summary(result: dict[str, Any], *, per_query: bool = True) -> None:
    console = _wide_console()
    modes = result["modes"]
    if per_query:
        console.print(_per_query_table(result))
    for mode, data in modes.items():
        console.print(
            f"[bold]{mode}[/bold] total {data['total_seconds']:.2f}s "
            f"over {len(data['queries'])} queries"
        )
    for mode, comparison in (result.get("comparisons") or {}).items():
        console.print(
            f"{mode} vs spark: speedup {comparison['speedup']}x, "
            f"time saved {100 * comparison['time_saved_fraction']:.1f}%, "
            f"checksums match: {comparison['checksums_match']}"
        )


def _per_query_table(result: dict[str, Any]) -> Table:
    """One row per statement: its time in every mode and what each Criss mode did with it."""
    from criss.workload.replay import is_plain

    modes = result["modes"]
    criss_modes = [m for m in modes if not is_plain(m)]
    table = Table(title=f"{result['stream']} stream, SF{result['sf']:g}, seed {result['seed']}")
    table.add_column("#", justify="right")
    table.add_column("query")
    for mode in modes:
        table.add_column(f"{mode} s", justify="right")
    table.add_column("rows", justify="right")
    for mode in criss_modes:
        table.add_column(f"{mode}: reused / cached (operators)")
    first = next(iter(modes.values()))["queries"]
    for i, rec in enumerate(first):
        cells = [f"{modes[m]['queries'][i]['seconds']:.2f}" for m in modes]
        what = [reuse_summary(modes[m]["queries"][i].get("criss")) for m in criss_modes]
        table.add_row(str(rec["position"]), statement_name(rec), *cells, str(rec["rows"]), *what)
    return table


def print_next_steps(homes: dict[str, str], results_dir: str | None) -> None:
    """After a replay: where its cache is kept and the commands that look inside it."""
    if not homes:
        return
    console = Console()
    home = homes.get("criss") or next(iter(homes.values()))
    results = f" --results {results_dir}" if results_dir else ""
    criss = _command()
    lines = [
        f"\nCriss kept its cache in {home}. Look inside it with:",
        f"  {criss} ls --home {home}",
        f"  {criss} stats --home {home}",
        f"  {criss} dashboard --home {home}{results}",
    ]
    if importlib.util.find_spec("flask") is None:
        lines.append("(the dashboard needs Flask: pip install 'criss[dashboard]')")
    for line in lines:  # commands to copy: no markup, never wrapped
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _command() -> str:
    """How to call this ``criss``: its name when it is the one on PATH, else its path (the
    demo runs ``.venv/bin/criss`` without activating the virtual environment)."""
    running = Path(sys.argv[0])
    on_path = shutil.which("criss")
    if running.name != "criss" or (on_path and Path(on_path).resolve() == running.resolve()):
        return "criss"
    try:
        return str(running.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(running.resolve())


def human_bytes(value: float | None) -> str:
    """``1536`` → ``1.5 KiB``; None → a dash."""
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


#: Longest partition strip printed in full; longer ones are cut with "…".
STRIP_WIDTH = 24


def _wide_console() -> Console:
    """A console that does not squeeze tables to 80 columns when output is piped."""
    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 120)
    return console


def print_entries(entries: list[dict[str, Any]]) -> None:
    """The ``criss ls`` table: one cached entry per row, highest benefit first."""
    console = _wide_console()
    if not entries:
        console.print("no cached entries")
        return
    table = Table(title=f"{len(entries)} cached entries, highest benefit first", box=box.SIMPLE)
    table.add_column("entry", no_wrap=True, min_width=12)
    table.add_column("operator", no_wrap=True)
    table.add_column("partitions", no_wrap=True)
    for name in ("reusable", "size", "rows", "Texec", "ref", "benefit"):
        table.add_column(name, justify="right", no_wrap=True)
    for e in entries:
        strip = e["strip"] if len(e["strip"]) <= STRIP_WIDTH else e["strip"][:STRIP_WIDTH] + "…"
        table.add_row(
            e["key"][:12],
            e["label"],
            strip or "-",
            f"{e['reusable']}/{e['num_partitions']}",
            human_bytes(e["bytes"]),
            str(e["rows"]),
            f"{e['texec']:.2f}s" if e["texec"] is not None else "—",
            str(e["ref"]),
            f"{e['benefit']:.4g}",
        )
    console.print(table)
    console.print("partitions: M memory  A Alluxio  D disk  0 empty (no rows)  . missing")


def print_overview(overview: dict[str, Any]) -> None:
    """The ``criss stats`` tables: tiers, cache contents, query-log counters, time."""
    console = _wide_console()
    tiers = Table(title=f"Criss home {overview['home']}")
    for name in ("tier", "partitions", "used", "capacity", "bandwidth"):
        tiers.add_column(name, justify="left" if name == "tier" else "right")
    for t in overview["tiers"]:
        tiers.add_row(
            t["name"],
            str(t["partitions"]),
            human_bytes(t["used_bytes"]),
            human_bytes(t["capacity_bytes"]) if t["capacity_bytes"] else "unknown",
            f"{human_bytes(t['bandwidth'])}/s" if t["bandwidth"] else "not measured",
        )
    console.print(tiers)
    q, c, t = overview["queries"], overview["queries"]["counters"], overview["time"]
    ratio = q["partition_hit_ratio"]
    facts = Table(show_header=False, box=None)
    facts.add_column(justify="left")
    facts.add_column(justify="right")
    for label, value in (
        ("cached entries", overview["entries"]),
        ("partitions reusable", f"{overview['reusable_partitions']}/{overview['partitions']}"),
        ("partitions missing", overview["missing_partitions"]),
        ("QTree operators", overview["qtree"]["operators"]),
        ("queries in the log", q["seen"]),
        ("operators reused / seen", f"{c['operators_reused']}/{c['operators_seen']}"),
        ("operators cached", c["operators_cached"]),
        ("partitions reused (hits)", c["partitions_reused"]),
        ("partitions recomputed (misses)", c["partitions_recomputed"]),
        ("partition hit ratio", "—" if ratio is None else f"{100 * ratio:.1f} %"),
        ("fallbacks to plain Spark", q["fallbacks"]),
        ("Texec saved by reuse", f"{t['texec_saved_seconds']:.2f} s"),
        ("spent storing results", f"{t['storing_seconds']:.2f} s"),
        ("spent planning", f"{t['planning_seconds']:.2f} s"),
    ):
        facts.add_row(label, str(value))
    console.print(facts)
    console.print(f"[dim]Texec saved = {t['formula']}.[/dim]")
