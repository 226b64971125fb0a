"""ComRoPE: rotary position embedding with trainable commuting angle matrices (Yu et al., CVPR 2025,
arXiv 2506.03737), in one dimension (token positions).

    q_m <- R(m) q,  k_n <- R(n) k,   R(p) = exp(p A_h),   A_h = diag(B_1, ..., B_{d/b})  (per layer, head)
    q_m^T k_n  ->  q^T R(m)^T R(n) k = q^T R(n - m) k                       (needs A_h to commute with itself)

Each B_j is a trainable skew-symmetric b x b block. The paper's RoPE equation R(x)^T R(y) = R(y - x)
holds when the angle matrices of the N position axes commute pairwise (its theorem); with one axis
there is one angle matrix per head, which commutes with itself, so every trainable block-diagonal
skew-symmetric A is admissible. The two parameterisations, as the reference code builds them for
``num_axes = 1``:

* ``ap`` (ComRoPE-AP, ``ComRoPEAPAttention``): B_j = P_j - P_j^T, P_j ~ N(0, init_std^2) per head;
  with one axis the axis partition (block j serves axis j mod N) gives every block to the one axis.
* ``ld`` (ComRoPE-LD, ``ComRoPELDAttention``): B_j = theta_j (P_j - P_j^T), P per head, the
  multiplier theta_j ~ N(0, 1) per block (shape [1, num_axes, num_blocks, 1, 1] in the reference),
  shared by the heads of the layer.

Reference code: Longin-Yu/ComRoPE ``model.py`` (``RoPESelfAttentionBase.get_rotation_matrix``:
``R = torch.matrix_exp(sum_axes(A x))`` per block, applied as ``R @ q`` and ``R @ k`` on contiguous
channel blocks; one set of parameters per attention layer; config defaults ``block_size=2``,
``init_std=1.0``, ``axis_scale=True``). Positions: with ``axis_scale`` the reference maps a patch's
grid index p to (p + 0.5) / n, n the number of patches along the axis (the training grid), so
angles are in units of the training extent. Here a token's position p becomes p / train_len (the
+0.5 cancels in every q.k, which depends on differences only): at initialisation a training window
spans the same angles as a training image side does in the reference, and a window of 16x the
training length is 16 units, as an image 16x wider would be there.

In one dimension ComRoPE with any block size is RoPE with trainable frequencies per head in a
trainable orthogonal basis per block, which W_q and W_k could absorb (a skew block is U diag(w J) U^T);
the block size changes the parameterisation and its training, not what the layer can represent.

Deviations: the reference's defaults (block size 2, init_std 1) are taken as they are; the paper's
image experiments' tuned block sizes and initial scales were not checked against its tables. The
generators have no weight decay (encoding parameters). Rotations are computed per forward from
the parameters (float64 matrix exponentials of [L, H, d/b] blocks, then cast), never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

VARIANTS = ("ap", "ld")


def block_rotations(generators: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """R(p) = exp(p A) per block: generators [H, nb, b, b] (skew-symmetric), positions [L] (any real
    numbers, in the units the generators are in) -> [H, L, nb, b, b], computed in float64."""
    angles = positions.to(torch.float64)[None, :, None, None, None] * generators.to(torch.float64)[:, None]
    return torch.matrix_exp(angles)


def rotate_blocks(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """R(p) x on contiguous blocks of b channels: x [B, H, L, Dh], rotations [H, L, nb, b, b] -> [B, H, L, Dh]."""
    B, H, L, D = x.shape
    nb, b = rotations.shape[2], rotations.shape[3]
    blocks = x.reshape(B, H, L, nb, b)
    return torch.einsum("hlnij,bhlnj->bhlni", rotations.to(x.dtype), blocks).reshape(B, H, L, D)


class ComRoPELayer(PositionalEncoding):
    """The generators of one layer (the reference has one set per attention layer): the rotary hooks
    of that layer, which ``ComRoPE.at(layer)`` hands to the model."""

    def __init__(self, shape, params, unit: float):
        super().__init__(shape, params)
        b = params.block_size
        nb = shape.head_dim // b
        self.unit = unit  # positions are multiplied by it (1 / train_len: the reference's axis_scale)
        self.freqs = nn.Parameter(torch.randn(shape.n_heads, nb, b, b) * params.init_std)
        # ld: one multiplier per block, shared by the heads (the reference's [1, num_axes, num_blocks, 1, 1])
        self.multiplier = nn.Parameter(torch.randn(nb)) if params.variant == "ld" else None

    def generators(self) -> torch.Tensor:
        """A_h's blocks [H, nb, b, b]: P - P^T (ap), times theta_j per block (ld)."""
        skew = self.freqs - self.freqs.transpose(-1, -2)
        return skew if self.multiplier is None else skew * self.multiplier[None, :, None, None]

    def prepare(self, positions, options):
        return block_rotations(self.generators(), positions.to(torch.float64) * self.unit)

    def rotate(self, q, k, state):
        return rotate_blocks(q, state), rotate_blocks(k, state)


@register("comrope")
class ComRoPE(PositionalEncoding):
    family, colour, order = "rotary", None, 6
    translation_invariant = True

    @dataclass
    class Params:
        variant: str = "ap"  # ap: B_j = P_j - P_j^T (ComRoPE-AP) | ld: theta_j (P_j - P_j^T) (ComRoPE-LD)
        block_size: int = param(2, at_least(2))  # b: channels per skew-symmetric block (the reference's default 2)
        init_std: float = param(1.0, positive)  # P ~ N(0, init_std^2) (the reference's default 1.0)

        def check(self) -> None:
            if self.variant not in VARIANTS:
                raise PosbenchError(f"encoding.variant={self.variant!r}; valid: {', '.join(VARIANTS)}")

    def __init__(self, shape, params):
        super().__init__(shape, params)
        if shape.head_dim % params.block_size:
            raise PosbenchError(f"encoding.block_size={params.block_size} does not divide the head dimension "
                                f"{shape.head_dim} (d_model/n_heads); give a divisor of {shape.head_dim} of at least 2")
        unit = 1.0 / shape.train_len
        self.layers = nn.ModuleList(ComRoPELayer(shape, params, unit) for _ in range(shape.n_layers))

    def at(self, layer):
        return self.layers[layer]
