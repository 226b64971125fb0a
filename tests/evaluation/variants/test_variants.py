"""Evaluation variants as objects: their rows, their names (rendered once), their checks, and the
per-forward options they give (nothing of a row stays on the model)."""

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import check_variant_settings, parse_row, rows
from posbench.model.transformer import ModelConfig, build_model

CFG = ModelConfig(name="t", d_model=32, n_layers=1, n_heads=4, mlp_ratio=2)


def test_rows_and_their_names():
    rope = build_model(CFG, "rope", {}, 16).encoding
    ev = EvalConfig(multiples=[1, 2, 4], rope_scaling=["yarn", "dynamic_ntk"], bca=["rope"], temperature=[0.1])
    assert [r.name for r in rows(rope, ev)] == ["rope", "rope+yarn@4x", "rope+dynamic_ntk", "rope+bca", "rope+temp0.1"]
    xpos = build_model(CFG, "xpos", {}, 16).encoding  # the RoPE scalings are for plain RoPE only
    assert [r.name for r in rows(xpos, ev)] == ["xpos", "xpos+temp0.1"]  # a temperature applies to every encoding
    assert [r.name for r in rows(rope, ev, tag="@4x+ft100")][:2] == ["rope@4x+ft100", "rope@4x+ft100+yarn@4x"]


def test_a_row_asked_for_twice_is_scored_once():
    alibi = build_model(CFG, "alibi", {}, 16).encoding
    ev = EvalConfig(bca=[], temperature=[0.1, 0.1], variants=[{"name": "temperature", "c": 0.1}])
    assert [r.name for r in rows(alibi, ev)] == ["alibi", "alibi+temp0.1"]


@pytest.mark.parametrize("variants, message", [
    (["rope_scaling"], "RoPE scaling yarn is static: give its factor (eval.rope_factor)"),
    ([{"name": "rope_scaling", "type": "bogus", "factor": 2}], "unknown RoPE scaling 'bogus'; valid: linear, ntk, dynamic_ntk, yarn"),
    ([123], "eval.variants entry 123 is neither a variant's name nor {name: ..., <settings>}"),
    ([{"name": "bca", "encodings": ["alibii"]}], "unknown encoding in eval.bca: 'alibii'; valid: "),
    ([{"name": "temperature", "c": 20}], "eval.temperature holds coefficients c in [0, 10]"),
    (["nosuch"], "unknown variant 'nosuch'; valid: "),
])
def test_bad_variant_settings_are_one_line(variants, message):
    with pytest.raises(PosbenchError) as e:
        check_variant_settings(EvalConfig(variants=variants))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_rows_change_nothing_on_the_model():
    """Options are per forward: scoring a row leaves the next forward as trained."""
    torch.manual_seed(0)
    model = build_model(CFG, "rope", {}, 16).eval()
    x = torch.randint(0, 256, (1, 64))
    with torch.no_grad():
        before = model(x)
        for row in rows(model.encoding, EvalConfig(rope_scaling=["yarn"], bca=["rope"], temperature=[0.3])):
            model(x, None, row.options(AttentionOptions(), 64, 16))
        torch.testing.assert_close(model(x), before, rtol=0, atol=0)


def test_a_randomized_positions_row_names_its_own_reason():
    learned = build_model(CFG, "learned", {}, 8, max_position=32).encoding
    (plain, randpos) = rows(learned, EvalConfig(bca=[]))
    assert randpos.name == "learned+randpos"
    assert randpos.undefined_reason(learned, 64) == "randomized positions are drawn from [0, 32), fewer than 64"


@pytest.mark.parametrize("name", ["rope", "rope+yarn@16x", "rope+dynamic_ntk", "xpos+bca", "alibi+temp0.1",
                                  "learned+randpos", "rope+yarn@4x+ft100", "xpos@4x+ft100+bca"])
def test_old_records_names_read_back_as_the_rows_that_make_them(name):
    """Records made before rows were stored are read from their names, to the same rows."""
    from posbench.evaluation.variants import Row, make_variant

    rec = parse_row(name)
    variants = tuple(make_variant(v["variant"], {k: x for k, x in v.items() if k != "variant"} |
                                  ({"encodings": [rec["encoding"]]} if v["variant"] == "bca" else {}))
                     for v in rec["variants"])
    assert Row(rec["encoding"], variants, rec["tag"]).name == name


def test_only_the_window_variants_mark_their_rows_as_controls():
    """``window`` is a class flag (the report lists such rows apart, as controls): a method of that
    name (ReRoPE's clipping distance once was) would make every row of the variant a control."""
    from posbench.evaluation.variants import VARIANTS
    from posbench.report.records.load import is_windowed

    assert all(isinstance(cls.window, bool) for _, cls in VARIANTS.items())
    assert {name for name, cls in VARIANTS.items() if cls.window} == {"bca", "local", "streaming"}
    assert not is_windowed({"variants": [{"variant": "rerope"}]}) and is_windowed({"variants": [{"variant": "local"}]})


# the built-ins whose defaults ask for nothing need no entry; a variant that needs a setting to exist
# (which scaling, which encodings) is made with its smallest one
MINIMAL = {"rope_scaling": {"type": "yarn", "factor": 4.0}, "bca": {"encodings": ["rope"]}, "temperature": {"c": 0.1},
           "tuned": {"factor": 4.0}}


@pytest.mark.parametrize("name", __import__("posbench.evaluation.variants", fromlist=["VARIANTS"]).VARIANTS.builtins())
def test_every_variant_names_its_row_and_changes_only_the_forward_options(name):
    """Every built-in variant (one file each in posbench/evaluation/variants/, found by the registry, so a
    new one is tested here with no edit): it names its row with a suffix and answers a forward pass with
    options, leaving the trained configuration's options object as it was."""
    from posbench.attention.options import AttentionOptions
    from posbench.evaluation.variants import make_variant

    variant = make_variant(name, MINIMAL.get(name, {}))
    assert variant.suffix().startswith("+"), name
    before = AttentionOptions()
    after = variant.options(before, 128, 64)
    assert isinstance(after, AttentionOptions) and before == AttentionOptions()
