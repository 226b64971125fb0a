"""Checks every recurrent mixer passes: the layer's chunked form equals its step-by-step form, it is
causal, and the chunked form has no Python loop over tokens."""

import torch

from posbench.mixers import MixerShape, build_mixer

SHAPE = MixerShape(d_model=16, n_heads=2, n_layers=2)


def layer(name, params=None, seed=0):
    torch.manual_seed(seed)
    mixer = build_mixer(name, SHAPE, params).double()
    with torch.no_grad():  # larger decays and gates than at initialisation, so that every term matters
        for p in mixer.parameters():
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    return mixer


def max_diff(a, b):
    return (a - b).abs().max().item()


def assert_causal(mixer, L=23, t=9):
    x = torch.randn(2, L, SHAPE.d_model, dtype=torch.float64)
    changed = x.clone()
    changed[:, t + 1:] = torch.randn_like(changed[:, t + 1:])
    with torch.no_grad():
        a, b = mixer(x), mixer(changed)
    assert torch.equal(a[:, : t + 1], b[:, : t + 1])
    assert max_diff(a[:, t + 1:], b[:, t + 1:]) > 1e-3  # the change does reach the later outputs


class CountingLoops:
    """Counts the Python-level iterations of ``for`` loops in one function by tracing its lines."""

    def __init__(self, fn):
        self.code, self.lines = fn.__code__, 0

    def __enter__(self):
        import sys

        def tracer(frame, event, arg):
            if frame.f_code is self.code:
                if event == "line":
                    self.lines += 1
                return tracer
            return None
        self.old = sys.gettrace()
        sys.settrace(tracer)
        return self

    def __exit__(self, *exc):
        import sys

        sys.settrace(self.old)
