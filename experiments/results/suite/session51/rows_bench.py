"""criss.workload.rows.row_difference on a large equal result, with and without its exact
multiset check first (session 51). Run from the repository: python PATH."""

import datetime
import decimal
import random
import time

from criss.workload import rows as m

random.seed(1)
rows = [
    (
        i,
        random.random(),
        decimal.Decimal(i) / 7,
        datetime.date(2000, 1, 1) + datetime.timedelta(i % 500),
        f"x{i % 1000}",
    )
    for i in range(1_200_000)
]
other = list(reversed(rows))
t = time.perf_counter()
assert m.row_difference(rows, other) is None
new = time.perf_counter() - t
m._equal_exactly = lambda a, b: False  # the comparison before the fast path
t = time.perf_counter()
assert m.row_difference(rows, other) is None
old = time.perf_counter() - t
print(
    f"1.2 M rows of 5 columns, equal in reverse order: tolerant sort {old:.2f} s, "
    f"exact multiset first {new:.2f} s"
)
