"""A pool change committed on a new git branch, ready for a pull request, without touching the
working tree, the index or the branch checked out: the change is applied to the stack file as
HEAD holds it, and the commit is built with git's plumbing (hash-object, a temporary index,
write-tree, commit-tree) and given to a branch that must not exist yet (update-ref refuses to
move one). Git runs through argument lists, never a shell."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.errors import InputError, SetupError
from fleet.requests.request import Change
from fleet.stack.edit import Edit, edit_stack

GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class Commit:
    """The branch made for a change: its name, commit, the commit it starts from, the stack's
    path in the repository, and whether the working copy of the stack differs from HEAD's."""

    branch: str
    sha: str
    base: str
    path: str
    worktree_differs: bool


def run_git(args: list[str], cwd: Path, *, stdin: bytes | None = None,
            env: Mapping[str, str] | None = None,
            missing: str = "write the change as a diff with --patch FILE"
            ) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` in `cwd` (argv, never a shell), whatever it exits with: the one place
    accelfleet runs git. No git, or a git that hangs, is a SetupError naming `missing` (what to
    do instead)."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True,
                              env=dict(env) if env is not None else None,
                              timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise SetupError("git is not installed", hint=f"install git, or {missing}") from None
    except subprocess.TimeoutExpired:
        raise SetupError(f"`git {args[0]}` took over {GIT_TIMEOUT_S} s",
                         hint="check the repository (a lock left by another git?)") from None


def git(args: list[str], cwd: Path, *, stdin: bytes | None = None,
        env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """`git ARGS` in `cwd`: its stdout, stripped; a failure is an InputError quoting git."""
    done = run_git(args, cwd, stdin=stdin, env=env)
    if check and done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"`git {' '.join(args[:2])}` failed: {said[-1] if said else 'no output'}",
                         hint=_hint(args[0]))
    return done.stdout.decode("utf-8", "replace").strip()


def user_email() -> str:
    """`git config user.email` here, or "" when git is missing or says nothing."""
    try:
        done = run_git(["config", "user.email"], Path.cwd())
    except (SetupError, OSError):
        return ""
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""


def stack_text_at_ref(stack_file: Path, ref: str) -> str | None:
    """The stack file's text at a git ref, read with `git show REF:path`; None when the file
    does not exist at that ref (a new stack: everything is added)."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise InputError(f"--base-ref {ref!r} is not a git ref",
                         hint="give a branch, tag or commit, e.g. origin/main")
    where = stack_file.resolve().parent
    if not where.is_dir():
        raise InputError(f"stack file {stack_file} does not exist",
                         hint="give a stacks/Pulumi.<stack>.yaml file")
    missing = "pass a saved plan with --diff FILE"

    def show(args: list[str], cwd: Path) -> tuple[int, str, str]:
        done = run_git(args, cwd, missing=missing)
        return (done.returncode, done.stdout.decode("utf-8", "replace"),
                done.stderr.decode("utf-8", "replace").strip())

    code, top, err = show(["rev-parse", "--show-toplevel"], where)
    if code != 0:
        raise InputError(f"{stack_file} is not inside a git work tree ({err})",
                         hint="run from a clone, or pass a saved plan with --diff FILE")
    root = Path(top.strip())
    code, _, err = show(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if code != 0:
        raise InputError(f"unknown git ref {ref!r} in {root}",
                         hint="fetch it first (e.g. `git fetch origin main`; CI: checkout "
                         "with fetch-depth: 0) or name an existing branch, tag or commit")
    rel = stack_file.resolve().relative_to(root.resolve()).as_posix()
    code, _, _ = show(["cat-file", "-e", f"{ref}:{rel}"], root)
    if code != 0:
        return None
    code, text, err = show(["show", f"{ref}:{rel}"], root)
    if code != 0:
        raise InputError(f"cannot read {rel} at {ref}: {err}", hint="check the ref and path")
    return text


def _hint(command: str) -> str:
    if command == "commit-tree":
        return ("tell git who you are: git config user.name 'Your Name' && git config "
                "user.email you@example.com")
    return "run it by hand to see why, or write the change with --patch FILE instead"


def commit_change(path: Path, branch: str, decide: Callable[[dict[str, Any]], Change],
                  message: Callable[[Edit], str]) -> tuple[Edit, Commit | None]:
    """Apply `decide` to the stack file as HEAD holds it and commit the result on a new
    `branch` (one commit, the stack file only). None for a change that changes nothing."""
    where = Path(os.path.realpath(path))
    cwd = where.parent
    root = Path(os.path.realpath(git(["rev-parse", "--show-toplevel"], cwd)))
    rel = where.relative_to(root).as_posix()
    cwd = root  # paths given to git below are relative to the repository's top
    _check_branch(branch, cwd)
    base = git(["rev-parse", "--verify", "HEAD^{commit}"], cwd)
    listed = git(["ls-tree", "HEAD", "--", rel], cwd)
    if not listed:
        raise InputError(f"{rel} is not committed at HEAD",
                         hint="commit the stack file first: the branch holds HEAD's version "
                         "of it plus this change")
    mode, _kind, rest = listed.split(" ", 2)
    blob = rest.split("\t", 1)[0]
    raw = run_git(["cat-file", "blob", blob], cwd).stdout
    head_text = raw.decode("utf-8")
    edit = edit_stack(where, decide, write=False, text=head_text)
    if edit.change.changes_nothing:
        return edit, None
    new_blob = git(["hash-object", "-w", "--stdin"], cwd, stdin=edit.new_text.encode("utf-8"))
    with tempfile.TemporaryDirectory(prefix="accelfleet-index-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(["read-tree", "HEAD"], cwd, env=env)
        git(["update-index", "--cacheinfo", f"{mode},{new_blob},{rel}"], cwd, env=env)
        tree = git(["write-tree"], cwd, env=env)
    sha = git(["commit-tree", tree, "-p", base, "-F", "-"], cwd,
              stdin=message(edit).encode("utf-8"))
    git(["update-ref", "-m", f"accelfleet pool: {branch}", f"refs/heads/{branch}", sha, ""],
        cwd)  # the empty old value: the branch must not exist
    differs = run_git(["diff", "--quiet", "HEAD", "--", rel], cwd).returncode != 0
    return edit, Commit(branch, sha, base, rel, differs)


def _check_branch(branch: str, cwd: Path) -> None:
    done = run_git(["check-ref-format", "--branch", branch], cwd)
    if done.returncode != 0 or branch.startswith("-"):
        raise InputError(f"{branch!r} is not a valid branch name",
                         hint="use letters, digits, '-', '_' and '/', e.g. "
                         "pool/vision-v6e-2x4")
    exists = run_git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd)
    if exists.returncode == 0:
        raise InputError(f"branch {branch!r} already exists",
                         hint="choose a new branch name: the change goes on a branch of its "
                         "own, made from HEAD")
