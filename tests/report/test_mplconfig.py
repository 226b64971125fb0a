"""posbench/report/mplconfig.py: an unwritable home gives no matplotlib warnings."""

import os
import subprocess
import sys


def test_an_unwritable_home_gives_no_matplotlib_warnings(small_runs, tmp_path):
    home = tmp_path / "home"
    home.write_text("a file: nothing can be created below it")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    proc = subprocess.run([sys.executable, "-m", "posbench.cli.report", str(small_runs), "--out", str(tmp_path / "rep"),
                           "--protocols", "nonoverlapping"], capture_output=True, text=True, env={**env, "HOME": str(home)},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == "", proc.stderr
    assert (tmp_path / "rep" / "ppl_vs_length.png").exists()
