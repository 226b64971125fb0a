"""NoPE: no positional encoding at all.

A causal decoder can still infer position from the causal mask (Haviv et al. 2022, "Transformer
Language Models without Positional Encodings Still Learn Positional Information"; Kazemnejad et al.
2023, "The Impact of Positional Encoding on Length Generalization in Transformers").
"""

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("nope")
class NoPE(PositionalEncoding):
    """Every hook is the base class's no-op; attention takes the plain causal fast path."""
    family, colour, order = "absolute / none", "#7f7f7f", 0  # the report's column, line colour and place in it
