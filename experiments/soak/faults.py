"""The soak's fault injector: damaged cache files, changed inputs, full tiers, held
locks, killed applications."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.soak.work import APPS, MAX_APPENDS, TIER_TEMP, Work, data_lock, partition_files


def plain_strings(table):
    """``table`` with tpchgen's string_view columns as strings (``take`` needs them)."""
    import pyarrow as pa

    schema = pa.schema(
        f.with_type(pa.string()) if f.type == pa.string_view() else f for f in table.schema
    )
    return table.cast(schema)


@dataclass
class Injector:
    work: Work
    rng: random.Random
    source: Path
    faults: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)

    def inject(self, kind: str, soak: Any) -> bool:
        """Inject one fault of ``kind``; False when it found nothing to hit (no cached
        file yet, say): the soak tries that kind again later."""
        done = getattr(self, f"_{kind}")(soak)
        if done:
            self.faults[kind] += 1
        else:
            self.notes[f"{kind}_skipped"] += 1
        return done

    def _victim(self) -> Path | None:
        files = partition_files(self.work)
        return self.rng.choice(files) if files else None

    def _delete(self, soak: Any) -> bool:
        victim = self._victim()
        if victim is None:
            return False
        victim.unlink(missing_ok=True)
        return True

    def _truncate(self, soak: Any) -> bool:
        victim = self._victim()
        if victim is None:
            return False
        try:
            os.truncate(victim, victim.stat().st_size // 2)
        except OSError:
            return False
        return True

    def _corrupt(self, soak: Any) -> bool:
        victim = self._victim()
        if victim is None:
            return False
        try:
            size = victim.stat().st_size
            with open(victim, "r+b") as handle:  # in place: same size, new bytes
                handle.seek(self.rng.randrange(max(size - 64, 1)))
                handle.write(self.rng.randbytes(min(64, size)))
        except OSError:
            return False
        return True

    def _change_table(self, append: bool) -> bool:
        import pyarrow.parquet as pq

        table = self.rng.choice(sorted(p.name for p in self.work.data.iterdir() if p.is_dir()))
        folder = self.work.data / table
        pristine = plain_strings(pq.read_table(self.source / f"{table}.parquet"))
        appended = sorted(folder.glob("append-*.parquet"))
        if append and len(appended) >= MAX_APPENDS:
            append = False  # keep the data bounded: replace the table instead
        rows = pristine.num_rows
        take = max(1, rows // self.rng.randint(20, 100))
        picked = sorted(self.rng.sample(range(rows), take))
        with data_lock(self.work, exclusive=True):
            if append:
                name = f"append-{self.faults['append_input']:05d}.parquet"
                pq.write_table(pristine.take(picked), folder / f".{name}")
                (folder / f".{name}").rename(folder / name)
            else:
                dropped = set(picked)
                kept = [i for i in range(rows) if i not in dropped]
                pq.write_table(pristine.take(kept), folder / ".rewrite.parquet")
                (folder / ".rewrite.parquet").rename(folder / "part-0.parquet")
                for extra in appended:
                    extra.unlink()
            (self.work.data / "VERSION").write_text(str(self.work.data_version() + 1))
        return True

    def _rewrite_input(self, soak: Any) -> bool:
        return self._change_table(append=False)

    def _append_input(self, soak: Any) -> bool:
        return self._change_table(append=True)

    def _fill(self, soak: Any) -> bool:
        number = self.faults["fill"] + self.notes["fill_skipped"]
        (self.work.control / f"fill.{number:05d}.request").touch()
        return True

    def _hold_lock(self, soak: Any) -> bool:
        name = self.rng.choice(("catalog.db", "cache.db"))
        path = self.work.home / name
        if not path.exists():
            return False
        conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        try:
            conn.execute("BEGIN EXCLUSIVE")
            time.sleep(self.rng.uniform(0.5, 3.0))
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            return False
        finally:
            conn.close()
        self.notes[f"hold_lock_{name}"] += 1
        return True

    def _kill(self, soak: Any) -> bool:
        app = self.rng.choice(APPS)
        proc = soak.procs.get(app)
        if proc is None or proc.poll() is not None:
            return False
        mid_write = self._wait_for_write(proc.pid, deadline=time.monotonic() + 30)
        if mid_write:
            time.sleep(self.rng.uniform(0, 0.05))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        proc.wait()
        self.notes["kill_mid_write" if mid_write else "kill_between_writes"] += 1
        soak.start(app)
        return True

    def _wait_for_write(self, pid: int, deadline: float) -> bool:
        scratch = [root / TIER_TEMP for root in self.work.tier_roots().values()]
        marker = f".{pid}."
        while time.monotonic() < deadline:
            for folder in scratch:
                try:
                    if any(
                        p.name.startswith("stage.") and marker in p.name for p in folder.iterdir()
                    ):
                        return True
                except OSError:
                    continue
            time.sleep(0.005)
        return False
