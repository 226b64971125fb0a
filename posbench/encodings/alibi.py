"""ALiBi: Attention with Linear Biases (Press, Smith & Lewis 2022, "Train Short, Test Long").

    softmax(q_i . k_j / sqrt(d) - m_h * (i - j)),  j <= i

No position enters the embeddings. Head h gets a fixed slope m_h from a geometric sequence: for n
heads (a power of two) m = 2^(-8/n), 2^(-16/n), ..., 2^(-8); for other n, the slopes of the
nearest lower power of two followed by every other slope of the next power of two.

``num_heads`` (default null: every head) puts ALiBi on the first k heads only, with the slopes of a
k-head ALiBi, and leaves the other heads without any position term (NoPE heads): x-transformers'
``alibi_num_heads`` (lucidrains/x-transformers ``x_transformers/x_transformers.py``,
``AlibiPositionalBias(heads=alibi_num_heads, total_heads=heads)``: the bias of ``heads`` slopes, padded
with zero bias for the remaining heads by ``pad_at_dim``). x-transformers' README suggests it for
letting some heads attend far. Deviation: none; the default leaves every run's id as it was
(posbench/store/identity.py, OLD_ENCODING_BEHAVIOUR).
"""

import math
from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
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

    @dataclass
    class Params:
        num_heads: Optional[int] = param(None, positive)  # heads with ALiBi (the first k; the rest NoPE); null: all

    def __init__(self, shape, params):
        super().__init__(shape, params)
        k = shape.n_heads if params.num_heads is None else params.num_heads
        if k > shape.n_heads:
            raise PosbenchError(f"encoding.num_heads={k} is more than the model's {shape.n_heads} heads; "
                                f"give 1 to {shape.n_heads} (or null: every head)")
        # the first k heads take a k-head ALiBi's slopes, the others slope 0 (x-transformers' zero padding);
        # not persistent: a fixed function of the head counts, never read back from a checkpoint
        slopes = torch.cat((alibi_slopes(k), torch.zeros(shape.n_heads - k)))
        self.register_buffer("slopes", slopes, persistent=False)

    def bias(self, q_pos, k_pos, layer):
        return -self.slopes[:, None, None] * (q_pos[:, None] - k_pos[None, :]).to(self.slopes.dtype)
