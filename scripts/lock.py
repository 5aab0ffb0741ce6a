"""Split an installed virtualenv's pinned set into the two lock files, or check them against it.

requirements.lock      what requirements.in needs: its requirements, theirs, and so on (markers and
                       extras evaluated against the virtualenv), pinned at the installed versions;
                       scripts/setup installs it for ./scripts/example
requirements-dev.lock  every other package of the virtualenv (requirements-dev.in's additions:
                       tests, lint, benchmarks); scripts/setup --dev / --all-lines installs it too

Run by scripts/lock with the python of a virtualenv that pip installed requirements-dev.in into
(which holds requirements.in through its `-r`):
  python scripts/lock.py write   rewrite both lock files from this interpreter's packages
  python scripts/lock.py check   exit 1 unless both lock files are what `write` would write
                                 (scripts/setup runs it once on each new dev virtualenv)
"""
from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
SKIP = {"pip", "setuptools", "wheel"}  # the virtualenv's own tools, never pinned (as pip freeze)

LOCK_HEADER = """\
# What ./scripts/example installs (scripts/setup, with --no-deps): requirements.in and everything it
# needs, pinned. requirements-dev.lock pins the rest of the dev set-up. Both are written by
# scripts/lock (do not edit by hand); scripts/setup --dev checks them against what it installed.
"""
DEV_HEADER = """\
# What scripts/setup --dev and --all-lines (./scripts/test) install on top of requirements.lock
# (with --no-deps): requirements-dev.in's additions (tests, lint, benchmarks) and what they need,
# pinned. Written by scripts/lock together with requirements.lock (do not edit by hand).
"""


def top_level(path: Path) -> list[Requirement]:
    """The requirements of a requirements file (no `-r` or other options in requirements.in)."""
    reqs = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            if line.startswith("-"):
                sys.exit(f"lock: {path.name}: options are not supported here: {line}")
            reqs.append(Requirement(line))
    return reqs


def installed() -> dict[str, metadata.Distribution]:
    dists = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name not in SKIP:
            dists.setdefault(name, dist)
    return dists


def closure(roots: list[Requirement], dists: dict[str, metadata.Distribution]) -> set[str]:
    """Canonical names of `roots` and of everything they require, with the extras asked for."""
    extras_of: dict[str, set[str]] = {}
    stack = list(roots)
    while stack:
        req = stack.pop()
        name = canonicalize_name(req.name)
        if name not in dists:
            sys.exit(f"lock: {req} is required but not installed in {sys.prefix}")
        if not dists[name].version or not req.specifier.contains(dists[name].version, prereleases=True):
            sys.exit(f"lock: {req} is required but {name} {dists[name].version} is installed")
        had = extras_of.get(name)
        if had is not None and set(req.extras) <= had:
            continue
        extras_of[name] = (had or set()) | set(req.extras)
        for text in dists[name].requires or []:
            dep = Requirement(text)
            if dep.marker and not any(dep.marker.evaluate({"extra": e}) for e in extras_of[name] | {""}):
                continue
            stack.append(dep)
    return set(extras_of)


def pins(names: set[str], dists: dict[str, metadata.Distribution]) -> str:
    lines = sorted((f"{dists[n].metadata['Name']}=={dists[n].version}" for n in names), key=str.lower)
    return "".join(f"{line}\n" for line in lines)


def render() -> tuple[str, str]:
    dists = installed()
    main = closure(top_level(ROOT / "requirements.in"), dists)
    return LOCK_HEADER + pins(main, dists), DEV_HEADER + pins(set(dists) - main, dists)


def main(argv: list[str]) -> int:
    if argv not in (["write"], ["check"]):
        sys.exit(__doc__)
    lock, dev_lock = render()
    if argv == ["write"]:
        LOCK.write_text(lock)
        DEV_LOCK.write_text(dev_lock)
        print(f"lock: wrote {LOCK.name} ({lock.count('==')} packages) and {DEV_LOCK.name} "
              f"({dev_lock.count('==')} packages)")
        return 0
    stale = [p.name for p, text in ((LOCK, lock), (DEV_LOCK, dev_lock)) if p.read_text() != text]
    if stale:
        print(f"lock: {' and '.join(stale)} do not split {sys.prefix}'s packages as scripts/lock would "
              "(requirements.in changed? run scripts/lock)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
