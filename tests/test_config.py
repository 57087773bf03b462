"""Options resolve from keyword arguments, then SparkConf ``spark.criss.*``, then defaults."""

from __future__ import annotations

import pytest
from criss.policies import available_policies, get_policy

from criss.config import CrissOptions, parse_bytes
from criss.errors import ConfigError


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
    ],
)
def test_bad_values_name_the_option_and_the_fix(overrides, message):
    with pytest.raises(ConfigError, match=message):
        CrissOptions.resolve(None, **overrides)


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
