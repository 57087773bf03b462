"""Criss's plans run stages plain Spark compiled under other stage numbers; with
``share_stage_code`` (the default) the session it wraps names generated stage classes by
their code alone, so Spark finds them compiled. Real Spark, each case on a SparkSession
of its own (``newSession``: its own SQL settings, the application's JVM and code cache)."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

import criss
from criss.bridge import compiled_classes
from criss.bridge.metrics import STAGE_CLASS_NAMES, share_stage_code
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


@pytest.fixture
def own_session(spark):
    return spark.newSession()


def test_the_wrapped_session_names_stage_classes_by_code_until_closed(own_session, tmp_path):
    assert own_session.conf.get(STAGE_CLASS_NAMES, None) is None
    cs = criss.session(own_session, home=str(tmp_path / "home"))
    assert own_session.conf.get(STAGE_CLASS_NAMES) == "false"
    cs.close()
    assert own_session.conf.get(STAGE_CLASS_NAMES, None) is None


@pytest.mark.parametrize("chosen", ["true", "false"])
def test_an_applications_own_setting_is_left_as_it_is(own_session, tmp_path, chosen):
    own_session.conf.set(STAGE_CLASS_NAMES, chosen)
    with criss.session(own_session, home=str(tmp_path / "home")):
        assert own_session.conf.get(STAGE_CLASS_NAMES) == chosen
    assert own_session.conf.get(STAGE_CLASS_NAMES) == chosen


def test_share_stage_code_false_and_a_pass_through_leave_spark_alone(own_session, tmp_path):
    for options in ({"share_stage_code": "false"}, {"enabled": False}):
        with criss.session(own_session, home=str(tmp_path / "home"), **options):
            assert own_session.conf.get(STAGE_CLASS_NAMES, None) is None


def test_a_setting_spark_refuses_changes_nothing():
    """A session whose settings cannot be changed (a stand-in: real Spark allows this one)
    is wrapped as it is: Criss's own setting never becomes the user's error."""

    class Refusing:
        def get(self, key, default=None):
            return default

        def set(self, key, value):
            raise RuntimeError(f"{key} cannot be modified")

    assert share_stage_code(SimpleNamespace(conf=Refusing())) is None


#: Templates whose second sight Criss splits at SF 0.01 (a subtree cached in the action, or
#: read from the cache, under the rest of the plan).
SPLIT_TEMPLATES = (7, 21)


def _seen_once(spark, tpch_dir, home) -> None:
    """A home in which each template was seen once (first sights, their results cached)."""
    session = spark.newSession()
    register_views(session, tpch_dir)
    with criss.session(session, home=str(home), media="disk") as cs:
        for template in SPLIT_TEMPLATES:
            cs.sql(statement(template, seed=100 + template).sql).collect()
            cs.settle_harvests()


def _second_sights(spark, tpch_dir, home, share: str) -> list[tuple[dict, int]]:
    """Each template's second sight through Criss, right after plain Spark ran the same
    statement twice (its code compiled): the work Criss did and the classes its action
    compiled."""
    session = spark.newSession()
    register_views(session, tpch_dir)
    found = []
    with criss.session(session, home=str(home), media="disk", share_stage_code=share) as cs:
        for template in SPLIT_TEMPLATES:
            sql = statement(template, seed=200 + template).sql
            expected = sorted(session.sql(sql).collect())
            session.sql(sql).collect()
            before = compiled_classes(session)
            rows = cs.sql(sql).collect()
            compiled = compiled_classes(session) - before
            assert sorted(rows) == expected
            cs.settle_harvests()
            work = {
                k: v
                for k, v in cs.last_record.counters.items()
                if v and k in ("operators_cached_in_action", "operators_reused")
            }
            found.append((work, compiled))
    return found


def test_second_sights_compile_fewer_classes_when_stage_code_is_shared(spark, tpch_dir, tmp_path):
    """Both modes start from copies of one home, so they decide alike. The shared mode
    runs first: a class both need that is not a stage's is then compiled by it, which only
    favours the other."""
    _seen_once(spark, tpch_dir, tmp_path / "home")
    for copy in ("shared", "numbered"):
        shutil.copytree(tmp_path / "home", tmp_path / copy)
    shared = _second_sights(spark, tpch_dir, tmp_path / "shared", "true")
    numbered = _second_sights(spark, tpch_dir, tmp_path / "numbered", "false")
    assert [work for work, _ in shared] == [work for work, _ in numbered]
    assert all("operators_cached_in_action" in work for work, _ in shared), shared
    shared_total, numbered_total = sum(n for _, n in shared), sum(n for _, n in numbered)
    assert numbered_total >= 8, numbered  # the renumbered stages compiled again
    assert shared_total <= numbered_total - 4, (shared, numbered)


def test_two_criss_sessions_on_one_spark_session_share_the_setting(own_session, tmp_path):
    """The setting stays until the last Criss session on the SparkSession closes: the
    second does not take the first one's setting for the application's."""
    first = criss.session(own_session, home=str(tmp_path / "first"))
    second = criss.session(own_session, home=str(tmp_path / "second"))
    first.close()
    assert own_session.conf.get(STAGE_CLASS_NAMES) == "false"
    second.close()
    assert own_session.conf.get(STAGE_CLASS_NAMES, None) is None
