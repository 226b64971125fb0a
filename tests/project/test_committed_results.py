"""Every report committed under results/ parses, agrees with its own CSV, and says how it was made."""

import re
from pathlib import Path

import pandas as pd
import pytest

RESULTS = Path(__file__).parents[2] / "results"
REPORTS = sorted(p.parent for p in RESULTS.glob("*/report.md"))


def parse_markdown_table(text: str) -> pd.DataFrame:
    # a cell's own "|" is escaped as "\|" (a model label small|base=500): split on the others only
    rows = [re.split(r"(?<!\\)\|", line.strip()[1:-1]) for line in text.strip().splitlines() if line.startswith("|")]
    cells = [[c.strip().replace("\\|", "|") for c in r] for r in rows]
    return pd.DataFrame(cells[2:], columns=cells[0])  # cells[1] is the alignment line


def test_there_are_committed_reports():
    assert REPORTS, "no committed report under results/"


@pytest.mark.parametrize("folder", REPORTS, ids=lambda p: p.name)
def test_committed_report_matches_its_csv(folder):
    assert (folder / "COMMAND.md").exists(), "every committed report needs the command that made it"
    assert (folder / "table.csv").exists() or (folder / "tasks.csv").exists()
    # every figure of the folder is shown in the HTML (the optional ones too: during_training, extension, tasks),
    # linked to the one copy beside it
    html = (folder / "report.html").read_text()
    assert "base64," not in html
    assert sorted(re.findall(r'<img alt="[^"]*" src="([^"]+)"', html)) == sorted(p.name for p in folder.glob("*.png"))
    if (folder / "tasks.csv").exists():
        check_task_table(folder)
    if not (folder / "table.csv").exists():
        return
    md = parse_markdown_table((folder / "table.md").read_text())
    csv = pd.read_csv(folder / "table.csv")
    assert len(md) == len(csv) > 0
    assert (folder / "table.md").read_text().strip() in (folder / "report.md").read_text()
    for col in [c for c in csv.columns if c[0].isdigit() and c in md.columns]:  # 1x, 2x, ..., 16x/1x
        if f"{col}_lo" in csv:  # "5.13 [5.01, 5.26]": the mean and its 95% interval over text and seeds
            for shown, value, lo, hi in zip(md[col], csv[col], csv[f"{col}_lo"], csv[f"{col}_hi"]):
                if pd.isna(value):
                    assert shown in ("n/d", "n/e")
                    continue
                numbers = [float(x) for x in re.findall(r"\d+\.\d+", shown)]
                assert numbers[0] == pytest.approx(value, abs=0.006)
                if pd.notna(lo):
                    assert numbers[1:3] == pytest.approx([lo, hi], abs=0.006)
            continue
        has_ci = "/" not in col and f"{col}_ci95" in csv  # the ratio column shows its mean only
        for shown, value, ci in zip(md[col], csv[col], csv[f"{col}_ci95"] if has_ci else csv[col] * float("nan")):
            if pd.isna(value):
                assert shown == "n/d"
                continue
            # "5.13", "**5.13**", "5.13 ± 0.04 ≈": mean, then the 95% half-width when there are seeds
            numbers = [float(x) for x in re.findall(r"\d+\.\d+", shown)]
            assert numbers[0] == pytest.approx(value, abs=0.006)  # shown with 2 decimals
            if pd.notna(ci):
                assert numbers[1] == pytest.approx(ci, abs=0.006)
    for name in ["ppl_vs_length.png", "per_position.png", "ratio_heatmap.png", "training_curves.png"]:
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def check_task_table(folder):
    """The tasks table of the report shows tasks.csv's accuracies (in %, with the 95% interval, or ± the
    half-width in reports made before the interval over examples)."""
    csv = pd.read_csv(folder / "tasks.csv")
    report = (folder / "report.md").read_text()
    start = report.index("| task ", report.index("Synthetic tasks\n"))  # the section's table, not the headline
    md = parse_markdown_table(report[start:report.index("\n\n", start)])
    assert len(md) == len(csv) > 0
    for col in [c for c in csv.columns if c.endswith("x")]:
        bounds = ([csv[f"{col}_lo"], csv[f"{col}_hi"]] if f"{col}_lo" in csv else [csv[f"{col}_ci95"]])
        for shown, value, *ci in zip(md[col], csv[col], *bounds):
            numbers = [float(x) for x in re.findall(r"\d+", shown)]
            assert numbers[0] == pytest.approx(100 * value, abs=0.51)
            if pd.notna(ci[0]):
                assert numbers[1:] == pytest.approx([100 * c for c in ci], abs=0.51)
    assert list(md["effective length"].astype(int)) == list(csv["effective length"])
    assert [float(x) for x in md["chance"]] == pytest.approx(list(100 * csv["chance"]), abs=0.51)


VERDICT_LIST = re.compile(r"\*\*(flat|mild|broken|undecided)\*\* \([^)]*\): (.*?)(?=; \*\*|\. [A-Z]|\.$)", re.M)
ENTRY = re.compile(r"`([^`]+)` (\d+\.\d+) \[(\d+\.\d+), (\d+\.\d+)\]")


def test_every_verdict_word_in_a_committed_summary_agrees_with_its_interval():
    """Each row a committed summary calls flat / mild / broken / undecided has that verdict in its
    table.csv, and the verdict is what its statistic's interval (full precision) supports: never flat
    or mild where the interval straddles a border. The statistic is the one the verdict was read from:
    on equal context where the row has a window control (``equal_ctx``), else the ratio to 1x."""
    from posbench.report.analysis.convergence import interval_verdict

    checked = 0
    for folder in REPORTS:
        text = (folder / "report.md").read_text()
        if "## Summary" not in text or not (folder / "table.csv").exists():
            continue
        csv = pd.read_csv(folder / "table.csv")
        if "verdict" not in csv:
            continue  # a report made before verdicts had intervals
        ratio = next(c for c in csv.columns if c.endswith("/1x"))
        summary = text.split("## Summary")[1].split("\n## ")[0]
        for paragraph in summary.split("\n\n"):
            head = re.match(r"\*\*train_len (\d+), model (\S+), ", paragraph)
            if head is None:
                continue
            train_len, model = int(head[1]), head[2].rstrip(",")
            panel = csv[(csv["train_len"] == train_len) & (csv["model"] == model)]
            for word, entries in VERDICT_LIST.findall(paragraph.split("Windowed controls")[0]):
                for name, value, lo, hi in ENTRY.findall(entries):
                    mine = panel[panel["variant"] == name]
                    stat = ["equal_ctx" if "equal_ctx" in csv and pd.notna(r.get("equal_ctx")) else ratio for _, r in mine.iterrows()]
                    rows = mine[[f"{r[c]:.2f}" == value for (_, r), c in zip(mine.iterrows(), stat)]]
                    assert len(rows) >= 1, (folder.name, name, value)
                    r = rows.iloc[0]
                    c = "equal_ctx" if "equal_ctx" in csv and pd.notna(r.get("equal_ctx")) else ratio
                    assert r["verdict"] == word, (folder.name, name)
                    assert interval_verdict(r[f"{c}_lo"], r[f"{c}_hi"], r[c], 0.05) == word, (folder.name, name)
                    checked += 1
    assert checked > 0, "no committed summary states a verdict with its interval"


def test_a_rebuilt_report_says_so_in_its_first_lines():
    """Every committed report rebuilt from its records (its COMMAND.md says so) says so before its
    headline, task-only reports included."""
    rebuilt = [f for f in REPORTS if "Rebuilt from its records" in (f / "COMMAND.md").read_text()]
    assert rebuilt
    for folder in rebuilt:
        intro = (folder / "report.md").read_text().split("\n## ")[0]
        assert "rebuilt from the records it kept" in intro, folder.name
