"""A read-only web dashboard over a Criss home (Flask; ``pip install 'criss[dashboard]'``).

Pages (each also as ``.json``): overview ``/``, ``/qtree``, ``/entries``,
``/entries/<key>``, ``/queries``, ``/replays``. ``?refresh=N`` reloads a page every N
seconds, to watch a running replay. The catalogs are opened read-only; nothing is written
under the home and no file is served except the dashboard's own static files.

>>> from criss.dashboard import create_app               # doctest: +SKIP
>>> create_app("/data/criss", "experiments/results").run(port=8484)  # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from criss.errors import CrissError, EnvironmentProblem, NotFoundError

try:
    from flask import Flask, current_app, jsonify, render_template, request, url_for
    from werkzeug.exceptions import HTTPException
except ImportError as exc:  # the web stack is an optional extra
    raise EnvironmentProblem(
        "the dashboard needs Flask: pip install 'criss[dashboard]' (or 'flask>=3')"
    ) from exc

log = logging.getLogger("criss.dashboard")

#: Bounds of ``?refresh=N`` (seconds).
REFRESH_RANGE = (1, 3600)


@dataclass(frozen=True)
class Settings:
    """What every page reads: the home, where replay results are, known tier quotas."""

    home: Path
    results_dir: Path | None = None
    capacities: Mapping[str, int | None] = field(default_factory=dict)


def default_results_dir() -> Path | None:
    """``experiments/results`` under the working directory, when it exists."""
    candidate = Path.cwd() / "experiments" / "results"
    return candidate if candidate.is_dir() else None


def create_app(
    home: str | Path,
    results_dir: str | Path | None = None,
    *,
    capacities: Mapping[str, int | None] | None = None,
) -> Flask:
    """The dashboard's Flask application for ``home`` (replay files from ``results_dir``)."""
    from criss.dashboard.views import PAGES

    app = Flask(__name__)
    app.config["CRISS"] = Settings(
        Path(home).expanduser(),
        Path(results_dir).expanduser() if results_dir else None,
        dict(capacities or {}),
    )
    app.json.sort_keys = False
    for page in PAGES:
        app.add_url_rule(page.json_rule, f"{page.name}_json", _json_view(page))
        app.add_url_rule(page.rule, page.name, _html_view(page))
    _add_template_helpers(app, PAGES)
    _add_error_pages(app)
    return app


def _refresh() -> int | None:
    seconds = request.args.get("refresh", type=int)
    if not seconds:
        return None
    return min(max(seconds, REFRESH_RANGE[0]), REFRESH_RANGE[1])


def _html_view(page):
    def view(**url_args: Any):
        data = page.data(current_app.config["CRISS"], request.args, **url_args)
        extra = page.extra(data, request.args) if page.extra else {}
        return render_template(page.template, data=data, page=page, **extra)

    view.__name__ = f"{page.name}_html"
    return view


def _json_view(page):
    def view(**url_args: Any):
        return jsonify(page.data(current_app.config["CRISS"], request.args, **url_args))

    view.__name__ = f"{page.name}_json"
    return view


def _add_template_helpers(app: Flask, pages) -> None:
    def link(endpoint: str, **values: Any) -> str:
        """A URL that keeps ``?refresh=N`` so auto-refresh survives navigation."""
        refresh = _refresh()
        if refresh and not endpoint.endswith("_json") and endpoint != "static":
            values.setdefault("refresh", refresh)
        return url_for(endpoint, **values)

    def json_link() -> str:
        endpoint = request.endpoint or "index"
        args = {k: v for k, v in request.args.items() if k != "refresh"}
        return url_for(f"{endpoint}_json", **(request.view_args or {}), **args)

    def here(**changes: Any) -> str:
        """This page's URL with some query arguments changed (None removes one)."""
        args = {k: v for k, v in request.args.items() if k not in changes}
        args.update({k: v for k, v in changes.items() if v is not None})
        query = urlencode(args)
        return request.path + (f"?{query}" if query else "")

    @app.context_processor
    def helpers() -> dict[str, Any]:
        settings = app.config["CRISS"]
        return {
            "nav": [p for p in pages if p.in_nav],
            "refresh": _refresh(),
            "link": link,
            "json_link": json_link,
            "here": here,
            "home": settings.home,
            "now": time.time(),
        }

    app.add_template_filter(human_bytes, "bytes")
    app.add_template_filter(human_seconds, "secs")
    app.add_template_filter(when, "when")
    app.add_template_filter(ago, "ago")
    app.add_template_filter(number, "num")


def _add_error_pages(app: Flask) -> None:
    def render(status: int, title: str, message: str):
        if request.path.endswith(".json"):
            return jsonify({"error": title, "message": message, "status": status}), status
        page = {"title": title}
        return render_template("error.html", status=status, message=message, page=page), status

    @app.errorhandler(NotFoundError)
    def not_found(exc: NotFoundError):
        return render(404, "Not found", str(exc))

    @app.errorhandler(CrissError)
    def criss_error(exc: CrissError):
        return render(500, "Cannot read the Criss home", str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        return render(exc.code or 500, exc.name, exc.description or "")

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("dashboard page failed")
        return render(500, "Unexpected error", f"{type(exc).__name__}: {exc}")


# --- template filters ----------------------------------------------------------------------------


def human_bytes(value: float | None) -> str:
    """``1536`` → ``1.5 KiB``."""
    if value is None:
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def human_seconds(value: float | None) -> str:
    """``0.0123`` → ``12 ms``, ``3.456`` → ``3.46 s``, ``4000`` → ``1 h 6 min``."""
    if value is None:
        return "—"
    v = float(value)
    if abs(v) < 1:
        return f"{v * 1000:.0f} ms"
    if abs(v) < 120:
        return f"{v:.2f} s"
    if abs(v) < 7200:
        return f"{v / 60:.1f} min"
    return f"{int(v // 3600)} h {int(v % 3600 // 60)} min"


def when(epoch: float | None) -> str:
    """Local date and time of a Unix timestamp."""
    if epoch is None:
        return "—"
    return dt.datetime.fromtimestamp(float(epoch)).strftime("%Y-%m-%d %H:%M:%S")


def ago(epoch: float | None, now: float | None = None) -> str:
    if epoch is None:
        return "—"
    delta = (now or time.time()) - float(epoch)
    if delta < 0:
        return "just now"
    if delta < 90:
        return f"{delta:.0f} s ago"
    if delta < 5400:
        return f"{delta / 60:.0f} min ago"
    if delta < 2 * 86400:
        return f"{delta / 3600:.1f} h ago"
    return f"{delta / 86400:.0f} days ago"


def number(value: float | None, digits: int = 3) -> str:
    """Three significant digits, thousands grouped: ``1420.8`` → ``1,420``."""
    if value is None:
        return "—"
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"
