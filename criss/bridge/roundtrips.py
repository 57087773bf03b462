"""Counting the JVM round trips Criss's planning makes (for experiments, not the engine).

Every py4j command a Python thread sends to the JVM is one round trip (~0.1-0.2 ms on a
small machine); ``RoundTripCounter`` counts those the main thread sends while it is
``active``, by the innermost Criss frame that sent them, so an experiment can say which
step of ``cs.sql`` asks the JVM how often.
"""

from __future__ import annotations

import collections
import threading
import time
import traceback
from pathlib import Path


class RoundTripCounter:
    """Round trips and their seconds, by sending site ("package/module.py:function").

    Installed over py4j's client connection until ``close``; other threads' round trips
    (py4j's garbage collection, Criss's background statistics reads) are not counted.
    """

    def __init__(self) -> None:
        import py4j.clientserver

        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self.active = False
        self._connection = py4j.clientserver.ClientServerConnection
        self._send = self._connection.send_command
        counter, send, main = self, self._send, threading.main_thread()

        def send_command(connection, command):
            started = time.perf_counter()
            try:
                return send(connection, command)
            finally:
                if counter.active and threading.current_thread() is main:
                    counter._count(time.perf_counter() - started)

        self._connection.send_command = send_command

    def _count(self, seconds: float) -> None:
        site = "other"
        for frame in reversed(traceback.extract_stack(limit=40)):
            if frame.filename == __file__:
                continue  # the counter's own send_command
            if "/criss/" in frame.filename or "/qtree/" in frame.filename:
                folder = Path(frame.filename).parent.name
                site = f"{folder}/{Path(frame.filename).name}:{frame.name}"
                break
        self.calls[site] += 1
        self.seconds[site] += seconds

    def close(self) -> None:
        self._connection.send_command = self._send
