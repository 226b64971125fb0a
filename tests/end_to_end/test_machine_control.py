"""scripts/machine_control.py: a run on another machine is set against the same config's run here, in
units of the seeds' SD of the same measure here; a config without its run here is not compared."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from machine_control import compare, table  # noqa: E402


def rows(machine: str, values: dict[tuple[str, int], float]) -> pd.DataFrame:
    return pd.DataFrame([{"run": f"{enc}_s{seed}_{machine}", "encoding": enc, "steps": 600, "seed": seed,
                          "device": machine, "key": f"{enc}/{seed}", "config": enc, "what": "ppl 16x",
                          "scored": "nonoverlapping", "value": v} for (enc, seed), v in values.items()])


def test_a_machine_difference_is_read_in_seed_sds_of_the_same_config():
    here = rows("cpu", {("nope", 0): 10.0, ("nope", 1): 11.0, ("nope", 2): 9.0, ("rope", 1): 5.0})
    there = rows("gpu", {("nope", 0): 10.2, ("rope", 0): 5.5})  # rope's seed 0 has no run here
    out = compare(there, here)
    assert list(out["encoding_a"]) == ["nope"]
    (r,) = out.to_dict("records")
    sd = 100 * np.std(np.log([10.0, 11.0, 9.0]), ddof=1)
    assert r["diff_%"] == pytest.approx(100 * np.log(1.02)) and r["seed_sd_%"] == pytest.approx(sd)
    assert r["in_sds"] == pytest.approx(100 * np.log(1.02) / sd)
    assert "1 measures of 1 runs matched" in table(out) and "0 of 1 above 1" in table(out)
