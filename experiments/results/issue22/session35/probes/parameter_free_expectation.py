"""What a home learns, over a replayed stream, of how often templates come back under new
values, and what a first-seen parameter-free aggregate expects at each first statement of
a template that has one (TPC-H Q17 and Q18): with the home's share of new values as the
prior of its own chances (this session's change) and with the fixed one-in-two prior
before it. Computed with criss.planner.learning.Learning over the stream's statements (no
Spark): a position whose template ran before is a return, under new values if its
statement had not run before.

    python -m experiments.results.issue22.session35.probes.parameter_free_expectation FILE...
"""

import json
import sys

from criss.planner.learning import Learning
from criss.policies.first_sight import expected_more
from experiments.summary import statement_keys

#: TPC-H templates with an aggregate no parameter selects the rows of (criss.qtree.parameters).
WITH_PARAMETER_FREE = ("Q17", "Q18")


class _Meta:
    """The QTree's meta table, as much of it as Learning's counters use."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def meta(self, name: str, default=None):
        return self.values.get(name, default)

    def set_meta(self, name: str, value: float) -> None:
        self.values[name] = value


def _fixed_prior(learning: Learning) -> float:
    """The expectation as computed before this session: one in two assumed."""
    seen = learning._rate("recent_parameter_free_seen", 0.0) + 1.0
    return expected_more(seen / (learning._rate("recent_parameter_free", 0.0) + 2.0))


def replay(path: str) -> None:
    data = json.load(open(path))
    keys = statement_keys(data)
    templates = [q["query"] for q in data["modes"]["spark"]["queries"]]
    learning = Learning(_Meta())
    seen_keys, seen_templates = set(), set()
    print(path.split("/")[-1])
    for position, (key, template) in enumerate(zip(keys, templates, strict=True)):
        new_statement = key not in seen_keys
        if template in seen_templates:
            learning.learn_template_return(new_values=new_statement)
        if new_statement and template in WITH_PARAMETER_FREE:
            print(
                f"  pos {position:3} {template:4} new values share {learning.new_values_share:.3f}"
                f"  expected reuses {learning.expected_parameter_free_reuses:.3f}"
                f" (fixed prior {_fixed_prior(learning):.3f})"
                f"  aggregate seen before: {template in seen_templates}"
            )
            learning.learn_parameter_free(template in seen_templates)
        seen_keys.add(key)
        seen_templates.add(template)
    print(f"  end: new values share {learning.new_values_share:.3f}")


if __name__ == "__main__":
    for file in sys.argv[1:]:
        replay(file)
