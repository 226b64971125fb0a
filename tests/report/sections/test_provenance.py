"""The provenance section (posbench/report/sections/provenance.py): the commands, the environment, the
settings every run shares and one table of those that differ, with no path of this machine."""

import tempfile

from posbench.core.paths import portable
from posbench.report.records.provenance import config_split, shown_runs
from posbench.report.sections.provenance import Provenance
from tests.helpers import run_section


def test_the_provenance_names_the_sweep_s_command_with_portable_paths_and_every_run_once(sweep, sweep_context, tmp_path):
    runs_dir, overrides, _ = sweep
    md, written = run_section(Provenance, sweep_context, tmp_path)
    assert md.startswith("## How these runs were made") and written == {}
    # the command as typed, its folders portable (another machine has other folders: posbench/core/paths.py)
    command = "posbench-train -m " + " ".join(portable(o) for o in overrides if o != "-m")
    assert command in md and str(runs_dir) not in md and tempfile.gettempdir().rstrip("/") + "/" not in md
    # each run one row of the settings that differ (its whole config with the shared block), no listing per run
    assert all(md.count(f"| {rid} ") == 1 for rid in sweep_context.completed["run_id"])
    assert "config of " not in md


def test_the_shared_settings_and_the_row_of_each_run_give_its_whole_config(sweep_context):
    from posbench.report.records.provenance import flat_config

    runs = shown_runs(sweep_context)
    shared, differing = config_split(runs, sweep_context.configs)
    for rid, d in zip(runs["run_id"], runs["run_dir"]):
        whole = flat_config(sweep_context.configs[d])
        row = differing.set_index("run_id").loc[rid]
        assert set(whole) <= set(shared) | set(row.index) | {k for k in whole if k.startswith("encoding.")}
        assert all(shared[k] == whole[k] for k in shared)
