"""posbench/mixers/state.py and the mixers' state (forward_with_state): two halves with the state
passed equal one pass over the whole (state passing's premise), the carry passes the detached state
from one training window to the next and resets every `segments` windows, it is saved with the model,
and the window control of a sliding window conditions every token on W to 2W - 1 tokens (a chunked
window: a state reset every W tokens); a layer that provably forgets past W reads the same under the
sliding control as in a full pass, which the old reset did not."""

import pytest
import torch
from torch import nn

from posbench.attention.kernels import Window
from posbench.mixers import Mixer, MixerShape
from posbench.mixers.base import CausalConv
from posbench.mixers.state import StateCarry, mix, overlapping, windowed
from tests.mixers.helpers import SHAPE, layer, max_diff

TOL = 1e-12
MIXERS = [("gdn", {"chunk": 8}), ("mamba2", {"chunk": 8}), ("deltaproduct", {"chunk": 8}), ("mamba3", {"chunk": 8})]


@pytest.mark.parametrize("name,params", MIXERS)
@pytest.mark.parametrize("recurrent", [False, True])
def test_two_halves_with_the_state_passed_equal_one_pass_over_the_whole(name, params, recurrent):
    mixer = layer(name, params)
    x = torch.randn(2, 37, SHAPE.d_model, dtype=torch.float64)
    with torch.no_grad():
        whole, final = mixer.forward_with_state(x, None, recurrent)
        a, state = mixer.forward_with_state(x[:, :13], None, recurrent)
        b, end = mixer.forward_with_state(x[:, 13:], state, recurrent)
        cold = mixer(x[:, 13:])
    assert max_diff(torch.cat([a, b], 1), whole) < TOL
    assert all(max_diff(s, t) < TOL for s, t in zip(end, final))
    assert max_diff(b, cold) > 1e-3  # the passed state changes the second half's outputs


@pytest.mark.parametrize("name,params", MIXERS)
def test_the_layer_from_a_state_is_causal(name, params):
    mixer = layer(name, params)
    with torch.no_grad():
        _, state = mixer.forward_with_state(torch.randn(2, 9, SHAPE.d_model, dtype=torch.float64), None)
        x = torch.randn(2, 20, SHAPE.d_model, dtype=torch.float64)
        changed = x.clone()
        changed[:, 8:] = torch.randn_like(changed[:, 8:])
        a, b = mixer.forward_with_state(x, state)[0], mixer.forward_with_state(changed, state)[0]
    assert torch.equal(a[:, :8], b[:, :8]) and max_diff(a[:, 8:], b[:, 8:]) > 1e-3


@pytest.mark.parametrize("name,params", MIXERS)
def test_the_carry_passes_the_state_between_windows_and_resets_every_stretch(name, params):
    mixer = layer(name, params).train()
    mixer.carry.start(segments=3)
    x = torch.randn(2, 30, SHAPE.d_model, dtype=torch.float64)
    outs = [mix(mixer, x[:, 10 * i: 10 * (i + 1)]) for i in range(3)]  # one stretch of 3 windows
    with torch.no_grad():
        assert max_diff(torch.cat(outs, 1), mixer(x)) < TOL  # the stretch is read as one text
        restart = mix(mixer, x[:, :10])  # the 4th window starts the next stretch from zeros
        assert max_diff(restart, mixer(x[:, :10])) < TOL
    assert all(not t.requires_grad for t in mixer.carry.state)  # no gradient crosses a step
    outs[1].sum().backward()  # the graph of a window stops at its start
    mixer.eval()  # evaluation does not use the carry
    assert torch.equal(mix(mixer, x[:, :10]), mixer(x[:, :10]))


def test_the_carry_is_saved_with_the_model_and_an_old_checkpoint_loads_without_it():
    mixer = layer("gdn", {"chunk": 8}).train()
    mixer.carry.start(segments=4)
    mix(mixer, torch.randn(2, 10, SHAPE.d_model, dtype=torch.float64))
    saved = mixer.state_dict()
    other = layer("gdn", {"chunk": 8}, seed=1)
    other.load_state_dict(saved)
    assert (other.carry.segments, other.carry.count) == (4, 1)
    assert all(torch.equal(s, t) for s, t in zip(other.carry.state, mixer.carry.state))
    old = {k: v for k, v in saved.items() if not k.startswith("carry.")}  # from before the carry existed
    fresh = layer("gdn", {"chunk": 8}, seed=2)
    fresh.load_state_dict(old)  # strict: no missing key
    assert not fresh.carry.on


@pytest.mark.parametrize("name,params", MIXERS)
def test_the_window_control_resets_the_state_every_window(name, params):
    mixer = layer(name, params)
    x = torch.randn(2, 37, SHAPE.d_model, dtype=torch.float64)
    with torch.no_grad():
        out = windowed(mixer, x, 16)
        for start in (0, 16, 32):  # each block of 16 is read from zeros
            assert max_diff(out[:, start: start + 16], mixer(x[:, start: start + 16])) < TOL
        changed = x.clone()
        changed[:, :16] = torch.randn_like(changed[:, :16])
        assert torch.equal(windowed(mixer, changed, 16)[:, 16:], out[:, 16:])  # nothing crosses a reset
        assert torch.equal(mix(mixer.eval(), x, Window("chunked", 16)), out)
        assert torch.equal(windowed(mixer, x[:, :16], 16), mixer(x[:, :16]))


def pass_start(t: int, size: int) -> int:
    """The first token of the pass that reads token t under the sliding control (the definition)."""
    return 0 if t < size else (t // size - 1) * size + 1


@pytest.mark.parametrize("name,params", MIXERS)
def test_the_sliding_window_control_reads_every_token_after_w_to_2w_minus_1_tokens(name, params):
    mixer, W = layer(name, params).eval(), 8
    x = torch.randn(2, 45, SHAPE.d_model, dtype=torch.float64)
    with torch.no_grad():
        out = overlapping(mixer, x, W)
        assert out.shape == x.shape
        seen = []
        for t in range(x.shape[1]):
            start = pass_start(t, W)
            seen.append(t - start + 1)
            assert max_diff(out[:, t], mixer(x[:, start: t + 1])[:, -1]) < TOL, t
        assert seen[:W] == list(range(1, W + 1))  # the first W tokens: all that precede them, as attention's window
        assert min(seen[W:]) == W and max(seen[W:]) == 2 * W - 1  # after them: at least W, never 2W or more
        assert torch.equal(mix(mixer, x, Window("sliding", W)), out)
        assert torch.equal(overlapping(mixer, x[:, :W], W), mixer(x[:, :W]))


class ShortMemory(Mixer):
    """A recurrent layer whose state provably forgets: a causal convolution of 4 taps, i.e. a state of
    the last 3 inputs (a shift register). Its output at t depends on x[t - 3 .. t] and nothing else."""

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.conv = CausalConv(shape.d_model, 4, bias=True)

    def forward(self, x, recurrent=False):
        return self.conv(x)


def test_a_layer_that_forgets_past_the_window_reads_the_full_pass_under_the_control_and_not_under_a_reset():
    """The control's truth test: where the state forgets everything older than W tokens, a window of W
    takes nothing away, so the control must equal the full pass; the old reset every W tokens does not
    (the tokens after each reset lose their context: the artefact the control had)."""
    torch.manual_seed(0)
    mixer = ShortMemory(MixerShape(8, 2, 1), ShortMemory.Params()).double()
    x = torch.randn(3, 50, 8, dtype=torch.float64)
    with torch.no_grad():
        full = mixer(x)
        assert max_diff(mix(mixer, x, Window("sliding", 8)), full) < TOL
        reset = mix(mixer, x, Window("chunked", 8))
        assert max_diff(reset[:, 8:11], full[:, 8:11]) > 1e-3  # the 3 tokens after a reset


class OnlyForward(Mixer):
    """A plug-in mixer with ``forward`` only: it has no state to pass, and the window control works."""

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.proj = nn.Linear(shape.d_model, shape.d_model)

    def forward(self, x, recurrent=False):
        return self.proj(x.cumsum(1))


def test_a_plugin_with_forward_only_takes_the_window_and_has_no_state_passing():
    mixer = OnlyForward(MixerShape(8, 2, 1), OnlyForward.Params())
    x = torch.randn(1, 10, 8)
    with torch.no_grad():
        assert torch.allclose(windowed(mixer, x, 5)[:, 5:], mixer(x[:, 5:]))
    assert not OnlyForward.passes_state() and layer("gdn").passes_state()
    assert isinstance(mixer.carry, StateCarry)
