"""fs.oserrors: the path and the real cause of an OSError."""

from __future__ import annotations

import errno

import pytest

from caramel.fs.oserrors import file_error


@pytest.mark.parametrize(("code", "words"), [(errno.ENOSPC, "no space left"), (errno.ENOENT, "no such file"),
                                            (errno.EBUSY, "busy"), (errno.EMFILE, "too many open files")])
def test_each_cause_in_words_with_the_path(code, words):
    error = file_error(OSError(code, "x"), "/data/out/page.html")
    assert "/data/out/page.html" in str(error) and words in str(error)


def test_no_path_known_says_so_instead_of_a_question_mark():
    error = file_error(OSError(errno.ENOSPC, "No space left on device"))
    assert "?" not in str(error) and "the system did not say which" in str(error)
    assert "df -h shows which" in error.hint


def test_the_errors_own_filename_is_used():
    error = file_error(OSError(errno.EACCES, "Permission denied", "/x/y"), action="read")
    assert str(error).startswith("cannot read /x/y: permission denied")
