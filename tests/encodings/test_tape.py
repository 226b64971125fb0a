"""TAPE (posbench/encodings/tape.py): the whole forward against the reference code's formulas written
out verbatim, RoPE at the authors' initialisation, a state update worked by hand, the invariance the
paper proves (a common rotation of every frequency's plane, a shift of the positions), every kind of
attention option, the extenders' refusal, and that it learns."""

import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.attention.temperatures import logn_scale
from posbench.core.errors import PosbenchError
from posbench.evaluation.diagnostics import AttentionRecorder
from posbench.encodings.tape import TapeState
from posbench.evaluation.variants import make_variant
from posbench.model.kernel_choice import choose_kernel
from posbench.model.transformer import ModelConfig, build_model
from tests.helpers import CFG, model_of

X = torch.Generator().manual_seed(1)


def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


def reference_logits(model, x, positions):
    """The forward of VITA-Group/TAPE models/llama/adape.py, step by step, on this model's weights:
    AdaRotaryEmbedding's cos/sin [B, H, L, d_h], apply_rotary_pos_emb, the explicit softmax, pos_output =
    attn_weights @ (cos, sin), post_attention_linear's einsum, PELayer's einsums on the MLP output."""
    enc, (B, L), H = model.encoding, x.shape, CFG.n_heads
    D = CFG.d_model
    Dh = D // H
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, Dh, 2, dtype=torch.float64) / Dh))
    emb = torch.cat((positions[:, None] * inv_freq, positions[:, None] * inv_freq), dim=-1)
    cos, sin = (t[None, None].repeat(B, H, 1, 1) for t in (emb.cos(), emb.sin()))
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    h = model.tok_emb(x)
    for layer, block in enumerate(model.blocks):
        a = block.ln1(h)
        q, k, v = block.attn.qkv(a).view(B, L, 3, H, Dh).permute(2, 0, 3, 1, 4)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        w = (q @ k.transpose(2, 3) / math.sqrt(Dh)).masked_fill(~mask, float("-inf")).softmax(-1)
        pos_output = (w @ cos, w @ sin)
        h = h + block.attn.proj((w @ v).transpose(1, 2).reshape(B, L, D))
        last = layer == len(model.blocks) - 1  # the last layer's updates are never read
        if not last:
            pos = tuple(torch.einsum("bqnd,qe->bqnd", p, enc.attn_mix[layer]) for p in pos_output)
            cos, sin = cos + pos[0], sin + pos[1]
        m = block.mlp(block.ln2(h))
        if not last:
            up_e = tuple(torch.einsum("bqnd,eq->bend", i, enc.up[layer]) for i in (cos, sin))
            x_e = tuple(F.silu(enc.x_proj[layer](m).transpose(1, 2).unsqueeze(-1)) * i for i in up_e)
            down_e = tuple(torch.einsum("bend,qe->bqnd", i, enc.down[layer]) for i in x_e)
            cos, sin = cos + down_e[0], sin + down_e[1]
        h = h + m
    return model.head(model.ln_f(h))


def test_the_forward_is_the_reference_codes():
    model = model_of("tape")
    x = torch.randint(0, 256, (2, 21), generator=X)
    for positions in (torch.arange(21), torch.arange(21) * 3 + 5):
        with torch.no_grad():
            got, want = model(x, positions), reference_logits(model, x, positions.double())
        torch.testing.assert_close(got, want)


def test_the_updates_change_the_logits():
    """(so the test above does not pass as RoPE's) the parameters moved off zero change the logits, by
    far more than its tolerance (the tiny model's q.k are small, so the rotations weigh little)."""
    model = model_of("tape")
    x = torch.randint(0, 256, (2, 21), generator=X)
    with torch.no_grad():
        moved = model(x)
        for w in [*model.encoding.attn_mix, *model.encoding.up]:
            w.zero_()
        assert (moved - model(x)).abs().max() > 1e-4


def test_at_the_authors_initialisation_tape_is_rope():
    torch.manual_seed(0)
    tape = build_model(CFG, "tape", {}, 16).double().eval()
    rope = build_model(CFG, "rope", {}, 16).double().eval()
    missing = tape.load_state_dict(rope.state_dict(), strict=False).missing_keys
    assert all(key.startswith("encoding.") for key in missing) and missing
    x = torch.randint(0, 256, (2, 40), generator=X)
    with torch.no_grad():
        torch.testing.assert_close(tape(x), rope(x))


def recorded_states(model, x, positions=None, start=None):
    """The state each layer hands on after its attention, [layer] -> TapeState; ``start``: the
    initial state instead of (T1)'s."""
    enc, states = model.encoding, []
    after = enc.after_attention

    def record(state, mixed, layer):
        states.append(after(state, mixed, layer))
        return states[-1]

    enc.after_attention = record
    if start is not None:
        enc.prepare = lambda positions, options: start
    try:
        with torch.no_grad():
            logits = model(x, positions)
    finally:
        del enc.after_attention
        if start is not None:
            del enc.prepare
    return logits, states


def test_the_first_tokens_state_after_attention_worked_by_hand():
    """Token 0 sees only itself (A_00 = 1), so (T4) gives z_0 (1 + s_h), s_h the row sum of W^a, with
    z_0 = exp(i p_0 theta_f): at p_0 = 5, re = (1 + s_h) cos(5 theta_f), im = (1 + s_h) sin(5 theta_f)."""
    model = model_of("tape")
    x = torch.randint(0, 256, (1, 7), generator=X)
    _, states = recorded_states(model, x, torch.arange(7) + 5)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # d_h = 8: 4 frequencies
    s = model.encoding.attn_mix[0].sum(-1)[:, None]  # [H, 1]
    torch.testing.assert_close(states[0].re[0, :, 0], (1 + s) * torch.cos(5 * theta))
    torch.testing.assert_close(states[0].im[0, :, 0], (1 + s) * torch.sin(5 * theta))
    assert not torch.allclose(states[0].re[0, :, 3], torch.cos(8 * theta).expand(4, -1))  # later tokens move too


def turned(state, u_re, u_im):
    """Every z_{., ., f} times the unit complex number u_f."""
    return TapeState(state.re * u_re - state.im * u_im, state.re * u_im + state.im * u_re)


def test_a_common_rotation_of_the_state_changes_no_logit_and_turns_every_layers_state():
    """The paper's orthogonal equivariance: rotating every token's state by the same angle per frequency
    (any angles, not only a shift's) leaves the logits unchanged, and each layer's updated state is the
    same rotation of the unrotated one (the updates commute with it)."""
    model = model_of("tape")
    x = torch.randint(0, 256, (2, 19), generator=X)
    angle = torch.rand(4, generator=X, dtype=torch.float64) * 2 * math.pi  # [d_h / 2]
    start = model.encoding.initial_state(torch.arange(19))
    logits, states = recorded_states(model, x)
    logits_turned, states_turned = recorded_states(model, x, start=turned(start, angle.cos(), angle.sin()))
    torch.testing.assert_close(logits_turned, logits)
    for plain, rotated in zip(states, states_turned):
        want = turned(plain, angle.cos(), angle.sin())
        torch.testing.assert_close(rotated.re, want.re)
        torch.testing.assert_close(rotated.im, want.im)
    assert not torch.allclose(states_turned[0].re, states[0].re)  # the state itself did turn


def test_shifting_every_position_changes_no_logit_and_real_positions_are_seen():
    model = model_of("tape")
    x = torch.randint(0, 256, (2, 24), generator=X)
    with torch.no_grad():
        torch.testing.assert_close(model(x, torch.arange(24) + 1000), model(x, torch.arange(24)))
        assert not torch.allclose(model(x, torch.arange(24) * 2), model(x, torch.arange(24)))


CASES = {
    "block": AttentionOptions(block=8), "sliding": AttentionOptions(window=Window("sliding", 8)),
    "chunked_window": AttentionOptions(window=Window("chunked", 8)), "temperature": AttentionOptions(logit_scale=0.7),
    "chunked": AttentionOptions(kernel="chunked"), "flex": AttentionOptions(kernel="flex", window=Window("sliding", 8)),
    "logn": AttentionOptions(query_scale=partial(logn_scale, train_len=16)),
}


@pytest.mark.parametrize("case", [*CASES, "recorder"])
def test_the_state_rides_through_every_attention_kernel(case):
    """The carried state is averaged by the same weights as the values whatever kernel the options pick:
    a window of 8 over 20 tokens agrees with the reference's explicit softmax restricted to that window."""
    model = model_of("tape")
    x = torch.randint(0, 256, (2, 20), generator=X)
    options = CASES[case] if case != "recorder" else AttentionOptions(recorder=AttentionRecorder(4, 4))
    with torch.no_grad():
        got = model(x, None, options)
    assert got.shape == (2, 20, 256) and torch.isfinite(got).all()
    if case in ("chunked", "recorder"):
        with torch.no_grad():
            torch.testing.assert_close(got, model(x))
    if case == "flex":  # compiled flex with the window as a block mask: the explicit kernel's output
        with torch.no_grad():
            torch.testing.assert_close(got, model(x, None, CASES["sliding"]))
    if case == "sliding":  # the first 8 tokens see the same keys as without the window
        with torch.no_grad():
            torch.testing.assert_close(got[:, :8], model(x)[:, :8])
            assert not torch.allclose(got[:, 8:], model(x)[:, 8:])


def test_a_training_free_extender_is_refused_in_one_line():
    model = model_of("tape")
    options = make_variant("rerope").options(AttentionOptions(), 64, 16)
    with pytest.raises(PosbenchError, match="carried from layer to layer"):
        choose_kernel(model.encoding, 0, options, False, torch.device("cpu"))


def test_it_learns_a_pattern_and_scores_past_its_training_length():
    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2)
    model = build_model(cfg, "tape", {}, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    period = torch.randint(0, 256, (8, 5))
    batch = period.repeat(1, 4)[:, :17]  # a period-5 sequence: copying 5 back predicts the next token
    losses = []
    for _ in range(40):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 1.0, losses
    assert all(not torch.equal(w, torch.zeros_like(w)) for w in [*model.encoding.attn_mix, *model.encoding.up])
    model.eval()
    with torch.no_grad():
        long = model(period.repeat(1, 13)[:, :64])  # 4x the training length
    assert torch.isfinite(long).all()


def test_a_layer_pattern_refuses_it_in_one_line():
    from posbench.encodings import ModelShape, build_encoding

    with pytest.raises(PosbenchError, match="tape carries a positional state from each layer to the next"):
        build_encoding("layers", ModelShape(32, 4, 2, 64), {"pattern": ["tape/swa", "rope"]})


def test_an_odd_head_dimension_is_refused():
    from posbench.encodings import ModelShape, build_encoding

    with pytest.raises(PosbenchError, match="even head dimension"):
        build_encoding("tape", ModelShape(30, 2, 2, 16))
