"""Terminal output for long runs: a rich progress bar and summary tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


class ReplayProgress:
    """Progress of a replay: query i/N, elapsed time and the time saved so far."""

    def __init__(self, total: int, modes: tuple[str, ...], *, enabled: bool = True) -> None:
        self.modes = modes
        self.seconds = {m: 0.0 for m in modes}
        self.done = {m: 0 for m in modes}
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[saving]}"),
            console=Console(stderr=True),
            disable=not enabled,
            transient=False,
        )
        self._task = self._progress.add_task("replay", total=total, saving="")

    def __enter__(self) -> ReplayProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)

    def update(self, mode: str, record: dict[str, Any]) -> None:
        self.seconds[mode] += record["seconds"]
        self.done[mode] += 1
        position = min(self.done.values())
        self._progress.update(
            self._task,
            completed=position,
            description=f"{record['query']} {record['variant']}",
            saving=self._saving_text(),
        )

    def _saving_text(self) -> str:
        if len(self.modes) < 2:
            return f"{self.seconds[self.modes[0]]:.1f}s"
        n = min(self.done.values())
        if not n:
            return ""
        base, mine = self.seconds["spark"], self.seconds["criss"]
        return f"spark {base:.1f}s  criss {mine:.1f}s  saved {100 * (1 - mine / base):.0f}%"


def print_replay_summary(result: dict[str, Any], *, per_query: bool = True) -> None:
    console = Console()
    modes = result["modes"]
    if per_query:
        table = Table(title=f"{result['stream']} stream, SF{result['sf']:g}, seed {result['seed']}")
        table.add_column("#", justify="right")
        table.add_column("query")
        for mode in modes:
            table.add_column(f"{mode} s", justify="right")
        table.add_column("rows", justify="right")
        first = next(iter(modes.values()))["queries"]
        for i, rec in enumerate(first):
            cells = [f"{modes[m]['queries'][i]['seconds']:.2f}" for m in modes]
            name = rec["query"] + ("" if rec["variant"] == "orig" else f"-{rec['variant']}")
            table.add_row(str(rec["position"]), name, *cells, str(rec["rows"]))
        console.print(table)
    for mode, data in modes.items():
        console.print(
            f"[bold]{mode}[/bold] total {data['total_seconds']:.2f}s "
            f"over {len(data['queries'])} queries"
        )
    comparison = result.get("comparison")
    if comparison:
        console.print(
            f"criss vs spark: speedup {comparison['speedup']}x, "
            f"time saved {100 * comparison['time_saved_fraction']:.1f}%, "
            f"checksums match: {comparison['checksums_match']}"
        )
