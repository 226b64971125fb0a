"""Attention kernels; the model picks one from the hooks its encoding declares:

* no bias, no relative terms -> ``F.scaled_dot_product_attention(is_causal=True)``, the fast path;
* score bias                 -> ``biased_causal_attention``: SDPA with a float mask, built for one
  block of queries at a time so that heads x L x L is never held for a whole long sequence; or,
  for a bias that depends only on the distance i - j over contiguous positions, flex attention
  (``distance_bias_attention``): the bias is a [H, L] table read by a ``score_mod``, causality is a
  block mask, and no score matrix is materialised. Flex runs where ``use_flex`` says so: on CUDA
  for training and evaluation, on CPU (no flex backward in torch 2.13) for evaluation at long
  lengths, where its one-off compilation pays for itself;
* relative content terms     -> the encoding's own ``relative_attention``;
* a local window, a sink logit or a content-dependent term (the 2024-2026 hooks of
  posbench/encodings/base.py) -> ``masked_attention``: explicit scores for one block of queries at
  a time against only the keys its window reaches (sliding or chunked: ``Window``), so a 16x
  window never holds heads x L x L; a sink joins the softmax denominator, a ``score_mod`` adds a
  data-dependent term (FoX's forget gates, CoPE's counted positions). A window, a sink and FoX's
  term (``Decay``) have a flex form too (``flex_scores_attention``: a block mask, the sink as one
  more key), which runs where posbench/model/kernel_choice.py says it pays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from posbench.core.errors import PosbenchError

log = logging.getLogger("posbench")

BiasFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (q_pos [c], k_pos [e]) -> [H, c, e]
# (scores [B, H, c, e], start, end, lo, hidden [c, e]) -> scores plus a term, for queries [start, end)
# and keys [lo, end), ``hidden`` the pairs the mask will remove (future keys, keys outside the window)
ScoreMod = Callable[[torch.Tensor, int, int, int, torch.Tensor], torch.Tensor]

# Largest score block (batch x heads x queries x keys) materialised at once: 2^24 floats = 64 MiB.
MAX_SCORE_ELEMENTS = 1 << 24


def hide(x: torch.Tensor, hidden: torch.Tensor, value: float) -> torch.Tensor:
    """``x.masked_fill(hidden, value)`` for ``value`` -inf or 0 and a mask [c, e] broadcast over x
    [.., c, e], as one add of a [c, e] table of 0 and -inf, or one multiply by the visible pairs: the
    same numbers for finite x (x + 0 = x, x + -inf = -inf, x * 1 = x, x * 0 = 0; the gradient too), and
    on CPU about 10x faster than masked_fill with a broadcast mask (torch 2.13: 6.7 ms against 0.4 ms
    for [32, 4, 128, 128], 1 thread), which every explicit-score kernel runs once or twice per block."""
    if value == 0.0:
        return x * (~hidden).to(x.dtype)
    if value != float("-inf"):
        raise ValueError(f"hide fills with 0 or -inf, got {value}")
    return x + torch.zeros(hidden.shape, dtype=x.dtype, device=x.device).masked_fill_(hidden, value)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)


def biased_causal_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    bias_fn: BiasFn | None,
    positions: torch.Tensor,
    scale: float | None = None,
    max_elements: int = MAX_SCORE_ELEMENTS,
    block: int | None = None,
) -> torch.Tensor:
    """Causal attention with logits q.k * scale + bias_fn(pos_i, pos_j)[h] (no bias: None),
    chunked over queries; ``block``: blockwise causal attention (``future_mask``).

    Causality is by index (j <= i), not by position value, so randomized or interpolated positions
    keep the mask right. SDPA refuses a float mask together with ``is_causal``, so the -inf causal
    part is folded into the bias.
    """
    B, H, L, _ = q.shape
    out = []
    for start, end in query_chunks(q.shape, max_elements):
        masked = future_mask(start, end, q.device, block)
        bias = bias_fn(positions[start:end], positions[:end]) if bias_fn is not None else torch.zeros(masked.shape, device=q.device)
        bias = bias.masked_fill(masked, float("-inf")).to(q.dtype)
        if bias.dim() == 3 and not torch.is_grad_enabled():
            # evaluation: a 4-D mask lets CPU SDPA take its flash kernel (a 3-D one sends it to the math
            # kernel, about 3x slower at 16x); equal to float tolerance, so training keeps the 3-D mask
            bias = bias[None]
        out.append(F.scaled_dot_product_attention(q[:, :, start:end], k[:, :, :end], v[:, :, :end], attn_mask=bias, scale=scale))
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


# -- flex attention -----------------------------------------------------------------------------

# On CPU, flex is compiled per shape (tens of seconds the first time), so it is used only from
# this window length on, where the chunked float-mask path gets slow and memory-hungry.
FLEX_MIN_LEN_CPU = 1024
_flex_state: dict = {"compiled": None, "broken": None, "masks": {}}


def flex_supported() -> bool:
    """Flex attention importable and not found broken earlier in this process."""
    if _flex_state["broken"] is not None:
        return False
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def use_flex(device: torch.device, length: int, training: bool, setting: str = "auto") -> bool:
    """Whether the flex path should run: ``setting`` is ``auto``, ``flex`` or ``chunked``."""
    if setting == "chunked" or not flex_supported():
        return False
    if setting == "flex":
        return device.type == "cuda" or not training
    if device.type == "cuda":
        return True
    return not training and length >= FLEX_MIN_LEN_CPU


def _causal_block_mask(length: int, device: torch.device):
    from torch.nn.attention.flex_attention import create_block_mask

    key = (length, str(device))
    if key not in _flex_state["masks"]:
        causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx  # noqa: E731
        _flex_state["masks"][key] = create_block_mask(causal, None, None, length, length, device=str(device))
    return _flex_state["masks"][key]


def _compiled_flex():
    if _flex_state["compiled"] is None:
        from torch.nn.attention.flex_attention import flex_attention

        _flex_state["compiled"] = torch.compile(flex_attention, dynamic=False)
    return _flex_state["compiled"]


def distance_bias_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor, scale: float | None = None
) -> torch.Tensor | None:
    """Causal attention with logits q_i.k_j * scale + table[h, i - j] through compiled flex
    attention, for positions 0..L-1. Returns None (after a one-line warning) if flex cannot run
    here, so that the caller falls back to the chunked path."""
    L = q.shape[-2]
    table = table.to(q.dtype)

    def score_mod(score, b, h, q_idx, kv_idx):
        # masked pairs (kv_idx > q_idx) never reach the softmax; clamp keeps their lookup in range
        return score + table[h, (q_idx - kv_idx).clamp(min=0)]

    try:
        return _compiled_flex()(q, k, v, score_mod=score_mod, block_mask=_causal_block_mask(L, q.device), scale=scale)
    except Exception as e:  # noqa: BLE001 - any compiler failure means: use the portable path
        _flex_state["broken"] = f"{type(e).__name__}: {e}"
        log.warning("flex attention unavailable, using chunked attention (%s)", str(e).splitlines()[0][:200])
        return None


def query_chunks(shape: torch.Size, max_elements: int) -> list[tuple[int, int]]:
    """Blocks of queries [start, end) whose score block (B x H x block x L) fits in max_elements."""
    B, H, L, _ = shape
    chunk = max(1, min(L, max_elements // max(1, B * H * L)))
    return [(s, min(L, s + chunk)) for s in range(0, L, chunk)]


def future_mask(start: int, end: int, device, block: int | None = None) -> torch.Tensor:
    """[end - start, end] boolean mask of the pairs a query must not see: keys after it (causality
    by index), and with ``block`` (blockwise causal attention, Sun et al. 2022) keys before the
    previous block of ``block`` tokens, so a query sees between ``block`` and 2 ``block`` keys."""
    keys = torch.arange(end, device=device)[None, :]
    queries = torch.arange(start, end, device=device)[:, None]
    mask = keys > queries
    if block is not None:
        mask = mask | (keys // block < queries // block - 1)
    return mask


def relative_causal_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    positions: torch.Tensor,
    rel_q: torch.Tensor,
    rel_k: torch.Tensor,
    rel_v: torch.Tensor | None = None,
    scale: float | None = None,
    max_elements: int = MAX_SCORE_ELEMENTS,
    block: int | None = None,
    window: Optional[Window] = None,
) -> torch.Tensor:
    """Attention with content-position terms indexed by clipped distance d = min(pos_i - pos_j, R-1):

        logit_ij = (q_i . k_j + rel_q_i . rel_k[d]) * scale
        out_i    = sum_j a_ij (v_j + rel_v[d])                     (rel_v: Shaw et al.'s value term)

    rel_q: [B, H, L, Dh]; rel_k: [H or 1, R, Dh]; rel_v: [R, Dh] or None. The position term is
    computed for the R distances only (rel_q @ rel_k^T, [B, H, L, R]) and gathered by distance: the
    relative-shift trick of Transformer-XL, generalised to explicit (possibly non-contiguous)
    positions. Nothing of size L x L x Dh is built; score blocks are chunked over queries. ``block``
    (blockwise causal attention) and ``window`` (a local window, the +swa rows) hide keys as
    ``hidden_pairs`` says.
    """
    B, H, L, Dh = q.shape
    scale = Dh ** -0.5 if scale is None else scale
    R = rel_k.shape[-2]
    out = []
    for start, end in query_chunks(q.shape, max_elements):
        dist = (positions[start:end, None] - positions[None, :end]).clamp(0, R - 1).expand(B, H, -1, -1)
        scores = q[:, :, start:end] @ k[:, :, :end].transpose(-1, -2)
        scores = scores + (rel_q[:, :, start:end] @ rel_k.transpose(-1, -2)).gather(-1, dist)
        scores = hide(scores * scale, hidden_pairs(start, end, 0, q.device, window, block), float("-inf"))
        # softmax in at least fp32 (bf16 under autocast would lose the small weights)
        attn = scores.softmax(-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(v.dtype)
        y = attn @ v[:, :, :end]
        if rel_v is not None:
            # sum the attention falling on each distance, then mix the R value embeddings
            per_distance = torch.zeros(B, H, end - start, R, dtype=attn.dtype, device=attn.device)
            y = y + per_distance.scatter_add_(-1, dist, attn) @ rel_v.to(attn.dtype)
        out.append(y)
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


# -- piecewise rotary attention (training-free extenders) ---------------------------------------------

RotateFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x [B, H, n, Dh], positions [n]) -> rotated x
WhereFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (query idx [c, 1], key idx [1, e]) -> bool [c, e]


def piecewise_rotary_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rotate: RotateFn,
    pieces: list[tuple[torch.Tensor, torch.Tensor, WhereFn | None]],
    scale: float,
    max_elements: int = MAX_SCORE_ELEMENTS,
    hidden: WhereFn | None = None,
    sink: torch.Tensor | None = None,
) -> torch.Tensor:
    """Causal attention whose rotary logit for a pair (i, j) comes from one of several position maps:

        logit_ij = rotate(q_i, qpos_p[i]) . rotate(k_j, kpos_p[j]) * scale

    with p the last piece whose ``where(i, j)`` holds (the first piece's where is None: every pair);
    pairs where ``hidden(i, j)`` holds are masked as the future is (StreamingLLM's evicted keys).
    ``sink``: [H] logits of one more key that every query sees and that carries no value (gpt-oss's sink,
    as ``masked_attention`` takes it; None: none).
    ReRoPE, SelfExtend, DCA and StreamingLLM are such maps (posbench/evaluation/variants/). q, k: [B, H, L, Dh] not yet
    rotated; each piece: (qpos [L], kpos [L], where). Keys are rotated once per piece ([B, H, L, Dh]
    each); scores are built one block of queries at a time (as ``biased_causal_attention``), so no
    heads x L x L matrix is held for a whole long window.
    """
    B, H, L, _ = q.shape
    keys = [rotate(k, kpos) for _, kpos, _ in pieces]
    out = []
    for start, end in query_chunks(q.shape, max(1, max_elements // (len(pieces) + 2))):
        i = torch.arange(start, end, device=q.device)[:, None]
        j = torch.arange(end, device=q.device)[None, :]
        scores = None
        for (qpos, _, where), k_rot in zip(pieces, keys):
            s = rotate(q[:, :, start:end], qpos[start:end]) @ k_rot[:, :, :end].transpose(-1, -2)
            scores = s if scores is None else torch.where(where(i, j), s, scores)
        masked = j > i if hidden is None else (j > i) | hidden(i, j)
        scores = hide(scores * scale, masked, float("-inf"))
        if sink is not None:  # the sink's logit joins the denominator; its weight is dropped below
            scores = torch.cat((scores, sink.to(scores.dtype).view(1, H, 1, 1).expand(B, H, end - start, 1)), dim=-1)
        attn = scores.softmax(-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(v.dtype)
        out.append((attn if sink is None else attn[..., :-1]) @ v[:, :, :end])
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


# -- local windows, sinks and content-dependent terms ------------------------------------------------

@dataclass(frozen=True)
class Window:
    """Local attention by index (as causality): ``sliding`` lets query i see keys i - size < j <= i
    (Mistral / Gemma sliding windows, HF ``sliding_window``: ``size`` keys, itself included);
    ``chunked`` lets it see keys of its own chunk, j // size == i // size, j <= i (Llama 4's
    ``attention_chunk_size``). ``sinks`` = k > 0 also lets every query see the first k keys,
    j < k (StreamingLLM's attention sinks, Xiao et al. 2024, arXiv 2309.17453, kept beside a window;
    positions stay those of the index: the keys are not moved as the reference's cache moves them,
    posbench/evaluation/variants/streaming.py)."""

    kind: str
    size: int
    sinks: int = 0

    KINDS = ("sliding", "chunked")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise PosbenchError(f"window kind must be one of {', '.join(self.KINDS)}, got {self.kind!r}")
        if not isinstance(self.size, int) or self.size < 1:
            raise PosbenchError(f"a {self.kind} window needs a positive integer size, got {self.size!r}")
        if not isinstance(self.sinks, int) or not 0 <= self.sinks < self.size:
            raise PosbenchError(f"a window's sink count must be an integer from 0 to size - 1 = {self.size - 1} "
                                f"(the sinks sit beside the window's keys), got {self.sinks!r}")

    @property
    def tag(self) -> str:
        sinks = f"+sink{self.sinks}" if self.sinks else ""
        return f"{'swa' if self.kind == 'sliding' else 'chunk'}{self.size}{sinks}"

    def first_key(self, start: int) -> int:
        """The first key any query of a block starting at ``start`` can see (0 with sinks: the first keys)."""
        if self.sinks:
            return 0
        return max(0, start - self.size + 1) if self.kind == "sliding" else (start // self.size) * self.size

    def hidden(self, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Pairs (broadcast) outside the window and its sinks (future keys are the causal mask's)."""
        outside = keys <= queries - self.size if self.kind == "sliding" else keys // self.size != queries // self.size
        return outside & (keys >= self.sinks) if self.sinks else outside

    def keys_seen(self, length: int, device=None) -> torch.Tensor:
        """[length] number of keys query i sees (i + 1 capped by the window, plus the sinks before it): SSMax's n."""
        i = torch.arange(length, device=device)
        inside = i.clamp(max=self.size - 1) + 1 if self.kind == "sliding" else i % self.size + 1
        return inside + (i + 1 - inside).clamp(max=self.sinks)


def hidden_pairs(start: int, end: int, lo: int, device, window: Optional[Window] = None,
                 block: int | None = None) -> torch.Tensor:
    """[end - start, end - lo] boolean mask of the keys [lo, end) that queries [start, end) must not
    see: the future, keys outside the window, and (``block``) keys before the previous block."""
    keys = torch.arange(lo, end, device=device)[None, :]
    queries = torch.arange(start, end, device=device)[:, None]
    mask = keys > queries
    if window is not None:
        mask = mask | window.hidden(queries, keys)
    if block is not None:
        mask = mask | (keys // block < queries // block - 1)
    return mask


def masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    bias: Callable[[int, int, int], torch.Tensor] | None = None,
    window: Optional[Window] = None,
    sink: torch.Tensor | None = None,
    score_mod: ScoreMod | None = None,
    block: int | None = None,
    on_weights: Callable[[torch.Tensor, int, int, int], None] | None = None,
    max_elements: int = MAX_SCORE_ELEMENTS,
) -> torch.Tensor:
    """Causal attention with explicit scores, one block of queries [start, end) at a time against
    the keys [lo, end) its ``window`` reaches (lo = 0 without one):

        logit_ij = score_mod(q_i . k_j * scale) + bias(start, end, lo)[.., i, j]    (j visible to i)
        out_i    = sum_j exp(logit_ij) v_j / (exp(sink_h) + sum_j exp(logit_ij))

    ``bias``: [H or B x H, c, e] by index ranges; ``sink``: [H] logits of a key that is seen by every
    query and carries no value (gpt-oss; None: no sink); ``score_mod``: a data-dependent term from
    the raw scores (posbench.attention.kernels.ScoreMod); ``on_weights(p, start, end, lo)``: the attention
    weights of each block (diagnostics). The softmax runs in at least fp32.
    """
    B, H, L, Dh = q.shape
    scale = Dh ** -0.5 if scale is None else scale
    out = []
    blocks = query_chunks(q.shape, max_elements) if window is None else window_chunks(q.shape, window, max_elements)
    for start, end in blocks:
        lo = window.first_key(start) if window is not None else 0
        hidden = hidden_pairs(start, end, lo, q.device, window, block)
        s = (q[:, :, start:end] @ k[:, :, lo:end].transpose(-1, -2)) * scale
        if score_mod is not None:
            s = score_mod(s, start, end, lo, hidden)
        if bias is not None:
            s = s + bias(start, end, lo)
        s = hide(s, hidden, float("-inf"))
        if sink is not None:
            s = torch.cat((s, sink.to(s.dtype).view(1, H, 1, 1).expand(s.shape[0], H, end - start, 1)), dim=-1)
        p = s.softmax(-1, dtype=torch.promote_types(s.dtype, torch.float32))
        if sink is not None:
            p = p[..., :-1]  # the sink takes its share of the mass and adds nothing
        if on_weights is not None:
            on_weights(p, start, end, lo)
        out.append(p.to(v.dtype) @ v[:, :, lo:end])
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


# ln of the stick a block of queries may leave to the keys it does not compute: e^-80 ~ 1.8e-35, below what
# float32 resolves beside weights of order 1 (the keys past it would add that much at most)
STICK_CUT = -80.0


def stick_breaking_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scale: float | None = None,
    attend_current: bool = False,
    remainder: bool = True,
    block: int | None = None,
    max_elements: int = MAX_SCORE_ELEMENTS,
    window: Optional[Window] = None,
) -> torch.Tensor:
    """Stick-breaking attention (Tan et al. 2025, arXiv 2410.17980), one block of queries at a time:

        beta_ij = sigmoid(q_i . k_j * scale)
        A_ij    = beta_ij prod_{j < t <= last} (1 - beta_it)      (last = i - 1; i with attend_current)
        out_i   = sum_{j <= last} A_ij v_j + rem_i v_i,  rem_i = prod_{j <= last} (1 - beta_ij) = 1 - sum_j A_ij

    in log space (ln beta = logsigmoid(z), ln(1 - beta) = logsigmoid(-z)) with a cumulative sum over
    the keys from the nearest back, in float32 at least, as the reference ``sb_ref.py``; ``remainder``
    adds rem_i v_i (the reference's tests and dolomite's default ``sb_remainder``). ``block``:
    blockwise causal attention (future_mask) and ``window`` (a local window, the +swa rows): keys they
    hide take no share of the stick.

    Each block of queries scores the keys back from its end only until every query has broken its
    stick to below e^STICK_CUT: the keys before take at most that much weight together, so they are
    left out (the band widens by blocks until then, to the first key where the sticks stay whole).
    Scores are taken against the keys in reverse order (key j at L - 1 - j), so the sums over the
    nearer keys are plain cumulative sums."""
    B, H, L, Dh = q.shape
    scale = Dh ** -0.5 if scale is None else scale
    dtype = torch.promote_types(q.dtype, torch.float32)
    k_rev, v_rev = k.flip(-2), v.flip(-2)
    out = []
    blocks = query_chunks(q.shape, max(1, max_elements // 4))  # four score-sized tensors per block
    reach = blocks[0][1] - blocks[0][0]  # keys before a block its band spans first

    def rests(start, end, lo, hi):
        """z and ln(1 - beta) (0 where hidden) of queries [start, end) for keys [lo, hi), last key first."""
        z = (q[:, :, start:end] @ k_rev[:, :, L - hi:L - lo].transpose(-1, -2)).to(dtype) * scale
        hidden = hidden_pairs(start, end, lo, q.device, window, block)[:, :hi - lo]
        if not attend_current:
            hidden = hidden | (torch.arange(lo, hi, device=q.device)[None, :] == torch.arange(start, end, device=q.device)[:, None])
        hidden = hidden.flip(-1)
        return z, hidden, hide(F.logsigmoid(-z), hidden, 0.0)  # hidden keys break nothing

    for start, end in blocks:
        first = max(window.first_key(start) if window is not None else 0, (start // block - 1) * block if block else 0)
        lo = max(first, start - reach)
        z, hidden, log_rest = rests(start, end, lo, end)
        broken = log_rest.cumsum(-1)  # ln of the stick left after the keys from the last down to each
        while lo > first and bool((broken[..., -1] > STICK_CUT).any()):  # some stick not yet broken: widen
            new_lo = max(first, lo - max(end - start, reach))
            z_more, hidden_more, rest_more = rests(start, end, new_lo, lo)
            z, hidden = torch.cat((z, z_more), -1), torch.cat((hidden, hidden_more), -1)
            log_rest, broken = torch.cat((log_rest, rest_more), -1), torch.cat((broken, rest_more.cumsum(-1) + broken[..., -1:]), -1)
            lo = new_lo
        reach = max(reach, start - lo)
        log_beta = hide(F.logsigmoid(z), hidden, float("-inf"))
        a = (log_beta + broken - log_rest).exp()  # beta_ij times the stick the nearer keys left
        y = a.to(v.dtype) @ v_rev[:, :, L - end:L - lo]
        if remainder:
            y = y + broken[..., -1:].exp().to(v.dtype) * v[:, :, start:end]
        out.append(y)
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)


def window_chunks(shape: torch.Size, window: Window, max_elements: int, min_block: int = 128) -> list[tuple[int, int]]:
    """Blocks of queries for windowed attention: about ``min_block`` queries (a multiple of a chunked
    window's size, so blocks start at chunk boundaries), so that each block's scores span block +
    window keys, not the whole prefix: the cost grows as L x (block + window), not L^2."""
    B, H, L, _ = shape
    if window.sinks:  # every block reads the first keys too: blocks over the whole prefix
        return query_chunks(shape, max_elements)
    size = window.size
    block = size * max(1, -(-min_block // size)) if window.kind == "chunked" else max(min_block, size)
    while block > 1 and B * H * block * (block + size) > max_elements:
        block //= 2
    return [(s, min(L, s + block)) for s in range(0, L, block)]


def _window_block_mask(length: int, device: torch.device, window: Window):
    from torch.nn.attention.flex_attention import create_block_mask

    key = (length, str(device), window)
    if key not in _flex_state["masks"]:
        size, sinks = window.size, window.sinks
        if window.kind == "sliding":
            mask = lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & ((q_idx - kv_idx < size) | (kv_idx < sinks))  # noqa: E731
        else:
            mask = lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & ((q_idx // size == kv_idx // size) | (kv_idx < sinks))  # noqa: E731
        _flex_state["masks"][key] = create_block_mask(mask, None, None, length, length, device=str(device))
    return _flex_state["masks"][key]


def window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: Window,
                     table: torch.Tensor | None = None, scale: float | None = None) -> torch.Tensor | None:
    """Windowed causal attention through compiled flex attention (``flex_scores_attention`` with a window)."""
    return flex_scores_attention(q, k, v, scale, window, table)


def flex_scores_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None,
                          window: Optional[Window] = None, table: torch.Tensor | None = None,
                          sink: torch.Tensor | None = None, decay: Optional["Decay"] = None) -> torch.Tensor | None:
    """``masked_attention`` through compiled flex attention, for positions 0..L-1 and no block:

        logit_ij = q_i . k_j * scale + table[h, i - j] + c_i - c_j        (j visible to i)
        out_i    = sum_j exp(logit_ij) v_j / (exp(sink_h) + sum_j exp(logit_ij))

    The causal mask and the ``window`` are a block mask, so blocks outside them are skipped and no
    score matrix is held; ``table``: an optional [H, L] bias by distance (as ``distance_bias_attention``);
    ``decay``: FoX's term (``Decay``, c [B, H, L]); ``sink``: [H] logits, as one more key (index L, seen by
    every query) whose value is 0 and whose logit the score_mod sets to sink_h (flex on CPU returns no
    log-sum-exp to rescale by). None (after a one-line warning) if flex cannot run here."""
    L = q.shape[-2]
    score_mod = None
    if table is not None or decay is not None or sink is not None:
        table = table.to(q.dtype) if table is not None else None
        # c padded by one entry for the sink's key (index L), whose logit is replaced below
        c = F.pad(decay.c.to(q.dtype), (0, int(sink is not None))) if decay is not None else None
        sinks = sink.to(q.dtype) if sink is not None else None

        def score_mod(score, b, h, q_idx, kv_idx):
            if table is not None:  # traced once: the branches are Python, not tensor, conditions
                score = score + table[h, (q_idx - kv_idx).clamp(min=0)]
            if c is not None:
                score = score + (c[b, h, q_idx] - c[b, h, kv_idx])
            if sinks is not None:
                score = torch.where(kv_idx == L, sinks[h], score)
            return score

    if sink is not None:  # the sink's key and its zero value
        k, v = (torch.cat((t, t.new_zeros(t.shape[0], t.shape[1], 1, t.shape[3])), dim=2) for t in (k, v))
    try:
        if sink is not None:
            block_mask = _sink_block_mask(L, q.device, window)
        else:
            block_mask = _causal_block_mask(L, q.device) if window is None else _window_block_mask(L, q.device, window)
        return _compiled_flex()(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)
    except Exception as e:  # noqa: BLE001 - any compiler failure means: use the portable path
        _flex_state["broken"] = f"{type(e).__name__}: {e}"
        log.warning("flex attention unavailable, using chunked attention (%s)", str(e).splitlines()[0][:200])
        return None


def _sink_block_mask(length: int, device: torch.device, window: Optional[Window]):
    """Queries [length] over keys [length + 1]: the causal (and windowed) keys, and the sink's key at index length."""
    from torch.nn.attention.flex_attention import create_block_mask

    key = (length, str(device), window, "sink")
    if key not in _flex_state["masks"]:
        size, kind, sinks = (window.size, window.kind, window.sinks) if window is not None else (0, None, 0)

        def mask(b, h, q_idx, kv_idx):
            seen = q_idx >= kv_idx
            if kind == "sliding":
                seen = seen & ((q_idx - kv_idx < size) | (kv_idx < sinks))
            elif kind == "chunked":
                seen = seen & ((q_idx // size == kv_idx // size) | (kv_idx < sinks))
            return seen | (kv_idx == length)

        _flex_state["masks"][key] = create_block_mask(mask, None, None, length, length + 1, device=str(device))
    return _flex_state["masks"][key]


@dataclass(frozen=True)
class Decay:
    """A data-dependent term c_i - c_j on the logits of query i and key j (FoX's cumulative log forget
    gates, c [B, H, L]): a ``ScoreMod`` for ``masked_attention`` and a term flex attention can add
    (``flex_scores_attention``), so an encoding whose ``content_bias`` returns one runs either way."""

    c: torch.Tensor

    def __call__(self, scores: torch.Tensor, start: int, end: int, lo: int, hidden: torch.Tensor) -> torch.Tensor:
        return scores + (self.c[:, :, start:end, None] - self.c[:, :, None, lo:end]).to(scores.dtype)


# the CPU flash kernel that returns its log-sum-exp (a private aten op of torch 2.x): where a torch build
# lacks it, Shaw's evaluation takes the general path (relative_causal_attention), slower, same numbers
CPU_FLASH_LSE = hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu")


def cpu_flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
                        is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax(q.k * scale) v [B, H, Lq, Dv], its log-sum-exp [B, H, Lq]) from the CPU flash kernel
    (``CPU_FLASH_LSE`` says whether this torch has it): the form that lets a caller merge these keys
    with others it scores itself (Shaw's band, CoPE's band)."""
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=is_causal, scale=scale)


def clipped_relative_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rel_k: torch.Tensor,
                               rel_v: torch.Tensor | None, scale: float) -> torch.Tensor:
    """``relative_causal_attention`` with rel_q = q over positions 0..L-1 (Shaw et al.'s clipped
    distances), for evaluation on CPU: keys K = R - 1 or more tokens back all take rel_k[K], so they are
    one causal SDPA call over the shifted sequences (queries K.., keys ..L-K) plus q_i . rel_k[K], a
    constant per query; the K nearer keys form a band [B, H, L, K]. The two merge through the SDPA
    call's log-sum-exp (the CPU flash kernel returns it):

        out_i = (e^{lse_i} y_i + sum_{d<K} e^{l_id} v_{i-d}) / (e^{lse_i} + sum_{d<K} e^{l_id})   (+ Shaw's value term)

    No score matrix is held; the far keys cost what NoPE's attention costs. rel_k [1 or H, R, Dh],
    rel_v [R, Dh] or None."""
    B, H, L, Dh = q.shape
    K = rel_k.shape[-2] - 1
    dtype = torch.promote_types(q.dtype, torch.float32)
    rel = (q @ rel_k.transpose(-1, -2)).to(dtype) * scale  # [B, H, L, R]: q_i . rel_k[d]
    near = torch.full((B, H, L, K), float("-inf"), dtype=dtype, device=q.device)  # l_id, key i - d
    for d in range(min(K, L)):
        near[:, :, d:, d] = (q[:, :, d:] * k[:, :, :L - d]).sum(-1).to(dtype) * scale + rel[:, :, d:, d]
    far_lse = torch.full((B, H, L), float("-inf"), dtype=dtype, device=q.device)
    far = torch.zeros(B, H, L, v.shape[-1], dtype=dtype, device=q.device)
    if L > K:
        y, lse = cpu_flash_attention(q[:, :, K:], k[:, :, :L - K], v[:, :, :L - K], scale, is_causal=True)
        far[:, :, K:], far_lse[:, :, K:] = y.to(dtype), lse.to(dtype) + rel[:, :, K:, K]
    top = torch.maximum(far_lse, near.amax(-1))  # [B, H, L]: finite (d = 0 is always seen)
    p_far, p_near = (far_lse - top).exp(), (near - top[..., None]).exp()
    total = p_far + p_near.sum(-1)
    p_far, p_near = p_far / total, p_near / total[..., None]
    out = p_far[..., None] * far
    for d in range(min(K, L)):
        out[:, :, d:] += p_near[:, :, d:, d, None] * v[:, :, :L - d].to(dtype)
    if rel_v is not None:
        out = out + p_near @ rel_v[:K].to(dtype) + p_far[..., None] * rel_v[K].to(dtype)
    return out.to(v.dtype)
