"""KERPLE: kernelized relative positional embedding (Chi et al. 2022, arXiv 2205.09921), two
conditionally positive definite kernels turned into logit biases with learned per-head parameters:

    kerple_log:    b[h, i, j] = -r1_h * log(1 + r2_h * |i - j|),   r1, r2 > 0      (paper eq. (7))
    kerple_power:  b[h, i, j] = -r1_h * |i - j| ^ r2_h,            r1 > 0, 0 < r2 <= 2

Reference code followed: chijames/KERPLE, ``megatron/mpu/layers.py`` (``ParallelKerpleLog``: the
bias -p log(1 + a |m - n|); ``ParallelKerplePower``: -a |m - n|^p) and ``megatron/model/gpt2_model.py``
(one module built once and handed to every layer). As there:

* one set of parameters for the whole model, shared by every layer;
* initial values uniform: log kernel p = r1 ~ U(0, 2), a = r2 ~ U(0, 1); power kernel a = r1 ~ U(0, 1),
  p = r2 ~ U(0, 2);
* the constraint is kept by projection: before each use the parameters are clamped *in place*
  (r >= 1e-2, and the power's exponent <= 2), and the forward pass uses the parameter itself, so a
  parameter at its bound still gets a gradient (clamping inside the graph would give it none).

Deviation: none in the formula; the learning rate is the model's (one rate for everything, as in
the official configs).
"""

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

EPS = 1e-2  # the official code's lower bound


class _Kerple(PositionalEncoding):
    translation_invariant = True
    MAX_R2: float | None = None  # upper bound of r2 (the power kernel's exponent)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        # shared by all layers, like the official code's single module
        self.r1 = nn.Parameter(torch.rand(shape.n_heads) * params.init_r1)
        self.r2 = nn.Parameter(torch.rand(shape.n_heads) * params.init_r2)

    def project(self) -> None:
        """Clamp the parameters into their valid range in place (the official code's projection).
        Only when one is out of range: the first layer of a forward pass projects, and the later
        layers must not modify a tensor the earlier ones saved for the backward pass."""
        with torch.no_grad():
            high = self.MAX_R2 if self.MAX_R2 is not None else float("inf")
            if (self.r1 < EPS).any():
                self.r1.clamp_(min=EPS)
            if (self.r2 < EPS).any() or (self.r2 > high).any():
                self.r2.clamp_(min=EPS, max=self.MAX_R2)

    def distance(self, q_pos, k_pos):
        return (q_pos[:, None] - k_pos[None, :]).clamp(min=0).float()


@register("kerple_log")
class KerpleLog(_Kerple):
    family, colour, order = "score bias", "#2ca02c", 2  # the report's column, line colour and place in it

    @dataclass
    class Params:
        init_r1: float = param(2.0, positive)  # the multiplier p: U(0, 2)
        init_r2: float = param(1.0, positive)  # inside the log, a: U(0, 1)

    def bias(self, q_pos, k_pos, layer):
        self.project()
        return -self.r1[:, None, None] * torch.log1p(self.r2[:, None, None] * self.distance(q_pos, k_pos))


@register("kerple_power")
class KerplePower(_Kerple):
    family, colour, order = "score bias", "#98df8a", 3  # the report's column, line colour and place in it
    MAX_R2 = 2.0

    @dataclass
    class Params:
        init_r1: float = param(1.0, positive)  # the multiplier a: U(0, 1)
        init_r2: float = param(2.0, positive)  # the exponent p: U(0, 2), kept <= 2

    def bias(self, q_pos, k_pos, layer):
        self.project()
        d = self.distance(q_pos, k_pos)
        # d^r2 at d = 0 has a NaN gradient in r2 (0 * log 0): compute on d >= 1, then put the 0 back
        safe = torch.where(d > 0, d, torch.ones_like(d))
        return -self.r1[:, None, None] * torch.where(d > 0, safe ** self.r2[:, None, None], torch.zeros_like(safe))
