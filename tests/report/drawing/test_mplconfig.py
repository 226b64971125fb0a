"""posbench/report/drawing/mplconfig.py: an unwritable home gives no matplotlib warnings."""

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


def test_matplotlib_gets_a_temporary_config_folder_only_where_its_own_cannot_be_written(tmp_path, monkeypatch):
    import sys

    from posbench.report.drawing import mplconfig

    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)  # as if not imported yet
    monkeypatch.setattr(mplconfig, "_default_dirs", lambda: [tmp_path / "config" / "matplotlib"])
    mplconfig.use_writable_config_dir()
    assert "MPLCONFIGDIR" not in os.environ  # its own folder can be written: left alone
    (tmp_path / "home").write_text("a file")
    monkeypatch.setattr(mplconfig, "_default_dirs", lambda: [tmp_path / "home" / ".config" / "matplotlib"])
    mplconfig.use_writable_config_dir()
    chosen = os.environ["MPLCONFIGDIR"]
    assert os.path.isdir(chosen) and os.access(chosen, os.W_OK) and "posbench-matplotlib-" in chosen
    monkeypatch.setenv("MPLCONFIGDIR", "/mine")
    mplconfig.use_writable_config_dir()
    assert os.environ["MPLCONFIGDIR"] == "/mine"  # the user's choice stays
