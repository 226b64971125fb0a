"""posbench/core/cpu_share.py: a CPU run whose threads spin-wait for a shared core says so, with the fix;
the quickstart's sweep runs one single-thread job per core (results/bench/threads.md)."""

import logging

import pytest
import torch
from hydra import compose, initialize_config_dir

from posbench.cli.config import CONF_DIR, register_configs
from posbench.core import cpu_share
from posbench.core.cpu_share import SlowdownWatch, check_threads_at_start, threads_fit

CPU = torch.device("cpu")


def test_a_run_that_falls_below_a_third_of_its_best_interval_warns_once_with_the_fix(caplog):
    watch = SlowdownWatch(CPU)
    with caplog.at_level(logging.WARNING, logger=cpu_share.__name__):
        warned = [watch.update(rate, step) for step, rate in enumerate([500, 9000, 10000, 9500, 4000, 3500, 2000, 1000])]
    assert warned == [False, False, False, False, False, False, True, False]  # 2000 < 10000 / 3, once
    (record,) = caplog.records
    assert "2000 tokens/s at step 6" in record.message and "best 10000" in record.message
    assert "POSBENCH_JOBS" in record.message  # what to do, for a run of any thread count


def test_start_up_intervals_set_no_reference_and_a_steady_run_never_warns():
    watch = SlowdownWatch(CPU)
    assert not any(watch.update(rate, step) for step, rate in enumerate([100000, 50000, 6000, 5900, 6100, 5800]))


def test_a_gpu_run_is_not_watched():
    watch = SlowdownWatch(torch.device("meta"))  # any non-CPU device
    assert not any(watch.update(rate, step) for step, rate in enumerate([1, 1, 1000, 10, 1]))


def test_threads_that_do_not_find_their_cores_free_warn_at_the_start_naming_threads_1(monkeypatch, caplog):
    """Beside one busy process on 2 cores a 2-thread run spin-waits (results/bench/threads.md: 1.89x the
    time of single-thread runs side by side); the start check says so (the load is made up here)."""
    monkeypatch.setattr(cpu_share, "busy_cores", lambda: 1.0)
    monkeypatch.setattr(cpu_share, "usable_cores", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    with caplog.at_level(logging.WARNING, logger=cpu_share.__name__):
        check_threads_at_start(CPU)
    assert "torch uses 2 threads on 2 cores, but other work keeps 1 of them busy" in caplog.text
    assert "threads=1 hydra/launcher=local_parallel" in caplog.text


@pytest.mark.parametrize("threads, load, cores, fits", [
    (2, 0.0, 2, True), (2, 1.0, 2, False), (1, 5.0, 2, True), (4, 3.0, 8, True), (8, 1.0, 8, False)])
def test_threads_fit_where_other_work_leaves_them_their_cores(threads, load, cores, fits):
    assert threads_fit(threads, load, cores) is fits


def test_idle_threads_and_one_thread_say_nothing(monkeypatch, caplog):
    monkeypatch.setattr(cpu_share, "busy_cores", lambda: 0.0)
    with caplog.at_level(logging.WARNING, logger=cpu_share.__name__):
        check_threads_at_start(CPU)
    assert caplog.text == ""


def test_the_busy_cores_are_read_from_the_system_and_exclude_this_process():
    busy = cpu_share.busy_cores(samples=3, interval=0.0)
    assert busy >= 0 and busy == int(busy)


@pytest.mark.parametrize("preset", ["quick"])
def test_the_quickstart_sweep_runs_single_thread_jobs_side_by_side(preset):
    register_configs()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"experiment={preset}"], return_hydra_config=True)
    assert cfg.threads == 1 and "joblib" in cfg.hydra.launcher._target_.lower()


def test_the_start_check_leaves_the_random_stream_and_thread_count_alone():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    threads = torch.get_num_threads()
    check_threads_at_start(CPU)
    assert torch.equal(torch.rand(3), expected) and torch.get_num_threads() == threads
