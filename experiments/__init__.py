"""TPC-H workload, query streams and replays used to evaluate Criss."""
