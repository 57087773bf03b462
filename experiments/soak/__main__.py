"""``python -m experiments.soak``: see the package's docstring."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from experiments.soak import __doc__ as SOAK_DOC
from experiments.soak.application import Application
from experiments.soak.faults import Injector
from experiments.soak.work import APP_OPTIONS, APPS, FAULT_KINDS, Work, tier_bytes, tree_bytes

RESULTS = Path(__file__).resolve().parents[1] / "results" / "issue21"
#: Seconds after which a fault that found nothing to hit is tried again.
RETRY_SECONDS = 3.0
#: The most seconds a soak runs past ``--minutes`` to complete ``--min-statements``.
MAX_EXTRA_SECONDS = 600


class Soak:
    def __init__(self, args: argparse.Namespace):
        from criss.config import parse_bytes
        from criss.workload.tpch.data import TABLES, ensure_tpch

        self.args = args
        self.work = Work(Path(args.work))
        if self.work.root.exists():
            shutil.rmtree(self.work.root)
        shutil.rmtree(self.work.memory, ignore_errors=True)
        for folder in (self.work.data, self.work.control, self.work.events):
            folder.mkdir(parents=True)
        self.source = ensure_tpch(args.sf, quiet=True)
        for table in TABLES:
            (self.work.data / table).mkdir()
            shutil.copy(self.source / f"{table}.parquet", self.work.data / table / "part-0.parquet")
        (self.work.data / "VERSION").write_text("0")
        self.capacity = {
            "memory": parse_bytes(args.memory_capacity),
            "disk": parse_bytes(args.disk_capacity),
        }
        self.procs: dict[str, subprocess.Popen] = {}
        self.incarnations: Counter = Counter()
        self.samples: list[dict] = []
        self.excursion = {name: {"max_over_bytes": 0, "largest_file": 0} for name in self.capacity}
        self._sampling = threading.Event()

    def start(self, app: str) -> None:
        self.incarnations[app] += 1
        incarnation = self.incarnations[app]
        log = open(self.work.events / f"{app}.{incarnation}.log", "wb")  # noqa: SIM115
        command = [sys.executable, "-m", "experiments.soak", "--worker", app]
        command += ["--incarnation", str(incarnation), *self.args.argv]
        self.procs[app] = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # kill -9 reaches the JVM too
            cwd=Path(__file__).resolve().parents[2],
        )
        log.close()

    def sample(self, started: float) -> None:
        while not self._sampling.wait(1.0):
            for name, root in self.work.tier_roots().items():
                stored, largest = tier_bytes(root)
                limit = self.capacity[name]
                seen = self.excursion[name]
                seen["largest_file"] = max(seen["largest_file"], largest)
                if limit is not None:
                    seen["max_over_bytes"] = max(seen["max_over_bytes"], stored - limit)
            if not self.samples or time.monotonic() - self.samples[-1]["_at"] >= 15:
                self.samples.append(
                    {
                        "_at": time.monotonic(),
                        "minute": round((time.monotonic() - started) / 60, 2),
                        "home_bytes": tree_bytes(self.work.home),
                        "memory_tier_bytes": tree_bytes(self.work.memory),
                        "catalog_db_bytes": sum(
                            p.stat().st_size for p in self.work.home.glob("catalog.db*")
                        ),
                        "cache_db_bytes": sum(
                            p.stat().st_size for p in self.work.home.glob("cache.db*")
                        ),
                    }
                )

    def schedule(self, seconds: float, rng: random.Random) -> list[tuple[float, str]]:
        """When each fault lands: every kind ``per_kind`` times, in a seeded order."""
        kinds = [k for k in FAULT_KINDS for _ in range(self.args.per_kind)]
        rng.shuffle(kinds)
        gap = seconds / (len(kinds) + 1)
        return [(gap * (i + 1) + rng.uniform(-gap / 3, gap / 3), k) for i, k in enumerate(kinds)]

    def run(self) -> dict:
        rng = random.Random(self.args.seed)
        injector = Injector(self.work, rng, self.source)
        try:
            return self._run(rng, injector)
        finally:
            for proc in self.procs.values():  # whatever happened, no application outlives it
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
            shutil.rmtree(self.work.memory, ignore_errors=True)

    def _run(self, rng: random.Random, injector: Injector) -> dict:
        for app in APPS:
            self.start(app)
        self._wait_ready()
        started = time.monotonic()
        sampler = threading.Thread(target=self.sample, args=(started,), daemon=True)
        sampler.start()
        seconds = self.args.minutes * 60
        pending = self.schedule(seconds, rng)
        while pending:
            at, kind = pending.pop(0)
            while time.monotonic() - started < at:
                self._restart_exited()
                time.sleep(0.2)
            if not injector.inject(kind, self):
                # nothing to hit yet (no cached file at that moment): a fault that never
                # lands tests nothing, so the kind is tried again until the soak ends
                retry = time.monotonic() - started + RETRY_SECONDS
                if retry < seconds:
                    pending.append((retry, kind))
                    pending.sort()
            self._progress(started, injector)
        while time.monotonic() - started < seconds or self._short_of_statements(started):
            self._restart_exited()
            time.sleep(0.5)
        (self.work.control / "stop").touch()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=300)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self._sampling.set()
        sampler.join()
        return self.report(injector, time.monotonic() - started)

    def _short_of_statements(self, started: float) -> bool:
        """Fewer than ``--min-statements`` done (a loaded machine runs fewer per minute),
        and the soak is not yet ``MAX_EXTRA_SECONDS`` past its minutes."""
        overtime = time.monotonic() - started - self.args.minutes * 60
        if not self.args.min_statements or overtime > MAX_EXTRA_SECONDS:
            return False
        return sum(1 for _ in self._events()) < self.args.min_statements

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 300
        while not all((self.work.control / f"{a}.ready").exists() for a in APPS):
            self._restart_exited()
            if time.monotonic() > deadline:
                raise SystemExit("the soak applications did not start within 300 s")
            time.sleep(0.5)

    def _restart_exited(self) -> None:
        """An application that died on its own is an error of the soak; start it again."""
        for app, proc in self.procs.items():
            if proc.poll() is not None and not self.work.stopping():
                self.incarnations[f"{app}_died"] += 1
                self.start(app)

    def _progress(self, started: float, injector: Injector) -> None:
        done = sum(1 for _ in self._events())
        minute = (time.monotonic() - started) / 60
        faults = sum(injector.faults.values())
        print(f"[soak] {minute:5.1f} min: {done} statements, {faults} faults", flush=True)

    def _events(self) -> Iterator[dict]:
        for path in sorted(self.work.events.glob("*.jsonl")):
            with open(path) as handle:
                for line in handle:
                    if line.endswith("\n"):  # a line a kill cut short is not an event
                        yield json.loads(line)

    def report(self, injector: Injector, seconds: float) -> dict:
        events = list(self._events())
        errors = [e for e in events if "error" in e and "plain_error" not in e]
        wrong = [e for e in events if "wrong" in e]
        counters: Counter = Counter()
        faults_seen: Counter = Counter()
        for path in self.work.events.glob("*.counters.json"):
            state = json.loads(path.read_text())
            counters.update(state["counters"])
            faults_seen.update(state["faults"])
        return {
            "issue": 21,
            "experiment": "soak",
            "date": dt.date.today().isoformat(),
            "seed": self.args.seed,
            "sf": self.args.sf,
            "minutes": round(seconds / 60, 2),
            "applications": len(APPS),
            "threads_per_application": self.args.threads,
            "application_options": APP_OPTIONS,
            "capacities": self.capacity,
            "statements": len(events),
            "statements_by_kind": dict(Counter(e["kind"] for e in events)),
            "wrong_rows": len(wrong),
            "errors": len(errors),
            "plain_spark_errors_too": sum(1 for e in events if "plain_error" in e),
            "fallbacks": sum(1 for e in events if e.get("fallback")),
            "fallbacks_at_execution": counters["fallbacks_at_execution"],
            "statements_reusing": sum(1 for e in events if e.get("reused")),
            "faults_injected": dict(injector.faults),
            "fault_notes": dict(injector.notes),
            "data_versions": self.work.data_version(),
            "incarnations": dict(self.incarnations),
            "partitions_recomputed": counters["partitions_recomputed"],
            "partitions_reused": counters["partitions_reused"],
            "damage_found": dict(faults_seen),
            "counters": dict(counters),
            "quota": self.excursion,
            "home_over_time": [{k: v for k, v in s.items() if k != "_at"} for s in self.samples],
            "wrong_examples": wrong[:10],
            "error_examples": errors[:10],
        }


def summary(report: dict) -> str:
    lines = [
        f"soak: {report['minutes']} min, seed {report['seed']}, SF {report['sf']}: "
        f"{report['statements']} statements {report['statements_by_kind']}",
        f"  wrong rows {report['wrong_rows']}, errors {report['errors']}, "
        f"fallbacks {report['fallbacks']} (at execution {report['fallbacks_at_execution']}), "
        f"reusing {report['statements_reusing']}",
        f"  faults {report['faults_injected']}",
        f"  recomputed partitions {report['partitions_recomputed']}, "
        f"damage found {report['damage_found']}",
        f"  quota {report['quota']} (capacities {report['capacities']})",
        f"  restarts {report['incarnations']}",
    ]
    if report["home_over_time"]:
        last = report["home_over_time"][-1]
        lines.append(f"  home at the end {last}")
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=SOAK_DOC.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--min-statements",
        type=int,
        default=0,
        help="run past --minutes (at most 10 more) until this many statements are done",
    )
    parser.add_argument("--sf", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=3, help="per application")
    parser.add_argument("--pool", type=int, default=3, help="qgen parameter seeds per query")
    parser.add_argument(
        "--queries", default=None, help="TPC-H query numbers to draw from (default: all 22)"
    )
    parser.add_argument("--per-kind", type=int, default=None, help="faults of each kind")
    parser.add_argument("--memory-capacity", default="2m")
    parser.add_argument("--disk-capacity", default="8m")
    parser.add_argument(
        "--work", default=None, help="work directory (default: /tmp/criss-soak-SEED)"
    )
    parser.add_argument("--out", default=None, help="report JSON (default: results/issue21/)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--incarnation", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from criss.workload.tpch.queries import QUERY_IDS

    args.queries = tuple(int(q) for q in args.queries.split(",")) if args.queries else QUERY_IDS
    args.work = args.work or f"/tmp/criss-soak-{args.seed}"
    if args.per_kind is None:  # one fault every ~15 s, at least 3 of each kind
        args.per_kind = max(3, round(args.minutes * 60 / 15 / len(FAULT_KINDS)))
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.worker:
        Application(Work(Path(args.work)), args.worker, args.incarnation, args).run()
        return 0
    args.argv = [*argv, "--work", args.work]  # what each application is started with
    soak = Soak(args)
    report = soak.run()
    out = Path(args.out) if args.out else RESULTS / f"soak-{args.minutes:g}min-seed{args.seed}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(summary(report))
    print(f"report: {out}")
    return 1 if report["wrong_rows"] or report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
