"""Criss under load, with faults arriving while work is in flight (issue 21, "Soak").

Two applications share one home. Each runs several threads that issue a seeded mix of
TPC-H statements (qgen parameters from a small pool, so statements recur), their v60/v30
variants and DataFrame-API queries through Criss, and checks every result against plain
Spark's, computed in the same application once per statement and data version and kept.
Meanwhile a fault injector acts at random moments:

- ``delete``, ``truncate``, ``corrupt``: a cached partition file is removed, cut in half, or
  overwritten in place with random bytes (same size);
- ``rewrite_input``, ``append_input``: a TPC-H table's file is rewritten without a seeded
  sample of its rows, or a file with duplicated rows is added to it (results must follow
  the new data); the applications refresh their views as a Spark user would;
- ``fill``: an application is asked for a burst of large new results, which push the tiers
  to their quotas and beyond;
- ``hold_lock``: ``catalog.db`` or ``cache.db`` is held in an exclusive transaction for up
  to 3 s;
- ``kill``: one application is killed with ``kill -9``, mid-write when it is caught writing a
  result (its process group: the driver and its JVM), and started again.

It ends with a report (JSON, and a summary on stdout): statements run, wrong rows and
errors (both must be 0; fallbacks are counted apart), faults by kind, recomputed
partitions, quota excursions, and the home's size over time. The exit status is 1 when a
result was wrong or Criss raised where plain Spark did not.

    .venv/bin/python -m experiments.soak --minutes 60 --seed 7
    .venv/bin/python -m experiments.soak --minutes 3 --seed 1 --out /tmp/soak.json

Data changes are made while no statement runs (statements hold a shared lock on the data,
the injector an exclusive one), as a table owner would replace files between queries;
every other fault lands whenever its moment comes, in the middle of reads and writes.
"""
