"""Behaviour every encoding must have (posbench/encodings/): causality, a declared path, checked
parameters, a YAML per encoding, translation invariance for the relative methods, the distance biases'
shape, and for the 2024-2026 recipes causality, training and scoring at every length on CPU."""

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from posbench.encodings import ENCODINGS, ModelShape, available, build_encoding
from posbench.evaluation.variants import make_variant
from posbench.model.transformer import ModelConfig, build_model
from posbench.tasks import TASKS
from posbench.evaluation.resolved import ResolvedEval
from tests.helpers import model_of, tiny_model

MODERN = ["layers", "rope_swa", "irope", "rnope_swa", "ssmax", "sink", "gated", "fox", "cope", "stickbreaking",
          "path", "path_fox", "hope", "decoupled_rope", "comrope", "cable", "tape"]


X = torch.Generator().manual_seed(1)


@pytest.mark.parametrize("name", MODERN)
def test_past_tokens_never_see_the_future_at_long_lengths(name):
    model = model_of(name)
    x = torch.randint(0, 256, (2, 80), generator=X)  # 5x the training length: windows, clamps, temperatures
    y = x.clone()
    y[:, 50:] = (y[:, 50:] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :50], b[:, :50])
    assert not torch.allclose(a[:, 50:], b[:, 50:])


@pytest.mark.parametrize("name", MODERN)
def test_each_method_trains_and_scores_every_token_at_every_length(name):
    from posbench.evaluation.perplexity import evaluate_model
    from posbench.evaluation.settings import EvalConfig
    from posbench.training.data import TrainingData
    from posbench.training.trainer import TrainConfig, train_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=2, mlp_ratio=2)
    model = build_model(cfg, name, {}, 16)
    rng = np.random.default_rng(0)
    tokens = rng.integers(97, 123, size=20000).astype(np.uint8)
    before = [p.detach().clone() for p in model.encoding.parameters()]
    out = train_model(model, TrainingData(tokens, tokens[:4000], 16, 0), TrainConfig(steps=3, batch_size=4, warmup_steps=1,
                      val_every=3, val_batches=1, log_every=1), torch.device("cpu"))
    assert out["status"] == "completed", out
    assert all(not torch.equal(a, b) for a, b in zip(before, model.encoding.parameters()))  # its own parameters learn
    eval_cfg = EvalConfig(multiples=[1, 4, 16], protocols=["nonoverlapping"], scored_tokens=256, target_docs=4,
                          batch_tokens=1024, bca=[], variants=["logn"])
    records, _ = evaluate_model(model.eval(), ResolvedEval(eval_cfg, 16, text=tokens[:6000]), torch.device("cpu"),
                                progress=False)
    names = (name, f"{name}+logn") if make_variant("logn").applies_to(model.encoding) else (name,)  # see above
    assert {(r["variant"], r["length"]) for r in records} == {(v, L) for v in names for L in (16, 64, 256)}
    assert all(r["reason"] is None and math.isfinite(r["ppl"]) and r["tokens_scored"] == 256 for r in records)
    assert len({r["token_set"] for r in records}) == 1  # the same tokens at every length


def test_every_encoding_trains_at_the_model_learning_rate_by_default():
    from pathlib import Path

    from posbench.cli.config import CONF_DIR

    for f in (Path(CONF_DIR) / "encoding").glob("*.yaml"):
        assert "lr_mult" not in OmegaConf.load(f), f"{f.name} gives its encoding a private learning rate"


@pytest.mark.parametrize("name", available())
def test_causality(name):
    """Changing a future token never changes the logits of earlier positions."""
    model = tiny_model(name)
    x = torch.randint(0, 256, (2, 32))
    t = 20
    y = x.clone()
    y[:, t] = (y[:, t] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.allclose(a[:, :t], b[:, :t], atol=1e-5)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-5)  # and the change is seen from t on


@pytest.mark.parametrize("name", available())
def test_registry_declares_a_consistent_path(name):
    from posbench.encodings.base import PositionalEncoding as Base

    enc = build_encoding(name, ModelShape(32, 4, 2, 16))
    hooks = [enc.uses_input, enc.uses_rotation, enc.uses_bias, enc.uses_relative]
    # the per-layer hooks (posbench/encodings/base.py) are methods that do nothing unless overridden
    hooks += [getattr(type(enc), h) is not getattr(Base, h) for h in ("at", "window", "query_scale", "sink", "gate", "content_bias")]
    assert name == "nope" or any(hooks), f"{name} declares no hook"


def test_unknown_encoding_parameter_is_a_clear_error():
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match="has no parameter 'bsae'.*valid: base"):
        build_encoding("rope", ModelShape(32, 4, 1, 16), {"bsae": 1.0})
    with pytest.raises(PosbenchError, match="unknown encoding 'ropee'; valid: "):
        build_encoding("ropee", ModelShape(32, 4, 1, 16))


@pytest.mark.parametrize("group, registry", [("encoding", ENCODINGS), ("task", TASKS)])
def test_a_config_yaml_holds_no_default_of_its_own(group, registry):
    """Defaults live once, in the Params class (posbench/core/settings.py): a yaml in conf/encoding or
    conf/task is optional (``encoding=<name>`` works without one) and names its method; a key it lists
    (to document the parameter beside its comment) is a Params field whose value is the Params default,
    so the two can never disagree. Presets change values, and the run id records them."""
    import dataclasses
    from pathlib import Path

    import yaml

    from posbench.cli.config import CONF_DIR

    for path in (Path(CONF_DIR) / group).glob("*.yaml"):
        y = yaml.safe_load(path.read_text())
        assert y["name"] == path.stem and y["name"] in registry.builtins(), path
        defaults = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory())
                    for f in dataclasses.fields(registry.get(y["name"]).Params)}
        assert set(y) - {"name"} <= set(defaults), path
        for key in set(y) - {"name"}:
            want = list(defaults[key]) if isinstance(defaults[key], tuple) else defaults[key]
            assert y[key] == want, f"{path.name}: {key}: {y[key]!r}, where the Params default is {defaults[key]!r}"


TRANSLATION_INVARIANT = sorted(n for n, cls in ENCODINGS.items() if cls.translation_invariant)


def test_the_relative_methods_promise_translation_invariance():
    assert set(TRANSLATION_INVARIANT) >= {"rope", "xpos", "alibi", "t5", "kerple_log", "kerple_power", "sandwich", "shaw", "transformer_xl"}


@pytest.mark.parametrize("name", TRANSLATION_INVARIANT)
def test_shifting_all_positions_changes_nothing(name):
    model = tiny_model(name, train_len=64)
    with torch.no_grad():
        for p in model.encoding.parameters():  # move learned parameters off their init too
            p.add_(torch.randn_like(p) * 0.1)
    x = torch.randint(0, 256, (2, 24))
    with torch.no_grad():
        a = model(x, torch.arange(24))
        b = model(x, torch.arange(24) + 37)
    assert torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("name", ["sinusoidal", "learned"])
def test_absolute_methods_do_see_the_shift(name):
    model = tiny_model(name, train_len=64)
    x = torch.randint(0, 256, (2, 24))
    with torch.no_grad():
        assert not torch.allclose(model(x, torch.arange(24)), model(x, torch.arange(24) + 37), atol=1e-4)


@pytest.mark.parametrize("name", ["kerple_log", "kerple_power", "alibi", "sandwich"])
def test_distance_biases_are_zero_on_the_diagonal_and_decrease(name):
    enc = build_encoding(name, ModelShape(32, 4, 2, 16))
    b = enc.bias(torch.tensor([40]), torch.arange(40, 30, -1), 1)[:, 0]  # [H, distances 0..9]
    assert torch.allclose(b[:, 0], torch.zeros(4), atol=1e-5)
    assert torch.all(b[:, 1:] < b[:, :-1])
