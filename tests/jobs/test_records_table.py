"""posbench/jobs/records_table.py: the table of evaluation records aligns long names and undefined lengths."""

def test_records_table_aligns_long_names_and_undefined_lengths():
    from posbench.jobs.records_table import records_table

    recs = [{"variant": "rope+dynamic_ntk", "protocol": "sliding", "length": 16, "multiple": 1.0, "ppl": 4.5,
             "tokens_scored": 256},
            {"variant": "learned", "protocol": "nonoverlapping", "length": 256, "multiple": 16.0, "ppl": None,
             "reason": "past its table", "tokens_scored": 0}]
    lines = records_table(recs, []).splitlines()
    assert lines == ["variant           protocol        length  multiple                   ppl  tokens",
                     "rope+dynamic_ntk  sliding             16        1x                 4.500     256",
                     "learned           nonoverlapping     256       16x  n/d (past its table)       0"]
