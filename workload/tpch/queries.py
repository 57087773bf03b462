"""The 22 TPC-H queries as Spark SQL templates, with qgen parameters and v60/v30 variants.

Each template is the query of the TPC-H specification (v3) written as Spark SQL, with every
table reference a placeholder (``{lineitem}``, ``{orders}``, ...) and every substitution
parameter a placeholder too (``{delta}``, ``{date}``, ...). Q15 uses a CTE instead of a view so
it is one statement. Parameters come from the specification's validation values or from qgen's
rules (clause 2.4.x) drawn with ``random.Random(seed)``.

>>> s = statement(3, seed=None)
>>> s.params
{'segment': 'BUILDING', 'date': '1995-03-15'}
>>> len(all_statements(seed=7))
66

Variants (the paper's Random-QS-v): for each query, ``v60`` changes something high in the
plan and ``v30`` something low, so they share about 60 % and 30 % of the original's operator
tree. In Spark's *analyzed* plan a WHERE clause is one Filter above all joins, and every table
scan is three operators (SubqueryAlias, View, Relation) that any variant shares, so a changed
predicate is moved low by also applying it in a derived table right over the scan of the table
it constrains (see :class:`Variant`). ``VARIANT_RULES`` notes per query what changes.

Share of the variant's analyzed operators that also occur in the original's
(``criss.bridge.plan_overlap(orig, variant, "analyzed")``, validation parameters; identical for
seeds 1, 2 and 3). N is the number of operators of the original:

    ====  ===  =====  =====        ====  ===  =====  =====
    Q     N    v60    v30          Q     N    v60    v30
    ====  ===  =====  =====        ====  ===  =====  =====
    1     6    0.50   0.33         12    10   0.70   0.46
    2     24   0.67   0.50         13    11   0.55   0.43
    3     16   0.69   0.41         14    9    0.78   0.50
    4     6    0.50   0.33         15    17   0.53   0.35
    5     26   0.76   0.47         16    10   0.70   0.46
    6     5    0.60   0.38         17    9    0.78   0.50
    7     30   0.62   0.45         18    16   0.69   0.47
    8     38   0.78   0.55         19    9    0.78   0.50
    9     28   0.82   0.49         20    10   0.70   0.46
    10    20   0.75   0.46         21    21   0.76   0.48
    11    15   0.73   0.43         22    8    0.78   0.38
    ====  ===  =====  =====        ====  ===  =====  =====

Means: v60 0.69, v30 0.45; v60 - v30 is 0.12 (Q13) to 0.40 (Q22). Because all scans stay
shared, a k-table join's v30 cannot go much below 3k/N, which keeps Q5 and Q8 near 0.5. Q15
scores only 0.53 even against itself: the CTE's CTERelationDef/CTERelationRef carry a per-JVM
id that the semantic hash keeps.

Where a table is unaliased in the spec, a derived table from ``tables`` renders unaliased too;
Spark accepts that (it names it ``__auto_generated_subquery_name``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal

from criss.errors import WorkloadError
from criss.workload.tpch.data import TABLES

QUERY_IDS = tuple(range(1, 23))
#: The statements of one query in Random-QS-v: the original and its two variants.
VARIANTS = ("orig", "v60", "v30")

# --- value lists of the TPC-H specification (clauses 4.2.2.13, 4.2.3) ------------------------

REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
#: In n_nationkey order.
NATIONS = tuple(
    "ALGERIA,ARGENTINA,BRAZIL,CANADA,EGYPT,ETHIOPIA,FRANCE,GERMANY,INDIA,INDONESIA,IRAN,IRAQ,"
    "JAPAN,JORDAN,KENYA,MOROCCO,MOZAMBIQUE,PERU,CHINA,ROMANIA,SAUDI ARABIA,VIETNAM,RUSSIA,"
    "UNITED KINGDOM,UNITED STATES".split(",")
)
#: n_regionkey of each nation, in n_nationkey order.
_NATION_REGIONKEYS = (0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1)
NATION_REGION = {
    nation: REGIONS[key] for nation, key in zip(NATIONS, _NATION_REGIONKEYS, strict=True)
}
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
TYPE_SYLLABLES = (
    ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"),
    ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"),
    ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER"),
)
CONTAINER_SYLLABLES = (
    ("SM", "LG", "MED", "JUMBO", "WRAP"),
    ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"),
)
SHIP_MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
#: The words P_NAME is generated from (clause 4.2.3).
COLORS = tuple(
    """
    almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood
    burnished chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim
    dodger drab firebrick floral forest frosted gainsboro ghost goldenrod green grey honeydew
    hot indian ivory khaki lace lavender lawn lemon light lime linen magenta maroon medium
    metallic midnight mint misty moccasin navajo navy olive orange orchid pale papaya peach
    peru pink plum powder puff purple red rose rosy royal saddle salmon sandy seashell sienna
    sky slate smoke snow spring steel tan thistle tomato turquoise violet wheat white yellow
    """.split()
)
#: Q13's WORD1 and WORD2 choices.
Q13_WORDS = (
    ("special", "pending", "unusual", "express"),
    ("packages", "requests", "accounts", "deposits"),
)

# --- the templates ----------------------------------------------------------------------------

#: Query id -> Spark SQL with ``{table}`` and ``{parameter}`` placeholders (str.format).
TEMPLATES: dict[int, str] = {
    1: """
select
    l_returnflag,
    l_linestatus,
    sum(l_quantity) as sum_qty,
    sum(l_extendedprice) as sum_base_price,
    sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
    sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
    avg(l_quantity) as avg_qty,
    avg(l_extendedprice) as avg_price,
    avg(l_discount) as avg_disc,
    count(*) as count_order
from
    {lineitem}
where
    l_shipdate <= date '1998-12-01' - interval '{delta}' day
group by
    l_returnflag,
    l_linestatus
order by
    l_returnflag,
    l_linestatus
""",
    2: """
select
    s_acctbal,
    s_name,
    n_name,
    p_partkey,
    p_mfgr,
    s_address,
    s_phone,
    s_comment
from
    {part},
    {supplier},
    {partsupp},
    {nation},
    {region}
where
    p_partkey = ps_partkey
    and s_suppkey = ps_suppkey
    and p_size = {size}
    and p_type like '%{type}'
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = '{region_name}'
    and ps_supplycost = (
        select
            min(ps_supplycost)
        from
            {partsupp},
            {supplier},
            {nation},
            {region}
        where
            p_partkey = ps_partkey
            and s_suppkey = ps_suppkey
            and s_nationkey = n_nationkey
            and n_regionkey = r_regionkey
            and r_name = '{region_name}'
    )
order by
    s_acctbal desc,
    n_name,
    s_name,
    p_partkey
limit 100
""",
    3: """
select
    l_orderkey,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    o_orderdate,
    o_shippriority
from
    {customer},
    {orders},
    {lineitem}
where
    c_mktsegment = '{segment}'
    and c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate < date '{date}'
    and l_shipdate > date '{date}'
group by
    l_orderkey,
    o_orderdate,
    o_shippriority
order by
    revenue desc,
    o_orderdate
limit 10
""",
    4: """
select
    o_orderpriority,
    count(*) as order_count
from
    {orders}
where
    o_orderdate >= date '{date}'
    and o_orderdate < date '{date}' + interval '3' month
    and exists (
        select
            *
        from
            {lineitem}
        where
            l_orderkey = o_orderkey
            and l_commitdate < l_receiptdate
    )
group by
    o_orderpriority
order by
    o_orderpriority
""",
    5: """
select
    n_name,
    sum(l_extendedprice * (1 - l_discount)) as revenue
from
    {customer},
    {orders},
    {lineitem},
    {supplier},
    {nation},
    {region}
where
    c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and l_suppkey = s_suppkey
    and c_nationkey = s_nationkey
    and s_nationkey = n_nationkey
    and n_regionkey = r_regionkey
    and r_name = '{region_name}'
    and o_orderdate >= date '{date}'
    and o_orderdate < date '{date}' + interval '1' year
group by
    n_name
order by
    revenue desc
""",
    6: """
select
    sum(l_extendedprice * l_discount) as revenue
from
    {lineitem}
where
    l_shipdate >= date '{date}'
    and l_shipdate < date '{date}' + interval '1' year
    and l_discount between {discount} - 0.01 and {discount} + 0.01
    and l_quantity < {quantity}
""",
    7: """
select
    supp_nation,
    cust_nation,
    l_year,
    sum(volume) as revenue
from
    (
        select
            n1.n_name as supp_nation,
            n2.n_name as cust_nation,
            extract(year from l_shipdate) as l_year,
            l_extendedprice * (1 - l_discount) as volume
        from
            {supplier},
            {lineitem},
            {orders},
            {customer},
            {nation} n1,
            {nation} n2
        where
            s_suppkey = l_suppkey
            and o_orderkey = l_orderkey
            and c_custkey = o_custkey
            and s_nationkey = n1.n_nationkey
            and c_nationkey = n2.n_nationkey
            and (
                (n1.n_name = '{nation1}' and n2.n_name = '{nation2}')
                or (n1.n_name = '{nation2}' and n2.n_name = '{nation1}')
            )
            and l_shipdate between date '1995-01-01' and date '1996-12-31'
    ) as shipping
group by
    supp_nation,
    cust_nation,
    l_year
order by
    supp_nation,
    cust_nation,
    l_year
""",
    8: """
select
    o_year,
    sum(case when nation = '{nation_name}' then volume else 0 end) / sum(volume) as mkt_share
from
    (
        select
            extract(year from o_orderdate) as o_year,
            l_extendedprice * (1 - l_discount) as volume,
            n2.n_name as nation
        from
            {part},
            {supplier},
            {lineitem},
            {orders},
            {customer},
            {nation} n1,
            {nation} n2,
            {region}
        where
            p_partkey = l_partkey
            and s_suppkey = l_suppkey
            and l_orderkey = o_orderkey
            and o_custkey = c_custkey
            and c_nationkey = n1.n_nationkey
            and n1.n_regionkey = r_regionkey
            and r_name = '{region_name}'
            and s_nationkey = n2.n_nationkey
            and o_orderdate between date '1995-01-01' and date '1996-12-31'
            and p_type = '{type}'
    ) as all_nations
group by
    o_year
order by
    o_year
""",
    9: """
select
    nation,
    o_year,
    sum(amount) as sum_profit
from
    (
        select
            n_name as nation,
            extract(year from o_orderdate) as o_year,
            l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
        from
            {part},
            {supplier},
            {lineitem},
            {partsupp},
            {orders},
            {nation}
        where
            s_suppkey = l_suppkey
            and ps_suppkey = l_suppkey
            and ps_partkey = l_partkey
            and p_partkey = l_partkey
            and o_orderkey = l_orderkey
            and s_nationkey = n_nationkey
            and p_name like '%{color}%'
    ) as profit
group by
    nation,
    o_year
order by
    nation,
    o_year desc
""",
    10: """
select
    c_custkey,
    c_name,
    sum(l_extendedprice * (1 - l_discount)) as revenue,
    c_acctbal,
    n_name,
    c_address,
    c_phone,
    c_comment
from
    {customer},
    {orders},
    {lineitem},
    {nation}
where
    c_custkey = o_custkey
    and l_orderkey = o_orderkey
    and o_orderdate >= date '{date}'
    and o_orderdate < date '{date}' + interval '3' month
    and l_returnflag = 'R'
    and c_nationkey = n_nationkey
group by
    c_custkey,
    c_name,
    c_acctbal,
    c_phone,
    n_name,
    c_address,
    c_comment
order by
    revenue desc
limit 20
""",
    11: """
select
    ps_partkey,
    sum(ps_supplycost * ps_availqty) as value
from
    {partsupp},
    {supplier},
    {nation}
where
    ps_suppkey = s_suppkey
    and s_nationkey = n_nationkey
    and n_name = '{nation_name}'
group by
    ps_partkey
having
    sum(ps_supplycost * ps_availqty) > (
        select
            sum(ps_supplycost * ps_availqty) * {fraction}
        from
            {partsupp},
            {supplier},
            {nation}
        where
            ps_suppkey = s_suppkey
            and s_nationkey = n_nationkey
            and n_name = '{nation_name}'
    )
order by
    value desc
""",
    12: """
select
    l_shipmode,
    sum(case
        when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1
        else 0
    end) as high_line_count,
    sum(case
        when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1
        else 0
    end) as low_line_count
from
    {orders},
    {lineitem}
where
    o_orderkey = l_orderkey
    and l_shipmode in ('{shipmode1}', '{shipmode2}')
    and l_commitdate < l_receiptdate
    and l_shipdate < l_commitdate
    and l_receiptdate >= date '{date}'
    and l_receiptdate < date '{date}' + interval '1' year
group by
    l_shipmode
order by
    l_shipmode
""",
    13: """
select
    c_count,
    count(*) as custdist
from
    (
        select
            c_custkey,
            count(o_orderkey) as c_count
        from
            {customer} left outer join {orders} on
                c_custkey = o_custkey
                and o_comment not like '%{word1}%{word2}%'
        group by
            c_custkey
    ) as c_orders
group by
    c_count
order by
    custdist desc,
    c_count desc
""",
    14: """
select
    100.00 * sum(case
        when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)
        else 0
    end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from
    {lineitem},
    {part}
where
    l_partkey = p_partkey
    and l_shipdate >= date '{date}'
    and l_shipdate < date '{date}' + interval '1' month
""",
    15: """
with revenue0 as (
    select
        l_suppkey as supplier_no,
        sum(l_extendedprice * (1 - l_discount)) as total_revenue
    from
        {lineitem}
    where
        l_shipdate >= date '{date}'
        and l_shipdate < date '{date}' + interval '3' month
    group by
        l_suppkey
)
select
    s_suppkey,
    s_name,
    s_address,
    s_phone,
    total_revenue
from
    {supplier},
    revenue0
where
    s_suppkey = supplier_no
    and total_revenue = (
        select
            max(total_revenue)
        from
            revenue0
    )
order by
    s_suppkey
""",
    16: """
select
    p_brand,
    p_type,
    p_size,
    count(distinct ps_suppkey) as supplier_cnt
from
    {partsupp},
    {part}
where
    p_partkey = ps_partkey
    and p_brand <> '{brand}'
    and p_type not like '{type}%'
    and p_size in ({size1}, {size2}, {size3}, {size4}, {size5}, {size6}, {size7}, {size8})
    and ps_suppkey not in (
        select
            s_suppkey
        from
            {supplier}
        where
            s_comment like '%Customer%Complaints%'
    )
group by
    p_brand,
    p_type,
    p_size
order by
    supplier_cnt desc,
    p_brand,
    p_type,
    p_size
""",
    17: """
select
    sum(l_extendedprice) / 7.0 as avg_yearly
from
    {lineitem},
    {part}
where
    p_partkey = l_partkey
    and p_brand = '{brand}'
    and p_container = '{container}'
    and l_quantity < (
        select
            0.2 * avg(l_quantity)
        from
            {lineitem}
        where
            l_partkey = p_partkey
    )
""",
    18: """
select
    c_name,
    c_custkey,
    o_orderkey,
    o_orderdate,
    o_totalprice,
    sum(l_quantity)
from
    {customer},
    {orders},
    {lineitem}
where
    o_orderkey in (
        select
            l_orderkey
        from
            {lineitem}
        group by
            l_orderkey
        having
            sum(l_quantity) > {quantity}
    )
    and c_custkey = o_custkey
    and o_orderkey = l_orderkey
group by
    c_name,
    c_custkey,
    o_orderkey,
    o_orderdate,
    o_totalprice
order by
    o_totalprice desc,
    o_orderdate
limit 100
""",
    19: """
select
    sum(l_extendedprice * (1 - l_discount)) as revenue
from
    {lineitem},
    {part}
where
    (
        p_partkey = l_partkey
        and p_brand = '{brand1}'
        and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        and l_quantity >= {quantity1} and l_quantity <= {quantity1} + 10
        and p_size between 1 and 5
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
    or (
        p_partkey = l_partkey
        and p_brand = '{brand2}'
        and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        and l_quantity >= {quantity2} and l_quantity <= {quantity2} + 10
        and p_size between 1 and 10
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
    or (
        p_partkey = l_partkey
        and p_brand = '{brand3}'
        and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        and l_quantity >= {quantity3} and l_quantity <= {quantity3} + 10
        and p_size between 1 and 15
        and l_shipmode in ('AIR', 'AIR REG')
        and l_shipinstruct = 'DELIVER IN PERSON'
    )
""",
    20: """
select
    s_name,
    s_address
from
    {supplier},
    {nation}
where
    s_suppkey in (
        select
            ps_suppkey
        from
            {partsupp}
        where
            ps_partkey in (
                select
                    p_partkey
                from
                    {part}
                where
                    p_name like '{color}%'
            )
            and ps_availqty > (
                select
                    0.5 * sum(l_quantity)
                from
                    {lineitem}
                where
                    l_partkey = ps_partkey
                    and l_suppkey = ps_suppkey
                    and l_shipdate >= date '{date}'
                    and l_shipdate < date '{date}' + interval '1' year
            )
    )
    and s_nationkey = n_nationkey
    and n_name = '{nation_name}'
order by
    s_name
""",
    21: """
select
    s_name,
    count(*) as numwait
from
    {supplier},
    {lineitem} l1,
    {orders},
    {nation}
where
    s_suppkey = l1.l_suppkey
    and o_orderkey = l1.l_orderkey
    and o_orderstatus = 'F'
    and l1.l_receiptdate > l1.l_commitdate
    and exists (
        select
            *
        from
            {lineitem} l2
        where
            l2.l_orderkey = l1.l_orderkey
            and l2.l_suppkey <> l1.l_suppkey
    )
    and not exists (
        select
            *
        from
            {lineitem} l3
        where
            l3.l_orderkey = l1.l_orderkey
            and l3.l_suppkey <> l1.l_suppkey
            and l3.l_receiptdate > l3.l_commitdate
    )
    and s_nationkey = n_nationkey
    and n_name = '{nation_name}'
group by
    s_name
order by
    numwait desc,
    s_name
limit 100
""",
    22: """
select
    cntrycode,
    count(*) as numcust,
    sum(c_acctbal) as totacctbal
from
    (
        select
            substring(c_phone, 1, 2) as cntrycode,
            c_acctbal
        from
            {customer}
        where
            substring(c_phone, 1, 2) in
                ('{i1}', '{i2}', '{i3}', '{i4}', '{i5}', '{i6}', '{i7}')
            and c_acctbal > (
                select
                    avg(c_acctbal)
                from
                    {customer}
                where
                    c_acctbal > 0.00
                    and substring(c_phone, 1, 2) in
                        ('{i1}', '{i2}', '{i3}', '{i4}', '{i5}', '{i6}', '{i7}')
            )
            and not exists (
                select
                    *
                from
                    {orders}
                where
                    o_custkey = c_custkey
            )
    ) as custsale
group by
    cntrycode
order by
    cntrycode
""",
}

# --- parameters -------------------------------------------------------------------------------


def _numbered(name: str, values: list) -> dict:
    """``{name1: values[0], name2: values[1], ...}``: the spec's numbered parameters."""
    return {f"{name}{i}": v for i, v in enumerate(values, start=1)}


#: The validation parameters of clause 2.4.x ("Validation"); Q11's fraction depends on the SF.
VALIDATION: dict[int, dict] = {
    1: {"delta": 90},
    2: {"size": 15, "type": "BRASS", "region_name": "EUROPE"},
    3: {"segment": "BUILDING", "date": "1995-03-15"},
    4: {"date": "1993-07-01"},
    5: {"region_name": "ASIA", "date": "1994-01-01"},
    6: {"date": "1994-01-01", "discount": "0.06", "quantity": 24},
    7: {"nation1": "FRANCE", "nation2": "GERMANY"},
    8: {"nation_name": "BRAZIL", "region_name": "AMERICA", "type": "ECONOMY ANODIZED STEEL"},
    9: {"color": "green"},
    10: {"date": "1993-10-01"},
    11: {"nation_name": "GERMANY"},
    12: {"shipmode1": "MAIL", "shipmode2": "SHIP", "date": "1994-01-01"},
    13: {"word1": "special", "word2": "requests"},
    14: {"date": "1995-09-01"},
    15: {"date": "1996-01-01"},
    16: {
        "brand": "Brand#45",
        "type": "MEDIUM POLISHED",
        **_numbered("size", [49, 14, 23, 45, 19, 3, 36, 9]),
    },
    17: {"brand": "Brand#23", "container": "MED BOX"},
    18: {"quantity": 300},
    19: {
        "quantity1": 1,
        "quantity2": 10,
        "quantity3": 20,
        "brand1": "Brand#12",
        "brand2": "Brand#23",
        "brand3": "Brand#34",
    },
    20: {"color": "forest", "date": "1994-01-01", "nation_name": "CANADA"},
    21: {"nation_name": "SAUDI ARABIA"},
    22: _numbered("i", ["13", "31", "23", "29", "30", "18", "17"]),
}


def _month_start(rng: random.Random, first: tuple[int, int], last: tuple[int, int]) -> str:
    """First day of a month drawn uniformly from ``first`` to ``last`` (year, month), inclusive."""
    lo, hi = first[0] * 12 + first[1] - 1, last[0] * 12 + last[1] - 1
    year, month0 = divmod(rng.randint(lo, hi), 12)
    return f"{year:04d}-{month0 + 1:02d}-01"


def _year_start(rng: random.Random) -> str:
    """January 1st of a year drawn from 1993..1997."""
    return f"{rng.randint(1993, 1997)}-01-01"


def _brand(rng: random.Random) -> str:
    return f"Brand#{rng.randint(1, 5)}{rng.randint(1, 5)}"


def _part_type(rng: random.Random, syllables: int = 3) -> str:
    return " ".join(rng.choice(words) for words in TYPE_SYLLABLES[:syllables])


def _q8(rng: random.Random) -> dict:
    nation = rng.choice(NATIONS)
    return {"nation_name": nation, "region_name": NATION_REGION[nation], "type": _part_type(rng)}


#: qgen's substitution rules of clause 2.4.x ("Substitution Parameters"), one draw per query.
QGEN: dict[int, Callable[[random.Random], dict]] = {
    1: lambda rng: {"delta": rng.randint(60, 120)},
    2: lambda rng: {
        "size": rng.randint(1, 50),
        "type": rng.choice(TYPE_SYLLABLES[2]),
        "region_name": rng.choice(REGIONS),
    },
    3: lambda rng: {"segment": rng.choice(SEGMENTS), "date": f"1995-03-{rng.randint(1, 31):02d}"},
    4: lambda rng: {"date": _month_start(rng, (1993, 1), (1997, 10))},
    5: lambda rng: {"region_name": rng.choice(REGIONS), "date": _year_start(rng)},
    6: lambda rng: {
        "date": _year_start(rng),
        "discount": f"0.0{rng.randint(2, 9)}",
        "quantity": rng.randint(24, 25),
    },
    7: lambda rng: _numbered("nation", rng.sample(NATIONS, 2)),
    8: _q8,
    9: lambda rng: {"color": rng.choice(COLORS)},
    10: lambda rng: {"date": _month_start(rng, (1993, 2), (1995, 1))},
    11: lambda rng: {"nation_name": rng.choice(NATIONS)},
    12: lambda rng: {**_numbered("shipmode", rng.sample(SHIP_MODES, 2)), "date": _year_start(rng)},
    13: lambda rng: {"word1": rng.choice(Q13_WORDS[0]), "word2": rng.choice(Q13_WORDS[1])},
    14: lambda rng: {"date": _month_start(rng, (1993, 1), (1997, 12))},
    15: lambda rng: {"date": _month_start(rng, (1993, 1), (1997, 10))},
    16: lambda rng: {
        "brand": _brand(rng),
        "type": _part_type(rng, 2),
        **_numbered("size", rng.sample(range(1, 51), 8)),
    },
    17: lambda rng: {
        "brand": _brand(rng),
        "container": " ".join(rng.choice(words) for words in CONTAINER_SYLLABLES),
    },
    18: lambda rng: {"quantity": rng.randint(312, 315)},
    19: lambda rng: {
        "quantity1": rng.randint(1, 10),
        "quantity2": rng.randint(10, 20),
        "quantity3": rng.randint(20, 30),
        **_numbered("brand", [_brand(rng) for _ in range(3)]),
    },
    20: lambda rng: {
        "color": rng.choice(COLORS),
        "date": _year_start(rng),
        "nation_name": rng.choice(NATIONS),
    },
    21: lambda rng: {"nation_name": rng.choice(NATIONS)},
    22: lambda rng: _numbered("i", [str(c) for c in rng.sample(range(10, 35), 7)]),
}


def q11_fraction(sf: float) -> str:
    """Q11's FRACTION, 0.0001 / SF, as plain decimal text (never scientific notation)."""
    if sf <= 0:
        raise WorkloadError(f"scale factor must be positive, got {sf}")
    # Ten significant digits keep the literal short for any SF (0.0001 / 3 would not end).
    return format(Context(prec=10).divide(Decimal("0.0001"), Decimal(repr(float(sf)))), "f")


def _check_qid(qid: int) -> None:
    if qid not in QUERY_IDS:
        raise WorkloadError(f"unknown TPC-H query id {qid!r}; use 1..22")


def _with_scale(qid: int, params: dict, sf: float) -> dict:
    return {**params, "fraction": q11_fraction(sf)} if qid == 11 else params


def validation_params(qid: int, sf: float = 1.0) -> dict:
    """The specification's validation parameters of query ``qid`` (Q11's fraction scaled by ``sf``).

    >>> validation_params(3)
    {'segment': 'BUILDING', 'date': '1995-03-15'}
    """
    _check_qid(qid)
    return _with_scale(qid, dict(VALIDATION[qid]), sf)


def random_params(qid: int, rng: random.Random, sf: float = 1.0) -> dict:
    """Parameters of query ``qid`` drawn by qgen's rules from ``rng``."""
    _check_qid(qid)
    return _with_scale(qid, QGEN[qid](rng), sf)


# --- rendering --------------------------------------------------------------------------------


def _table_names(tables: Mapping[str, str] | None) -> dict[str, str]:
    """Every table's SQL text: its name unless ``tables`` maps it to something else."""
    return {table: table for table in TABLES} | dict(tables or {})


def render(qid: int, params: Mapping[str, object], tables: Mapping[str, str] | None = None) -> str:
    """The SQL of query ``qid`` with ``params`` filled in and tables named by ``tables``.

    ``tables`` maps a table name to the SQL text to read instead, such as a derived table
    ``(select * from lineitem where l_orderkey <> -7)``; unmapped tables keep their names.

    >>> "from\\n    lineitem" in render(1, {"delta": 90})
    True
    """
    _check_qid(qid)
    unknown = set(tables or {}) - set(TABLES)
    if unknown:
        raise WorkloadError(f"unknown TPC-H tables {sorted(unknown)}; use names from {TABLES}")
    try:
        return TEMPLATES[qid].format(**_table_names(tables), **params).strip()
    except KeyError as missing:
        raise WorkloadError(f"Q{qid} needs parameter {missing}; got {sorted(params)}") from None


# --- variants ---------------------------------------------------------------------------------


def _unchanged(params: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Variant:
    """How a variant statement departs from its original (the paper's Random-QS-v).

    ``change`` returns new values for some parameters, given the original's. ``at_scan`` maps a
    table to a predicate (a template over the parameters and table names) that is also applied
    in a derived table right over every scan of that table: this is what puts a changed
    predicate *low* in the analyzed plan. The predicate keeps every row the query itself keeps,
    so the variant returns what its changed parameters give in the plain template. ``edit``
    replaces one piece of the rendered SQL, for queries without a parameter at the needed depth.
    """

    note: str
    change: Callable[[dict], dict] = _unchanged
    at_scan: Mapping[str, str] = field(default_factory=dict)
    edit: tuple[str, str] | None = None


def _cycle(value: int, lo: int, hi: int, step: int) -> int:
    """``value`` moved ``step`` places within lo..hi, wrapping around."""
    return lo + (value - lo + step) % (hi - lo + 1)


def _shift(options: tuple[str, ...], current: str, step: int) -> str:
    """The option ``step`` places after ``current``, wrapping around."""
    return options[(options.index(current) + step) % len(options)]


def _next(options: tuple[str, ...], current: str, *, avoid: tuple[str, ...] = ()) -> str:
    """The first option after ``current`` (wrapping around) that is not in ``avoid``."""
    start = options.index(current)
    for step in range(1, len(options)):
        candidate = options[(start + step) % len(options)]
        if candidate not in avoid:
            return candidate
    raise WorkloadError(f"no option besides {current!r} and {avoid} in {options}")


def _shift_months(date: str, months: int, first: tuple[int, int], last: tuple[int, int]) -> str:
    """``date`` moved ``months`` months within the months first..last (year, month), wrapping."""
    year, month, day = (int(part) for part in date.split("-"))
    lo, hi = first[0] * 12 + first[1] - 1, last[0] * 12 + last[1] - 1
    moved = _cycle(year * 12 + month - 1, lo, hi, months)
    return f"{moved // 12:04d}-{moved % 12 + 1:02d}-{day:02d}"


def _shift_years(date: str, years: int) -> str:
    return _shift_months(date, 12 * years, (1993, 1), (1997, 12))


def _march_1995_day(date: str, days: int) -> str:
    return f"1995-03-{_cycle(int(date[-2:]), 1, 31, days):02d}"


def _next_brand(brand: str) -> str:
    return f"{brand[:-1]}{_cycle(int(brand[-1]), 1, 5, 1)}"


def _next_type(part_type: str) -> str:
    *head, material = part_type.split(" ")
    return " ".join([*head, _next(TYPE_SYLLABLES[2], material)])


def _next_container(container: str) -> str:
    size, kind = container.split(" ")
    return f"{size} {_next(CONTAINER_SYLLABLES[1], kind)}"


def _q8_other_nation(params: dict) -> dict:
    """Another nation, from another region, with its region (Q8 ties the two together)."""
    same_region = tuple(n for n, r in NATION_REGION.items() if r == params["region_name"])
    nation = _next(NATIONS, params["nation_name"], avoid=same_region)
    return {"nation_name": nation, "region_name": NATION_REGION[nation]}


def _shifted_numbered(params: dict, name: str, lo: int, hi: int, step: int) -> dict:
    """Every ``name1``, ``name2``, ... moved ``step`` places in lo..hi: still distinct, all new."""
    return {k: _cycle(int(v), lo, hi, step) for k, v in params.items() if k.startswith(name)}


def _shifted_codes(params: dict) -> dict:
    return {k: str(v) for k, v in _shifted_numbered(params, "i", 10, 34, 1).items()}


# Predicates pushed to the scans; a semi-join form carries a dimension's restriction to a fact.
_Q2_PART = "p_size = {size} and p_type like '%{type}'"
_NATION_PAIR = "n_name in ('{nation1}', '{nation2}')"
_NATION_PAIR_KEYS = "select n_nationkey from {nation} where " + _NATION_PAIR
_NATION_KEY = "select n_nationkey from {nation} where n_name = '{nation_name}'"
_COLOR_PARTS = "select p_partkey from {part} where p_name like '%{color}%'"
_REGION_NATIONS = (
    "select n_nationkey from {nation}, {region} "
    "where n_regionkey = r_regionkey and r_name = '{region_name}'"
)
_Q16_PART = (
    "p_brand <> '{brand}' and p_type not like '{type}%' and p_size in "
    "({size1}, {size2}, {size3}, {size4}, {size5}, {size6}, {size7}, {size8})"
)
_Q18_BIG_ORDERS = (
    "o_orderkey in (select l_orderkey from {lineitem} "
    "group by l_orderkey having sum(l_quantity) > {quantity})"
)


def _date_window(column: str, length: int = 1, unit: str = "year") -> str:
    """The spec's ``column >= DATE and column < DATE + length unit``, DATE left a placeholder."""
    return (
        f"{column} >= date '{{date}}' and {column} < date '{{date}}' + interval '{length}' {unit}"
    )


#: Per query, the v60 variant (a change high in the plan) and the v30 variant (a change low).
VARIANT_RULES: dict[int, dict[str, Variant]] = {
    1: {
        "v60": Variant(
            "DELTA changed: the Filter over the scan and all above it differ",
            lambda p: {"delta": _cycle(p["delta"], 60, 120, 30)},
        ),
        "v30": Variant(
            "DELTA changed and applied at the lineitem scan",
            lambda p: {"delta": _cycle(p["delta"], 60, 120, 15)},
            {"lineitem": "l_shipdate <= date '1998-12-01' - interval '{delta}' day"},
        ),
    },
    2: {
        "v60": Variant(
            "REGION changed and applied at the region scan (the last join)",
            lambda p: {"region_name": _next(REGIONS, p["region_name"])},
            {"region": "r_name = '{region_name}'"},
        ),
        "v30": Variant(
            "SIZE and TYPE changed and applied at the part (first join) and partsupp scans",
            lambda p: {
                "size": _cycle(p["size"], 1, 50, 25),
                "type": _next(TYPE_SYLLABLES[2], p["type"]),
            },
            {
                "part": _Q2_PART,
                "partsupp": f"ps_partkey in (select p_partkey from {{part}} where {_Q2_PART})",
            },
        ),
    },
    3: {
        "v60": Variant(
            "SEGMENT changed: the Filter above the joins differs",
            lambda p: {"segment": _next(SEGMENTS, p["segment"])},
        ),
        "v30": Variant(
            "DATE changed and applied at the orders and lineitem scans",
            lambda p: {"date": _march_1995_day(p["date"], 10)},
            {"orders": "o_orderdate < date '{date}'", "lineitem": "l_shipdate > date '{date}'"},
        ),
    },
    4: {
        "v60": Variant(
            "DATE changed: the Filter over the scan and all above it differ",
            lambda p: {"date": _shift_months(p["date"], 3, (1993, 1), (1997, 10))},
        ),
        "v30": Variant(
            "DATE changed and applied at the orders scan",
            lambda p: {"date": _shift_months(p["date"], 6, (1993, 1), (1997, 10))},
            {"orders": _date_window("o_orderdate", 3, "month")},
        ),
    },
    5: {
        "v60": Variant(
            "REGION changed and applied at the region scan (the last join)",
            lambda p: {"region_name": _next(REGIONS, p["region_name"])},
            {"region": "r_name = '{region_name}'"},
        ),
        "v30": Variant(
            "DATE and REGION changed, the date applied at the orders scan, the region at the "
            "customer (first join), supplier and region scans",
            lambda p: {
                "date": _shift_years(p["date"], 2),
                "region_name": _shift(REGIONS, p["region_name"], 2),
            },
            {
                "customer": f"c_nationkey in ({_REGION_NATIONS})",
                "orders": _date_window("o_orderdate"),
                "supplier": f"s_nationkey in ({_REGION_NATIONS})",
                "region": "r_name = '{region_name}'",
            },
        ),
    },
    6: {
        "v60": Variant(
            "DISCOUNT changed: the Filter over the scan and the Aggregate differ",
            lambda p: {"discount": f"0.0{_cycle(int(p['discount'][-1]), 2, 9, 4)}"},
        ),
        "v30": Variant(
            "DATE changed and applied at the lineitem scan",
            lambda p: {"date": _shift_years(p["date"], 2)},
            {"lineitem": _date_window("l_shipdate")},
        ),
    },
    7: {
        "v60": Variant(
            "NATION2 changed and the nation pair applied at the nation scans (the last joins)",
            lambda p: {"nation2": _next(NATIONS, p["nation2"], avoid=(p["nation1"],))},
            {"nation": _NATION_PAIR},
        ),
        "v30": Variant(
            "both nations changed and applied at the supplier (first join), customer and "
            "nation scans",
            lambda p: {k: _shift(NATIONS, p[k], 3) for k in ("nation1", "nation2")},
            {
                "supplier": f"s_nationkey in ({_NATION_PAIR_KEYS})",
                "customer": f"c_nationkey in ({_NATION_PAIR_KEYS})",
                "nation": _NATION_PAIR,
            },
        ),
    },
    8: {
        "v60": Variant(
            "NATION and REGION changed, the region applied at the region scan (the last join)",
            _q8_other_nation,
            {"region": "r_name = '{region_name}'"},
        ),
        "v30": Variant(
            "TYPE changed and applied at the part (first join) and lineitem scans; the region "
            "applied at the customer scan",
            lambda p: {"type": _next_type(p["type"])},
            {
                "part": "p_type = '{type}'",
                "lineitem": "l_partkey in (select p_partkey from {part} where p_type = '{type}')",
                "customer": f"c_nationkey in ({_REGION_NATIONS})",
            },
        ),
    },
    9: {
        "v60": Variant(
            "COLOR changed: the Filter above the joins differs",
            lambda p: {"color": _next(COLORS, p["color"])},
        ),
        "v30": Variant(
            "COLOR changed and applied at the part (first join), partsupp and lineitem scans",
            lambda p: {"color": _shift(COLORS, p["color"], 2)},
            {
                "part": "p_name like '%{color}%'",
                "partsupp": f"ps_partkey in ({_COLOR_PARTS})",
                "lineitem": f"l_partkey in ({_COLOR_PARTS})",
            },
        ),
    },
    10: {
        "v60": Variant(
            "DATE changed: the Filter above the joins differs",
            lambda p: {"date": _shift_months(p["date"], 3, (1993, 2), (1995, 1))},
        ),
        "v30": Variant(
            "DATE changed and applied at the orders scan, the return flag at the lineitem scan",
            lambda p: {"date": _shift_months(p["date"], 6, (1993, 2), (1995, 1))},
            {"orders": _date_window("o_orderdate", 3, "month"), "lineitem": "l_returnflag = 'R'"},
        ),
    },
    11: {
        "v60": Variant(
            "NATION changed: the Filter above the joins and the HAVING differ",
            lambda p: {"nation_name": _next(NATIONS, p["nation_name"])},
        ),
        "v30": Variant(
            "NATION changed and applied at the supplier and nation scans",
            lambda p: {"nation_name": _shift(NATIONS, p["nation_name"], 2)},
            {"supplier": f"s_nationkey in ({_NATION_KEY})", "nation": "n_name = '{nation_name}'"},
        ),
    },
    12: {
        "v60": Variant(
            "SHIPMODE2 changed: the Filter above the join differs",
            lambda p: {"shipmode2": _next(SHIP_MODES, p["shipmode2"], avoid=(p["shipmode1"],))},
        ),
        "v30": Variant(
            "DATE changed and applied at the lineitem scan",
            lambda p: {"date": _shift_years(p["date"], 2)},
            {"lineitem": _date_window("l_receiptdate")},
        ),
    },
    13: {
        "v60": Variant(
            "WORD2 changed: the outer join's condition and all above it differ",
            lambda p: {"word2": _next(Q13_WORDS[1], p["word2"])},
        ),
        "v30": Variant(
            "WORD1 changed and applied at the orders scan",
            lambda p: {"word1": _next(Q13_WORDS[0], p["word1"])},
            {"orders": "o_comment not like '%{word1}%{word2}%'"},
        ),
    },
    14: {
        "v60": Variant(
            "DATE changed: the Filter above the join differs",
            lambda p: {"date": _shift_months(p["date"], 1, (1993, 1), (1997, 12))},
        ),
        "v30": Variant(
            "DATE changed and applied at the lineitem scan (the first join)",
            lambda p: {"date": _shift_months(p["date"], 6, (1993, 1), (1997, 12))},
            {"lineitem": _date_window("l_shipdate", 1, "month")},
        ),
    },
    15: {
        "v60": Variant(
            "suppliers within 10 % of the top revenue, not only the top: the outer Filter differs",
            edit=("and total_revenue = (", "and total_revenue >= 0.9 * ("),
        ),
        "v30": Variant(
            "DATE changed: the revenue0 aggregation over the lineitem scan differs",
            lambda p: {"date": _shift_months(p["date"], 3, (1993, 1), (1997, 10))},
        ),
    },
    16: {
        "v60": Variant(
            "SIZEs changed: the Filter above the join differs",
            lambda p: _shifted_numbered(p, "size", 1, 50, 25),
        ),
        "v30": Variant(
            "BRAND changed and the part predicates applied at the part scan",
            lambda p: {"brand": _next_brand(p["brand"])},
            {"part": _Q16_PART},
        ),
    },
    17: {
        "v60": Variant(
            "CONTAINER changed: the Filter above the join differs",
            lambda p: {"container": _next_container(p["container"])},
        ),
        "v30": Variant(
            "BRAND changed and the part predicates applied at the part scan",
            lambda p: {"brand": _next_brand(p["brand"])},
            {"part": "p_brand = '{brand}' and p_container = '{container}'"},
        ),
    },
    18: {
        "v60": Variant(
            "QUANTITY changed: the Filter above the joins differs",
            lambda p: {"quantity": p["quantity"] - 12},
        ),
        "v30": Variant(
            "QUANTITY changed and the large-order test applied at the orders scan",
            lambda p: {"quantity": p["quantity"] - 6},
            {"orders": _Q18_BIG_ORDERS},
        ),
    },
    19: {
        "v60": Variant(
            "QUANTITY1..3 changed: the Filter above the join differs",
            lambda p: {
                "quantity1": _cycle(p["quantity1"], 1, 10, 5),
                "quantity2": _cycle(p["quantity2"], 10, 20, 5),
                "quantity3": _cycle(p["quantity3"], 20, 30, 5),
            },
        ),
        "v30": Variant(
            "BRAND1..3 changed and applied at the part scan",
            lambda p: {k: _next_brand(p[k]) for k in ("brand1", "brand2", "brand3")},
            {"part": "p_brand in ('{brand1}', '{brand2}', '{brand3}')"},
        ),
    },
    20: {
        "v60": Variant(
            "COLOR and DATE changed: the Filter (its IN subquery) above the join differs",
            lambda p: {"color": _next(COLORS, p["color"]), "date": _shift_years(p["date"], 1)},
        ),
        "v30": Variant(
            "NATION changed and applied at the nation scan",
            lambda p: {"nation_name": _next(NATIONS, p["nation_name"])},
            {"nation": "n_name = '{nation_name}'"},
        ),
    },
    21: {
        "v60": Variant(
            "NATION changed: the Filter above the joins differs",
            lambda p: {"nation_name": _next(NATIONS, p["nation_name"])},
        ),
        "v30": Variant(
            "NATION changed and applied at the supplier (first join) and nation scans",
            lambda p: {"nation_name": _shift(NATIONS, p["nation_name"], 2)},
            {"supplier": f"s_nationkey in ({_NATION_KEY})", "nation": "n_name = '{nation_name}'"},
        ),
    },
    22: {
        "v60": Variant(
            "a HAVING threshold added over the outer Aggregate",
            edit=(
                "group by\n    cntrycode\n",
                "group by\n    cntrycode\nhaving\n    count(*) > 1\n",
            ),
        ),
        "v30": Variant(
            "country codes changed: the Filter over the customer scan and all above it differ",
            _shifted_codes,
        ),
    },
}

# --- statements -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One rendered TPC-H statement: query ``qid`` as ``variant`` ("orig", "v60" or "v30")."""

    qid: int
    variant: str
    params: dict
    sql: str


def _scan_tables(rule: Variant, params: dict, tables: Mapping[str, str] | None) -> dict[str, str]:
    """``tables`` with each of the rule's at-scan tables wrapped in a filtering derived table."""
    names = _table_names(tables)
    wrapped = dict(tables or {})
    for table, predicate in rule.at_scan.items():
        condition = predicate.format(**names, **params)
        wrapped[table] = f"(select * from {names[table]} where {condition})"
    return wrapped


def _apply_edit(sql: str, edit: tuple[str, str] | None) -> str:
    if edit is None:
        return sql
    old, new = edit
    if sql.count(old) != 1:
        raise WorkloadError(f"variant edit {old!r} does not occur exactly once in the statement")
    return sql.replace(old, new)


def variant_statement(
    qid: int, variant: str, params: Mapping[str, object], tables: Mapping[str, str] | None = None
) -> Statement:
    """The ``variant`` of query ``qid`` whose original has ``params``.

    >>> variant_statement(1, "v60", {"delta": 90}).params
    {'delta': 120}
    """
    _check_qid(qid)
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown variant {variant!r}; use one of {VARIANTS}")
    if variant == "orig":
        return Statement(qid, variant, dict(params), render(qid, params, tables))
    rule = VARIANT_RULES[qid][variant]
    changed = {**params, **rule.change(dict(params))}
    sql = render(qid, changed, _scan_tables(rule, changed, tables))
    return Statement(qid, variant, changed, _apply_edit(sql, rule.edit))


def statement(
    qid: int,
    variant: str = "orig",
    seed: int | None = None,
    sf: float = 1.0,
    tables: Mapping[str, str] | None = None,
) -> Statement:
    """Query ``qid`` as ``variant``: validation parameters if ``seed`` is None, else qgen's draw.

    The same arguments always give the same SQL text.

    >>> statement(6, seed=7).sql == statement(6, seed=7).sql
    True
    """
    _check_qid(qid)
    if seed is None:
        params = validation_params(qid, sf)
    else:
        params = random_params(qid, random.Random(seed), sf)
    return variant_statement(qid, variant, params, tables)


def all_statements(seed: int | None = None, sf: float = 1.0) -> list[Statement]:
    """The 66 statements of Random-QS-v: Q1..Q22 in order, each as orig, v60 and v30."""
    return [statement(qid, variant, seed, sf) for qid in QUERY_IDS for variant in VARIANTS]
