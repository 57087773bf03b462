"""One error root for everything Criss raises.

Subclasses also inherit the matching built-in so callers can catch either
(``except ValueError`` keeps working for configuration mistakes).
"""

from __future__ import annotations


class CrissError(Exception):
    """Root of every error raised by Criss."""


class ConfigError(CrissError, ValueError):
    """An option has a value Criss cannot use; the message names it and the fix."""


class EnvironmentProblem(CrissError, RuntimeError):
    """The machine lacks something Criss needs (Java, a package, a writable directory)."""


class WorkloadError(CrissError, ValueError):
    """A TPC-H query, stream or data set was asked for in a way that cannot be served."""


class BridgeError(CrissError, RuntimeError):
    """A call into Spark's JVM (Catalyst) failed or returned something unexpected."""


class StorageError(CrissError, OSError):
    """A cache tier could not store, read or delete a partition."""


class CatalogError(CrissError, RuntimeError):
    """The QTree catalog could not be read or written (locked, corrupt, unwritable)."""


class NotFoundError(CrissError, LookupError):
    """Something asked for by name (a home, a cache entry, a tier) does not exist."""


class UsageError(CrissError, TypeError):
    """An API was handed an argument of a kind it cannot take; the message names it and
    what to pass instead."""


class SessionClosed(CrissError, RuntimeError):
    """A closed Criss session was asked for its cache (a report, a clear); its queries
    run as plain Spark."""
