#!/usr/bin/env python3
"""A new user's first steps, in CI: a fresh clone, the README's install commands as
printed, then every command of the guide's getting-started chapter run with the
`sparsec` those commands installed, in an empty kernel cache, each compared with what the
chapter shows.

    python3 .ci/new_user.py [REPOSITORY]     # default: this clone's repository

The chapter's blocks follow trycmd's conventions (as `crates/sparsec-cli/tests/guide.rs`
checks them against the test build): `$ COMMAND` lines, then the output, where a `...`
line stands for any lines and `[..]` for part of a line; `? failed` expects a non-zero
exit status. Files a command names are taken from the shared data (`SPARSEC_DATA`, else
`../shared/data` beside the repository). The
install inherits the environment (CI lowers the release profile's optimisation with
`CARGO_PROFILE_RELEASE_OPT_LEVEL` to save time).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("SPARSEC_DATA", os.path.join(ROOT, "..", "shared", "data"))


def fail(message):
    sys.exit(f"new user: {message}")


def install_block(readme):
    """The first `sh` block of the README's Install section."""
    section = re.search(r"^## Install\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    if not section:
        fail("README.md has no `## Install` section")
    block = re.search(r"```sh\n(.*?)```", section.group(1), flags=re.S)
    if not block:
        fail("README.md's Install section has no sh block")
    return [line for line in block.group(1).splitlines() if line.strip()]


def console_cases(chapter):
    """(command, expects failure, expected output lines) for each `$ ` command of the
    chapter's console blocks."""
    cases = []
    for block in re.findall(r"```console\n(.*?)```", chapter, flags=re.S):
        current = None
        for line in block.splitlines():
            if line.startswith("$ "):
                current = [line[2:], False, []]
                cases.append(current)
            elif current is not None and line == "? failed" and not current[2]:
                current[1] = True
            elif current is not None:
                current[2].append(line)
    for case in cases:
        while case[2] and not case[2][-1].strip():
            case[2].pop()
    return cases


def line_pattern(expected):
    return "".join(".*" if part == "[..]" else re.escape(part)
                   for part in re.split(r"(\[\.\.\])", expected))


def matches(expected, actual):
    """trycmd's matching: `...` lines match any run of lines, `[..]` any part of a line."""
    pattern = ""
    for line in expected:
        pattern += r"(?:.*\n)*?" if line == "..." else line_pattern(line) + r"\n"
    return re.fullmatch(pattern + r"(?:\s*\n)*", "\n".join(actual) + "\n") is not None


def run(command, cwd, env, prelude="", stdin=None):
    print(f"$ {command}", flush=True)
    return subprocess.run(["bash", "-c", prelude + command], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True)


def main():
    repository = sys.argv[1] if len(sys.argv) > 1 else ROOT
    work = tempfile.mkdtemp(prefix="sparsec-new-user-")
    try:
        clone = os.path.join(work, "sparsec")
        subprocess.run(["git", "clone", "-q", repository, clone], check=True)
        env = dict(os.environ)
        env["CARGO_INSTALL_ROOT"] = os.path.join(work, "install")
        env["SPARSEC_CACHE_DIR"] = os.path.join(work, "cache")
        env["NO_COLOR"] = "1"
        # As root (CI) there is no sudo to call; elsewhere the command runs as printed.
        prelude = ("command -v sudo >/dev/null || sudo() { \"$@\"; }; "
                   if os.geteuid() == 0 else "")
        with open(os.path.join(clone, "README.md")) as f:
            for command in install_block(f.read()):
                done = run(command, clone, env, prelude, stdin="y\n" * 8)
                if done.returncode != 0:
                    fail(f"`{command}` failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        env["PATH"] = os.path.join(work, "install", "bin") + os.pathsep + env["PATH"]
        found = shutil.which("sparsec", path=env["PATH"])
        if found != os.path.join(work, "install", "bin", "sparsec"):
            fail(f"the install commands did not put sparsec on the PATH (found {found})")
        chapter_path = os.path.join(clone, "docs", "guide", "src", "getting-started.md")
        with open(chapter_path) as f:
            cases = console_cases(f.read())
        if not cases:
            fail("the getting-started chapter shows no commands")
        here = os.path.join(work, "first-steps")
        os.makedirs(here)
        inputs = os.path.join(clone, "docs", "guide", "src", "getting-started.in")
        for name in sorted(os.listdir(inputs)) if os.path.isdir(inputs) else []:
            source = os.path.join(DATA, "matrices", name)
            if not os.path.exists(source):
                fail(f"the chapter reads {name}, which {DATA}/matrices lacks")
            shutil.copy(source, os.path.join(here, name))
        for command, expect_failure, expected in cases:
            if not command.startswith("sparsec "):
                fail(f"the chapter runs something other than sparsec: {command}")
            done = run(command, here, env)
            if (done.returncode != 0) != expect_failure:
                fail(f"`{command}` exited with {done.returncode}, the chapter expects "
                     f"{'failure' if expect_failure else 'success'}:\n{done.stdout}{done.stderr}")
            outputs = [(done.stdout + done.stderr).splitlines(),
                       (done.stderr + done.stdout).splitlines()]
            if not any(matches(expected, actual) for actual in outputs):
                fail(f"`{command}` printed what the chapter does not show.\nThe chapter:\n"
                     + "\n".join(expected) + "\nThe program:\n" + done.stdout + done.stderr)
        print(f"new user: {len(cases)} commands of the getting-started chapter ran as shown, "
              f"with the sparsec that README.md's install commands installed "
              f"({shlex.quote(found)})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
