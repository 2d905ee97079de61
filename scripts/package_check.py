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
   dependencies the tests already built are reused and only the packaged crates compile
   (cargo's own verification built each crate alone, compiling tokio, hyper, axum, reqwest,
   opentelemetry and tonic again for each feature set, minutes on a fresh machine). A file
   left out of a package fails the build, as it would for a crates.io user. All features, so
   code behind a feature is built from the package too; each crate alone with each of its
   features is `cargo hack`'s check in scripts/test.sh, on the same sources and manifests.
   The lock: the repository's also holds the unpublished members (examples, benches, tests)
   and what only they use, which cargo prunes, so `--locked` would refuse it as it stands.
   Cargo prunes it first (`cargo metadata`), the check fails if that added or changed any
   entry, and the build then runs `--locked`. Needs the crates.io index (the network).

Usage:
    python3 scripts/package_check.py [--metadata-only]

Exit 0 when every check holds; otherwise each problem is printed with how to fix it.
"""

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib

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


def dev_profile_config():
    """The root manifest's [profile.dev] as `--config` arguments.

    The temporary workspace of the unpacked packages has no profile of its own (a packaged
    manifest has none: cargo drops the workspace's), so without these its build would use
    cargo's default dev profile (full debug info) and compile every dependency once more
    instead of reusing the test run's builds.
    """
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as file:
        dev = tomllib.load(file).get("profile", {}).get("dev", {})
    found = []

    def walk(table, prefix):
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f'{prefix}.{json.dumps(key) if "*" in key else key}')
            else:
                found.extend(["--config", f"{prefix}.{key}={json.dumps(value)}"])

    walk(dev, "profile.dev")
    return found


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


def package(metadata, names):
    """`cargo package --no-verify` of every publishable crate: name → path of its `.crate`."""
    command = ["cargo", "package", "--no-verify", "--locked", "--allow-dirty"]
    for name in names:
        command += ["-p", name]
    done = subprocess.run(command, cwd=ROOT, timeout=1800)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(command)}` failed (exit {done.returncode}): a manifest cargo "
                 "cannot package (a path dependency without a version? Cargo.lock out of date?)")
    versions = {p["name"]: p["version"] for p in metadata["packages"]}
    folder = os.path.join(metadata["target_directory"], "package")
    crates = {name: os.path.join(folder, f"{name}-{versions[name]}.crate") for name in names}
    missing = [path for path in crates.values() if not os.path.isfile(path)]
    if missing:
        sys.exit(f"cargo package succeeded but wrote no {missing}: is CARGO_TARGET_DIR "
                 "the same for `cargo metadata` and `cargo package`?")
    return crates


def unpack(crates, scratch):
    """Each `.crate` unpacked into `scratch`: name → its folder there (`name-version`).

    Every unpacked file is dated now. Cargo writes one fixed date (2006) into every `.crate`,
    and the build's artifacts keep their names from one run to the next (cargo names a path
    crate's artifacts after its path relative to the workspace, the same each run): left at
    2006, every file would look older than the previous run's artifacts, and cargo would call
    a changed package fresh and build nothing.
    """
    folders = {}
    for name, path in sorted(crates.items()):
        with tarfile.open(path, "r:gz") as archive:
            archive.extractall(scratch, filter="data")
        folders[name] = os.path.basename(path)[: -len(".crate")]
        if not os.path.isfile(os.path.join(scratch, folders[name], "Cargo.toml")):
            sys.exit(f"{path} holds no {folders[name]}/Cargo.toml: not a crate cargo wrote")
    for parent, _, files in os.walk(scratch):
        for file in files:
            os.utime(os.path.join(parent, file))
    return folders


def sibling_dependencies(manifest, names):
    """Which publishable crates a packaged manifest depends on (any kind, any target)."""
    with open(manifest, "rb") as file:
        table = tomllib.load(file)
    tables = [table] + list(table.get("target", {}).values())
    kinds = ("dependencies", "dev-dependencies", "build-dependencies")
    return {dep for t in tables for kind in kinds for dep in t.get(kind, {}) if dep in names}


def write_workspace(folders, scratch):
    """The temporary workspace: every unpacked crate a member, each sibling patched to its package.

    A packaged manifest names its siblings as crates.io dependencies (`version` only, the
    `path` dropped), as a user's build would see them; the patch makes them resolve to the
    unpacked packages, never to crates.io nor to the repository's sources. Only siblings some
    package depends on are patched: cargo warns of a patch it does not use.
    """
    used = set()
    for folder in folders.values():
        used |= sibling_dependencies(os.path.join(scratch, folder, "Cargo.toml"), folders)
    lines = ["[workspace]", 'resolver = "3"', "members = ["]
    lines += [f"    {json.dumps(folder)}," for folder in sorted(folders.values())]
    lines += ["]", "", "[patch.crates-io]"]
    lines += [f"{name} = {{ path = {json.dumps(folders[name])} }}" for name in sorted(used)]
    with open(os.path.join(scratch, "Cargo.toml"), "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")


def locked_packages(lock):
    """The entries of a Cargo.lock: (name, version, source) → checksum."""
    with open(lock, "rb") as file:
        entries = tomllib.load(file).get("package", [])
    return {(p["name"], p["version"], p.get("source")): p.get("checksum") for p in entries}


def prune_lock(scratch, env):
    """The repository's Cargo.lock, pruned by cargo to the packaged crates: nothing added or changed.

    Returns the `cargo metadata` of the temporary workspace (which wrote the pruned lock).
    """
    repo_lock = os.path.join(ROOT, "Cargo.lock")
    with open(repo_lock, "rb") as source, open(os.path.join(scratch, "Cargo.lock"), "wb") as copy:
        copy.write(source.read())
    done = subprocess.run(["cargo", "metadata", "--format-version", "1"], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"the packaged crates do not resolve together (exit {done.returncode}):\n"
                 f"{done.stderr}")
    before, after = locked_packages(repo_lock), locked_packages(os.path.join(scratch, "Cargo.lock"))
    drift = sorted(f"{name} {version}" for (name, version, source), checksum in after.items()
                   if before.get((name, version, source), "absent") != checksum)
    if drift:
        sys.exit(f"the packaged crates resolve to versions the repository's Cargo.lock does not "
                 f"hold: {', '.join(drift)}; run `cargo update -p <crate>` or fix the manifest "
                 "so both agree")
    return json.loads(done.stdout)


def check_sources(metadata, folders, scratch):
    """Every publishable crate in the graph is its unpacked package, nothing the repository's."""
    found = {}
    for package in metadata["packages"]:
        path = os.path.realpath(package["manifest_path"])
        if path.startswith(os.path.realpath(ROOT) + os.sep):
            sys.exit(f"the packaged build would use the repository's {path}: the temporary "
                     "workspace must build only unpacked packages (a `path` left in a manifest?)")
        if package["name"] in folders:
            found.setdefault(package["name"], []).append(path)
    for name, folder in folders.items():
        expected = [os.path.realpath(os.path.join(scratch, folder, "Cargo.toml"))]
        if found.get(name) != expected:
            sys.exit(f"{name} resolves to {found.get(name)}, not to its unpacked package "
                     f"{expected[0]}: the [patch.crates-io] of the temporary workspace is wrong")


def build_packages(crates, scratch, target_directory):
    """Builds every packaged crate from its unpacked `.crate`, once, in one temporary workspace.

    The target directory is the repository's (the run's), so dependencies are reused.
    """
    folders = unpack(crates, scratch)
    write_workspace(folders, scratch)
    env = dict(os.environ, CARGO_TARGET_DIR=target_directory)
    check_sources(prune_lock(scratch, env), folders, scratch)
    command = ["cargo", "build", "--workspace", "--all-features", "--locked", *dev_profile_config()]
    done = subprocess.run(command, cwd=scratch, env=env, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"`{' '.join(command)}` in the unpacked packages failed (exit {done.returncode}): "
                 "a crate does not build from its package (a file outside `include`, or left "
                 "out by `exclude`? a feature of a dependency that only the workspace turned on?)")


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
    crates = package(metadata, names)
    with tempfile.TemporaryDirectory(prefix="tokenmeter-packages-") as scratch:
        build_packages(crates, scratch, metadata["target_directory"])
    print(f"==> {len(names)} crates packaged and built from their .crate files "
          f"in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
