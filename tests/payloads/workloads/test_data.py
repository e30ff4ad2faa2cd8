from pathlib import Path

import pytest

from caramel.payloads.workloads.data import MAGIC, read_tokens, write_corpus


def test_corpus_round_trips_through_megatron_index(tmp_path: Path) -> None:
    bin_path, idx_path = write_corpus(tmp_path / "c", documents=10, vocab_size=50, mean_length=20)
    raw = idx_path.read_bytes()
    assert raw.startswith(MAGIC)
    tokens = read_tokens(tmp_path / "c")
    assert len(tokens) * 2 == bin_path.stat().st_size
    assert tokens.max() < 50


def test_foreign_index_is_refused(tmp_path: Path) -> None:
    write_corpus(tmp_path / "c", documents=3, mean_length=10)
    (tmp_path / "c.idx").write_bytes(b"NOTANIDX" + b"\0" * 40)
    with pytest.raises(ValueError, match="not a Megatron MMIDIDX index"):
        read_tokens(tmp_path / "c")
