"""``posbench-train``: compose -> check every job -> train -> evaluate -> write the run directory.

    posbench-train encoding=alibi model=small train_len=64
    posbench-train -m encoding=nope,sinusoidal,learned,rope,alibi train_len=64,128

Every job of the command line becomes a typed ``RunSpec`` (posbench.cli.config.to_spec, every value
checked) before the first one starts; posbench.jobs.train.run does the rest.
"""

from posbench.cli.app import hydra_app
from posbench.cli.config import to_spec
from posbench.jobs.train import check_jobs, run

main = hydra_app("config", to_spec, run, check_jobs)

if __name__ == "__main__":  # python -m: the console script's handlers (a SIGTERM is one line and 143)
    from posbench.core.errors import note_interrupts

    note_interrupts()
    main()
