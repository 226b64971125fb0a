"""CoPE (posbench/encodings/cope.py) against the reference definition, pair by pair."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, layer_inputs, model_of

X = torch.Generator().manual_seed(1)


def reference_cope(q, k, v, pos_emb, npos):
    """facebookresearch/RAM projects/cope ContextPosSelfAttn.forward (defaults), one pair at a time."""
    B, H, L, D = q.shape
    logits = torch.full((B, H, L, L), float("-inf"), dtype=q.dtype)
    for i in range(L):
        gates = [torch.sigmoid((q[:, :, i] * k[:, :, t]).sum(-1) / math.sqrt(D)) for t in range(i + 1)]
        for j in range(i + 1):
            p = torch.clamp(sum(gates[j : i + 1]), max=npos - 1)
            lo, hi = p.floor().long(), p.ceil().long()
            e_lo = (q[:, :, i] * pos_emb[:, lo].permute(1, 2, 0)).sum(-1)
            e_hi = (q[:, :, i] * pos_emb[:, hi].permute(1, 2, 0)).sum(-1)
            w = p - lo
            pos_logit = e_hi * w + e_lo * (1 - w)
            logits[:, :, i, j] = ((q[:, :, i] * k[:, :, j]).sum(-1) + pos_logit) / math.sqrt(D)
    return logits.softmax(-1) @ v


@pytest.mark.parametrize("L", [9, 24])  # 24 > npos: counted positions clamp at npos - 1
def test_cope_matches_the_reference_definition(L):
    model = model_of("cope", train_len=8)
    x = torch.randint(0, 256, (1, L), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    enc = model.encoding
    assert enc.npos == 9 and enc.pos_emb.shape == (4, 8, 9)
    y = reference_cope(q, k, v, enc.pos_emb[1].detach(), enc.npos)
    torch.testing.assert_close(attn_output(model, x, 1), model.blocks[1].attn.proj(y.transpose(1, 2).reshape(1, L, 32)))
    assert torch.all(build_encoding("cope", ModelShape(32, 4, 4, 8)).pos_emb == 0)  # the reference's init


def test_cope_positions_count_the_gates_that_open_between_key_and_query():
    """p_ij = sum_{t=j}^{i} g_it: with every gate open the position of key j is i - j + 1 (clamped at
    npos - 1) and e_ij = q_i . E[p_ij]; with every gate shut it is 0."""
    from posbench.encodings.cope import CoPE, cope_logits

    c, npos = 6, 4
    q = torch.randn(1, 1, c, 3, dtype=torch.float64)
    pos_emb = torch.randn(3, npos, dtype=torch.float64)
    hidden = torch.ones(c, c, dtype=torch.bool).triu(1)  # the future
    fixed = (q @ pos_emb)[0, 0]  # q_i . E[p] for the integer positions p
    opened = cope_logits(torch.full((1, 1, c, c), 60.0, dtype=torch.float64), q, pos_emb, hidden)[0, 0]
    shut = cope_logits(torch.full((1, 1, c, c), -60.0, dtype=torch.float64), q, pos_emb, hidden)[0, 0]
    for i in range(c):
        for j in range(i + 1):
            assert opened[i, j].item() == pytest.approx(fixed[i, min(i - j + 1, npos - 1)].item())
            assert shut[i, j].item() == pytest.approx(fixed[i, 0].item())
    assert build_encoding("cope", ModelShape(32, 4, 2, 16)).npos == 17 and isinstance(
        build_encoding("cope", ModelShape(32, 4, 2, 16)), CoPE)  # npos = train_len + 1, the reference's


def old_cope_logits(scores, q, pos_emb, hidden):
    """cope_logits before the kernel rewrite (floor and ceil, two gathers of q . E), kept to compare against."""
    npos = pos_emb.shape[-1]
    gates = torch.sigmoid(scores).masked_fill(hidden, 0.0)
    positions = gates.flip(-1).cumsum(-1).flip(-1).clamp(max=npos - 1)
    fixed = q @ pos_emb.to(q.dtype)
    floor, ceil = positions.floor().long(), positions.ceil().long()
    w = positions - floor
    return fixed.gather(-1, ceil) * w + fixed.gather(-1, floor) * (1 - w)


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_cope_logits_equal_the_old_interpolation_and_its_gradient(dtype, tol):
    """One index and the steps E[p + 1] - E[p] give the old floor/ceil interpolation's
    logits and gradients to float tolerance, clamped positions included (npos 5 < 12 keys)."""
    from posbench.encodings.cope import cope_logits

    g = torch.Generator().manual_seed(3)
    scores = (torch.randn(2, 3, 12, 12, generator=g, dtype=dtype) * 2).requires_grad_()
    q = torch.randn(2, 3, 12, 8, generator=g, dtype=dtype).requires_grad_()
    pos_emb = torch.randn(8, 5, generator=g, dtype=dtype).requires_grad_()
    hidden = torch.ones(12, 12, dtype=torch.bool).triu(1)
    new, old = cope_logits(scores, q, pos_emb, hidden), old_cope_logits(scores, q, pos_emb, hidden)
    torch.testing.assert_close(new, old, rtol=tol, atol=tol)
    up = torch.randn(new.shape, generator=g, dtype=dtype)
    for a, b in zip(torch.autograd.grad((new * up).sum(), (scores, q, pos_emb)),
                    torch.autograd.grad((old * up).sum(), (scores, q, pos_emb))):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def explicit_cope(q, k, v, pos_emb, scale=None):
    """The kernel CoPE ran before its band (masked_attention with the old logits), whole rows."""
    from posbench.attention.kernels import masked_attention

    def term(scores, start, end, lo, hidden):
        return scores + old_cope_logits(scores, q[:, :, start:end], pos_emb, hidden) * q.shape[-1] ** -0.5

    return masked_attention(q, k, v, scale, score_mod=term)


@pytest.mark.parametrize("L, npos, gain, scale", [
    (300, 17, 1.0, None),  # the band reaches back ~2 npos keys; the far keys are one SDPA call
    (300, 17, 0.02, None),  # gates near 1/2 from the first query on, npos 17: the same, from block 1
    (40, 17, 1.0, None),  # shorter than a block past npos: all keys in the band
    (500, 33, 3.0, 0.1),  # gates near 0 or 1, another scale of q.k (a temperature): the band widens and shrinks
])
def test_band_attention_equals_the_explicit_kernel(L, npos, gain, scale):
    """CountedPositions.band_attention (the keys past the band clamped, one SDPA call) gives
    the explicit kernel's output to 1e-10 in float64 and 1e-4 in float32 (logits up to ~30)."""
    from posbench.attention.kernels import CPU_FLASH_LSE
    from posbench.encodings.cope import CountedPositions

    if not CPU_FLASH_LSE:
        pytest.skip("this torch has no CPU flash kernel that returns its log-sum-exp")
    g = torch.Generator().manual_seed(L)
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-4)):
        q, k, v = (torch.randn(2, 3, L, 16, generator=g, dtype=dtype) * s for s in (gain, gain, 1.0))
        pos_emb = torch.randn(16, npos, generator=g, dtype=dtype)
        got = CountedPositions(q, pos_emb).band_attention(k, v, scale, block=32)
        torch.testing.assert_close(got, explicit_cope(q, k, v, pos_emb, scale), rtol=tol, atol=tol)


def test_cope_evaluates_through_its_band_on_cpu_and_trains_through_the_explicit_kernel(monkeypatch):
    """The model picks the band in evaluation (no gradient) and its logits equal the explicit kernel's;
    with a gradient it runs the explicit kernel, which the band form has no backward for."""
    from posbench.encodings.cope import CountedPositions
    from posbench.model import kernel_choice

    if not kernel_choice.CPU_FLASH_LSE:
        pytest.skip("this torch has no CPU flash kernel that returns its log-sum-exp")
    model = model_of("cope", train_len=8)
    x = torch.randint(0, 256, (2, 90), generator=X)
    calls = []
    band = CountedPositions.band_attention
    monkeypatch.setattr(CountedPositions, "band_attention", lambda self, *a: calls.append(1) or band(self, *a))
    with torch.no_grad():
        got = model(x)
        assert len(calls) == 4
        monkeypatch.setattr(kernel_choice, "CPU_FLASH_LSE", False)  # the explicit kernel
        explicit = model(x)
    torch.testing.assert_close(got, explicit, rtol=1e-10, atol=1e-10)
    monkeypatch.setattr(kernel_choice, "CPU_FLASH_LSE", True)
    model(x).sum().backward()
    assert len(calls) == 4
