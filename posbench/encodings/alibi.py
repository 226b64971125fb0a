"""ALiBi: Attention with Linear Biases (Press, Smith & Lewis 2022, "Train Short, Test Long").

    softmax(q_i . k_j / sqrt(d) - m_h * (i - j)),  j <= i

No position enters the embeddings. Head h gets a fixed slope m_h from a geometric sequence: for n
heads (a power of two) m = 2^(-8/n), 2^(-16/n), ..., 2^(-8); for other n, the slopes of the
nearest lower power of two followed by every other slope of the next power of two.
"""

import math

import torch

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """Press et al.'s head slopes, e.g. 8 heads -> 1/2, 1/4, ..., 1/256."""

    def geometric(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if num_heads < 1:
        raise ValueError(f"num_heads must be positive, got {num_heads}")
    if math.log2(num_heads).is_integer():
        slopes = geometric(num_heads)
    else:
        closest = 2 ** math.floor(math.log2(num_heads))
        slopes = geometric(closest) + geometric(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


@register("alibi")
class ALiBi(PositionalEncoding):
    family, colour, order = "score bias", "#d62728", 0  # the report's column, line colour and place in it
    translation_invariant = True

    def __init__(self, shape, params):
        super().__init__(shape, params)
        # not persistent: a fixed function of the head count, never read back from a checkpoint
        self.register_buffer("slopes", alibi_slopes(shape.n_heads), persistent=False)

    def bias(self, q_pos, k_pos, layer):
        return -self.slopes[:, None, None] * (q_pos[:, None] - k_pos[None, :]).to(self.slopes.dtype)
