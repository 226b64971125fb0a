"""The provenance section (posbench/report/sections/provenance.py): the commands, the environment, the
shared settings and each run's config."""

from posbench.report.sections.provenance import Provenance
from tests.helpers import run_section


def test_the_provenance_names_the_sweep_s_command_and_every_run_s_config(sweep, sweep_context, tmp_path):
    _, overrides, _ = sweep
    md, written = run_section(Provenance, sweep_context, tmp_path)
    assert md.startswith("## How these runs were made") and written == {}
    assert "posbench-train -m " + " ".join(o for o in overrides if o != "-m") in md
    assert all(f"config of {rid}" in md for rid in sweep_context.completed["run_id"])
