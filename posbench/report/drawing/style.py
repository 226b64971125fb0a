"""How a report row is drawn: its family (the column of the family figures), colour, line style and
place, from the encoding that made it, not from a closed list of known names.

The encoding's class says it (``family``, ``colour``, ``order``: posbench/encodings/base.py), so a
new encoding, built in or from another package, gets its column and colour with no edit here. An
encoding that is not installed where the report is built, or that sets ``colour = None``, gets a
colour derived from its name (a hash into tab20b, a colormap none of the built-ins uses): the same
in every report, distinct from the built-ins'. Families keep FAMILY_ORDER, then any other family
alphabetically, then "other" (rows whose encoding is unknown here).

A row name packs the encoding with how it was evaluated (``rope+yarn@4x+ft100``, ``alibi+temp0.1``,
``xpos+bca``). Reading it back is ``parse_row_name``'s job alone, so that when records carry these as
fields, one function changes.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from posbench.attention.rope_scalings import ROPE_SCALINGS
from posbench.encodings import ENCODINGS
from posbench.encodings.base import FAMILY_ORDER
from posbench.evaluation.variants import (
    BCA_SUFFIX,
    RANDPOS_SUFFIX,
    VARIANTS,
    base_variant,
    temperature_of,
)
from posbench.evaluation.variants import parse_row as read_name

OTHER = "other"  # the family of a row whose encoding is not installed here
# colours of encodings without one: matplotlib's tab20b, a colormap none of the built-ins uses
DERIVED = ("#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c", "#8c6d31",
           "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a", "#d6616b", "#e7969c", "#7b4173", "#a55194",
           "#ce6dbd", "#de9ed6")

# what each row is, from the records that carry it (Row.record(), posbench/evaluation/variants/); rows of
# records made before that are read from their names (posbench.evaluation.variants.parse_row)
_ROWS: dict[str, dict] = {}


def remember_row(name: str, row: dict | None) -> None:
    """Record what row ``name`` is (from an evaluation record), for its style."""
    if isinstance(row, dict) and _ROWS.get(name) != row:
        _ROWS[name] = row
        row_style.cache_clear()


def rope_scaling_style(kind: str) -> tuple[str, int] | None:
    """(colour, order within the encoding's family) of a RoPE scaling's rows, from the scaling
    registry (posbench/attention/rope_scalings.py); None for a scaling not installed here."""
    scaling = ROPE_SCALINGS.find(kind)
    if scaling is None:
        return None
    return scaling.colour or derived_colour(f"rope+{kind}"), ROPE_SCALINGS.names().index(kind) + 1


# an extension run's row (posbench/training/extend.py): <encoding>[+<method>]@<factor>x+ft<steps>
EXTENSION = re.compile(r"^(?P<encoding>.+?)(?:\+(?P<method>[A-Za-z0-9_]+))?@(?P<factor>[0-9.]+)x\+ft(?P<steps>\d+)$")


@dataclass(frozen=True)
class ExtensionName:
    """What an extension run's row name says: the encoding continued at ``factor`` x train_len for
    ``steps`` steps with ``method`` ("plain": no RoPE method)."""

    encoding: str
    method: str
    factor: float
    steps: int


@dataclass(frozen=True)
class RowName:
    """A report row's name, read back. ``key``: the encoding with its RoPE scaling (``rope+yarn``),
    what its colour belongs to; ``window``: an evaluation-only window (bca, randpos);
    ``temperature``: c of an attention-temperature row; ``extension``: set for extension runs."""

    name: str
    encoding: str
    key: str
    window: str | None
    temperature: float | None
    extension: ExtensionName | None


def parse_row_name(name: str) -> RowName:
    """The one place that reads a row name (see the module doc)."""
    key = base_variant(name).split("@")[0]
    window = next((s.lstrip("+") for s in (BCA_SUFFIX, RANDPOS_SUFFIX) if name.endswith(s)), None)
    m = EXTENSION.match(name)
    ext = None
    if m is not None and m["factor"].count(".") <= 1 and m["factor"] != ".":  # "1.5", not "1.2.3"
        ext = ExtensionName(m["encoding"], m["method"] or "plain", float(m["factor"]), int(m["steps"]))
    return RowName(name, key.split("+")[0], key, window, temperature_of(name), ext)


@dataclass(frozen=True)
class Style:
    family: str
    colour: str  # any matplotlib colour
    linestyle: str
    order: int  # place within the family


@lru_cache(maxsize=None)
def row_style(name: str) -> Style:
    """A row's style: its encoding's family, colour and order. A variant with a colour of its own
    (a RoPE scaling, also as an extension run's method) gives the row that colour; the others
    keep their encoding's colour and draw with their own line style (dash-dotted: a window,
    +bca, +randpos; dotted: a temperature)."""
    row = _ROWS.get(name) or read_name(name)
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
