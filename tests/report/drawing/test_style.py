"""posbench/report/drawing/style.py: built-in rows keep their colours, families and order; encodings not
known here get their own."""

# the palette and families the report always had (figures.PALETTE / FAMILIES before the encodings carried them)
TAB20 = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
         "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"]


HUES = ["blue", "orange", "green", "red", "purple", "brown", "pink", "grey", "olive", "cyan"]


OLD_PALETTE = {
    "rope": ("blue", 0), "rope+yarn": ("blue", 1), "rope+linear": ("orange", 0), "rope+dynamic_ntk": ("orange", 1),
    "xpos": ("cyan", 0), "rope+ntk": ("cyan", 1), "kerple_log": ("green", 0), "kerple_power": ("green", 1),
    "alibi": ("red", 0), "sandwich": ("red", 1), "t5": ("purple", 0), "fire": ("purple", 1),
    "sinusoidal": ("brown", 0), "sinusoidal_concat": ("brown", 1), "learned": ("pink", 0), "conv": ("pink", 1),
    "nope": ("grey", 0), "shaw": ("olive", 0), "transformer_xl": ("olive", 1),
}


OLD_FAMILIES = {
    "absolute / none": ["nope", "sinusoidal", "sinusoidal_concat", "learned", "conv"],
    "rotary": ["rope", "rope+linear", "rope+ntk", "rope+dynamic_ntk", "rope+yarn", "xpos"],
    "score bias": ["alibi", "sandwich", "kerple_log", "kerple_power", "t5", "fire"],
    "relative (content)": ["shaw", "transformer_xl"],
}


def test_built_in_rows_keep_their_colours_families_and_order():
    from posbench.encodings import available
    from posbench.report.drawing.style import DERIVED, families_in, row_order, row_style

    for name, (hue, light) in OLD_PALETTE.items():
        assert row_style(name).colour == TAB20[2 * HUES.index(hue) + light], name
    for family, members in OLD_FAMILIES.items():
        assert [row_style(m).family for m in members] == [family] * len(members)
        assert sorted(members, key=row_order) == members  # the order within the family
    assert set(m for ms in OLD_FAMILIES.values() for m in ms if "+" not in m) <= set(available())
    assert families_in(["shaw", "alibi", "rope", "nope"]) == list(OLD_FAMILIES)
    # the 2024-2026 recipes bring families of their own, after the old ones, and colours
    # of their own, none of them an old one's nor each other's
    new = ["layers", "rope_swa", "irope", "rnope_swa", "ssmax", "sink", "gated", "fox", "cope"]
    assert families_in(["nope", *new])[:1] == ["absolute / none"] and not set(families_in(new)) & set(OLD_FAMILIES)
    colours = [row_style(n).colour for n in new]
    assert len(set(colours)) == len(new) and not set(colours) & {row_style(m).colour for m in OLD_PALETTE}
    assert not set(colours) & set(DERIVED)  # tab20b stays for plug-ins' derived colours
    # evaluation-only rows and extension runs: the encoding's colour and family, their own line style
    for row, (like, style) in {"xpos+bca": ("xpos", "-."), "learned+randpos": ("learned", "-."),
                               "alibi+temp0.1": ("alibi", ":"), "rope+yarn@16x": ("rope+yarn", "-"),
                               "rope+yarn@4x+ft100": ("rope+yarn", "-"), "alibi@4x+ft0": ("alibi", "-")}.items():
        assert (row_style(row).colour, row_style(row).family, row_style(row).linestyle) == \
            (row_style(like).colour, row_style(like).family, style), row


def test_encodings_not_known_here_get_their_own_colour_and_column(monkeypatch):
    from posbench.report.drawing import style

    class Mamba:  # an installed plug-in of a family the report has never seen, no colour of its own
        family, colour, order = "state space", None, 0

    known = style._encoding_class
    monkeypatch.setattr(style, "_encoding_class", lambda name: Mamba if name == "mamba" else known(name))
    style._row_style.cache_clear()
    try:  # FAMILY_ORDER's families, then the others alphabetically, then "other" (not installed here)
        assert style.families_in(["gone", "mamba", "rope", "alibi"]) == ["rotary", "score bias", "state space", "other"]
        assert style.row_style("mamba").colour == style.derived_colour("mamba")
    finally:
        monkeypatch.undo()
        style._row_style.cache_clear()
    colours = {n: style.row_style(n).colour for n in ("gone", "mamba", "my_encoding", "rope+my_scaling")}
    assert all(c in style.DERIVED and c not in TAB20 for c in colours.values())  # tab20b: none of the built-ins'
    assert colours == {n: style.derived_colour(n) for n in colours}  # from the name alone: the same in every report
    assert style.row_style("gone").family == "other"
