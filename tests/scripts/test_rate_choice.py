"""scripts/rate_choice.py on made-up records: a one-seed grid's committed losses and a second seed's runs read
by the report's rule (posbench/report/analysis/tuning.py ``decide``): a rate that wins by many seed SDs is
chosen, a margin inside the seeds' spread goes to the common rate; folders that share no encoding are one
line and exit 1."""

from __future__ import annotations

import pandas as pd

from posbench.report.analysis.tuning import DEFAULT

LOW, COMMON = DEFAULT[0] / 2, DEFAULT[0]


def grid(tmp_path, losses) -> str:
    """A committed ``tuning.csv`` of a one-seed grid: {(encoding, lr): val_loss}, the lowest loss chosen."""
    rows = pd.DataFrame([{"encoding": e, "model": "m", "train_len": 8, "lr": lr, "lr_mult": 1.0, "val_loss": v}
                         for (e, lr), v in losses.items()])
    rows["chosen"] = rows["val_loss"] == rows.groupby("encoding")["val_loss"].transform("min")
    path = tmp_path / "tuning.csv"
    rows.to_csv(path, index=False)
    return str(path)


def second_seed(losses, ratios):
    """The second seed's runs {(encoding, lr): val_loss} with their records {(encoding, lr): 2x/1x}."""
    runs, evals = [], []
    for (enc, lr), loss in losses.items():
        rid = f"{enc}_{lr:g}"
        runs.append({"run_id": rid, "encoding": enc, "model": "m", "train_len": 8, "seed": 1, "lr": lr, "lr_mult": 1.0,
                     "final_val_loss": loss})
        for mult, ppl in ((1.0, 5.0), (2.0, 5.0 * ratios[enc, lr])):
            evals.append({"run_id": rid, "encoding": enc, "variant": enc, "model": "m", "train_len": 8, "seed": 1,
                          "status": "completed", "protocol": "nonoverlapping", "length": int(8 * mult),
                          "multiple": mult, "ppl": ppl, "token_set": "t", "windowed": False})
    return pd.DataFrame(runs), pd.DataFrame(evals), {}


def test_a_clear_winner_is_chosen_and_a_margin_inside_the_seeds_spread_goes_to_the_common_rate(script, tmp_path,
                                                                                                 monkeypatch, capsys):
    module = script("rate_choice")
    seed0 = {("nope", LOW): 2.00, ("nope", COMMON): 2.50, ("alibi", LOW): 2.00, ("alibi", COMMON): 2.01}
    seed1 = {("nope", LOW): 2.02, ("nope", COMMON): 2.48, ("alibi", LOW): 2.03, ("alibi", COMMON): 2.00}
    ratios = {("nope", LOW): 1.5, ("nope", COMMON): 3.0, ("alibi", LOW): 1.01, ("alibi", COMMON): 1.02}
    monkeypatch.setattr(module, "second_seed", lambda runs_dir: second_seed(seed1, ratios))
    assert module.main([grid(tmp_path, seed0), str(tmp_path / "runs")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| encoding | rate: val loss (seeds) |") and len(lines) == 4
    cells = {line.split(" | ")[0].strip("| `"): line.split(" | ") for line in lines[2:]}
    # nope: 0.48 nats apart with a seed SD of 0.014: the lower rate, as the one seed chose
    assert (float(cells["nope"][4]), float(cells["nope"][5])) == (LOW, LOW) and cells["nope"][3].startswith("best by 33.9")
    assert cells["nope"][1].startswith(f"{LOW:g}: 2.0100 (2); {COMMON:g}: 2.4900 (2)")
    # alibi: 0.01 apart with a seed SD of 0.016: the common rate, though the one seed chose the lower
    assert (float(cells["alibi"][4]), float(cells["alibi"][5])) == (LOW, COMMON)
    assert cells["alibi"][3] == "within 2 seed SDs of the best: the common setting"
    # the verdict of the second seed at each of the two best rates, and whether the rate moves its class
    assert f"{LOW:g}: 1.50" in cells["nope"][6] and f"{COMMON:g}: 3.00" in cells["nope"][6]


def test_folders_that_share_no_encoding_are_one_line_and_exit_1(script, tmp_path, monkeypatch, capsys):
    module = script("rate_choice")
    monkeypatch.setattr(module, "second_seed",
                        lambda runs_dir: second_seed({("t5", LOW): 2.0}, {("t5", LOW): 1.0}))
    assert module.main([grid(tmp_path, {("nope", LOW): 2.0}), str(tmp_path / "runs")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rate_choice: no encoding of") and err.count("\n") == 1
