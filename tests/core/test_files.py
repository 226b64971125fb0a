"""posbench/core/files.py: what posbench writes follows the process's umask."""

import subprocess
import sys

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_files_and_folders_follow_the_umask(tmp_path, text_corpus):
    cache = tmp_path / "cache"
    argv = ["posbench-train", *SMALL, "train.steps=2", f"data.path={text_corpus}", f"data.cache_dir={cache}",
            f"runs_dir={tmp_path / 'runs'}"]
    code = f"import os, sys; os.umask(0o002); sys.argv = {argv!r}; from posbench.cli.train import main; main()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    (entry,) = cache.iterdir()
    for folder in (run_dir, entry):
        assert folder.stat().st_mode & 0o777 == 0o775, folder
    for f in [*run_dir.iterdir(), *entry.iterdir()]:
        assert f.stat().st_mode & 0o777 == 0o664, f  # group-readable and -writable, as the umask says


def test_json_is_written_whole_without_nan_and_a_published_folder_is_kept(tmp_path):
    """write_json: NaN and inf become null, through a temporary file renamed into place (none left
    behind); publish_dir: a cache folder another process published first is kept, not replaced."""
    import json

    from posbench.core.files import UMASK, private_tempdir, publish_dir, write_json

    write_json(tmp_path / "run" / "metrics.json", {"ppl": float("nan"), "curve": [1.5, float("inf")], "steps": 2})
    assert json.loads((tmp_path / "run" / "metrics.json").read_text()) == {"ppl": None, "curve": [1.5, None], "steps": 2}
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["metrics.json"]
    first, second = private_tempdir(tmp_path, ".cache."), private_tempdir(tmp_path, ".cache.")
    assert second.stat().st_mode & 0o777 == 0o777 & ~UMASK  # not mkdtemp's 0700
    (first / "tokens").write_text("first")
    (second / "tokens").write_text("second")
    publish_dir(first, tmp_path / "cache")
    publish_dir(second, tmp_path / "cache")
    assert (tmp_path / "cache" / "tokens").read_text() == "first" and second.exists()


def test_a_runs_dir_that_cannot_be_written_is_refused_before_anything_runs(tmp_path):
    import pytest

    from posbench.core.errors import PosbenchError
    from posbench.core.files import check_writable_dir

    check_writable_dir(str(tmp_path / "new" / "runs"), "runs_dir")  # created later: fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(PosbenchError, match="is a file, not a folder"):
        check_writable_dir(str(tmp_path / "file"), "runs_dir")
    with pytest.raises(PosbenchError, match=r"cannot be created: .*/file is a file"):
        check_writable_dir(str(tmp_path / "file" / "runs"), "runs_dir")
