"""A submission tree committed to a branch of a git repository (a bare repository on disk, or an
ssh/https remote): one commit per submission on top of what the branch holds, pushed without
force, so a branch that moved meanwhile refuses the push instead of losing someone's results.

git runs as a subprocess with an argument list (no shell); the credentials are git's own (its
credential helper, ssh agent).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from caramel.errors import RunError


def git(*arguments: str, cwd: Path) -> str:
    """One git command; its failure is a RunError quoting git's own words."""
    try:
        done = subprocess.run(
            ["git", *arguments], cwd=cwd, capture_output=True, text=True, timeout=600
        )
    except FileNotFoundError:
        raise RunError("git is not installed here", hint="install git to use --push") from None
    except subprocess.TimeoutExpired:
        raise RunError(f"git {arguments[0]} took over 10 minutes and was stopped") from None
    if done.returncode != 0:
        words = (done.stderr or done.stdout).strip()
        raise RunError(f"git {' '.join(arguments[:2])} failed: {words}")
    return done.stdout.strip()


def remote(url: str) -> str:
    """The repository as git is given it: a URL or scp-like `host:path` as is, a path on disk made
    absolute (git runs in a scratch folder). A leading `-` is refused: git would read an option."""
    if url.startswith("-"):
        raise RunError(f"--push {url}: a repository does not start with '-'")
    if "://" in url or (":" in url.split("/", 1)[0] and not Path(url).exists()):
        return url
    return str(Path(url).expanduser().resolve())


def branch_exists(url: str, branch: str, cwd: Path) -> bool:
    return bool(git("ls-remote", "--heads", url, f"refs/heads/{branch}", cwd=cwd))


def identity(cwd: Path) -> list[str]:
    """`-c user.name/email` for a commit where git has no identity configured (a CI runner)."""
    configured = subprocess.run(
        ["git", "config", "user.email"], cwd=cwd, capture_output=True, text=True
    )
    if configured.stdout.strip():
        return []
    return ["-c", "user.name=caramel", "-c", "user.email=caramel@localhost"]


def push_tree(tree: Path, url: str, branch: str, message: str) -> str | None:
    """Commit the tree's divisions on `branch` of `url` and push; returns the commit's hash, or
    None when the branch already held exactly this tree."""
    url = remote(url)
    with tempfile.TemporaryDirectory(prefix="caramel-push-") as scratch:
        clone = Path(scratch)
        git("init", "--quiet", cwd=clone)
        if branch_exists(url, branch, clone):
            git("fetch", "--quiet", url, f"refs/heads/{branch}", cwd=clone)
            git("checkout", "--quiet", "-B", branch, "FETCH_HEAD", cwd=clone)
        else:
            git("checkout", "--quiet", "--orphan", branch, cwd=clone)
        for division in sorted(p for p in tree.iterdir() if p.is_dir()):
            shutil.copytree(division, clone / division.name, dirs_exist_ok=True)
        git("add", "--all", ".", cwd=clone)
        if not git("status", "--porcelain", cwd=clone):
            return None
        git(*identity(clone), "commit", "--quiet", "-m", message, cwd=clone)
        git("push", "--quiet", url, f"HEAD:refs/heads/{branch}", cwd=clone)
        return git("rev-parse", "HEAD", cwd=clone)
