"""The report's opening (posbench/report/sections/intro.py): how many runs, of what, from where."""

from posbench.report.sections.intro import Intro
from tests.helpers import run_section


def test_the_intro_counts_the_completed_runs_and_names_the_runs_folder(sweep_context, tmp_path):
    md, written = run_section(Intro, sweep_context, tmp_path)
    assert md.startswith("# posbench report\n") and written == {}
    # named without the absolute path of the machine that made it (posbench/report/records/selection.py shown_folder)
    assert "10 completed runs from `" in md and f"`{sweep_context.runs_dir}`" not in md
    assert f"from `{sweep_context.runs_dir.name}`: byte-level language models" in md
