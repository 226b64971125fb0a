"""One page over every committed study (posbench/report/index.py): each cell is one encoding in one
report, its verdict and number as that report's table.csv has them, at the study's main setting, linked
to the report; README.md keeps everything outside its markers; the committed index is current."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from posbench.core.errors import PosbenchError
from posbench.report.index import END, START, index_frames, index_texts, readme_block, write_index

RESULTS = Path(__file__).resolve().parents[2] / "results"


def row(variant, model="small", train_len=64, verdict="flat", label=None, windowed=False, protocol="nonoverlapping",
        equal=1.0, ratio=1.5, basis="equal context"):
    return {"protocol": protocol, "variant": variant, "model": model, "train_len": train_len, "seeds": 3,
            "windowed": windowed, "verdict": verdict, "label": label or verdict, "verdict_basis": basis,
            "equal_ctx": equal, "equal_ctx_lo": equal * 0.9, "equal_ctx_hi": equal * 1.1,
            "16x/1x": ratio, "16x/1x_lo": ratio * 0.8, "16x/1x_hi": ratio * 1.2}


def study(root: Path, name: str, rows: list[dict]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(folder / "table.csv", index=False)
    (folder / "manifest.json.gz").write_bytes(gzip.compress(json.dumps({"format": 1, "configs": {}}).encode()))


@pytest.fixture
def results(tmp_path) -> Path:
    # a study of several settings: small/64 has the most encodings, tiny/64 and small/128 one each
    study(tmp_path, "map", [row("rope", verdict="broken", equal=4.55), row("alibi", label="flat, local"),
                            row("alibi+swaL"), row("rope+yarn", verdict="mild"), row("rope", "tiny", verdict="mild"),
                            row("nope", "small", 128, verdict="undecided", equal=1.3)])
    # no window control: the verdict reads 16x/1x
    study(tmp_path, "old", [row("rope", verdict="broken", equal=float("nan"), ratio=6.0,
                                basis="16x/1x only (no window control: unequal context)")])
    (tmp_path / "README.md").write_text(f"# Results\n\nbefore\n\n{START}\nstale\n{END}\n\nafter\n")
    return tmp_path


def test_each_cell_is_the_report_s_own_verdict_and_number_at_its_main_setting(results):
    shown, classes, links, titles = index_frames(results)
    cells = shown.set_index("encoding")
    assert list(shown.columns) == ["encoding", "map", "old"]
    assert list(cells.index) == ["rope", "alibi", "nope"]  # most studies first; a method or a control is no row
    assert cells.at["rope", "map"] == "broken 4.55 [4.09, 5.00]"  # small/64, not tiny's mild
    assert cells.at["alibi", "map"] == "flat, local 1.00 [0.90, 1.10]"
    assert cells.at["nope", "map"] == "undecided 1.30 [1.17, 1.43]"  # only at 128: its own setting, said in the tooltip
    assert cells.at["rope", "old"] == "broken 6.00 [4.80, 7.20]" and cells.at["alibi", "old"] == ""
    tips = titles.set_index(shown["encoding"])
    assert tips.at["rope", "map"] == "small, train_len 64, 3 seeds; equal context; 1 more setting in the report"
    assert tips.at["nope", "map"].startswith("small, train_len 128") and "unequal context" in tips.at["rope", "old"]
    assert classes.set_index(shown["encoding"]).at["rope", "map"] == "v-broken"
    assert links.set_index(shown["encoding"]).at["rope", "map"] == "map/report.html"


def test_a_tie_of_settings_goes_to_the_centre_point(tmp_path):
    study(tmp_path, "s", [row("rope", "base", 64, verdict="broken"), row("rope", "small", 64, verdict="mild")])
    shown, *_ = index_frames(tmp_path)
    assert shown.set_index("encoding").at["rope", "s"].startswith("mild")


def test_the_readme_keeps_what_lies_outside_its_markers(results):
    page, readme = write_index(results)
    text = readme.read_text()
    assert text.startswith("# Results\n\nbefore\n\n") and text.endswith("\n\nafter\n") and "stale" not in text
    assert "[broken 4.55 [4.09, 5.00]](map/report.md)" in text
    html = page.read_text()
    assert '<a href="map/report.html">' in html and 'class="t v-broken"' in html and "table class=\"tbl headline\"" in html
    write_index(results)
    assert readme.read_text() == text  # twice: the same


def test_a_readme_without_markers_is_refused_with_nothing_written(results):
    (results / "README.md").write_text("# Results\n")
    with pytest.raises(PosbenchError, match="no <!-- results-index:start -->"):
        write_index(results)
    assert not (results / "index.html").exists()


def test_the_committed_index_is_current():
    page, table_md = index_texts(RESULTS)
    text = (RESULTS / "README.md").read_text()
    start, end = readme_block(text, RESULTS / "README.md")
    assert text[start:end] == f"{START}\n{table_md}\n{END}", "run python scripts/results_index.py"
    assert (RESULTS / "index.html").read_text() == page, "run python scripts/results_index.py"
    # every link reaches a committed report
    for link in pd.Series(index_frames(RESULTS)[2].drop(columns="encoding").values.ravel()):
        assert not link or (RESULTS / link).is_file()
