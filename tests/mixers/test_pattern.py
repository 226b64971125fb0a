"""The per-layer mixer pattern (``model.mixers``, posbench/model/transformer.py): a hybrid is a
pattern of attention and recurrent layers; a plain model is built exactly as before; the recurrent
layers take no positional encoding; a user's mixer is one file of their own package; and a tiny
hybrid trains and scores at 1x and 4x its training length."""

from dataclasses import dataclass

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.mixers import Mixer, available
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.identity import run_id

TINY = dict(name="tiny", d_model=32, n_layers=4, n_heads=2)


class Scale(Mixer):
    """A user's mixer (what a plug-in would define in its own package): a causal running mean."""

    @dataclass
    class Params:
        factor: float = param(1.0, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.out_proj = torch.nn.Linear(shape.d_model, shape.d_model, bias=False)

    def forward(self, x, recurrent=False):
        mean = x.cumsum(1) / torch.arange(1, x.shape[1] + 1, device=x.device)[:, None]
        return self.out_proj(mean * self.params.factor)


def test_the_pattern_repeats_and_a_shorter_model_takes_its_last_entries():
    cfg = ModelConfig(**{**TINY, "n_layers": 8}, mixers=["gdn", "gdn", "gdn", "attention"])
    assert cfg.layer_mixers() == ["gdn", "gdn", "gdn", "attention"] * 2 and cfg.attention_layers == [3, 7]
    assert ModelConfig(**{**TINY, "n_layers": 2}, mixers=["gdn", "gdn", "gdn", "attention"]).layer_mixers() == ["gdn", "attention"]
    model = build_model(ModelConfig(**TINY, mixers=["gdn", "mamba2", "gdn", "attention"]), "rope", {}, 16)
    kinds = [type(b.mixer).__name__ if not b.is_attention else "attention" for b in model.blocks]
    assert kinds == ["GatedDeltaNet", "Mamba2", "GatedDeltaNet", "attention"]
    assert {"attention", "gdn", "mamba2"} <= set(available())


def test_a_plain_model_has_the_same_modules_and_init_as_before():
    """Every layer attention (the default): the same parameter names in the same order and the same
    random numbers as the model before mixers (tests/model and the resume tests check the outputs)."""
    torch.manual_seed(0)
    plain = build_model(ModelConfig(**TINY), "rope", {}, 16)
    torch.manual_seed(0)
    said = build_model(ModelConfig(**TINY, mixers=["attention"]), "rope", {}, 16)
    assert [n for n, _ in plain.named_parameters()][:6] == [
        "tok_emb.weight", "blocks.0.ln1.weight", "blocks.0.ln1.bias", "blocks.0.ln2.weight", "blocks.0.ln2.bias",
        "blocks.0.attn.qkv.weight"]
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), said.state_dict().values()))


def test_a_plain_models_run_id_does_not_name_mixers(compose):
    plain, hybrid = compose("model=tiny"), compose("model=tiny", "model.mixers=[gdn,attention]")
    assert "gdn" not in plain.run_id and "attention" not in plain.run_id
    assert "_gdn1-attention1_" in hybrid.run_id and run_id(hybrid.resolved()) != run_id(plain.resolved())
    saved = plain.resolved()
    del saved["model"]["mixers"], saved["model"]["mixer_params"]  # a run saved before mixers existed
    assert run_id(saved) == plain.run_id


def test_the_recurrent_layers_take_no_positional_encoding():
    """A model of recurrent layers only computes the same function whatever its positions: the
    encoding reaches no layer (and a run refuses any encoding but nope or an input one)."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(**TINY, mixers=["gdn", "mamba2"]), "rope", {}, 16).eval()
    idx = torch.randint(0, 256, (1, 20))
    with torch.no_grad():
        assert torch.equal(model(idx), model(idx, positions=torch.arange(20) + 1000))


def test_a_pure_recurrent_run_refuses_an_encoding_that_would_reach_no_layer(compose):
    compose("model=small_gdn", "encoding=nope").check()
    with pytest.raises(PosbenchError, match="has no attention layer, so encoding=rope reaches no layer"):
        compose("model=small_gdn", "encoding=rope").check()


@pytest.mark.parametrize("mixers, match", [
    (["attention", "gdm"], "unknown mixer 'gdm'"),
    ([], "model.mixers is empty"),
])
def test_a_bad_pattern_is_one_line(mixers, match):
    with pytest.raises(PosbenchError, match=match):
        ModelConfig(**TINY, mixers=mixers).check()


def test_mixer_params_are_checked_where_they_were_typed():
    with pytest.raises(PosbenchError, match="not in model.mixers"):
        ModelConfig(**TINY, mixers=["gdn", "attention"], mixer_params={"mamba2": {}}).check()
    with pytest.raises(PosbenchError, match="model.mixer_params.gdn.*chunk"):
        build_model(ModelConfig(**TINY, mixers=["gdn"], mixer_params={"gdn": {"chunk": 0}}), "nope", {}, 16)
    model = build_model(ModelConfig(**TINY, mixers=["gdn"], mixer_params={"gdn": {"expand_v": 2}}), "nope", {}, 16)
    assert model.blocks[0].mixer.value_dim == 64


def test_a_users_mixer_is_one_file_of_their_package(forget_loaded_plugins):
    path = f"{__name__}:Scale"
    cfg = ModelConfig(**TINY, mixers=[path, "attention"], mixer_params={path: {"factor": 2.0}})
    cfg.check()
    model = build_model(cfg, "alibi", {}, 16)
    assert isinstance(model.blocks[0].mixer, Scale) and model.blocks[0].mixer.params.factor == 2.0
    assert model(torch.randint(0, 256, (1, 9))).shape == (1, 9, 256)
    with pytest.raises(PosbenchError, match="is not a posbench.mixers.base.Mixer subclass"):
        ModelConfig(**TINY, mixers=[f"{__name__}:TINY"]).check()


def test_a_tiny_hybrid_trains_and_scores_at_1x_and_4x(compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.store.rundir import RunDir

    cfg = compose("encoding=rope", "model=tiny", "model.n_layers=3", "model.mixers=[gdn,mamba2,attention]",
                  "+model.mixer_params.gdn.chunk=8", "+model.mixer_params.mamba2.chunk=8", "train=smoke", "train.steps=6",
                  "train_len=16", "eval.multiples=[1,4]", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=128",
                  "eval.during_training=[]", "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    m = RunDir(run(cfg)).read_metrics()
    assert m["status"] == "completed"
    rows = {r["length"]: r for r in m["evaluations"]}
    assert sorted(rows) == [16, 64]
    assert all(r["loss"] is not None and 0 < r["loss"] < 10 for r in rows.values())


def test_the_window_control_of_a_recurrent_model_reaches_at_least_w_tokens_and_its_chunks_reset():
    """``+swaL`` on a recurrent model (AttentionOptions.window, sliding): each layer reads a token
    after W to 2W - 1 tokens, so a token far enough back stops mattering while the W before a token
    always count; ``+chunkW`` (chunked) scores each block of W tokens as a window of its own."""
    from posbench.attention.kernels import Window
    from posbench.attention.options import AttentionOptions

    torch.manual_seed(0)
    model = build_model(ModelConfig(**{**TINY, "n_layers": 2}, mixers=["mamba2", "gdn"]), "nope", {}, 16).eval()
    x = torch.randint(0, 256, (2, 48))
    sliding, chunked = AttentionOptions(window=Window("sliding", 16)), AttentionOptions(window=Window("chunked", 16))
    first, near = x.clone(), x.clone()
    first[:, 0] = (x[:, 0] + 1) % 256  # 32 tokens and more before the last block: past both layers' passes
    near[:, 17] = (x[:, 17] + 1) % 256  # within 16 tokens of the block's first token
    with torch.no_grad():
        out = model(x, None, sliding)
        assert torch.equal(model(first, None, sliding)[:, 32:], out[:, 32:])
        assert not torch.allclose(model(near, None, sliding)[:, 32], out[:, 32], atol=1e-4)
        assert not torch.allclose(model(first)[:, 32:], model(x)[:, 32:], atol=1e-4)  # a full pass reaches it
        blocks = model(x, None, chunked)
        changed = x.clone()
        changed[:, :16] = torch.randint(0, 256, (2, 16))
        assert torch.allclose(blocks[:, 16:32], model(x[:, 16:32]), atol=1e-5)
        assert torch.equal(model(changed, None, chunked)[:, 16:], blocks[:, 16:])
