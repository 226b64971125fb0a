"""posbench/data/hub.py: whether the Hugging Face hub can be reached is known at once, and the hub
clients can be switched offline so that a missing dataset fails without retries."""

import os


def test_an_unreachable_hub_is_known_at_once_and_the_clients_go_offline(monkeypatch):
    import datasets
    import huggingface_hub

    from posbench.data.hub import _force_hub_offline, _hub_reachable

    monkeypatch.setenv("HF_ENDPOINT", "https://127.0.0.1")  # nothing listens on this machine's port 443
    assert _hub_reachable(timeout=1.0) is False
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(var, "0")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    _force_hub_offline()
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["HF_DATASETS_OFFLINE"] == "1"
    assert datasets.config.HF_HUB_OFFLINE and huggingface_hub.constants.HF_HUB_OFFLINE
