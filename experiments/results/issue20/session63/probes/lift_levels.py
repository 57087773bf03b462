"""The lifts of committed replays, weighed again with the new values expected at the
template's own level (session 63), from what each replay recorded: each aggregate lift
decision's expected values, gain and Texec, and the stream's templates and variants.

An approximation, by template rather than by the aggregate's subsumption key, and with the
read and write terms of the gain held as they were: the gain moves by the change in
expected values times the decision's Texec. Two estimates at a template's level k >= 3
(below it both are the pooled share the replay used):

- ``level``: of the templates seen under k or more values but this one, how often one went
  on to another value; the pooled share counts as two more (what `78ada9f` ships);
- ``censored``: the same, but a template at its latest value counts as having stopped only
  once it came back (under an old value) since: the other way to read a template that has
  not gone on yet (rejected: it expects up to 13 new values on drift, where Q14's lift at
  its third value cost 3.0 s against 0.59 s plain and nothing rolled up from it).

A line starts with a mark per estimate: ``F`` where it flips the replay's decision. From
the repository root:

    python -m experiments.results.issue20.session63.probes.lift_levels RESULTS.json [...]
"""

import collections
import json
import sys

from criss.policies.first_sight import expected_more

PRIOR_QUERIES = 2.0
LIFTED = ("lift_pays", "lift_eager")


def level_expectations(values, returned, template, level, pooled):
    """Expected new values of ``template`` at ``level``: (level estimate, censored one)."""
    counts = {t: len(v) for t, v in values.items() if t != template}
    continued = sum(max(n - level, 0) for n in counts.values())
    reached = sum(max(n - level + 1, 0) for n in counts.values())
    stopped = sum(1 for t, n in counts.items() if n >= level and returned[t])
    return tuple(
        expected_more((continued + PRIOR_QUERIES * pooled) / (chances + PRIOR_QUERIES))
        for chances in (reached, continued + stopped)
    )


def weigh_again(path):
    data = json.load(open(path))
    plain = {q["position"]: q["seconds"] for q in data["modes"]["spark"]["queries"]}
    values, returned = collections.defaultdict(list), collections.defaultdict(bool)
    for record in data["modes"]["criss"]["queries"]:
        template, value = record["query"], record.get("variant") or record["statement"]
        returned[template] = value in values[template]
        if not returned[template]:
            values[template].append(value)
        level = len(values[template])
        for lift in (record.get("criss") or {}).get("lift_decisions", []):
            if lift.get("kind") != "aggregate" or "expected_values" not in lift or level < 3:
                continue
            before = lift["expected_values"]
            estimates = level_expectations(values, returned, template, level, before / (1 + before))
            gains = [lift["gain"] + (e - before) * lift["texec"] for e in estimates]
            marks = "".join("F" if (g > 0) != (lift["reason"] in LIFTED) else "." for g in gains)
            yield (
                f"  {marks} position {record['position']:3d} {template:4s} level {level} "
                f"{lift['reason']:13s} expected {before:.2f} -> {estimates[0]:.2f} "
                f"(censored {estimates[1]:.2f}), gain {lift['gain']:.2f} -> {gains[0]:.2f} "
                f"({gains[1]:.2f}); plain {plain[record['position']]:.2f} s, "
                f"Criss {record['seconds']:.2f} s"
            )


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(path.rsplit("/", 1)[-1])
        for line in weigh_again(path):
            print(line)
