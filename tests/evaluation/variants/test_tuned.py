"""The tuned rows (posbench/evaluation/variants/tuned.py): a RoPE scaling at the setting of least held-out
loss among ``budget`` searched at each length past train_len, on the training split."""

import math

import numpy as np
import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import ROPE_SCALINGS
from posbench.core.errors import PosbenchError
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant, rows
from posbench.evaluation.variants import tuned as tuned_module
from posbench.evaluation.variants.tuned import candidate_settings, scaling_at, search_settings
from tests.helpers import model_of

TEXT = np.random.default_rng(0).integers(97, 123, size=4000).astype(np.uint8)
CALIBRATION = np.random.default_rng(1).integers(97, 123, size=4000).astype(np.uint8)
METHODS = [("yarn", 4.0), ("ntk", 4.0), ("dynamic_ntk", None), ("longrope", 4.0)]


def tuned(scaling, factor, **params):
    return make_variant("tuned", {"scaling": scaling, "factor": factor, **params})


def fit_eval(calibration=CALIBRATION, text=TEXT):
    return ResolvedEval(EvalConfig(multiples=[1, 4]), 16, text=text, calibration=calibration)


@pytest.mark.parametrize("scaling,factor", METHODS)
@pytest.mark.parametrize("budget", [1, 5])
def test_every_method_evaluates_exactly_its_budget_with_the_default_first(scaling, factor, budget, monkeypatch):
    model = model_of("rope").float()
    calls = []
    real = tuned_module.heldout_loss
    monkeypatch.setattr(tuned_module, "heldout_loss", lambda *a: calls.append(1) or real(*a))
    v = tuned(scaling, factor, budget=budget, windows=2)
    v.fit(model, fit_eval(), 64, torch.device("cpu"))
    record = v.fit_record(64)
    assert len(calls) == budget == record["evaluations"] == len(record["searched"])
    assert record["searched"][0]["setting"] == record["default"] == v.default_setting(model.encoding)
    settings = [str(s["setting"]) for s in record["searched"]]
    assert len(set(settings)) == budget  # no setting evaluated twice
    assert record["heldout_loss_band"] == [min(s["heldout_loss"] for s in record["searched"]),
                                           max(s["heldout_loss"] for s in record["searched"])]
    assert record["chosen_loss"] == record["heldout_loss_band"][0]


def test_the_defaults_are_the_papers():
    assert candidate_settings("yarn", 16, 4.0)[0] == {"beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0}
    assert candidate_settings("ntk", 16, 4.0)[0] == {"alpha": 4.0}
    assert candidate_settings("dynamic_ntk", 16, None)[0] == {"factor": 1.0}
    for factor in (1.0, 4.0, 16.0):  # budget distinct settings whatever s (s = 1 too)
        assert len({s["alpha"] for s in candidate_settings("ntk", 16, factor)}) == 16
    assert len({s["factor"] for s in candidate_settings("dynamic_ntk", 16, None)}) == 16
    # the searched sets grow with the budget: a larger budget searches the smaller one's YaRN settings too
    assert candidate_settings("yarn", 16, 4.0)[:8] == candidate_settings("yarn", 8, 4.0)
    assert all(s["beta_slow"] < s["beta_fast"] for s in candidate_settings("yarn", 64, 4.0))


@pytest.mark.parametrize("scaling,factor", [("yarn", 4.0), ("ntk", 4.0), ("dynamic_ntk", None)])
def test_each_default_setting_is_the_registered_scaling_itself(scaling, factor):
    """The searched default is the rope_scaling row's forward: the same frequencies and logit factor."""
    default = candidate_settings(scaling, 1, factor)[0]
    f = factor or 4.0  # dynamic: max(1, L / train_len) at L = 64, train_len 16
    want = ROPE_SCALINGS.get(scaling).compute(16, 10000.0, f, 16, 64)
    got = scaling_at(scaling, default).compute(16, 10000.0, f, 16, 64)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == pytest.approx(want[1])


def test_a_setting_changes_the_frequencies_as_its_formula_says():
    """NTK alpha: base alpha^(d/(d-2)); dynamic NTK f: alpha = f L/L_train - (f - 1); YaRN mscale: (0.1 m ln s + 1)^2."""
    d, base = 16, 10000.0
    inv, _ = scaling_at("ntk", {"alpha": 9.0}).compute(d, base, 4.0, 16, 64)
    torch.testing.assert_close(inv, base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d) / 9.0 ** (torch.arange(0, d, 2) / (d - 2)))
    inv_dyn, _ = scaling_at("dynamic_ntk", {"factor": 2.0}).compute(d, base, 4.0, 16, 64)  # 2 x 4 - 1 = 7
    torch.testing.assert_close(inv_dyn, scaling_at("ntk", {"alpha": 7.0}).compute(d, base, 4.0, 16, 64)[0])
    _, logit = scaling_at("yarn", {"beta_fast": 32.0, "beta_slow": 1.0, "mscale": 2.0}).compute(d, base, 4.0, 16, 64)
    assert logit == pytest.approx((0.2 * math.log(4) + 1) ** 2)


@pytest.mark.parametrize("scaling,factor,best", [("ntk", 4.0, {"alpha": 16.0}), ("dynamic_ntk", None, {"factor": 16.0})])
def test_a_clearly_better_setting_that_is_not_the_default_is_chosen(scaling, factor, best):
    key, target = next(iter(best.items()))
    fit = search_settings(scaling, 8, factor, lambda s: abs(math.log(s[key] / target)), None, 64, 8)
    assert fit.settings[fit.chosen] == best and fit.chosen != 0
    yarn = search_settings("yarn", 8, 4.0, lambda s: (s["mscale"] - 2.4) ** 2, None, 64, 8)
    assert yarn.chosen != 0 and abs(yarn.settings[yarn.chosen]["mscale"] - 2.4) < abs(1.0 - 2.4)


def test_longrope_search_moves_its_factors_toward_a_better_objective_within_its_budget():
    starts = tuned(*METHODS[3]).longrope_starts(model_of("rope").encoding)
    target = np.full(len(starts[0]), 4.0)
    fit = search_settings("longrope", 12, 4.0, lambda s: float(np.abs(np.array(s["long_factor"]) - target).sum()),
                          starts, 64, 8)
    assert len(fit.settings) == 12 and fit.settings[0]["long_factor"] == list(starts[0])
    assert fit.losses[fit.chosen] < fit.losses[0]
    assert all(np.all(np.diff(s["long_factor"]) >= 0) and 1 <= min(s["long_factor"]) and max(s["long_factor"]) <= 4
               for s in fit.settings)  # dim_mono: monotone, in [1, s]


def test_the_fit_reads_only_the_training_split():
    """No scored text at all (text None), or another one: the same settings and losses."""
    model = model_of("rope").float()
    a, b = tuned("yarn", 4.0, budget=4, windows=2), tuned("yarn", 4.0, budget=4, windows=2)
    a.fit(model, fit_eval(text=None), 64, torch.device("cpu"))
    b.fit(model, fit_eval(text=TEXT[::-1].copy()), 64, torch.device("cpu"))
    assert a.fit_record(64) == b.fit_record(64)
    c = tuned("yarn", 4.0, budget=4, windows=2)
    c.fit(model, fit_eval(calibration=CALIBRATION[::-1].copy(), text=None), 64, torch.device("cpu"))
    assert c.fit_record(64)["searched"] != a.fit_record(64)["searched"]  # the training split is what it reads


def test_up_to_train_len_nothing_is_fitted_and_the_row_is_the_default_row():
    v = tuned("yarn", 4.0)
    v.fit(model_of("rope"), fit_eval(calibration=None), 16, torch.device("cpu"))
    assert v.fitted == {} and v.options(AttentionOptions(), 16, 16) == AttentionOptions(rope=("yarn", 4.0))
    dyn = tuned("dynamic_ntk", None)
    assert dyn.options(AttentionOptions(), 16, 16) == AttentionOptions(rope=("dynamic_ntk", 1.0))


def test_bad_settings_and_scoring_before_fitting_are_one_line():
    with pytest.raises(PosbenchError, match=r"^eval.variants\[0\].budget of 'tuned' must be at least 1"):
        make_variant("tuned", {"factor": 4.0, "budget": 0}, prefix="eval.variants[0]")
    with pytest.raises(PosbenchError, match=r"^\+tuned searches the settings of yarn, ntk, dynamic_ntk, longrope; got scaling 'linear'$"):
        tuned("linear", 4.0)
    with pytest.raises(PosbenchError, match=r"^RoPE scaling yarn is static: give \+tuned its factor"):
        tuned("yarn", None)
    with pytest.raises(PosbenchError, match=r"^RoPE scaling dynamic_ntk takes its factor from each length"):
        tuned("dynamic_ntk", 4.0)
    v = tuned("ntk", 4.0)
    with pytest.raises(PosbenchError, match=r"^\+tuned has no setting chosen at 64 tokens"):
        model_of("rope")(torch.randint(0, 256, (1, 64)), None, v.options(AttentionOptions(), 64, 16))
    with pytest.raises(PosbenchError, match=r"^\+tuned searches its settings at 64 tokens on the training split, which has 0 tokens"):
        v.fit(model_of("rope"), fit_eval(calibration=None), 64, torch.device("cpu"))


def test_the_rows_names_and_records():
    enc = model_of("rope").encoding
    cfg = EvalConfig(multiples=[1, 4], variants=[{"name": "tuned", "scaling": "yarn", "factor": 4.0},
                                                  {"name": "tuned", "scaling": "dynamic_ntk", "budget": 8},
                                                  {"name": "tuned", "scaling": "longrope", "factor": 4.0}])
    names = [r.name for r in rows(enc, cfg)]
    assert names[:4] == ["rope", "rope+yarn@4x+tuned", "rope+dynamic_ntk+tuned8", "rope+longrope@4x+tuned"]
    row = rows(enc, cfg)[1]
    assert row.record()["variants"] == [{"variant": "tuned", "scaling": "yarn", "factor": 4.0, "budget": 16, "windows": 8,
                                                "objective": "loss"}]
    assert not tuned("yarn", 4.0).applies_to(model_of("alibi").encoding)


def test_the_tuned_rows_are_scored_with_their_search_in_the_records():
    from posbench.evaluation.perplexity import evaluate_model

    model = model_of("rope").float()
    ev = ResolvedEval(EvalConfig(multiples=[1, 4], protocols=["nonoverlapping"], scored_tokens=128, target_docs=4,
                                 batch_tokens=512, bca=[], rope_scaling=["ntk"], rope_factor=4.0,
                                 variants=[{"name": "tuned", "scaling": "ntk", "factor": 4.0, "budget": 3, "windows": 2}]),
                      16, text=TEXT[:3000], calibration=CALIBRATION)
    records, _ = evaluate_model(model, ev, torch.device("cpu"), progress=False)
    got = {(r["variant"], r["length"]): r for r in records}
    assert set(got) == {(v, L) for v in ("rope", "rope+ntk@4x", "rope+ntk@4x+tuned3") for L in (16, 64)}
    assert got["rope+ntk@4x", 16]["ppl"] == got["rope+ntk@4x+tuned3", 16]["ppl"]  # the default row up to train_len
    assert "fit" not in got["rope+ntk@4x+tuned3", 16] and "fit" not in got["rope+ntk@4x", 64]
    fit = got["rope+ntk@4x+tuned3", 64]["fit"]["tuned"]
    assert fit["evaluations"] == 3 and fit["default"] == {"alpha": 4.0} and fit["text"] == "train split"
    # the default chosen: exactly the rope_scaling row's score; another: another score
    assert (got["rope+ntk@4x+tuned3", 64]["ppl"] == got["rope+ntk@4x", 64]["ppl"]) == (fit["chosen"] == fit["default"])
    assert all(math.isfinite(r["ppl"]) for r in records)


def test_the_needle_objective_scores_only_the_planted_keys_answer_tokens():
    """LongRoPE2's needle-driven objective: passkey examples from the training split, the loss over the key's
    digits at the end only (a hand-computed cross-entropy over those targets)."""
    from posbench.evaluation.variants.tuned import heldout_loss, needle_windows

    windows, scored = needle_windows(CALIBRATION, 64, 3)
    assert windows.shape == (3, 65) and scored.shape == (3, 64)
    assert scored.sum(1).tolist() == [5, 5, 5] and scored[:, -5:].all()
    for w in windows:  # the question's key is the needle's key
        text = bytes(w.numpy().astype(np.uint8))
        assert text.count(b"|key=") == 2 and text[-5:].isdigit() and text.index(text[-5:]) < len(text) - 5
    model = model_of("rope").float()
    with torch.no_grad():
        logits = model(windows[:, :-1], None, AttentionOptions())
    want = torch.nn.functional.cross_entropy(logits[:, -5:].flatten(0, 1), windows[:, -5:].flatten())
    assert heldout_loss(model, windows, AttentionOptions(), 10_000, "cpu", scored) == pytest.approx(float(want), rel=1e-5)
    v = tuned("ntk", 4.0, budget=2, windows=2, objective="needle")
    assert v.suffix() == "+ntk@4x+tuned2-needle"
    v.fit(model, fit_eval(text=None), 64, torch.device("cpu"))
    assert v.fit_record(64)["objective"] == "needle" and v.fit_record(64)["evaluations"] == 2
    with pytest.raises(PosbenchError, match=r"^\+tuned's needle objective plants byte-level passkeys .* use objective: loss$"):
        tuned("ntk", 4.0, objective="needle").fit(model, fit_eval(calibration=CALIBRATION.astype(np.int32)), 64, "cpu")
