"""PaTH-FoX: PaTH attention with FoX's forget gate (Yang et al. 2025, arXiv 2505.16381, the "PaTH-FoX"
variant: PaTH's Householder products and FoX's data-dependent decay on the same logits).

    logit_ij = (q_i^T H_i ... H_{j+1} k_j + sum_{t=j+1}^{i} ln f_t) / sqrt(d_h),   f_t = sigmoid(g . x_t + g_0)

Composed from posbench pieces: ``path`` (posbench/encodings/path.py: w, beta, the chunked products)
and ``fox`` (posbench/encodings/fox.py: the per-head forget gate and its cumulative sums), both
through the ``content_bias`` hook, the second term added to the first. Reference code:
flash-linear-attention ``fla/layers/path_attn.py`` with ``use_forget_gate=True`` (``g_proj =
Linear(d, heads, bias=True)``, ``g = logsigmoid(g_proj(x))``) and ``fla/ops/path_attn/naive.py``
(``A = A + g_cumsum[..., None] - g_cumsum[..., None, :]``, then ``(A * scale).softmax(-1)``; the
tests check it). So, unlike FoX's own reference, PaTH's scales the forget term by 1 / sqrt(d_h) as well
(its Triton kernel ``parallel_path_fwd.py`` too: ``b_s * sm_scale`` after adding the gates); followed here.
FoX's gate keeps FoX's initialisation here (N(0, 0.02), bias 0: f = 1/2 at the start), which is
also FLA's default initialisation of ``g_proj``.

Deviations: PaTH's and FoX's (the gate and the Householder parameters without weight decay; a
``+temp`` row scales neither term).
"""

from __future__ import annotations

from posbench.encodings import register
from posbench.encodings.fox import ForgettingTransformer
from posbench.encodings.path import PaTH


@register("path_fox")
class PaTHFoX(PaTH):
    colour, order = "#807dba", 2
    init_note = ForgettingTransformer.init_note

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.fox = ForgettingTransformer(shape, ForgettingTransformer.Params())

    def content_bias(self, x, q, k, layer):
        path = super().content_bias(x, q, k, layer)
        c = self.fox.log_forget(x, layer).cumsum(-1) * self.shape.head_dim ** -0.5  # scaled, as the reference

        def path_and_forget(scores, start, end, lo, hidden):
            return path(scores, start, end, lo, hidden) + (c[:, :, start:end, None] - c[:, :, None, lo:end]).to(scores.dtype)

        return path_and_forget
