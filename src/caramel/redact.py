"""Secrets never reach what people see or share: one place that masks them (docs/security.md,
"Secrets").

`text(value)` is how any URL, setting or message that may hold one is shown (pages, error messages,
`bench config`, logs, exports): the password of every `scheme://user:password@host` in it becomes
`***`, however it is written (percent-encoded, or holding `/`, `#`, `?` or `@`: everything between
the first `:` after the user and the last `@` is the password), and so do the values of query
parameters whose (percent-decoded) name says secret (`password=`, `sslpassword=`, `token=`,
`api_key=`...). `environment(env)` is an environment as caramel stores it (`export: true` steps):
without the variables whose name matches the secret patterns (`secret_env`, a setting) and without
those whose value holds a URL with a password.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from urllib.parse import unquote

MASK = "***"
# a name (of a variable or a query parameter) that holds a secret: the default of the `secret_env`
# setting
SECRET_NAMES = (
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*_KEY",
    "*_KEY_*",
    "*APIKEY*",
    "*CREDENTIAL*",
    "*_PWD",
    "PWD_*",
    "*PRIVATE*",
    "*_AUTH",
    "*AUTH_*",
    "*COOKIE*",
)
# query parameters that hold a secret whatever the patterns say (libpq's and the usual ones)
SECRET_PARAMETERS = (
    "password",
    "sslpassword",
    "passwd",
    "pwd",
    "token",
    "key",
    "secret",
    "apikey",
    "auth",
)

_URL = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://\S*"
)  # to the next blank: a raw password may hold anything else
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def secret_name(name: str, patterns: tuple[str, ...] = SECRET_NAMES) -> bool:
    """Whether a variable or parameter called `name` holds a secret (case does not matter)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def url(target: str) -> str:
    """`target` as it may be shown: a URL's password and secret query values as `***` (a path as
    it is)."""
    scheme = _SCHEME.match(target)
    if not scheme:
        return target
    rest = target[scheme.end() :]
    if "@" in rest:  # the last `@`: a password may hold `@`, `/`, `#` or `?` unencoded
        userinfo, _, rest = rest.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        rest = f"{user}{':' + MASK if colon else ''}@{rest}"
    return scheme.group() + _query_masked(rest)


def _query_masked(rest: str) -> str:
    """`host/path?query#fragment` with the values of secret parameters masked."""
    base, question, query = rest.partition("?")
    if not question:
        return rest
    query, hash_, fragment = query.partition("#")
    pairs = []
    for pair in re.split(r"([&;])", query):
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}={MASK}" if equals and _secret_parameter(unquote(name)) else pair)
    return f"{base}?{''.join(pairs)}{hash_}{fragment}"


def _secret_parameter(name: str) -> bool:
    return name.lower() in SECRET_PARAMETERS or secret_name(name)


def text(value: str) -> str:
    """`value` (a setting, a message, a line of a page) with every URL in it masked (see `url`)."""
    if "://" not in value:
        return value
    return _URL.sub(lambda found: url(found.group()), value)


def place(target: str) -> str:
    """Where a history or sink is, for a page header: a URL as `scheme://host/database`, with no
    user,
    password or parameters at all (a path as it is)."""
    scheme = _SCHEME.match(target)
    if not scheme:
        return target
    rest = target[scheme.end() :].rpartition("@")[2]
    return scheme.group() + re.split(r"[?#]", rest, maxsplit=1)[0]


def password_of(target: str) -> str:
    """The password a URL carries ('' for none): what a server's own error message may repeat."""
    scheme = _SCHEME.match(target)
    if not scheme or "@" not in target[scheme.end() :]:
        return ""
    userinfo = target[scheme.end() :].rpartition("@")[0]
    return userinfo.partition(":")[2]


def scrub(message: str, target: str) -> str:
    """`message` (another program's error about `target`) without the password, as written or
    decoded."""
    password = password_of(target)
    for form in {password, unquote(password)} - {""}:
        message = message.replace(form, MASK)
    return text(message)


def environment(env: Mapping[str, str], patterns: tuple[str, ...] = SECRET_NAMES) -> dict[str, str]:
    """`env` without its secrets: the variables named like one, and those holding a URL with a
    password."""
    return {
        name: value
        for name, value in env.items()
        if not secret_name(name, patterns) and text(value) == value
    }
