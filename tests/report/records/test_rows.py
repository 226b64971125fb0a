"""posbench/report/records/rows.py: row names are read in one place; what a record says a row is
wins over its name, and a row style drawn from it follows a change."""


def test_row_names_are_read_in_one_place():
    from posbench.report.records.rows import ExtensionName, parse_row_name

    row = parse_row_name("rope+yarn@4x+ft100")
    assert (row.encoding, row.key, row.extension) == ("rope", "rope+yarn", ExtensionName("rope", "yarn", 4.0, 100))
    assert parse_row_name("alibi@2.5x+ft0").extension == ExtensionName("alibi", "plain", 2.5, 0)
    assert parse_row_name("xpos@4x+ft100+bca").extension is None  # an extension run's window variant: not its target row
    assert (parse_row_name("alibi+temp0.1").temperature, parse_row_name("xpos+bca").window) == (0.1, "bca")
    assert parse_row_name("rope@1.2.3x+ft1").extension is None


def test_a_remembered_row_is_what_its_record_says_and_its_style_follows():
    from posbench.report.drawing.style import row_style
    from posbench.report.records import rows

    name = "alibi+made_up_window"
    assert rows.row_record(name)["encoding"] == "alibi"  # read from the name
    before = rows.generation()
    try:
        rows.remember_row(name, {"encoding": "rope", "tag": "", "variants": []})
        assert rows.generation() == before + 1 and rows.row_record(name)["encoding"] == "rope"
        assert row_style(name) == row_style("rope")  # the style reads the record, not the name
        rows.remember_row(name, {"encoding": "rope", "tag": "", "variants": []})
        assert rows.generation() == before + 1  # the same record again changes nothing
    finally:
        rows._ROWS.pop(name, None)
