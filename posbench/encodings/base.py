"""The interface every positional encoding implements.

An encoding reaches attention in one (or more) of three ways, and the model asks which:

* **input**    ``embed(x, positions)`` adds or concatenates a vector to the token embeddings;
* **rotation** ``rotate(q, k, state)`` transforms queries and keys by position before q.k;
* **bias**     ``bias(q_pos, k_pos, layer)`` returns the additive logit bias b[h, i, j].

Relative encodings with content terms (Shaw, Transformer-XL) implement ``relative_attention``
themselves. The hooks a class overrides decide which kernel runs: ``uses_input``,
``uses_rotation``, ``uses_bias`` and ``uses_relative`` are read-only and true exactly when the
class (or a base other than PositionalEncoding) overrides ``embed``, ``rotate``, ``bias`` or
``relative_attention``, so an encoding cannot implement a hook and have it silently ignored.

The 2024-2026 recipes add five hooks, each given the layer index so that a model can mix them per
layer (every one is a no-op here, so the model's plain path is unchanged for the encodings above):

* **layer**    ``at(layer)`` the encoding that serves one layer (a layer pattern: iRoPE, RNoPE-SWA);
* **window**   ``window(layer)`` a sliding or chunked local window (posbench.attention.kernels.Window);
* **softmax**  ``query_scale(positions, keys_seen, layer)`` a temperature by position or by number of
               keys (SSMax, logn, Llama 4's floor-log), and ``sink(layer)`` a learned sink logit;
* **gate**     ``gate(x, y, layer)`` the attention output gated from the layer input;
* **content**  ``content_bias(x, q, k, layer)`` a data-dependent term on the logits (FoX, CoPE). Positions are always explicit tensors, never an implied
``arange(seq_len)``, so sliding windows, randomized positions and interpolation need no new code.

An encoding whose positional state changes from layer to layer (TAPE) overrides ``carried``: the state
``prepare`` returns is then passed along the blocks, each layer reading the state the layer before it
handed on (``after_attention``, ``after_mlp``); for every other encoding one state serves all layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError

FAMILY_ORDER = ("absolute / none", "rotary", "score bias", "relative (content)")

# each flag the model reads, and the hook whose override makes it true
HOOK_OF_FLAG = {"uses_input": "embed", "uses_rotation": "rotate", "uses_bias": "bias",
                "uses_relative": "relative_attention", "carries_state": "carried"}


class Overrides:
    """A read-only flag of an encoding class: whether it overrides ``hook``. Computed once per class
    (``PositionalEncoding.__init_subclass__``), so the per-forward read is a set lookup."""

    def __init__(self, hook: str):
        self.hook = hook

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type) -> bool:
        return self.hook in owner._overridden

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"{self.name} is read-only: it says whether the class overrides {self.hook}()")


@dataclass(frozen=True)
class ModelShape:
    """What an encoding may need to know about the model it is plugged into."""

    d_model: int
    n_heads: int
    n_layers: int
    train_len: int
    max_position: int = 0  # largest training position + 1 (> train_len with randomized positions)
    continuous_positions: bool = False  # randomized positions were real numbers (train.random_positions_kind=float)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


class PositionalEncoding(nn.Module):
    """Base class: every hook is a no-op, subclasses override the ones they use.

    Subclasses declare their hyper-parameters as a nested ``Params`` dataclass; the registry
    validates the yaml against it, so a typo in a config is an error, not a silently ignored key.
    """

    # how the report shows it: the family is a column of the figures (families in FAMILY_ORDER
    # first, then any other name), the colour any matplotlib colour (None: one derived from the
    # name, distinct from the built-ins'), the order its place within the family
    family: str = "other"
    colour: str | None = None
    order: int = 100

    # which ways in the model takes: true when the class overrides the hook (HOOK_OF_FLAG), never set by hand
    uses_input = Overrides("embed")
    uses_rotation = Overrides("rotate")
    uses_bias = Overrides("bias")
    uses_relative = Overrides("relative_attention")
    carries_state = Overrides("carried")
    _overridden: frozenset = frozenset()
    # logits depend on positions only through differences (tested: shifting all positions changes nothing)
    translation_invariant: bool = False
    # content_bias returns a posbench.attention.kernels.Decay (FoX's c_i - c_j), a term flex attention can add
    content_is_decay: bool = False
    # content_bias returns a term with ``band_attention(k, v, scale)``, the whole attention for evaluation on
    # CPU without a window, sink, block, bias or recorder (CoPE's CountedPositions: a band of keys, the rest one SDPA call)
    content_has_band: bool = False
    # reads positions as indices of a table (of positions or distances): real-valued positions
    # (train.random_positions_kind=float) are refused for it
    integer_positions: bool = False
    # rotary frequencies that the RoPE scalings (posbench/attention/rope_scalings.py) can rescale
    rope_scalable: bool = False
    # what the initialisation does to attention over distance, where it decides what a short budget can
    # learn: the report prints it beside the runs that did not learn a retrieval task ("" : nothing to say)
    init_note: str = ""

    @dataclass
    class Params:
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Derive the class's ``uses_*`` flags from the hooks it overrides. A plug-in written when
        the flags were set by hand may still set them: a flag that agrees with its hooks is
        dropped, one that contradicts them is an error (it would run another kernel than the code
        says)."""
        super().__init_subclass__(**kwargs)
        cls._overridden = frozenset(hook for hook in HOOK_OF_FLAG.values()
                                    if getattr(cls, hook) is not getattr(PositionalEncoding, hook))
        for flag, hook in HOOK_OF_FLAG.items():
            if flag in cls.__dict__:
                said, done = bool(cls.__dict__[flag]), hook in cls._overridden
                if said != done:
                    raise TypeError(f"{cls.__qualname__} sets {flag} = {said} but {'overrides' if done else 'does not override'} "
                                    f"{hook}(); the hooks an encoding overrides decide which kernel runs: remove {flag}")
                delattr(cls, flag)

    def __init__(self, shape: ModelShape, params: Any):
        super().__init__()
        self.shape = shape
        self.params = params

    # -- input -----------------------------------------------------------------------------------
    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x: [B, L, D] token embeddings, positions: [L] integer positions -> [B, L, D]."""
        return x

    # -- rotation --------------------------------------------------------------------------------
    def prepare(self, positions: torch.Tensor, options: AttentionOptions) -> Any:
        """Per-forward state shared by all layers (e.g. RoPE's cos/sin), computed once from the
        positions and the forward's options (e.g. a RoPE scaling asked for by an evaluation row)."""
        return None

    def rotate(self, q: torch.Tensor, k: torch.Tensor, state: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """q, k: [B, H, L, Dh] -> rotated q, k."""
        return q, k

    def softmax_scale(self, state: Any) -> float | None:
        """Scale of q.k inside softmax for this forward (``state``: prepare's); None means the usual
        1/sqrt(head_dim)."""
        return None

    # -- bias ------------------------------------------------------------------------------------
    def bias(self, q_pos: torch.Tensor, k_pos: torch.Tensor, layer: int) -> torch.Tensor:
        """Additive attention-logit bias [H, Lq, Lk] for query positions [Lq] and key positions [Lk].

        The attention kernel calls it one block of queries at a time, so it never needs the whole
        L x L at once. Only causal pairs (k_pos <= q_pos) are used; the rest is masked afterwards.
        """
        raise NotImplementedError

    # -- the 2024-2026 hooks (posbench/encodings/layers.py, fox.py, cope.py, ...) ------------------
    def at(self, layer: int) -> "PositionalEncoding":
        """The encoding whose hooks serve layer ``layer`` (a layer pattern returns one of its parts,
        with that layer's window and temperature); the model asks it once per layer and forward."""
        return self

    def window(self, layer: int):
        """A local window (posbench.attention.kernels.Window) for this layer's attention, or None (full causal)."""
        return None

    def query_scale(self, positions: torch.Tensor, keys_seen: torch.Tensor, layer: int) -> torch.Tensor | None:
        """A temperature multiplying this layer's queries after rotation, [L] or [H, L], from the
        query positions [L] and the number of keys each query sees [L]; None: 1."""
        return None

    def takes_row_temperature(self) -> bool:
        """Whether some layer has neither a window nor a temperature of its own: the layers an
        evaluation row's temperature (logn, floor-log) scales (model.temper). False where the encoding
        attends through ``relative_attention`` (Shaw, Transformer-XL), which scales no query."""
        if self.uses_relative:
            return False
        positions, keys = torch.arange(2), torch.arange(1, 3)
        with torch.no_grad():
            return any(self.at(i).window(i) is None and self.at(i).query_scale(positions, keys, i) is None
                       for i in range(self.shape.n_layers))

    def sink(self, layer: int) -> torch.Tensor | None:
        """[H] learned sink logits: a key every query sees, with no value, in the softmax denominator."""
        return None

    def gate(self, x: torch.Tensor, y: torch.Tensor, layer: int) -> torch.Tensor:
        """The attention output y [B, H, L, Dh] after an output gate computed from the layer's input
        x [B, L, D] (default: y unchanged)."""
        return y

    def content_bias(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor, layer: int):
        """A data-dependent term on this layer's logits (posbench.attention.kernels.ScoreMod: called with the
        raw scores q.k * scale of one block of queries), from the layer's input x [B, L, D] and its
        queries and keys [B, H, L, Dh]; None: none. It must only use tokens at or before each query."""
        return None

    # -- a positional state carried from layer to layer (TAPE) ---------------------------------------
    def carried(self, state: Any) -> torch.Tensor | None:
        """Per-token positional features [B or 1, H, L, E] of ``state`` that a layer's attention averages
        with its own weights, beside the values (``after_attention`` receives the average); None: nothing
        is carried, and ``prepare``'s state serves every layer unchanged."""
        return None

    def after_attention(self, state: Any, mixed: torch.Tensor, layer: int) -> Any:
        """The state after layer ``layer``'s attention, from ``mixed`` = A @ carried(state) [B, H, L, E]
        (A: that layer's attention weights, the ones that average its values)."""
        return state

    def after_mlp(self, state: Any, m: torch.Tensor, layer: int) -> Any:
        """The state layer ``layer`` hands on to the next, from its MLP's output m [B, L, D]."""
        return state

    # -- relative content terms -------------------------------------------------------------------
    def relative_attention(self, q, k, v, positions, layer: int, options: AttentionOptions) -> torch.Tensor:
        """Whole attention for encodings with content-position terms (Shaw, Transformer-XL);
        ``options.block``: blockwise causal attention (posbench.attention.kernels.future_mask);
        ``options.logit_scale``: through ``relative_scale``."""
        raise NotImplementedError

    def relative_scale(self, options: AttentionOptions) -> float:
        """The softmax scale of encodings that compute their own scores (Shaw, Transformer-XL)."""
        return options.logit_scale * self.shape.head_dim ** -0.5

    # -- context extension (an extension run's training, posbench/training/extend.py) -------------------------
    def extend_to(self, method: str, factor: float) -> None:
        """Adopt a context-extension ``method`` at ``factor`` = target / train_len for training and
        evaluation (posbench/training/extend.py). ``none`` (plain continuation) suits every encoding; the
        frequency methods belong to RoPE, which overrides this."""
        if method != "none":
            raise PosbenchError(f"extend.method={method} is a RoPE method and {self.name} has no rotary frequencies; "
                                "use extend.method=none (plain continuation at the longer length)")

    # -- domain ----------------------------------------------------------------------------------
    def undefined_reason(self, length: int) -> str | None:
        """Why this encoding cannot score a window of ``length`` tokens, or None if it can."""
        return None

    def extra_repr(self) -> str:
        return str(self.params)


def per_layer_head_gates(shape: ModelShape) -> nn.ModuleList:
    """One ``Linear(d_model, n_heads)`` with a bias per layer, weights N(0, 0.02) and bias 0: the per-token,
    per-head gate of FoX (``fgate_proj``) and CABLE's step (``h_attn``) at their authors' initialisation.
    All layers are built before any is re-initialised, as the two encodings always did, so the random
    numbers (and so the weights of a seed) stay the same."""
    gates = nn.ModuleList(nn.Linear(shape.d_model, shape.n_heads, bias=True) for _ in range(shape.n_layers))
    for gate in gates:
        nn.init.normal_(gate.weight, std=0.02)
        nn.init.zeros_(gate.bias)
    return gates
