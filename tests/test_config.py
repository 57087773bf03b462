"""Options resolve from keyword arguments, then SparkConf ``spark.criss.*``, then defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from criss.config import CrissOptions, parse_bytes
from criss.errors import ConfigError
from criss.policies import available_policies, get_policy


def test_spark_conf_keys_name_the_options_with_dots():
    options = CrissOptions.resolve(
        {
            "spark.criss.memory.capacity": "512m",
            "spark.criss.disk.capacity": "4g",
            "spark.criss.media": "disk",
            "spark.criss.granularity": "operator",
            "spark.criss.policy": "lru",
            "spark.criss.eager.results": "false",
        }
    )
    assert options.memory_capacity == 512 << 20 and options.disk_capacity == 4 << 30
    assert (options.media, options.granularity, options.policy) == ("disk", "operator", "lru")
    assert options.eager_results is False


def test_keyword_arguments_win_over_spark_conf():
    options = CrissOptions.resolve({"spark.criss.media": "disk"}, media="memory")
    assert options.media == "memory"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"media": "ssd"}, "media='ssd' is not one of hybrid, memory, disk"),
        ({"granularity": "block"}, "granularity='block' is not one of partition, operator"),
        ({"memory_capacity": "lots"}, "memory_capacity='lots' is not a size"),
        ({"no_such_option": 1}, "unknown Criss option"),
        ({"lift_aggregates": "sometimes"}, "lift_aggregates='sometimes' is not one of benefit"),
    ],
)
def test_bad_values_name_the_option_and_the_fix(overrides, message):
    with pytest.raises(ConfigError, match=message):
        CrissOptions.resolve(None, **overrides)


@pytest.mark.parametrize(
    ("given", "mode"),
    [(True, "benefit"), ("false", "off"), ("EAGER", "eager"), ("benefit", "benefit"), (0, "off")],
)
def test_lifting_is_a_mode_and_a_boolean_still_names_one(given, mode):
    assert CrissOptions.resolve({"spark.criss.lift.aggregates": given}).lift_aggregates == mode


def test_sizes_and_policies():
    assert parse_bytes("1.5k") == 1536 and parse_bytes(7) == 7 and parse_bytes(None) is None
    assert {"criss", "recycler", "lru"} <= set(available_policies())
    with pytest.raises(ConfigError, match="did you mean 'lru'"):
        get_policy("lur")


@pytest.mark.parametrize("version", ["3.5.1", "2.4.8", "unknown"])
def test_a_spark_older_than_4_is_refused_with_its_version(version):
    from criss.bridge import require_supported_spark
    from criss.errors import BridgeError

    with pytest.raises(BridgeError, match=f"Criss needs Spark 4.0 or later.*{version}"):
        require_supported_spark(version)
    require_supported_spark("4.1.0")
    require_supported_spark("4.0.1")


# --- configuration that talks back ---------------------------------------------------------


class _FakeSpark:
    """Just enough of a SparkSession for ``criss.session``'s checks (no JVM)."""

    def __init__(self, version: str = "4.1.1", conf: dict[str, str] | None = None) -> None:
        from types import SimpleNamespace

        self.version = version
        pairs = list((conf or {}).items())
        self.sparkContext = SimpleNamespace(getConf=lambda: SimpleNamespace(getAll=lambda: pairs))
        self.conf = SimpleNamespace(getAll=dict(conf or {}))


def test_a_misspelled_option_names_the_closest_one(tmp_path):
    import criss

    with pytest.raises(ConfigError, match=r"unknown Criss option 'polcy': did you mean 'policy'"):
        criss.session(_FakeSpark(), home=str(tmp_path / "h"), polcy="lru")
    assert not (tmp_path / "h").exists()


def test_a_misspelled_spark_conf_key_names_the_closest_one(tmp_path):
    import criss

    spark = _FakeSpark(conf={"spark.criss.polcy": "lru", "spark.sql.shuffle.partitions": "4"})
    with pytest.raises(
        ConfigError, match=r"'spark.criss.polcy': did you mean 'spark.criss.policy'"
    ):
        criss.session(spark, home=str(tmp_path / "h"))
    assert not (tmp_path / "h").exists()


def test_every_spark_criss_key_read_in_the_code_is_an_option():
    """Every ``spark.criss.*`` key named in the installed code resolves as an option."""
    import re

    from criss.config import conf_key, option_names

    repo = Path(__file__).resolve().parent.parent
    keys = {conf_key(name) for name in option_names()}
    named = {
        (key, str(path.relative_to(repo)))
        for folder in ("criss", "qtree", "storage", "policies", "workload")
        for path in (repo / folder).rglob("*.py")
        for key in re.findall(r"spark\.criss\.[a-z][a-z.]*[a-z](?![.{a-z])", path.read_text())
    }
    assert {key for key, _ in named} >= {"spark.criss.home", "spark.criss.range.join.method"}
    assert not {(key, path) for key, path in named if key not in keys}
    options = CrissOptions.resolve(
        {"spark.criss.range.join.min.seconds": "0", "spark.criss.range.join.method": "index"}
    )
    assert (options.range_join_min_seconds, options.range_join_method) == (0.0, "index")
    assert CrissOptions().range_join_index_max_bytes == 512 << 20
    with pytest.raises(ConfigError, match="range_join_method='hash' is not one of auto"):
        CrissOptions.resolve(None, range_join_method="hash")


def test_an_old_spark_is_refused_before_the_home_is_created(tmp_path):
    import criss
    from criss.errors import BridgeError

    with pytest.raises(BridgeError, match="this session runs Spark 3.5.1"):
        criss.session(_FakeSpark("3.5.1"), home=str(tmp_path / "h"))
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize(
    ("home", "problem"),
    [
        ("/proc/criss", "cannot create or write it"),
        ("{tmp}/file/home", "is a file, not a directory"),
    ],
)
def test_an_unusable_home_is_a_config_error_naming_it(tmp_path, home, problem):
    import criss

    (tmp_path / "file").write_text("not a directory")
    home = home.format(tmp=tmp_path)
    with pytest.raises(ConfigError, match=f"Criss home '{home}' is not usable: .*{problem}"):
        criss.session(_FakeSpark(), home=home)


def test_check_home_creates_a_private_home(tmp_path):
    from criss.config import check_home

    home = check_home(tmp_path / "a" / "home")
    assert home.is_dir() and (home.stat().st_mode & 0o777) == 0o700
    assert list(home.iterdir()) == []  # the write probe is gone


def test_dashboard_without_flask_says_how_to_install_it(monkeypatch, tmp_path):
    import sys

    from click.testing import CliRunner

    from criss.cli import main

    for name in ("flask", "werkzeug", "werkzeug.serving"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    result = CliRunner().invoke(main, ["dashboard", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert "pip install 'criss[dashboard]'" in result.output
    assert "Traceback" not in result.output and result.exception.__class__ is SystemExit


def test_explain_says_where_tpch_data_is_generated(monkeypatch, tmp_path):
    from click.testing import CliRunner

    import criss.sparksession
    import criss.workload.tpch.data as data
    from criss.cli import main
    from criss.errors import EnvironmentProblem

    made = []
    monkeypatch.setattr(data, "ensure_tpch", lambda sf, path, quiet: made.append(path) or path)

    def no_spark(*args, **kwargs):
        raise EnvironmentProblem("no Spark in this test")

    monkeypatch.setattr(criss.sparksession, "local_spark", no_spark)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["explain", "select 1", "--tpch-sf", "1"])
    where = tmp_path / "data" / "tpch" / "sf1"
    assert f"generating them into {where}" in result.output
    assert made == [where]
    assert "no Spark in this test" in result.output


def test_every_option_is_documented_in_the_readme():
    from criss.config import option_names

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert not [name for name in option_names() if f"`{name}`" not in readme]


def test_base_share_is_a_share():
    assert CrissOptions.resolve(None, base_share="0.5").base_share == 0.5
    assert CrissOptions.resolve({"spark.criss.base.share": "0.25"}).base_share == 0.25
    for bad in ("1.5", "-0.1"):
        with pytest.raises(ConfigError, match=r"base_share must be between 0 and 1"):
            CrissOptions.resolve(None, base_share=bad)
    with pytest.raises(ConfigError, match=r"base_share='half' is not a number"):
        CrissOptions.resolve(None, base_share="half")
