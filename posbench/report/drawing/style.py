"""How a report row is drawn: its family (the column of the family figures), colour, line style and
place, from the encoding that made it, not from a closed list of known names.

The encoding's class says it (``family``, ``colour``, ``order``: posbench/encodings/base.py), so a
new encoding, built in or from another package, gets its column and colour with no edit here. An
encoding that is not installed where the report is built, or that sets ``colour = None``, gets a
colour derived from its name (a hash into tab20b, a colormap none of the built-ins uses): the same
in every report, distinct from the built-ins'. Families keep FAMILY_ORDER, then any other family
alphabetically, then "other" (rows whose encoding is unknown here).

What the row is (its encoding, variants, extension) comes from records/rows.py; this module only draws it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from posbench.attention.rope_scalings import ROPE_SCALINGS
from posbench.encodings import ENCODINGS
from posbench.encodings.base import FAMILY_ORDER
from posbench.evaluation.variants import VARIANTS
from posbench.report.records.rows import generation, row_record

OTHER = "other"  # the family of a row whose encoding is not installed here
# colours of encodings without one: matplotlib's tab20b, a colormap none of the built-ins uses
DERIVED = ("#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c", "#8c6d31",
           "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a", "#d6616b", "#e7969c", "#7b4173", "#a55194",
           "#ce6dbd", "#de9ed6")


def rope_scaling_style(kind: str) -> tuple[str, int] | None:
    """(colour, order within the encoding's family) of a RoPE scaling's rows, from the scaling
    registry (posbench/attention/rope_scalings.py); None for a scaling not installed here."""
    scaling = ROPE_SCALINGS.find(kind)
    if scaling is None:
        return None
    return scaling.colour or derived_colour(f"rope+{kind}"), ROPE_SCALINGS.names().index(kind) + 1


@dataclass(frozen=True)
class Style:
    family: str
    colour: str  # any matplotlib colour
    linestyle: str
    order: int  # place within the family


def row_style(name: str) -> Style:
    """A row's style: its encoding's family, colour and order. A variant with a colour of its own
    (a RoPE scaling, also as an extension run's method) gives the row that colour; the others
    keep their encoding's colour and draw with their own line style (dash-dotted: a window,
    +bca, +randpos; dotted: a temperature)."""
    return _row_style(name, generation())


@lru_cache(maxsize=None)
def _row_style(name: str, generation: int) -> Style:
    """``row_style``, cached until a remembered row changes (``generation``, records/rows.py)."""
    row = row_record(name)
    cls = _encoding_class(row["encoding"])
    family = getattr(cls, "family", None) or OTHER
    colour, order = getattr(cls, "colour", None), getattr(cls, "order", 100)
    if colour is None:
        colour = derived_colour(row["encoding"])
    linestyle = "-"
    methods = [v["type"] for v in row["variants"] if v.get("variant") == "rope_scaling"]
    if row["tag"].startswith("+"):  # an extension run's RoPE method: "+yarn@4x+ft100"
        methods.append(row["tag"][1:].split("@")[0])
    for kind in methods:
        colour, order = rope_scaling_style(kind) or (derived_colour(f"{row['encoding']}+{kind}"), order)
    for v in row["variants"]:
        if v.get("variant") == "rope_scaling":
            continue
        variant = VARIANTS.find(v.get("variant", ""))
        linestyle = getattr(variant, "linestyle", "-.")
        own = getattr(variant, "colour", None)
        if isinstance(own, str):
            colour = own
    return Style(family, colour, linestyle, order)


def _encoding_class(name: str):
    return ENCODINGS.find(name)


def derived_colour(name: str) -> str:
    """A colour from the name alone (stable across processes, unlike ``hash``)."""
    return DERIVED[int.from_bytes(hashlib.sha1(name.encode()).digest()[:4], "big") % len(DERIVED)]


def family_rank(family: str) -> tuple:
    """Sort key of a family: FAMILY_ORDER first, then others alphabetically, then "other"."""
    if family in FAMILY_ORDER:
        return (0, FAMILY_ORDER.index(family), "")
    return (2, 0, "") if family == OTHER else (1, 0, family)


def families_in(names) -> list[str]:
    """The families of these rows, in column order."""
    return sorted({row_style(n).family for n in names}, key=family_rank)


def row_order(name: str) -> tuple:
    """Sort key of a row: its family's column, its place in the family, then its name."""
    s = row_style(name)
    return (family_rank(s.family), s.order, name)
