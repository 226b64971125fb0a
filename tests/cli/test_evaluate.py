"""``posbench-eval`` (posbench/cli/evaluate.py): a request is checked against the run it names; a variant
setting that adds no row to the run is refused before anything is scored."""

from pathlib import Path

import pytest

from posbench.core.errors import PosbenchError


def test_posbench_eval_refuses_a_variant_setting_that_gives_the_run_no_row(compose, trained_run):
    from posbench.cli.config import to_eval_request
    from posbench.cli.evaluate import _check

    _check([to_eval_request(compose(f"run_dir={trained_run}", "eval.multiples=[1,4]", config_name="evaluate"))])
    request = to_eval_request(compose(f"run_dir={trained_run}", "eval.rope_scaling=[yarn]", config_name="evaluate"))
    with pytest.raises(PosbenchError, match=r"eval.rope_scaling=\[yarn\] adds no row for encoding alibi"):
        _check([request])  # the shared sweep's run is an ALiBi model


NONOVERLAPPING_ONLY = ["model=tiny", "train=smoke", "train.steps=4", "train_len=16", "eval.multiples=[1,2]",
                       "eval.protocols=[nonoverlapping]", "eval.scored_tokens=256", "data=local"]


@pytest.fixture(scope="module")
def nonoverlapping_run(tmp_path_factory, text_corpus, cache_dir):
    """One tiny run whose sweep turned the sliding protocol off (eval.protocols=[nonoverlapping])."""
    from tests.conftest import cli

    runs = tmp_path_factory.mktemp("nonoverlapping-runs")
    cli("posbench.cli.train", *NONOVERLAPPING_ONLY, f"data.path={text_corpus}", f"runs_dir={runs}", cwd=runs)
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir


def test_posbench_eval_keeps_the_run_s_own_eval_settings_and_says_why_it_scores_anew(nonoverlapping_run, tmp_path):
    """Longer multiples of a run trained without the sliding protocol score no sliding records (conf/eval's
    default would add them), on the run's scored tokens; the line says what came from the run and why each
    record is new. A setting on the command line wins, and a changed token set is named as the reason."""
    import json
    import shutil

    from tests.conftest import cli

    run = Path(shutil.copytree(nonoverlapping_run, tmp_path / "run"))
    longer = cli("posbench.cli.evaluate", f"run_dir={run}", "eval.multiples=[1,2,4]", cwd=tmp_path)
    records = json.loads((run / "metrics.json").read_text())["evaluations"]
    assert {r["protocol"] for r in records} == {"nonoverlapping"} and sorted(r["length"] for r in records) == [16, 32, 64]
    assert (f"{run.name}: eval settings from the run's config.yaml (give them on the command line to change them): "
            "eval.protocols=[nonoverlapping] eval.scored_tokens=256") in longer.stderr
    assert f"{run.name}: already have 2 records; scoring 1 new (new multiple 4x: 1)" in longer.stderr
    both = cli("posbench.cli.evaluate", f"run_dir={run}", "eval.multiples=[1,2,4]",
               "eval.protocols=[nonoverlapping,sliding]", cwd=tmp_path)
    assert f"{run.name}: already have 3 records; scoring 3 new (new protocol sliding: 3)" in both.stderr
    other = cli("posbench.cli.evaluate", f"run_dir={run}", "eval.multiples=[1,2]", "eval.scored_tokens=128", cwd=tmp_path)
    assert (f"{run.name}: already have 0 records; scoring 2 new (new token set for nonoverlapping (segments[256, T=128, "
            "from 256]; the run's: segments[256, T=256, from 256]): 2)") in other.stderr  # the run's protocol only


def test_a_run_without_its_weights_is_a_no_op_where_every_record_is_there(nonoverlapping_run, tmp_path):
    """A run unpacked from kept records has no checkpoint: asked for what it has, posbench-eval says so and
    loads nothing (a study script's resume); asked for something new, the missing weights are one line."""
    import shutil

    from tests.conftest import cli

    run = Path(shutil.copytree(nonoverlapping_run, tmp_path / "run"))
    (run / "checkpoint.pt").unlink()
    same = cli("posbench.cli.evaluate", f"run_dir={run}", cwd=tmp_path)
    assert f"{run.name}: already have 2 records; nothing new to score" in same.stderr
    longer = cli("posbench.cli.evaluate", f"run_dir={run}", "eval.multiples=[1,2,4]", cwd=tmp_path, check=False)
    assert longer.returncode != 0 and "no checkpoint at" in longer.stderr and "Traceback" not in longer.stderr


def test_one_refusal_names_every_key_a_longer_multiple_needs(entry, nonoverlapping_run):
    """Sliding windows need the history before the scored tokens and non-overlapping ones a segment to tile:
    both keys in one line; the run's own protocol (non-overlapping) needs the segment alone."""
    def refusal(*argv):
        code, err = entry("eval", f"run_dir={nonoverlapping_run}", "eval.multiples=[1,2,4,8,16,32]", *argv)
        (line,) = err.strip().splitlines()
        assert code == 2 and line.startswith("posbench: error: ")
        return line

    line = refusal("eval.protocols=[nonoverlapping,sliding]")
    assert "eval.first_scored=256" in line and "eval.segment=256" in line and "set eval.first_scored=512 eval.segment=512" in line
    line = refusal()
    assert "set eval.segment=512 (" in line and "first_scored" not in line


def test_the_command_line_s_eval_keys_are_those_it_gives(compose, trained_run):
    from posbench.cli.config import given_eval_keys

    cfg = compose(f"run_dir={trained_run}", "eval.multiples=[1,4]", "+eval.bca=[]", "threads=1", config_name="evaluate")
    assert given_eval_keys(cfg) == {"multiples", "bca"}


def test_posbench_eval_scores_an_fp32_run_in_fp32_unless_told_otherwise(compose, trained_run):
    """Precision is no part of the run id, so a re-evaluation takes the run's own (an fp32 GPU run's
    records must not gain bf16 scores); the command line still wins, and says so by being given."""
    from posbench.cli.config import to_eval_request

    config = trained_run / "config.yaml"
    config.write_text(config.read_text().replace("precision: auto", "precision: fp32"))
    assert "precision: fp32" in config.read_text()
    request = to_eval_request(compose(f"run_dir={trained_run}", config_name="evaluate"))
    assert request.runtime.precision == "fp32" and "precision=fp32" in request.from_run
    told = to_eval_request(compose(f"run_dir={trained_run}", "precision=auto", config_name="evaluate"))
    assert told.runtime.precision == "auto" and "precision=fp32" not in told.from_run


def test_a_folder_of_runs_is_scored_run_by_run_and_the_same_command_resumes(tmp_path, text_corpus, cache_dir):
    """posbench-eval run_dir=FOLDER: every completed run below it gets the records asked for (a sweep, one
    job per run); a second call adds nothing, so a sweep cut short continues where it stopped."""
    import json

    from posbench.cli.evaluate import expanded
    from tests.conftest import cli

    runs = tmp_path / "runs"
    cli("posbench.cli.train", "-m", "encoding=nope,alibi", *NONOVERLAPPING_ONLY, f"data.path={text_corpus}",
        f"runs_dir={runs}", cwd=tmp_path)
    run_dirs = sorted(p.parent for p in runs.glob("*/metrics.json"))
    assert len(run_dirs) == 2
    args = expanded([f"run_dir={runs}", "eval.multiples=[1,2,4]"])
    assert args[0] == "-m" and args[-1] == "run_dir=" + ",".join(f"'{d}'" for d in run_dirs)
    assert expanded([f"run_dir={run_dirs[0]}"]) == [f"run_dir={run_dirs[0]}"]  # a run is a run
    first = cli("posbench.cli.evaluate", f"run_dir={runs}", "eval.multiples=[1,2,4]", cwd=tmp_path)
    for d in run_dirs:
        records = json.loads((d / "metrics.json").read_text())["evaluations"]
        assert {r["multiple"] for r in records if r["variant"] in ("nope", "alibi")} == {1.0, 2.0, 4.0}, first.stdout
    before = [(d / "metrics.json").read_text() for d in run_dirs]
    cli("posbench.cli.evaluate", f"run_dir={runs}", "eval.multiples=[1,2,4]", cwd=tmp_path)
    assert [(d / "metrics.json").read_text() for d in run_dirs] == before


def test_a_folder_without_a_completed_run_is_one_line(entry, tmp_path):
    (tmp_path / "empty").mkdir()
    status, err = entry("eval", f"run_dir={tmp_path / 'empty'}")
    assert status == 2 and "is not a run directory" in err and len(err.strip().splitlines()) == 1
