"""Part 2 of scripts/package_check.py: every publishable crate builds from its packaged form.

`cargo package --no-verify` of all of them, every `.crate` unpacked into one temporary
workspace, and one `cargo build --workspace --all-features` there (the reasons are in
package_check.py's docstring). `self_check` first proves on two made-up crates that the build
reads the unpacked files and notices when a package changed between two runs.
"""

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The date cargo writes into every file of a `.crate` (2006-07-24): packages made here use it too.
CARGO_PACKAGE_MTIME = 1153704088


def check(metadata, names):
    """Packages the publishable crates `names` and builds them, once, from their `.crate` files.

    `metadata` is the repository's `cargo metadata --no-deps`; exits with the fix on failure.
    """
    crates = package(metadata, names)
    with tempfile.TemporaryDirectory(prefix="tokenmeter-packages-") as scratch:
        build_packages(crates, scratch, metadata["target_directory"])


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
    found = set()
    for t in tables:
        for kind in kinds:
            for key, spec in t.get(kind, {}).items():
                name = spec.get("package", key) if isinstance(spec, dict) else key
                if name in names:
                    found.add(name)
    return found


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


def made_up_crate(folder, name, files):
    """A `.crate` as cargo writes one (a gzip tar of `name-0.1.0/…`, every file dated 2006)."""
    path = os.path.join(folder, f"{name}-0.1.0.crate")
    with tarfile.open(path, "w:gz") as archive:
        for relative, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-0.1.0/{relative}")
            info.size, info.mtime, info.mode = len(data), CARGO_PACKAGE_MTIME, 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def made_up_build(crates, target):
    """Whether the made-up `.crate` files build, unpacked, in a fresh temporary workspace."""
    with tempfile.TemporaryDirectory(prefix="package-check-self-") as scratch:
        write_workspace(unpack(crates, scratch), scratch)
        done = subprocess.run(["cargo", "build", "--workspace", "--offline", "--quiet"],
                              cwd=scratch, env=dict(os.environ, CARGO_TARGET_DIR=target),
                              capture_output=True, text=True, timeout=600)
        return done.returncode == 0, done.stderr


def self_check():
    """The build reads the unpacked packages, and a package changed since the last run is rebuilt.

    Two made-up crates, `b` depending on `a` as crates.io would see it (a version, no path):
    they build (the patch found `a` offline); then `a` changes (a compile error, the same 2006
    date, the same folder names, the same target directory as the first run) and the build
    must fail; and `b` with a module its package lacks must fail. Else the check is broken.
    """
    manifest = '[package]\nname = "{}"\nversion = "0.1.0"\nedition = "2021"\n{}'
    b_manifest = manifest.format("package-check-b", '[dependencies]\npackage-check-a = "0.1.0"\n')
    b_lib = "pub fn two() -> u32 { package_check_a::one() + 1 }\n"
    with tempfile.TemporaryDirectory(prefix="package-check-self-") as folder:
        target = os.path.join(folder, "target")

        def crates(a_lib, b_lib):
            os.makedirs(os.path.join(folder, "crates"), exist_ok=True)
            out = os.path.join(folder, "crates")
            return {
                "package-check-a": made_up_crate(out, "package-check-a", {
                    "Cargo.toml": manifest.format("package-check-a", ""), "src/lib.rs": a_lib}),
                "package-check-b": made_up_crate(out, "package-check-b", {
                    "Cargo.toml": b_manifest, "src/lib.rs": b_lib}),
            }

        good_a = "pub fn one() -> u32 { 1 }\n"
        built, stderr = made_up_build(crates(good_a, b_lib), target)
        if not built:
            sys.exit(f"package_check.py is broken: two made-up packages did not build:\n{stderr}")
        broken_a = good_a + 'compile_error!("changed since the last run");\n'
        if made_up_build(crates(broken_a, b_lib), target)[0]:
            sys.exit("package_check.py is broken: a package changed since the last run (a compile "
                     "error) built: cargo took the unpacked files, dated 2006, for unchanged")
        if made_up_build(crates(good_a, "mod left_out;\n" + b_lib), target)[0]:
            sys.exit("package_check.py is broken: a package that lacks a module built: the "
                     "build does not read the unpacked packages")
