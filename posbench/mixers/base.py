"""The interface of a sequence mixer beside attention (a recurrent layer: Gated DeltaNet, Mamba-2).

A mixer maps the layer's normalised input x [B, L, D] to its output [B, L, D], causally: the output
at t depends on x[:, :t + 1] only. It takes no positions and no positional encoding (the order is
in its recurrence), and has no length limit: its state is a fixed size, so a model trained at
train_len scores any length. ``forward(x)`` is the training form (chunked: no Python loop over
tokens); ``forward(x, recurrent=True)`` is the same function one token at a time, the reference the
tests check the chunked form against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

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

    def forward(self, x: torch.Tensor, recurrent: bool = False) -> torch.Tensor:
        """x: [B, L, D] -> [B, L, D]; ``recurrent``: step by step (the reference), else chunked."""
        raise NotImplementedError

    def extra_repr(self) -> str:
        return str(self.params)


class CausalConv(nn.Module):
    """A short causal depthwise convolution over time (Mamba's conv1d, fla's ShortConvolution):
    y[:, t] = sum_i w[i] x[:, t - (size - 1) + i], zero before the first token."""

    def __init__(self, channels: int, size: int, bias: bool):
        super().__init__()
        self.size = size
        self.conv = nn.Conv1d(channels, channels, size, groups=channels, padding=size - 1, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, L, C] -> [B, L, C]
        return self.conv(x.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dimension (fla's and Mamba's gated norms, without the gate)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def inverse_softplus_dt(n: int, dt_min: float = 1e-3, dt_max: float = 0.1, floor: float = 1e-4) -> torch.Tensor:
    """Mamba's dt bias initialisation: dt log-uniform in [dt_min, dt_max] (at least ``floor``),
    stored as softplus^-1(dt), so that softplus(0 + bias) starts at dt."""
    dt = torch.exp(torch.rand(n) * (torch.log(torch.tensor(dt_max)) - torch.log(torch.tensor(dt_min)))
                   + torch.log(torch.tensor(dt_min))).clamp(min=floor)
    return dt + torch.log(-torch.expm1(-dt))
