"""posbench/attention/kernels.py: the attention paths agree with each other and with the whole-matrix
formulas (windows and sinks against HF's mask functions, blockwise causal attention, the chunked bias
path, the piecewise rotary kernel in query blocks) and flex attention is chosen where it should be
(its CUDA training step is marked ``cuda``)."""

import math

import pytest
import torch

from posbench.attention import kernels as attention
from posbench.attention.kernels import (
    Window,
    biased_causal_attention,
    masked_attention,
    piecewise_rotary_attention,
)
from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.model.transformer import ModelConfig, build_model
from tests.helpers import _rot, hf_visible, naive

X = torch.Generator().manual_seed(1)


def visible_with_sinks(kind, size, L, sinks):
    """HF's window masks, and the first ``sinks`` keys seen by every later query (StreamingLLM's
    start tokens kept beside the window)."""
    q, kv = torch.arange(L)[:, None], torch.arange(L)[None, :]
    return hf_visible(kind, size, L) | ((kv < sinks) & (kv <= q))


@pytest.mark.parametrize("kind, size, sinks", [("sliding", 5, 0), ("chunked", 8, 0), ("sliding", 100, 0), (None, None, 0),
                                               ("sliding", 5, 2), ("chunked", 8, 3)])
@pytest.mark.parametrize("with_sink", [False, True])
def test_masked_attention_equals_the_whole_matrix_formula(kind, size, sinks, with_sink):
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 37, 8
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64)
    bias = -slopes[:, None, None] * (torch.arange(L)[:, None] - torch.arange(L)[None, :]).double()
    sink = torch.randn(H, dtype=torch.float64) if with_sink else None
    window = Window(kind, size, sinks) if kind else None
    expected = naive(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, v, visible_with_sinks(kind, size, L, sinks), sink)
    for max_elements in (1 << 24, B * H * L * 4):  # whole, and 4-query blocks
        got = masked_attention(q, k, v, None, lambda s, e, lo: bias[:, s:e, lo:e], window, sink,
                               max_elements=max_elements)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_windows_count_their_keys_and_refuse_bad_settings():
    assert Window("sliding", 4).keys_seen(7).tolist() == [1, 2, 3, 4, 4, 4, 4]
    assert Window("chunked", 3).keys_seen(7).tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert [Window("sliding", 4).first_key(s) for s in (0, 2, 10)] == [0, 0, 7]
    assert [Window("chunked", 4).first_key(s) for s in (0, 5, 9)] == [0, 4, 8]
    with pytest.raises(PosbenchError, match="window kind"):
        Window("banded", 4)
    with pytest.raises(PosbenchError, match="positive integer"):
        Window("sliding", 0)
    # with sinks: the first keys too, counted once; a block starts at key 0; sinks below the size
    assert Window("sliding", 4, 2).keys_seen(8).tolist() == [1, 2, 3, 4, 5, 6, 6, 6]
    assert Window("chunked", 3, 1).keys_seen(7).tolist() == [1, 2, 3, 2, 3, 4, 2]
    for window in (Window("sliding", 5, 2), Window("chunked", 4, 3), Window("sliding", 3)):  # = the mask's count
        seen = (~attention.hidden_pairs(0, 30, 0, "cpu", window)).sum(-1)
        assert window.keys_seen(30).tolist() == seen.tolist()
    assert Window("sliding", 4, 2).first_key(10) == 0 and Window("sliding", 4, 2).tag == "swa4+sink2"
    with pytest.raises(PosbenchError, match="sink count"):
        Window("sliding", 4, 4)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", [["nope/swa64"], ["alibi/chunk64"]])
def test_flex_window_attention_matches_the_explicit_path(pattern):
    """CPU evaluation at 1024 tokens goes through compiled flex attention with a window block mask."""
    from posbench.attention import kernels as attention

    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2), "layers",
                        {"pattern": pattern}, 128).eval()  # a window of 64 keys, below train_len
    x = torch.randint(0, 256, (1, 1024), generator=X)
    with torch.no_grad():
        ref = model(x, None, AttentionOptions(kernel="chunked"))
        out = model(x, None, AttentionOptions(kernel="flex"))
    assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("window, with_table, with_sink, with_decay", [
    (None, False, True, False), (None, False, False, True), (("sliding", 40), True, True, True), (("chunked", 64), False, True, False),
    (("sliding", 40, 4), True, False, True), (("sliding", 40, 4), False, True, False),
])
def test_flex_scores_attention_equals_the_explicit_kernel(window, with_table, with_sink, with_decay):
    """The flex form of masked_attention (a sink as one more key, FoX's c_i - c_j in the score_mod)
    gives its logits' attention to float32 tolerance."""
    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 200, 16
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    table = -torch.tensor([0.5, 0.25, 0.125])[:, None] * torch.arange(L) if with_table else None
    sink = torch.randn(H) if with_sink else None
    decay = attention.Decay(torch.nn.functional.logsigmoid(torch.randn(B, H, L)).cumsum(-1)) if with_decay else None
    win = Window(*window) if window else None
    bias = (lambda s, e, lo: table[:, (torch.arange(s, e)[:, None] - torch.arange(lo, e)[None, :]).clamp(min=0)]) \
        if with_table else None
    expected = masked_attention(q, k, v, None, bias, win, sink, decay)
    got = attention.flex_scores_attention(q, k, v, None, win, table, sink, decay)
    assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("length, with_values, per_head", [(3, True, False), (9, False, True), (120, True, True)])
def test_the_clipped_relative_kernel_equals_the_distance_table_path(length, with_values, per_head):
    """clipped_relative_attention (far keys: one shifted SDPA, near keys: a band, merged by the
    log-sum-exp) is relative_causal_attention with rel_q = q over 0..L-1, to float32 tolerance."""
    torch.manual_seed(0)
    B, H, D, R = 2, 3, 8, 9
    q, k, v = (torch.randn(B, H, length, D) for _ in range(3))
    rel_k = torch.randn(H if per_head else 1, R, D)
    rel_v = torch.randn(R, D) if with_values else None
    expected = attention.relative_causal_attention(q, k, v, torch.arange(length), q, rel_k, rel_v, scale=0.4)
    got = attention.clipped_relative_attention(q, k, v, rel_k, rel_v, 0.4)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_the_piecewise_kernel_is_the_same_in_query_blocks():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 40, 16) for _ in range(3))
    inv = plain_frequencies(16, 10000.0)
    pos = torch.arange(40)
    pieces = [(torch.full_like(pos, 5), torch.zeros_like(pos), None), (pos, pos, lambda i, j: i - j < 5)]
    rotate = lambda x, p: _rot(x, p, inv)  # noqa: E731
    whole = piecewise_rotary_attention(q, k, v, rotate, pieces, 0.25)
    blocks = piecewise_rotary_attention(q, k, v, rotate, pieces, 0.25, max_elements=4 * 2 * 40)  # 7 query blocks
    torch.testing.assert_close(blocks, whole)


def test_blockwise_causal_attention_hides_keys_before_the_previous_block():
    from posbench.attention.kernels import future_mask

    m = future_mask(0, 12, "cpu", block=4)
    for i in range(12):
        visible = [j for j in range(12) if not m[i, j]]
        assert visible == list(range(max(0, (i // 4 - 1) * 4), i + 1))
    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2)
    for name in ("xpos", "alibi", "shaw", "nope"):
        model = build_model(cfg, name, {}, 16).eval()
        bca = AttentionOptions(block=8)
        x = torch.randint(0, 256, (1, 64))
        y = x.clone()
        y[0, :8] = (y[0, :8] + 1) % 256  # far past of the last query: outside its two blocks in every layer
        with torch.no_grad():
            assert torch.allclose(model(x, None, bca)[0, -1], model(y, None, bca)[0, -1], atol=1e-6), name
            assert not torch.allclose(model(x)[0, -1], model(y)[0, -1], atol=1e-6), name


def test_chunked_bias_attention_equals_the_naive_formula():
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 50, 8
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.125])
    bias_fn = lambda i, j: -slopes[:, None, None] * (i[:, None] - j[None, :])  # noqa: E731
    pos = torch.arange(L)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias_fn(pos, pos)
    scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    naive = scores.softmax(-1) @ v
    whole = biased_causal_attention(q, k, v, bias_fn, pos)
    chunked = biased_causal_attention(q, k, v, bias_fn, pos, max_elements=B * H * L * 7)  # 7-query chunks
    assert torch.allclose(whole, naive, atol=1e-5)
    assert torch.allclose(chunked, naive, atol=1e-5)


SMALL = ModelConfig(name="t", d_model=64, n_layers=2, n_heads=4, mlp_ratio=2)


@pytest.mark.cuda
@pytest.mark.parametrize("encoding", ["alibi", "kerple_log", "t5", "irope", "rnope_swa"])  # + window block masks
def test_flex_training_step_matches_the_chunked_path_forward_and_backward(encoding):
    """On CUDA, training uses flex attention (with its backward): same loss and gradients as the
    chunked float-mask path, in fp32."""
    device = torch.device("cuda")
    assert attention.use_flex(device, 128, training=True)
    torch.manual_seed(0)
    model = build_model(SMALL, encoding, {}, 64, 64).to(device)
    x = torch.randint(0, 256, (4, 128), device=device)
    grads, losses = {}, {}
    for path in ("chunked", "flex"):
        model.zero_grad(set_to_none=True)
        logits = model(x, None, AttentionOptions(kernel=path))
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1)[:-1], x.flatten()[1:])
        loss.backward()
        losses[path] = loss.item()
        grads[path] = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
    assert losses["flex"] == pytest.approx(losses["chunked"], rel=1e-4)
    for name, g in grads["chunked"].items():
        torch.testing.assert_close(grads["flex"][name], g, atol=2e-4, rtol=2e-3, msg=name)


def test_flex_is_used_for_cpu_evaluation_at_long_lengths_only():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    assert not attention.use_flex(cpu, 4096, training=True)  # no flex backward on CPU
    assert not attention.use_flex(cpu, 128, training=False)  # compilation would cost more than it saves
    assert attention.use_flex(cpu, attention.FLEX_MIN_LEN_CPU, training=False)
    assert attention.use_flex(cuda, 128, training=True)
    assert not attention.use_flex(cuda, 4096, training=False, setting="chunked")
    assert attention.use_flex(cpu, 64, training=False, setting="flex")


@pytest.mark.parametrize("encoding", ["alibi", "kerple_log"])
def test_flex_attention_matches_the_chunked_float_mask_path(encoding):
    """Compiled flex attention (distance table in a score_mod, causal block mask) gives the same
    logits as SDPA with the float mask, and stays causal."""
    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2), encoding, {}, 16, 16).eval()
    x = torch.randint(0, 256, (2, 128))
    with torch.no_grad():
        ref = model(x, None, AttentionOptions(kernel="chunked"))
        flex = AttentionOptions(kernel="flex")
        out = model(x, None, flex)
        assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
        y = x.clone()
        y[:, 100:] = (y[:, 100:] + 1) % 256  # the future changes; the past must not see it
        torch.testing.assert_close(model(y, None, flex)[:, :100], out[:, :100], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("block", [None, 4])
def test_the_chunked_bias_path_gives_the_same_attention_with_and_without_grad(block):
    """Without grad the float mask is 4-D (CPU SDPA's flash kernel, not its math
    kernel); the attention equals the grad path's to float32 tolerance, in query blocks too."""
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 50, 8
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    table = torch.randn(H, L, L)
    bias_fn = lambda i, j: table[:, i][:, :, j]  # noqa: E731
    positions = torch.arange(L)
    reference = biased_causal_attention(q, k, v, bias_fn, positions, 0.3, block=block)
    with torch.no_grad():
        for max_elements in (1 << 24, B * H * L * 7):
            got = biased_causal_attention(q, k, v, bias_fn, positions, 0.3, max_elements=max_elements, block=block)
            torch.testing.assert_close(got, reference, rtol=1e-5, atol=1e-5)


def old_stick_breaking_attention(q, k, v, scale=None, attend_current=False, remainder=True, block=None,
                                 max_elements=attention.MAX_SCORE_ELEMENTS, window=None):
    """stick_breaking_attention before the kernel rewrite (every block of queries against all its keys,
    flipped cumulative sums), kept to compare against."""
    import torch.nn.functional as F

    B, H, L, Dh = q.shape
    scale = Dh ** -0.5 if scale is None else scale
    dtype = torch.promote_types(q.dtype, torch.float32)
    out = []
    for start, end in attention.query_chunks(q.shape, max(1, max_elements // 4)):
        z = (q[:, :, start:end] @ k[:, :, :end].transpose(-1, -2)).to(dtype) * scale
        hidden = attention.hidden_pairs(start, end, 0, q.device, window, block)
        if not attend_current:
            hidden = hidden | (torch.arange(end)[None, :] == torch.arange(start, end)[:, None])
        log_beta = F.logsigmoid(z).masked_fill(hidden, float("-inf"))
        log_rest = F.logsigmoid(-z).masked_fill(hidden, 0.0)
        later = log_rest.flip(-1).cumsum(-1).flip(-1) - log_rest
        y = (log_beta + later).exp().to(v.dtype) @ v[:, :, :end]
        if remainder:
            y = y + log_rest.sum(-1, keepdim=True).exp().to(v.dtype) * v[:, :, start:end]
        out.append(y)
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


@pytest.mark.parametrize("gain, kw", [
    (1.0, {}), (0.05, {}),  # sticks broken within ~100 keys (beta near 1/2)
    (1.0, {"window": Window("sliding", 50)}), (3.0, {"window": Window("chunked", 64)}), (1.0, {"block": 40}),
    (1.0, {"attend_current": True, "remainder": False}),
    (8.0, {}),  # beta near 0 for some pairs: the band widens, here to the first key
])
def test_stick_breaking_in_bands_equals_the_old_kernel(gain, kw):
    """Each block of queries scores only the keys its sticks reach (to e^STICK_CUT), in
    reverse order; equal to the old kernel to 1e-12 in float64 and 2e-6 in float32, in blocks of 40
    queries and whole."""
    g = torch.Generator().manual_seed(int(gain * 10))
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 2e-6)):
        q, k, v = (torch.randn(2, 3, 300, 16, generator=g, dtype=dtype) * s for s in (gain, gain, 1.0))
        for max_elements in (2 * 3 * 300 * 40 * 4, attention.MAX_SCORE_ELEMENTS):
            torch.testing.assert_close(attention.stick_breaking_attention(q, k, v, max_elements=max_elements, **kw),
                                       old_stick_breaking_attention(q, k, v, max_elements=max_elements, **kw),
                                       rtol=tol, atol=tol)


def test_stick_breaking_reads_no_key_past_the_broken_sticks():
    """A NaN value at key 0 reaches the early queries only (their band holds it); the old kernel's
    every query multiplied its weight 0 by it and returned NaN."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 400, 16, generator=g, dtype=torch.float64) for _ in range(3))
    v[:, :, 0] = float("nan")
    y = attention.stick_breaking_attention(q, k, v, max_elements=1 * 2 * 400 * 40 * 4)
    assert torch.isnan(y[:, :, :5]).all() and not torch.isnan(y[:, :, 300:]).any()
    assert torch.isnan(old_stick_breaking_attention(q, k, v, max_elements=1 * 2 * 400 * 40 * 4)[:, :, 300:]).all()


@pytest.mark.parametrize("value", [0.0, float("-inf")])
def test_hide_is_masked_fill_for_finite_scores_gradient_included(value):
    """hide (an add of 0/-inf or a multiply by the visible pairs) gives masked_fill's
    numbers bit for bit on finite scores, and its gradient; anything but 0 or -inf is refused."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 9, generator=g, requires_grad=True)
    hidden = torch.rand(7, 9, generator=g) > 0.5
    up = torch.randn(2, 3, 7, 9, generator=g)
    got, want = attention.hide(x, hidden, value), x.masked_fill(hidden, value)
    assert torch.equal(got, want)
    torch.testing.assert_close(torch.autograd.grad((got.exp() * up).sum(), x)[0],
                               torch.autograd.grad((want.exp() * up).sum(), x)[0], rtol=0, atol=0)
    with pytest.raises(ValueError, match="0 or -inf"):
        attention.hide(x, hidden, 1.0)
