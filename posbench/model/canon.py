"""Canon layers (Allen-Zhu 2025, "Physics of Language Models: Part 4.1, Architecture Design and the Magic
of Canon Layers", arXiv 2512.17351; NeurIPS 2025): a short causal depthwise convolution with a residual,
at up to four places inside every block, so that each token mixes in its few predecessors.

    canon(h)_t = h_t + sum_{s=0}^{3} w_s (.) h_{t-s}          (kernel 4, one weight vector per channel,
                                                               zero before the first token, no bias)

Places (``model.canon``, any subset of "ABCD"; "" none, the default):
    A  on the mixer's input, after the block's first norm      (width d_model; every block)
    B  on the attention's q, k and v, after their projection   (width 3 d_model; attention blocks only:
                                                                a recurrent mixer has its own short conv)
    C  on the MLP's input, after the block's second norm       (width d_model; every block)
    D  inside the MLP, on the up-projection before its activation (width mlp_ratio x d_model)

Reference code: facebookresearch/PhysicsLM4 ``huggingface/modeling_llama_canon.py`` (``canon_set``:
``canonA`` after ``input_layernorm``, ``canonB`` on ``cat([q, k, v])`` after the projections (and the
optional QK-norm) before RoPE, ``canonC`` after ``post_attention_layernorm``, ``canonD`` on
``cat([gate_proj(x), up_proj(x)])``) and ``huggingface/canon_helper.py`` (``create_canon``: a
``ShortConvolution`` with ``canon_kernel`` 4, ``canon_bias`` False, ``canon_activation`` False,
``canon_residual`` True, initialised by ``reset_parameters``: PyTorch's Conv1d (Kaiming) default).

Deviations: posbench's MLP is GELU (fc, proj), not SwiGLU, so D convolves the fc output (one
up-projection, not the gate and up pair); the conv weights take the model's weight decay (3-d
parameters are decayed matrices in posbench's optimizer groups).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

PLACES = "ABCD"
KERNEL = 4  # the reference's canon_kernel


class Canon(nn.Module):
    """h + causal_depthwise_conv(h) over the sequence of h [B, L, C]."""

    def __init__(self, width: int):
        super().__init__()
        self.conv = nn.Conv1d(width, width, KERNEL, groups=width, bias=False)  # PyTorch's (Kaiming) init, as the reference

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        mixed = self.conv(F.pad(h.transpose(1, 2), (KERNEL - 1, 0)))  # padded on the left only: causal
        return h + mixed.transpose(1, 2)


def canon_at(places: str, place: str, width: int) -> Canon | None:
    """A Canon layer of ``width`` channels if ``place`` is among ``places``, else None."""
    return Canon(width) if place in (places or "") else None
