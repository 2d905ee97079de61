#!/usr/bin/env python3
"""Every publishable crate of the workspace is ready for crates.io, and builds from its package.

1. **Metadata.** Each publishable workspace member (every member found by `cargo metadata`
   whose `publish` is not `false`, so a new crate is checked the day it joins the workspace)
   has a `description`, `license`, `repository`, `readme` (a file that exists), `keywords`
   (1 to 5, as crates.io accepts them) and `categories` (1 to 5), a library root that includes
   the README as a doc test (`#[cfg(doctest)]`, so its examples run), the license files
   `LICENSE-MIT` and `LICENSE-APACHE` in its folder (symbolic links to the root's are fine:
   cargo packages what they point to), and a `version` on every path dependency that is not a
   dev-dependency. The checker first checks itself on a made-up member that lacks all of it.
2. **Packaging** (skipped with `--metadata-only`). Every publishable crate builds from its
   packaged form: its `.crate`'s files, its normalized Cargo.toml, README and license texts.
   `cargo package --no-verify` of all of them at once (cargo packages crates that depend on
   each other against a local overlay of the not-yet-published ones, and checks each
   manifest), then every `.crate` is unpacked into one temporary workspace whose
   `[patch.crates-io]` points each crate's registry dependency on a sibling at the sibling's
   unpacked package, and `cargo build --workspace --all-features` runs there once, with the
   repository's Cargo.lock, the root's `[profile.dev]` and the run's target directory: the
   dependencies the tests already built are reused (the few whose features only the
   unpublished members widen compile once more) and the packaged crates compile, each once.
   Cargo's own verification built each crate alone, compiling tokio, hyper, axum, reqwest,
   opentelemetry and tonic again for each feature set: minutes on a fresh machine. A file
   left out of a package fails the build, as it would for a crates.io user. All features, so
   code behind a feature is built from the package too; each crate alone with each of its
   features is `cargo hack`'s check in scripts/test.sh, on the repository's sources (the same
   code: a packaged manifest is cargo's normalized copy of the crate's own).
   The lock: the repository's also holds the unpublished members (examples, benches, tests)
   and what only they use, which cargo prunes, so `--locked` would refuse it as it stands.
   Cargo prunes it first (`cargo metadata`), the check fails if that added or changed any
   entry, and the build then runs `--locked`. Every unpacked file is dated now (cargo dates
   them all 2006, and the artifacts keep their names from run to run: a changed package would
   look fresh). The code is scripts/package_build.py; it first checks itself on two made-up
   packages (they build; changed under the same names, or lacking a module, they must not).
   Needs the crates.io index (the network).

Usage:
    python3 scripts/package_check.py [--metadata-only]

Exit 0 when every check holds; otherwise each problem is printed with how to fix it.
"""

import json
import os
import re
import subprocess
import sys
import time

import package_build

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LICENSE_FILES = ("LICENSE-MIT", "LICENSE-APACHE")
KEYWORD = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]{0,19}$")
CATEGORY = re.compile(r"^[a-z][a-z0-9-]*(::[a-z][a-z0-9-]*)*$")


def publishable(package):
    """`publish = false` is an empty list in cargo metadata; absent is null (any registry)."""
    return package.get("publish") is None or len(package["publish"]) > 0


def member_problems(package):
    """What `package` (one entry of cargo metadata's `packages`) lacks to be published."""
    name = package["name"]
    folder = os.path.dirname(package["manifest_path"])
    found = []

    def lack(what, fix, where=os.path.relpath(package["manifest_path"], ROOT)):
        found.append(f"{name}: {what}; {fix}" + (f" in {where}" if where else ""))

    for field in ("description", "license", "repository"):
        if not package.get(field):
            lack(f"no `{field}`", f"add `{field}` (or `{field}.workspace = true`) to [package]")
    readme = package.get("readme")
    if not readme:
        lack("no `readme`", 'add `readme = "README.md"` (what the crate is, an example, a link to the guide)')
    elif not os.path.isfile(os.path.join(folder, readme)):
        lack(f"its readme `{readme}` does not exist", "write it, or fix `readme`")
    keywords = package.get("keywords") or []
    if not 1 <= len(keywords) <= 5:
        lack(f"{len(keywords)} keywords (crates.io takes 1 to 5)", "set `keywords`")
    for word in keywords:
        if not KEYWORD.match(word):
            lack(f"keyword {word!r} is not ASCII letters, digits, _ - + (20 at most, a letter first)",
                 "fix `keywords`")
    categories = package.get("categories") or []
    if not 1 <= len(categories) <= 5:
        lack(f"{len(categories)} categories (crates.io takes 1 to 5, from crates.io/category_slugs)",
             "set `categories`")
    for slug in categories:
        if not CATEGORY.match(slug):
            lack(f"category {slug!r} is not a crates.io slug", "fix `categories`")
    for target in package.get("targets", []):
        if "lib" in target["kind"] and readme and not readme_doc_tested(target["src_path"], readme):
            lack("its README's examples are not doc tests",
                 f'add `#[cfg(doctest)] #[doc = include_str!("../{readme}")] struct ReadmeDoctests;`',
                 os.path.relpath(target["src_path"], ROOT))
    for file in LICENSE_FILES:
        if not os.path.isfile(os.path.join(folder, file)):
            lack(f"no {file} in its folder (the package would ship without the license text)",
                 f"link the root's: `ln -s ../../{file} {os.path.relpath(folder, ROOT)}/{file}`", None)
    for dep in package.get("dependencies", []):
        if dep.get("path") and dep.get("kind") != "dev" and dep.get("req") in (None, "*"):
            lack(f"path dependency {dep['name']} has no version (crates.io needs one)",
                 f"give it `version` (or use `{dep['name']}.workspace = true`)")
    return found


def readme_doc_tested(lib, readme):
    """Whether the library's root file includes the README as documentation (its examples run)."""
    try:
        with open(lib, encoding="utf-8") as file:
            return f'include_str!("../{readme}")' in file.read()
    except OSError:
        return False


def problems(metadata):
    """Every problem of every publishable workspace member, and the publishable members."""
    members = set(metadata["workspace_members"])
    packages = [p for p in metadata["packages"] if p["id"] in members and publishable(p)]
    return [line for p in packages for line in member_problems(p)], sorted(p["name"] for p in packages)


def self_check():
    """The checker reports every missing field of a member that has none: else it is broken."""
    bare = {
        "id": "bare", "name": "bare", "publish": None,
        "manifest_path": os.path.join(ROOT, "no-such-crate", "Cargo.toml"),
        "keywords": ["not a keyword"], "categories": [], "readme": "README.md",
        "targets": [{"kind": ["lib"], "src_path": os.path.join(ROOT, "no-such-crate", "src", "lib.rs")}],
        "dependencies": [{"name": "sibling", "path": "../sibling", "kind": None, "req": "*"}],
    }
    private = dict(bare, id="private", name="private", publish=[])
    found, names = problems({"workspace_members": ["bare", "private"], "packages": [bare, private]})
    expected = ["`description`", "`license`", "`repository`", "readme `README.md` does not exist",
                "README's examples are not doc tests", "keyword 'not a keyword'",
                "0 categories", "LICENSE-MIT", "LICENSE-APACHE", "sibling has no version"]
    missed = [e for e in expected if not any(e in line for line in found)]
    if missed or names != ["bare"]:
        sys.exit(f"package_check.py is broken: on a bare member it did not report {missed} "
                 f"(or took a publish = false member: {names})")


def main():
    self_check()
    done = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"cargo metadata failed (exit {done.returncode}):\n{done.stderr}")
    metadata = json.loads(done.stdout)
    found, names = problems(metadata)
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    if found:
        sys.exit(f"{len(found)} packaging problem(s) in the publishable crates")
    print(f"==> metadata of the {len(names)} publishable crates: {', '.join(names)}")
    if "--metadata-only" in sys.argv[1:]:
        return
    start = time.monotonic()
    package_build.self_check()
    package_build.check(metadata, names)
    print(f"==> {len(names)} crates packaged and built from their .crate files "
          f"in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
