"""Per-layer encodings: a layer pattern chooses the encoding, the local window and the temperature
of each layer (the ``at(layer)`` hook), and sliding-window / chunked local attention for any encoding.

    pattern: [rope/swa, rope/swa, rope/swa, nope]     # repeated over the layers: 3 local RoPE, 1 global NoPE

An entry is ``<encoding>`` (full causal attention) or ``<encoding>/<window>``: ``swa`` (a sliding
window of ``window`` keys, Mistral / Gemma) or ``chunk`` (chunked attention in blocks of ``window``,
Llama 4), each optionally with its own size (``rope/swa16``). The pattern repeats until every layer
has an entry; a model with fewer layers than the pattern takes its last entries (a 2-layer model of
``[rope/chunk, rope/chunk, rope/chunk, nope]`` is ``[rope/chunk, nope]``: the global layer stays). Each distinct encoding is built once and
shared by its layers, which it tells apart by the layer index (as in a plain model), with its
Params from ``params.<name>`` (defaults otherwise). Any score-bias or rotary encoding can be windowed
(``encoding=layers encoding.pattern=[alibi/swa]`` is ALiBi with a sliding window in every layer),
in training and in evaluation; the window is by index, like the causal mask.

References: HF transformers' per-layer ``layer_types`` (``sliding_attention``, ``chunked_attention``,
``full_attention``: e.g. ``models/gemma3``, ``models/llama4``, ``models/gpt_oss``); Gemma 3 (5 local
: 1 global), Mistral's sliding window. Named presets are subclasses with their own default pattern
(``irope``, ``rnope_swa``, ``swan``), so that each is its own row of the report.

Deviations: the window defaults to train_len / 4 (``window: null``), one ratio for every windowed
preset so that they compare (the papers' windows are 128 to 8192 tokens at training lengths of 4K to
256K). Input encodings (added to the embeddings, not per layer) and the relative encodings (their
own attention) cannot be entries of a pattern with a window; they are refused with one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from torch import nn

from posbench.attention.kernels import Window
from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.encodings import build_encoding, encoding_class, register
from posbench.encodings.base import PositionalEncoding

ENTRY = re.compile(r"^(?P<name>[^/\s]+)(?:/(?P<kind>swa|chunk)(?P<size>\d+)?)?$")


def parse_entry(entry: str, default_window: int) -> tuple[str, Optional[Window]]:
    """``rope/swa16`` -> ("rope", Window("sliding", 16)); ``nope`` -> ("nope", None)."""
    m = ENTRY.match(str(entry).strip())
    if m is None:
        raise PosbenchError(f"layer pattern entry {entry!r} is not <encoding>[/swa[N]|/chunk[N]] (e.g. rope/swa16, nope)")
    if m["kind"] is None:
        return m["name"], None
    size = int(m["size"]) if m["size"] else default_window
    return m["name"], Window("sliding" if m["kind"] == "swa" else "chunked", size)


class LayerView:
    """One layer's view of a shared part: its hooks, with this layer's window and temperature.
    (A plain object, not a module: the part's parameters belong to the pattern's ``parts``.)"""

    def __init__(self, part: PositionalEncoding, window: Optional[Window], temperature=None):
        self.part, self._window, self.temperature = part, window, temperature

    def __getattr__(self, name: str) -> Any:  # every hook and flag not overridden below is the part's
        return getattr(self.part, name)

    def window(self, layer):
        return self._window

    def query_scale(self, positions, keys_seen, layer):
        own = self.part.query_scale(positions, keys_seen, layer)
        if self.temperature is None:
            return own
        t = self.temperature(positions, keys_seen)
        return t if own is None else own * t


@register("layers")
class Layers(PositionalEncoding):
    family, colour, order = "hybrid (per layer)", "#756bb1", 0
    translation_invariant = False

    @dataclass
    class Params:
        pattern: List[str] = field(default_factory=lambda: ["rope/swa", "nope"])
        window: Optional[int] = param(None, positive)  # null: train_len / 4 (at least 1)
        params: Dict[str, Any] = field(default_factory=dict)  # each part's Params: {rope: {base: 500000}}

    def __init__(self, shape, params):
        super().__init__(shape, params)
        if not params.pattern:
            raise PosbenchError(f"{self.name}: encoding.pattern is empty; give one entry per layer (repeated), e.g. [rope/swa, nope]")
        self.window_size = params.window or max(1, shape.train_len // 4)
        # a model with fewer layers than the pattern takes its last entries (the global layer stays)
        entries = [parse_entry(e, self.window_size) for e in params.pattern]
        for entry, (_, window) in zip(params.pattern, entries):
            # a window that holds every training window masks nothing in training: the run would be a
            # plain model reported under a windowed name
            if window is not None and window.size >= shape.train_len:
                where = f"{entry}" if any(c.isdigit() for c in entry) else f"{entry} (encoding.window={window.size})"
                raise PosbenchError(f"{self.name}: the window of {where} is {window.size} keys, not below train_len="
                                    f"{shape.train_len}, so it would train as full attention; give a window below "
                                    f"{shape.train_len} (encoding.window, or /swaN, /chunkN in encoding.pattern)")
        if extra := sorted(set(params.params or {}) - {name for name, _ in entries}):
            raise PosbenchError(f"{self.name}: encoding.params names {extra[0]!r}, which is not in the pattern "
                                f"{list(params.pattern)}")
        entries = entries[-shape.n_layers:]
        self.parts = nn.ModuleDict()
        for name, window in entries:
            if name not in self.parts:
                cls = encoding_class(name)
                if issubclass(cls, Layers):
                    raise PosbenchError(f"{self.name}: a layer pattern cannot hold another pattern ({name})")
                part = build_encoding(name, shape, (params.params or {}).get(name), prefix=f"encoding.params.{name}")
                if part.uses_input:
                    raise PosbenchError(f"{self.name}: {name} is an input encoding (added to the embeddings once, "
                                        "not per layer); a pattern holds rotary, bias or no-position layers")
                if part.carries_state:  # each layer reads the state the one before it updated: no per-layer mix
                    raise PosbenchError(f"{self.name}: {name} carries a positional state from each layer to the next, "
                                        f"which a layer pattern does not pass along; use encoding={name}")
                self.parts[name] = part
            if window is not None and self.parts[name].uses_relative:
                raise PosbenchError(f"{self.name}: {name} computes its own attention and takes no window")
        self.views = [self.view(layer, *entries[layer % len(entries)]) for layer in range(shape.n_layers)]
        self.rope_scalable = False  # a RoPE scaling row would rescale only some layers: not offered

    def view(self, layer: int, name: str, window: Optional[Window]):
        """The hooks layer ``layer`` uses (subclasses add a temperature to some layers)."""
        return self.parts[name] if window is None else LayerView(self.parts[name], window)

    def at(self, layer):
        return self.views[layer]

    def extend_to(self, method, factor):
        for part in self.parts.values():
            if method == "none" or part.rope_scalable:
                part.extend_to(method, factor)
        if method != "none" and not any(p.rope_scalable for p in self.parts.values()):
            super().extend_to(method, factor)

    def undefined_reason(self, length):
        return next((r for p in self.parts.values() if (r := p.undefined_reason(length))), None)

    def extra_repr(self) -> str:
        return ", ".join(f"{i}: {getattr(v, 'part', v).name}{'/' + v._window.tag if isinstance(v, LayerView) and v._window else ''}"
                         for i, v in enumerate(self.views))
