#!/bin/bash
# q5a after q5, on the engine before (71c87df) and after (8ccb5ad) the union rule, alternating
cd /tmp/bench
for engine in 71c87df 8ccb5ad 71c87df 8ccb5ad; do
  git checkout -q $engine -- policies qtree criss
  echo "== engine $engine"
  timeout 900 .venv/bin/python experiments/results/issue22/session48/probes/action_excess.py --prior q5 --targets q5a 2>&1 | grep -v WARN | grep "^q5a\|cached"
  pkill -f SparkSubmit
done
git checkout -q 8ccb5ad -- policies qtree criss
