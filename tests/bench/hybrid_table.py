#!/usr/bin/env python3
"""The hybrid planners side by side on the problems issue 14 names: gpt3-1.3b, bert-large,
resnet152 and vgg16 on dgx-a100-2x8 and v100-4x4, fp32, global batch 512, each planner with
its defaults (`hippie-plan compare ... --json`). Prints one markdown table; a cell is the
plan's shape (pp x dp, or x(r0,r1,...) with per-stage replication; t tensor parallelism,
z ZeRO stage), micro-batches, samples/s and peak GiB, or "—" when the planner has no plan.

Usage: hybrid_table.py HIPPIE_PLAN   (any build's hippie-plan: older ones lack some planners)
"""
import json
import subprocess
import sys

MODELS = ["gpt3-1.3b", "bert-large", "resnet152", "vgg16"]
CLUSTERS = ["dgx-a100-2x8", "v100-4x4"]


def cell(result):
    if not result.get("feasible"):
        return "—"
    p, m = result["plan"], result["metrics"]
    pp = len(p["stages"]) // max(p.get("virtual_stages", 1), 1) if p.get("schedule") == "interleaved" else len(p["stages"])
    dp = "(" + ",".join(map(str, p["stage_replicas"])) + ")" if p.get("stage_replicas") else str(p["dp"])
    extra = (" t%d" % p["tp"] if p.get("tp", 1) > 1 else "") + (" z%d" % p["zero_stage"] if p.get("zero_stage", 0) > 0 else "")
    return "%dx%s%s mb%d: %.1f/s, %.2f GiB" % (pp, dp, extra, p["micro_batches"], m["throughput_samples_per_s"],
                                               m["max_peak_memory_bytes"] / 2**30)


def main():
    binary = sys.argv[1]
    planners, rows = [], []
    for model in MODELS:
        for cluster in CLUSTERS:
            out = subprocess.run([binary, "compare", "--model", model, "--cluster", cluster, "--global-batch", "512",
                                  "--precision", "fp32", "--json"], capture_output=True, text=True, check=True)
            cells = {}
            for r in json.loads(out.stdout)["results"]:
                if r["planner"] not in planners:
                    planners.append(r["planner"])
                cells[r["planner"]] = cell(r)
            rows.append(("%s / %s" % (model, cluster), cells))
    print("| model / cluster | " + " | ".join(planners) + " |")
    print("|---" * (len(planners) + 1) + "|")
    for name, cells in rows:
        print("| " + name + " | " + " | ".join(cells.get(p, "") for p in planners) + " |")


if __name__ == "__main__":
    main()
