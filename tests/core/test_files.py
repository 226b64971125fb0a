"""posbench/core/files.py: what posbench writes follows the process's umask."""

import subprocess
import sys

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_files_and_folders_follow_the_umask(tmp_path, text_corpus):
    cache = tmp_path / "cache"
    argv = ["posbench-train", *SMALL, "train.steps=2", f"data.path={text_corpus}", f"data.cache_dir={cache}",
            f"runs_dir={tmp_path / 'runs'}"]
    code = f"import os, sys; os.umask(0o002); sys.argv = {argv!r}; from posbench.jobs.train import main; main()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    (entry,) = cache.iterdir()
    for folder in (run_dir, entry):
        assert folder.stat().st_mode & 0o777 == 0o775, folder
    for f in [*run_dir.iterdir(), *entry.iterdir()]:
        assert f.stat().st_mode & 0o777 == 0o664, f  # group-readable and -writable, as the umask says
