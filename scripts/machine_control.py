"""How far the same runs land on two machines, against how far the seeds spread on one:

    python scripts/machine_control.py RUNS_A RUNS_B [--out FILE]     # folders of runs or records files
    # e.g. the map's GPU control against the CPU records of the same configs:
    python scripts/machine_control.py results/map/records/gpu_control.parquet results/budget/records.parquet \
        --out results/map/machine_control.md

Runs are matched by their identity (posbench/store/identity.py) without ``data.path``: the GPU machine
reads the CPU studies' corpus from an unpacked archive (scripts/gpu_corpus.py), so its runs name a path
where the CPU's name none; everything else (encoding, model, rates, schedule, budget, seed) must agree.
For each matched pair: the final validation loss and the perplexity at every evaluation both recorded
(variant x multiple x protocol x token set, the corpus's hash aside; the window control at 1x is the
row itself and left out), as A's difference from B in % (100 x log A/B); beside it, the seeds' SD of the same measure
on B's machine (the SD of its log over B's seeds of that config), so that a machine difference can be
read against the spread every verdict already carries. A machine difference well inside that spread leaves
the runs of the two machines comparable at the seeds' resolution; it is not bit-for-bit reproduction
(training amplifies the rounding of float sums: results/map/RECORDS.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from posbench.store.identity import run_identity
from posbench.store.records import SUFFIX, as_folder
from posbench.store.rundir import RunDir, find_runs


def key(config, seeded: bool = True) -> str:
    identity = run_identity(config)
    identity["data"] = {k: v for k, v in identity["data"].items() if k != "path"}
    if not seeded:
        identity.pop("seed")
    return json.dumps(identity, sort_keys=True, default=str)


def records(runs: Path) -> pd.DataFrame:
    """One row per ended run x evaluation (and one for the validation loss), keyed for matching."""
    rows = []
    for run_dir in map(RunDir, find_runs(runs)):
        metrics, config = run_dir.read_metrics(warn=False), run_dir.read_run_config()
        if metrics is None or config is None or metrics.get("status") != "completed":
            continue
        base = {"run": run_dir.name, "encoding": metrics["encoding"], "steps": metrics["budget"]["steps"],
                "seed": metrics["seed"], "device": metrics["device"], "key": key(config), "config": key(config, False)}
        rows.append({**base, "what": "val loss", "scored": "validation batches", "value": metrics["final_val_loss"]})
        for e in metrics["evaluations"]:
            if e.get("ppl") is None or (e["multiple"] == 1 and e["variant"].endswith("+swaL")):
                continue  # at 1x the window control is the row itself (a window of train_len keys)
            tokens = str(e.get("token_set") or "").partition(":")[2]  # the token set less the corpus hash
            rows.append({**base, "what": f"ppl {e['variant']} {e['multiple']:g}x",
                         "scored": f"{e['protocol']} {tokens}", "value": e["ppl"]})
    return pd.DataFrame(rows)


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """A's runs matched with B's: A vs B in %, and the seeds' SD of the same config on B's machine (the
    SD of log values over B's seeds, in %: B's run and its config's other seeds)."""
    pairs = a.merge(b, on=["key", "what", "scored"], suffixes=("_a", "_b"))
    pairs["diff_%"] = 100 * np.log(pairs["value_a"] / pairs["value_b"])  # in log units, as the SD
    logs = b.assign(log=np.log(b["value"]))
    sd = logs.groupby(["config", "what", "scored"])["log"].agg(["std", "count"]).reset_index()
    sd = sd.rename(columns={"config": "config_a", "std": "seed_sd", "count": "seeds"})
    out = pairs.merge(sd, on=["config_a", "what", "scored"], how="left")
    out["seed_sd_%"] = 100 * out["seed_sd"]
    out["in_sds"] = out["diff_%"].abs() / out["seed_sd_%"]
    return out.sort_values(["encoding_a", "steps_a", "what"])


def table(out: pd.DataFrame) -> str:
    lines = ["| encoding | steps | measure | A | B | A vs B | seeds' SD on B's machine | A vs B in SDs |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in out.iterrows():
        sd = "-" if pd.isna(r["seed_sd_%"]) else f"{r['seed_sd_%']:.2f}% ({int(r['seeds'])} seeds)"
        ratio = "-" if pd.isna(r["in_sds"]) else f"{r['in_sds']:.2f}"
        lines.append(f"| {r['encoding_a']} | {r['steps_a']} | {r['what']} | {r['value_a']:.4f} | {r['value_b']:.4f} | "
                     f"{r['diff_%']:+.2f}% | {sd} | {ratio} |")
    ratios = out["in_sds"].dropna()
    summary = (f"{len(out)} measures of {out['run_a'].nunique()} runs matched. |A vs B|: median {out['diff_%'].abs().median():.2f}%, "
               f"largest {out['diff_%'].abs().max():.2f}%; in units of the seeds' SD of the same measure: median "
               f"{ratios.median():.2f}, largest {ratios.max():.2f}, {int((ratios > 1).sum())} of {len(ratios)} above 1. "
               "For scale: two independent seeds differ by a median 0.95 SD (|N(0, 2)|); each SD here rests on "
               f"{'-'.join(sorted({str(int(n)) for n in out['seeds'].dropna()}))} seeds.")
    devices = f"A: {', '.join(sorted(out['device_a'].unique()))}. B: {', '.join(sorted(out['device_b'].unique()))}."
    return "\n".join([devices, "", summary, "", *lines])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_a", type=Path)
    ap.add_argument("runs_b", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    for p in (args.runs_a, args.runs_b):
        if not p.is_dir() and not (p.suffix == SUFFIX and p.is_file()):
            raise SystemExit(f"machine_control: {p} is neither a folder of runs nor a records file ({SUFFIX})")
    with as_folder(args.runs_a) as a, as_folder(args.runs_b) as b:
        out = compare(records(a), records(b))
    if out.empty:
        raise SystemExit("machine_control: no run of the first folder has a run of the same config in the second")
    text = table(out)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
