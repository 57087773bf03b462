"""The workload Criss users run: TPC-H data and queries, seeded query streams, replays.

Installed as ``criss.workload`` (``criss datagen``, ``criss replay`` and the demo use it).
"""
