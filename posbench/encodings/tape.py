"""TAPE: contextualized equivariant positional encoding (Zhu et al. 2025, "Rethinking Addressing in
Language Models via Contextualized Equivariant Positional Encoding", arXiv 2501.00712, ICML 2025).

Every token carries a positional state through the layers, one complex number per head h and
rotary frequency f (a pair of channels, in RoPE's "rotate half" layout), which each layer reads and
then updates from the attention and from the content. Numbered as in this file (the formulas are
the reference code's; the paper's text was not available here beyond its abstract):

    (T1) z^0_{h,i,f} = exp(i p_i theta_f),  theta_f = base^(-2f / d_h)           (RoPE, every head)
    (T2) logit_ij = Re sum_f (q_{i,f} z_{i,f}) conj(k_{j,f} z_{j,f}) / sqrt(d_h),  q_{i,f} = q_i[f] + i q_i[f + d_h/2]
         i.e. q and k turned by z as RoPE turns them by exp(i p theta_f), z no longer of modulus 1
    (T3) A = causal softmax(logits),  y = A v                                        (the layer's attention)
    (T4) z_{h,i} <- z_{h,i} + s_h sum_j A_{h,ij} z_{h,j},   s_h = sum_e W^a_{h,e}    (after attention)
    (T5) m = MLP(LN2(x)),  z_{h,i} <- z_{h,i} + sum_p W^d_{h,p} silu(W^x m_i)_p sum_h' W^u_{p,h'} z_{h',i}
                                                                                     (after the MLP)

with W^a [H, H] and W^u [P, H] zero at initialisation and W^x [P, D], W^d [H, P] ~ N(0, 0.02): at
initialisation z stays z^0 and TAPE is RoPE exactly. (T4) and (T5) are real-linear in z, with the
same coefficients for every frequency and both parts of z, and (T2) depends on z only through
z_i conj(z_j): multiplying every z_{., ., f} by one unit complex number u_f (a rotation of every
frequency's plane; a shift of all positions by t is u_f = exp(i t theta_f)) changes no logit at any
layer, so the model's output is invariant to a shift of the positions (the paper's orthogonal
equivariance; tests/encodings/test_tape.py checks it with the parameters off their initial values).

Reference code: VITA-Group/TAPE ``models/llama/adape.py`` (TAPE is ``adape`` in its code; README) and
``config/adape.json``: ``AdaRotaryEmbedding`` (T1, cos/sin [B, H, L, d_h] with both halves equal),
``apply_rotary_pos_emb`` with the state as (cos, sin) (T2), ``PELlamaAttention.forward``
(``pos_output = attn_weights @ position_states``, T4's average), ``LlamaDecoderLayer.forward``
(``einsum('bqnd,qe->bqnd', pos, post_attention_linear.weight)``, which sums the weight's rows: T4's
s_h; the residual; ``self.pe(mlp_output, position_states)`` after the MLP, on the MLP's output, T5),
``PELayer`` (``up_proj`` Linear(H, P), ``x_proj`` Linear(D, P), ``down_proj`` Linear(P, H), SiLU:
T5) and ``LlamaPreTrainedModel._init_weights`` (Linear weights N(0, 0.02), then ``pe.up_proj`` and
``post_attention_linear`` zero). The reference's cos and sin halves are updated by the same maps and
so stay equal; one complex number per frequency holds them.

Deviations:

- P, the width of (T5), is ``position_ratio`` x n_heads: the reference's ``position_size`` 48 for
  12 heads (d_model 768) is ratio 4, kept; toy models have 2-4 heads, so P = 8-16.
- The last layer has no (T4), (T5) parameters: the reference computes its updates and never reads
  them (dead parameters that never train); the forward is the same.
- In training the reference starts the positions at a random offset k in [0, 2 max_len]
  (``AdaRotaryEmbedding``); by the invariance above that changes no logit (in exact arithmetic), so
  positions are as given (0..L-1 unless the run randomizes them).
- Rotation, attention and updates run in the model's dtype (the reference: bf16 with flash attention,
  which runs A again for cos and for sin; here one kernel call averages v and z together). The model
  is posbench's (LayerNorm, GELU MLP, no RMSNorm/SwiGLU); the parameters have no weight decay
  (encoding parameters; the reference decays 0.01).
- Not an entry of a layer pattern (``encoding=layers`` refuses it): its layers would not pass the
  state along.
- The paper's "tensorial" embedding with more than one rotary plane per block, and its PEFT use on a
  pre-trained Llama, are not built: this is the pre-training model of the reference's ``adape``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.core.params import above, param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding
from posbench.encodings.rope import apply_rotation, rope_frequencies, rotation_tables


@dataclass(frozen=True)
class TapeState:
    """The positional state of every token: z = re + i im, each [B or 1, H, L, d_h / 2] (T1)."""

    re: torch.Tensor
    im: torch.Tensor

    def features(self) -> torch.Tensor:
        """[.., H, L, d_h]: the parts side by side, the extra value channels attention averages (T4)."""
        return torch.cat((self.re, self.im), dim=-1)

    def plus(self, d_re: torch.Tensor, d_im: torch.Tensor) -> "TapeState":
        return TapeState(self.re + d_re, self.im + d_im)


@register("tape")
class Tape(PositionalEncoding):
    family, colour, order = "data-dependent", None, 4
    translation_invariant = True  # (T2) depends on z_i conj(z_j) and (T4), (T5) commute with a common rotation

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))
        # width of the MLP update (T5), in heads: the reference's position_size 48 for 12 heads
        position_ratio: int = param(4, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        if shape.head_dim % 2:
            raise PosbenchError(f"{self.name} needs an even head dimension, got d_model/n_heads = {shape.head_dim}")
        H, P, D = shape.n_heads, params.position_ratio * shape.n_heads, shape.d_model
        n = shape.n_layers - 1  # the last layer's update is never read (module docstring)
        self.attn_mix = nn.ParameterList(nn.Parameter(torch.zeros(H, H)) for _ in range(n))  # W^a (T4), zero
        self.up = nn.ParameterList(nn.Parameter(torch.zeros(P, H)) for _ in range(n))  # W^u (T5), zero
        self.x_proj = nn.ModuleList(nn.Linear(D, P, bias=False) for _ in range(n))  # W^x (T5)
        self.down = nn.ParameterList(nn.Parameter(torch.empty(H, P)) for _ in range(n))  # W^d (T5)
        for w in [*(lin.weight for lin in self.x_proj), *self.down]:
            nn.init.normal_(w, std=0.02)

    def initial_state(self, positions: torch.Tensor) -> TapeState:
        """(T1): z^0 = exp(i p theta_f), the same for every head, [1, H, L, d_h / 2]."""
        inv_freq, _ = rope_frequencies(self.shape.head_dim, self.params.base)
        cos, sin = rotation_tables(positions, inv_freq)  # [L, d_h], both halves equal
        half, H = self.shape.head_dim // 2, self.shape.n_heads
        dtype = self.down[0].dtype if len(self.down) else torch.get_default_dtype()
        return TapeState(*(t[:, :half].to(dtype).expand(1, H, -1, -1) for t in (cos, sin)))

    def prepare(self, positions, options):
        return self.initial_state(positions)

    def rotate(self, q, k, state):
        """(T2): q, k turned by z (RoPE's rotation with cos = Re z, sin = Im z on both halves)."""
        cos, sin = torch.cat((state.re, state.re), dim=-1), torch.cat((state.im, state.im), dim=-1)
        return apply_rotation(q, cos, sin), apply_rotation(k, cos, sin)

    def carried(self, state):
        return state.features()

    def after_attention(self, state, mixed, layer):
        """(T4): z + s_h (A z), s_h the row sums of W^a (the reference's einsum)."""
        if layer >= len(self.attn_mix):
            return state
        s = self.attn_mix[layer].sum(-1).to(mixed.dtype)[:, None, None]  # [H, 1, 1]
        d_re, d_im = (s * mixed).chunk(2, dim=-1)
        return state.plus(d_re, d_im)

    def after_mlp(self, state, m, layer):
        """(T5): z + W^d (silu(W^x m) * W^u z), mixing heads, per token, the same for every frequency."""
        if layer >= len(self.up):
            return state
        gate = F.silu(self.x_proj[layer](m)).transpose(1, 2)[..., None]  # [B, P, L, 1]
        up, down = self.up[layer].to(m.dtype), self.down[layer].to(m.dtype)
        d_re, d_im = (torch.einsum("hp,bpld->bhld", down, gate * torch.einsum("ph,bhld->bpld", up, part.to(m.dtype)))
                      for part in (state.re, state.im))
        return state.plus(d_re, d_im)
