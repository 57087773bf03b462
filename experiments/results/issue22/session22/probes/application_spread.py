"""Two plain Spark applications and a disabled Criss one, alternated as criss replay does."""
import itertools, json, statistics, sys, tempfile
from pathlib import Path
from criss.workload.replay import ReplayConfig
from criss.workload.applications import ApplicationPlayer
from criss.workload.idle import wait_for_idle

def main():
    config = ReplayConfig(stream="zipf", queries=60, sf=1.0, seed=int(sys.argv[2]), modes=("spark", "criss-off"),
                          variants={"criss-off": {"enabled": False}}, warmup=True, isolation="application", idle_wait=3.0)
    stream = config.stream_queries()
    data = Path(sys.argv[1])
    home = Path(tempfile.mkdtemp(prefix="calib-"))
    players = {"a": ApplicationPlayer(config, "spark", None, data, stream),
               "b": ApplicationPlayer(config, "spark", None, data, stream),
               "off": ApplicationPlayer(config, "criss-off", home / "off", data, stream)}
    for p in players.values(): p.describe()
    for p in players.values(): p.warm_up(None)
    orders = list(itertools.permutations(players))
    res = {k: [] for k in players}
    for item in stream:
        for k in orders[item.position % len(orders)]:
            wait_for_idle(3.0)
            res[k].append(players[k].run(item))
    for p in players.values(): p.close()
    seen = set(); first = {k: 0.0 for k in players}
    for i, item in enumerate(stream):
        if item.sql in seen: continue
        seen.add(item.sql)
        for k in players: first[k] += res[k][i]["seconds"]
    tot = {k: sum(r["seconds"] for r in v) for k, v in res.items()}
    out = {"seed": config.seed, "total": {k: round(v, 2) for k, v in tot.items()}, "first": {k: round(v, 2) for k, v in first.items()},
           "median_ratio_b_a": round(statistics.median(rb["seconds"] / ra["seconds"] for ra, rb in zip(res["a"], res["b"])), 3),
           "median_ratio_off_a": round(statistics.median(ro["seconds"] / ra["seconds"] for ra, ro in zip(res["a"], res["off"])), 3),
           "median_ratio_off_b": round(statistics.median(ro["seconds"] / rb["seconds"] for rb, ro in zip(res["b"], res["off"])), 3)}
    print(json.dumps(out))
    json.dump({"summary": out, "runs": res}, open(sys.argv[3], "w"))

if __name__ == "__main__":
    main()
