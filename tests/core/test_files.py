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


def _open_fds() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


def test_a_failed_atomic_write_keeps_the_old_file_and_leaves_no_temporary_file_or_descriptor(tmp_path, monkeypatch):
    """An error at any point of the write (here: the permissions, the write, the rename) leaves the old
    file, no hidden ``.<name>.*.tmp`` and no open descriptor (mkstemp's leaked when fchmod failed)."""
    import os

    import pytest

    from posbench.core.files import atomic_write_bytes

    target = tmp_path / "resume.pt"
    target.write_bytes(b"old")
    for name in ("fchmod", "fsync", "replace"):
        def fail(*args, **kwargs):
            raise KeyboardInterrupt if name == "replace" else OSError(28, "No space left on device")
        with monkeypatch.context() as m:
            m.setattr(os, name, fail)
            fds = _open_fds()
            with pytest.raises((OSError, KeyboardInterrupt)):
                atomic_write_bytes(target, b"new")
            assert _open_fds() == fds, name
        assert sorted(p.name for p in tmp_path.iterdir()) == ["resume.pt"] and target.read_bytes() == b"old", name


def test_a_signal_during_an_atomic_write_waits_for_the_rename(tmp_path, monkeypatch):
    """A real SIGINT that arrives while the file is being written goes to the handler once the new file is
    in place: whole and new, no temporary file (before, it landed mid-write and the old file stayed)."""
    import os
    import signal

    import pytest

    from posbench.core.files import atomic_write_bytes

    target = tmp_path / "metrics.json"
    target.write_bytes(b"old")
    # Python's own Ctrl-C handler, whatever the test runner set (an xdist worker ignores SIGINT)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (os.kill(os.getpid(), signal.SIGINT), real_fsync(fd)))
    try:
        with pytest.raises(KeyboardInterrupt):
            atomic_write_bytes(target, b"new")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"] and target.read_bytes() == b"new"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler it had, back
    finally:
        signal.signal(signal.SIGINT, outer)


def test_an_interrupted_cache_build_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """A Ctrl-C while a token cache is built (here: while it tokenizes) leaves neither the cache nor
    the hidden folder it was built in."""
    import pytest

    from posbench.data import tokens
    from posbench.data.load import load_corpus
    from tests.conftest import write_text_corpus
    from tests.data.test_tokenizer import data

    corpus_dir = write_text_corpus(tmp_path / "docs", n_docs=30, words_per_doc=600)
    load_corpus(data(corpus_dir, tmp_path / "cache"))  # the byte cache, built
    before = sorted(p.name for p in (tmp_path / "cache").iterdir())

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tokens, "encode", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load_corpus(data(corpus_dir, tmp_path / "cache", kind="bpe", vocab_size=300))
    after = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert [p for p in after if p.startswith(".")] == [] and set(after) - set(before) == {"tokenizers"}


def test_a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    """kill -9 reaches no ``finally``: the writer's hidden temporary file stays, and names its process;
    the next write of the same file removes it (a live writer's is kept)."""
    import os

    from posbench.core.files import atomic_write_bytes

    target = tmp_path / "report.md"
    code = ("import os, signal; from posbench.core import files; "
            "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL); "
            f"files.atomic_write_bytes({str(target)!r}, b'half')")
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == -9
    (orphan,) = tmp_path.glob(".report.md.*.tmp")
    live = tmp_path / f".report.md.{os.getpid()}.x.tmp"  # a writer still at work (this process)
    live.write_bytes(b"")
    atomic_write_bytes(target, b"whole")
    assert not orphan.exists() and live.exists() and target.read_bytes() == b"whole"
