"""Run ids never change (posbench/store/identity.py): every run recorded in a committed report keeps
the id its saved config gives it, whatever the code that reads the config (the run store's migration
of old configs), and settings added since (new encodings, schedules, tokenizers) leave the ids of
runs made without them alone."""

import json
from pathlib import Path

import pytest
import yaml

from posbench.report.records.manifest import manifest_data
from posbench.spec import RunSpec
from posbench.store.identity import run_id, run_identity


def test_new_encodings_leave_existing_run_ids_alone(compose):
    """Adding encodings and hooks changes no existing run's id (ids hash the encoding, model and
    train sections): these are the ids the code gave before the per-layer hooks and the 2024-2026
    encodings existed (test_every_committed_run_keeps_its_id checks every committed run as well)."""
    assert compose("encoding=rope").run_id == "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=alibi", "train_len=128", "seed=2").run_id == "alibi_small_L128_s2_9dde0697e5"


def test_run_ids_of_runs_without_the_new_keys_do_not_change(compose):
    """Ids computed by the code before ``train.schedule`` existed, for freshly composed configs."""
    assert compose("encoding=rope").run_id == "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=alibi", "model=tiny", "train=smoke", "train_len=16", "seed=3").run_id == \
        "alibi_tiny_L16_s3_2e023bae71"
    # a WSD run is another run, and a shape or cool-down another again
    ids = {compose("encoding=rope", *o).run_id for o in ([], ["train.schedule=wsd"], ["train.schedule=wsd",
           "train.cooldown_shape=1-sqrt"], ["train.schedule=wsd", "train.cooldown=0.1"])}
    assert len(ids) == 4


def test_t5_runs_keep_their_ids_and_the_scaled_bias_gets_its_own(compose):
    """encoding.bias_scale at ``none``, the bias every earlier T5 run had, is left out of
    the id: ids computed by the code before it existed; ``sqrt_dhead`` is another run."""
    assert compose("encoding=t5").run_id == "t5_small_L64_s0_9a55b2ee83"
    assert compose("encoding=t5", "encoding.bias_scale=none", "model=tiny", "train=smoke", "train_len=16",
                   "seed=3").run_id == "t5_tiny_L16_s3_9531c32b3f"
    scaled = compose("encoding=t5", "encoding.bias_scale=sqrt_dhead")
    assert scaled.run_id.startswith("t5_small_L64_s0_") and scaled.run_id != "t5_small_L64_s0_9a55b2ee83"
    assert scaled.resolved()["encoding"]["bias_scale"] == "sqrt_dhead"
    # a saved T5 config from before the setting reads as the unscaled bias, with its id
    saved = compose("encoding=t5").resolved()
    del saved["encoding"]["bias_scale"]
    spec = RunSpec.from_config(saved)
    assert spec.encoding.params.bias_scale == "none" and spec.run_id == run_id(saved) == "t5_small_L64_s0_9a55b2ee83"


def test_randomized_position_runs_keep_their_ids_and_real_positions_get_their_own(compose):
    """train.random_positions_kind at ``integer`` (what every randomized-position run drew) is left out of
    the id, given or not; ``float`` (Random Float Sampling) is another run."""
    base = ("encoding=rope", "model=tiny", "train=smoke", "train_len=16", "train.random_positions=64")
    plain = compose(*base).run_id
    assert compose(*base, "train.random_positions_kind=integer").run_id == plain
    assert "random_positions_kind" not in run_identity(compose(*base, "train.random_positions_kind=integer").resolved())["train"]
    real = compose(*base, "train.random_positions_kind=float")
    assert real.run_id != plain and real.shape.continuous_positions and not compose(*base).shape.continuous_positions


def test_byte_runs_keep_their_ids_and_bpe_runs_get_their_own(compose):
    byte, bpe = compose("model=tiny"), compose("model=tiny", "data/tokenizer=bpe")
    assert "tokenizer" not in json.dumps(run_identity(byte.resolved())["data"])
    assert bpe.run_id.startswith("rope_tiny_L64_s0_bpe1024_") and bpe.run_id != byte.run_id
    assert byte.resolved()["model"]["vocab_size"] == 256  # what byte runs always saved


RESULTS = Path(__file__).resolve().parents[2] / "results"
MANIFESTS = sorted(RESULTS.rglob("manifest.json*"))


def as_made(text: str) -> dict:
    """A committed run config as its machine wrote it: the committed files name that machine's temporary
    folder $TMPDIR (scripts/portable_paths.py), and a run id hashes ``data.path`` as it was (/tmp on
    every machine the studies ran on)."""
    return yaml.safe_load(text.replace("$TMPDIR/", "/tmp/"))


def committed_configs() -> list[tuple[str, dict]]:
    return [(rid, as_made(text)) for m in MANIFESTS for rid, text in manifest_data(m.parent)["configs"].items()]


def test_the_committed_reports_hold_run_configs():
    # 226 since the reference was regenerated at train_len 64 only (45 of its 90 runs); the map's 280 since
    assert len(committed_configs()) >= 500


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: str(p.parent.relative_to(RESULTS)))
def test_every_committed_run_keeps_its_id(manifest):
    configs = manifest_data(manifest.parent)["configs"]
    assert configs, f"{manifest} has no run configs"
    for rid, text in configs.items():
        saved = as_made(text)
        assert run_id(saved) == rid
        # and through the one conversion every reader of a run directory uses (old configs migrated)
        assert RunSpec.from_config(saved).run_id == rid


@pytest.mark.parametrize("records", sorted(RESULTS.rglob("*.parquet")), ids=lambda p: str(p.relative_to(RESULTS)))
def test_every_run_in_a_committed_records_file_is_named_by_its_id(records):
    from posbench.store.records import read_records

    runs = {folder: named["config.yaml"] for folder, named in read_records(records).items() if "config.yaml" in named}
    assert runs
    for folder, text in runs.items():
        assert run_id(as_made(text.decode())) == Path(folder).name
