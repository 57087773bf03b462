"""The dashboard over a home a real replay filled: every page, its ``.json`` twin, error
pages, and every page rendered by headless Chromium (screenshots in ``tests/artifacts/``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest
from werkzeug.serving import make_server

from criss.dashboard import create_app

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "tests" / "artifacts"
MEMORY_QUOTA = 8 * 1024


@contextmanager
def serving(app) -> Iterator[str]:
    """Run ``app`` on a free local port in a background thread; yield its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def fetch(url: str) -> SimpleNamespace:
    try:
        with urlopen(url, timeout=60) as response:
            status, headers, body = response.status, response.headers, response.read()
    except HTTPError as exc:
        status, headers, body = exc.code, exc.headers, exc.read()
    return SimpleNamespace(status=status, type=headers.get_content_type(), text=body.decode())


def page(base: str, path: str) -> tuple[str, object]:
    """The HTML of ``path`` and the parsed JSON of its twin, both checked to be 200."""
    html = fetch(base + path)
    assert html.status == 200 and html.type == "text/html", (path, html.status, html.text[:500])
    bare, _, query = path.partition("?")
    twin = fetch(
        base + ("/index" if bare == "/" else bare) + ".json" + (f"?{query}" if query else "")
    )
    assert twin.status == 200 and twin.type == "application/json", (path, twin.text[:500])
    return html.text, json.loads(twin.text)


def number(html: str, element_id: str) -> int:
    found = re.search(rf'id="{element_id}">([\d,]+)<', html)
    assert found, f"#{element_id} not on the page"
    return int(found.group(1).replace(",", ""))


@pytest.fixture(scope="module")
def site(replayed_home):
    app = create_app(replayed_home.home, replayed_home.results, capacities={"memory": MEMORY_QUOTA})
    with serving(app) as base:
        yield SimpleNamespace(base=base, home=replayed_home.home, results=replayed_home.results)


def test_overview_and_its_twin(site):
    html, data = page(site.base, "/")
    assert data["entries"] > 0 and data["qtree"]["operators"] > 0
    assert f'<div class="value">{data["entries"]}</div>' in html
    assert number(html, "operators-reused") == data["queries"]["counters"]["operators_reused"] > 0
    assert number(html, "partitions-reused") == data["queries"]["counters"]["partitions_reused"]
    tiers = {t["name"]: t for t in data["tiers"]}
    assert {"memory", "disk"} <= set(tiers)
    for name in tiers:
        assert f'data-tier="{name}"' in html
    assert tiers["memory"]["capacity_bytes"] == MEMORY_QUOTA  # the bar is drawn against it
    # sessions record their quotas in the catalog, so both bars are drawn without flags
    assert tiers["disk"]["capacity_bytes"] > 0 and html.count('class="fill"') >= 2
    assert data["time"]["formula"] in html


def test_entries_and_their_twin(site):
    html, data = page(site.base, "/entries")
    keys = [e["key"] for e in data["entries"]]
    assert number(html, "entry-count") == data["count"] == len(keys) > 0
    assert re.findall(r'<tr class="entry state-\w+" data-key="([0-9a-f]+)"', html) == keys
    cells = sum(e["num_partitions"] for e in data["entries"])
    assert (
        len(
            re.findall(
                r'class="cell cell-(?:memory|disk|alluxio|empty|missing)" title="partition', html
            )
        )
        == cells
    )
    states = {c for e in data["entries"] for c in e["cells"]}
    assert {"memory", "disk"} <= states, states


def test_one_entry_and_its_twin(site):
    _, listing = page(site.base, "/entries")
    entry = max(listing["entries"], key=lambda e: e["num_partitions"])
    html, data = page(site.base, f"/entries/{entry['key']}")
    assert data["entry"]["key"] == entry["key"]
    assert f'id="entry-key">{entry["key"]}<' in html
    assert len(data["entry"]["partitions"]) == entry["num_partitions"]
    assert html.count('title="partition ') == entry["num_partitions"]
    for field in data["entry"]["schema"]:
        assert f"<code>{field['name']}</code>" in html


def test_qtree_and_its_twin(site):
    html, data = page(site.base, "/qtree")
    fingerprints = {n["fingerprint"] for n in data["nodes"]}
    assert number(html, "operator-count") == data["operators"] == len(fingerprints) > 0
    assert set(re.findall(r'data-fp="([0-9a-f]+)"', html)) == fingerprints
    for fp in fingerprints:  # every operator is drawn in full exactly once
        assert html.count(f'id="n-{fp}"') == 1
    cached = [n for n in data["nodes"] if n["state"] != "seen"]
    assert cached and all(n["benefit"] is not None for n in cached)
    # each operator is coloured by where its entry's partitions are; which entries the 8 KiB
    # memory quota leaves wholly in memory depends on the run, so check the page against the twin
    for n in data["nodes"]:
        assert re.search(
            rf'class="node state-{n["state"]}[^"]*" data-fp="{n["fingerprint"]}"', html
        )
    assert {n["state"] for n in cached} & {"memory", "disk", "mixed", "partial"}

    target = cached[0]["fingerprint"]
    found_html, found = page(site.base, f"/qtree?q={target[:10]}")
    assert [n["fingerprint"] for n in found["nodes"]] == [target]
    assert f'id="n-{target}"' in found_html and found_html.count("data-fp=") == 1
    _, aggregates = page(site.base, "/qtree?q=aggregate")
    assert aggregates["nodes"] and all(n["op"] == "Aggregate" for n in aggregates["nodes"])


def test_queries_and_their_twin(site):
    html, data = page(site.base, "/queries")
    assert number(html, "query-count") == data["count"] == len(data["queries"]) > 0
    assert re.findall(r'id="q(\d+)"', html) == [str(q["id"]) for q in data["queries"]]
    assert any(q["reused"] for q in data["queries"])
    assert "Criss plan (" in html


def test_replays_and_their_twin(site):
    html, data = page(site.base, "/replays")
    [replay] = data["replays"]
    assert replay["name"] == "zipf-sf0.01-8.json" and f'data-name="{replay["name"]}"' in html
    assert set(replay["modes"]) == {"spark", "criss"}
    assert len(re.findall(r"<polyline ", html)) == 2
    assert len(re.findall(r'<rect class="bar mode-', html)) == 2 * replay["queries"]
    cumulative = replay["modes"]["criss"]["cumulative"]
    assert cumulative[-1] == pytest.approx(replay["modes"]["criss"]["total_seconds"], abs=0.01)


def test_auto_refresh_is_kept_across_links(site):
    html = fetch(site.base + "/entries?refresh=5").text
    assert '<meta http-equiv="refresh" content="5">' in html
    assert 'href="/qtree?refresh=5"' in html
    assert '<meta http-equiv="refresh"' not in fetch(site.base + "/entries").text


def test_pages_never_change_the_home(site):
    def snapshot() -> dict[str, str]:
        return {
            str(p.relative_to(site.home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in site.home.rglob("*")
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))  # SQLite's own sidecars
        }

    before = snapshot()
    for path in ("/", "/qtree", "/entries", "/queries", "/replays", "/index.json"):
        assert fetch(site.base + path).status == 200
    assert snapshot() == before


def test_error_pages_have_the_right_status(site, tmp_path):
    unknown = "0123456789abcdef0123456789abcdef"
    for path, status, text in (
        (f"/entries/{unknown}", 404, f"no cache entry {unknown}"),
        (f"/entries/{unknown}.json", 404, f"no cache entry {unknown}"),
        ("/entries/not-a-key", 404, "is not a cache entry key"),
        ("/entries/../../etc/passwd", 404, "Not Found"),
        ("/entries/..%2F..%2Fetc%2Fpasswd", 404, "Not Found"),
        ("/static/../../catalog.db", 404, "Not Found"),
        ("/static/..%2F..%2Fcatalog.db", 404, "Not Found"),
        ("/no/such/page", 404, "Not Found"),
    ):
        response = fetch(site.base + path)
        assert response.status == status, (path, response.status)
        assert text in response.text, (path, response.text[:300])
        assert "Traceback" not in response.text and "root:" not in response.text

    with serving(create_app(tmp_path / "missing")) as base:
        response = fetch(base + "/")
        assert response.status == 404 and "no Criss home at" in response.text
        assert '<h1><span class="status">404</span>' in response.text
        response = fetch(base + "/entries.json")
        assert response.status == 404 and json.loads(response.text)["status"] == 404


def test_a_home_with_nothing_yet_renders_empty_pages(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with serving(create_app(empty, tmp_path / "no-results")) as base:
        html, data = page(base, "/")
        assert data["entries"] == 0 and "Nothing cached and no query seen yet" in html
        assert page(base, "/entries")[1]["count"] == 0
        assert "The QTree is empty" in page(base, "/qtree")[0]
        assert page(base, "/queries")[1]["count"] == 0
        assert page(base, "/replays")[1]["replays"] == []
    assert list(empty.iterdir()) == []


# --- in a real browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip(
            "Chromium is not installed (scripts/test.sh installs Debian's chromium when run as "
            "root; otherwise: apt-get install chromium)"
        )
    profile = tmp_path_factory.mktemp("chromium-profile")

    def run(*args: str) -> str:
        cmd = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    return run


def test_every_page_renders_in_chromium(site, chromium):
    _, entries = page(site.base, "/entries")
    key = entries["entries"][0]["key"]
    expected = {
        "/": ['id="summary"', 'data-tier="memory"', "Time saved vs time spent"],
        "/qtree": ['id="qtree"', 'class="node state-memory', "expand all"],
        "/entries": [f'data-key="{key}"', "cell cell-disk"],
        f"/entries/{key}": [f'id="entry-key">{key}<', "Partitions"],
        "/queries": ['id="query-count"', "Criss plan ("],
        "/replays": ['class="chart line-chart"', "<polyline"],
    }
    for path, needles in expected.items():
        dom = chromium("--dump-dom", site.base + path)
        for needle in needles:
            assert needle in dom, (path, needle)
    # the QTree page's script filters the tree in the browser
    dom = chromium("--dump-dom", site.base + "/qtree?q=aggregate")
    found = re.search(r'id="match-count"[^>]*>(\d+) matching<', dom)
    assert found and int(found.group(1)) > 0


def test_screenshots_of_the_overview_and_the_qtree(site, chromium):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, path in (("overview", "/"), ("qtree", "/qtree")):
        shot = ARTIFACTS / f"dashboard-{name}.png"
        shot.unlink(missing_ok=True)
        chromium(f"--screenshot={shot}", "--window-size=1280,900", site.base + path)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get("CRISS_UPDATE_SCREENSHOT"):  # refresh the README's picture on demand
        docs = REPO / "docs" / "dashboard.png"
        docs.parent.mkdir(exist_ok=True)
        shutil.copyfile(ARTIFACTS / "dashboard-overview.png", docs)
