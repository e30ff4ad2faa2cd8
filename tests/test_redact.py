"""caramel.redact: one masking of every URL and setting shown to people (docs/security.md,
"Secrets")."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from caramel import redact

PASSWORDS = st.text(
    st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=6, max_size=24
).filter(lambda p: "@" not in p[-1:] and "***" not in p)
USERS = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8)


@given(user=USERS, password=PASSWORDS, encoded=st.booleans())
def test_a_password_never_survives_however_written(user: str, password: str, encoded: bool) -> None:
    """docs/security.md, "Secrets": raw (with `/ # ? @ :`) or percent-encoded, the password is
    masked."""
    written = quote(password, safe="") if encoded else password
    url = f"postgresql://{user}:{written}@db.example.org:5433/caramel"
    shown = redact.url(url)
    assert shown == f"postgresql://{user}:***@db.example.org:5433/caramel"
    assert redact.place(url) == "postgresql://db.example.org:5433/caramel"
    assert redact.text(f"history {url} is away") == f"history {shown} is away"


@given(
    value=st.text(
        st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=16
    ).filter(lambda v: not set(v) & set("&;#*"))
)
def test_secret_query_parameters_are_masked(value: str) -> None:
    """docs/security.md, "Secrets": password=, sslpassword=, token= (names percent-encoded too)."""
    for name in ("password", "sslpassword", "token", "%74oken", "api_key", "PGPASSWORD"):
        shown = redact.url(f"postgresql://h/db?sslmode=require&{name}={value}&application_name=x")
        assert shown == f"postgresql://h/db?sslmode=require&{name}=***&application_name=x"


@pytest.mark.parametrize(
    "text", ["/tmp/history.db", "postgresql://u@h/db", "https://h/path?x=1#top", "no url"]
)
def test_text_without_credentials_is_unchanged(text: str) -> None:
    assert redact.text(text) == text


def test_the_environment_leaves_out_secrets() -> None:
    """docs/security.md, "Secrets": names matching the patterns, and URLs with a password, are left
    out."""
    env = {
        "HF_TOKEN": "t",
        "AWS_SECRET_ACCESS_KEY": "k",
        "MY_PASSWORD": "p",
        "DB_PASSWD": "p",
        "SSH_KEY": "k",
        "GOOGLE_CREDENTIALS": "c",
        "DATABASE_URL": "postgresql://u:p@h/d",
        "PATH": "/bin",
        "HOME": "/root",
        "OMP_NUM_THREADS": "4",
        "KEYBOARD": "us",
    }
    assert redact.environment(env) == {
        "PATH": "/bin",
        "HOME": "/root",
        "OMP_NUM_THREADS": "4",
        "KEYBOARD": "us",
    }
    assert redact.environment(env, ("*TOKEN*",))["MY_PASSWORD"] == "p"


def test_scrub_removes_the_password_a_server_repeats() -> None:
    url = "postgresql://bench:p%2Fw@h/db"
    assert (
        redact.scrub('password authentication failed for "p/w" (p%2Fw)', url)
        == 'password authentication failed for "***" (***)'
    )
