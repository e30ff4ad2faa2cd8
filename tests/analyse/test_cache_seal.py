"""The analysis cache unpickles only what this user's key sealed."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from caramel.analyse import cache


class Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_value_sealed_by_this_user_reads_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(cache, "_KEY", None)
    assert cache.loads(cache.dumps({"a": [1, 2.5]})) == {"a": [1, 2.5]}
    key = tmp_path / "data" / "cache.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_a_pickle_not_sealed_by_this_user_is_never_unpickled(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(cache, "_KEY", None)
    marker = str(tmp_path / "unpickled")
    blob = pickle.dumps(Evil(marker))
    for forged in (blob, b"\0" * 32 + blob, b"short"):
        with pytest.raises(cache.Unsealed):
            cache.loads(forged)
    monkeypatch.setattr(cache, "_KEY", b"someone else's key, 32 bytes....")
    sealed_by_other = cache.dumps([1])
    monkeypatch.setattr(cache, "_KEY", None)
    with pytest.raises(cache.Unsealed):
        cache.loads(sealed_by_other)
    assert not os.path.exists(marker)
