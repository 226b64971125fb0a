"""The interface of a sequence mixer beside attention (a recurrent layer: Gated DeltaNet, Mamba-2).

A mixer maps the layer's normalised input x [B, L, D] to its output [B, L, D], causally: the output
at t depends on x[:, :t + 1] only. It takes no positions and no positional encoding (the order is
in its recurrence), and has no length limit: its state is a fixed size, so a model trained at
train_len scores any length. ``forward(x)`` is the training form (chunked: no Python loop over
tokens); ``forward(x, recurrent=True)`` is the same function one token at a time, the reference the
tests check the chunked form against.

A mixer with a state to pass on (gdn, mamba2) also implements ``forward_with_state(x, state)`` ->
(output, final state): the layer continued from ``state`` (None: zeros), its state after the last
token (every part of it: the recurrence's and the short convolution's last inputs), so that two
halves with the state passed equal one pass over the whole. That is what state passing (an extension
method, posbench/training/state_passing.py) and the window control of a recurrent layer
(posbench/mixers/state.py) use. A plug-in mixer that implements ``forward`` only works everywhere
but in state passing, which refuses it in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.mixers.state import StateCarry

ATTENTION = "attention"  # the model's own mixer: causal self-attention with the run's encoding


@dataclass(frozen=True)
class MixerShape:
    """What a mixer may need to know about the model it is part of."""

    d_model: int
    n_heads: int
    n_layers: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class Mixer(nn.Module):
    """Base class: subclasses declare their hyper-parameters as a nested ``Params`` dataclass
    (checked against the yaml like an encoding's) and implement ``forward``."""

    @dataclass
    class Params:
        pass

    def __init__(self, shape: MixerShape, params: Any):
        super().__init__()
        self.shape, self.params = shape, params
        # the state passed between training windows (off unless an extension run's state passing turns it on)
        self.carry = StateCarry()

    def forward(self, x: torch.Tensor, recurrent: bool = False) -> torch.Tensor:
        """x: [B, L, D] -> [B, L, D]; ``recurrent``: step by step (the reference), else chunked."""
        return self.forward_with_state(x, None, recurrent)[0]

    def forward_with_state(self, x: torch.Tensor, state: Any, recurrent: bool = False) -> tuple[torch.Tensor, Any]:
        """(output, final state) of the layer started from ``state`` (None: zeros): a tuple of tensors,
        each with the batch first. Optional: a mixer without it has no state passing."""
        raise NotImplementedError(f"{type(self).__name__} implements neither forward nor forward_with_state")

    @classmethod
    def passes_state(cls) -> bool:
        """Whether the mixer implements ``forward_with_state`` (state passing needs it)."""
        return cls.forward_with_state is not Mixer.forward_with_state

    def extra_repr(self) -> str:
        return str(self.params)


class CausalConv(nn.Module):
    """A short causal depthwise convolution over time (Mamba's conv1d, fla's ShortConvolution):
    y[:, t] = sum_i w[i] x[:, t - (size - 1) + i], zero before the first token."""

    def __init__(self, channels: int, size: int, bias: bool):
        super().__init__()
        self.size = size
        self.conv = nn.Conv1d(channels, channels, size, groups=channels, padding=size - 1, bias=bias)

    def forward(self, x: torch.Tensor, tail: torch.Tensor | None = None) -> torch.Tensor:  # [B, L, C] -> [B, L, C]
        """``tail``: the last size - 1 inputs before x (a passed state; None: zeros)."""
        if tail is None:
            return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)
        full = torch.cat([tail.to(x.dtype), x], 1).transpose(1, 2)
        return F.conv1d(full, self.conv.weight, self.conv.bias, groups=self.conv.groups).transpose(1, 2)

    def next_tail(self, x: torch.Tensor, tail: torch.Tensor | None = None) -> torch.Tensor:
        """The last size - 1 inputs once x is read (zeros before the first token): the conv's state."""
        full = x if tail is None else torch.cat([tail.to(x.dtype), x], 1)
        keep = self.size - 1
        full = F.pad(full, (0, 0, keep, 0))  # zeros before the first token, for inputs shorter than the tail
        return full[:, full.shape[1] - keep:]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dimension (fla's and Mamba's gated norms, without the gate)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def inverse_softplus_dt(n: int, dt_min: float = 1e-3, dt_max: float = 0.1, floor: float = 1e-4) -> torch.Tensor:
    """Mamba's dt bias initialisation: dt log-uniform in [dt_min, dt_max] (at least ``floor``),
    stored as softplus^-1(dt), so that softplus(0 + bias) starts at dt."""
    dt = torch.exp(torch.rand(n) * (torch.log(torch.tensor(dt_max)) - torch.log(torch.tensor(dt_min)))
                   + torch.log(torch.tensor(dt_min))).clamp(min=floor)
    return dt + torch.log(-torch.expm1(-dt))


def inner_heads(name: str, d_model: int, expand: int, head_dim: int) -> tuple[int, int]:
    """The inner width ``expand x d_model`` of a Mamba-style mixer and its number of heads of ``head_dim``;
    refused in one line where the width does not divide into heads."""
    d_inner = expand * d_model
    if d_inner % head_dim:
        raise PosbenchError(f"mixer {name}: the inner width {d_inner} (expand x d_model) is not divisible by "
                            f"head_dim={head_dim}")
    return d_inner, d_inner // head_dim
