//! The output paths of a run, checked before its first request: no two outputs may name the
//! same file (`--json` and `--trace` both `run.json` would interleave into a corrupt file), also
//! through `..`, a symbolic link in a parent directory or a hard link, and no output may be a
//! symbolic link (writing it would silently overwrite whatever file it points to), and no output
//! may be one of the files the command reads (`bench merge a.jsonl --json a.jsonl` would replace
//! a shard's trace with the report of it).

use std::path::{Path, PathBuf};

use anyhow::bail;

/// Refuses `path` (given to `flag`) when it is a symbolic link, dangling or not.
pub(crate) fn refuse_symlink(path: &Path, flag: &str) -> anyhow::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(()); // nothing there yet
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        bail!(
            "{flag} {} is a symbolic link{target}; writing it would overwrite the file it points \
             to: give that file's own path, or a new name",
            path.display()
        );
    }
    Ok(())
}

/// Which file `path` names: its directory made canonical (`..` and links resolved) and its
/// file name; `None` when that directory cannot be resolved (the writability check then says
/// why).
fn identity(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(name))
}

/// True when `a` and `b` are one existing file (a hard link of it too).
#[cfg(unix)]
fn same_inode(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_inode(_: &Path, _: &Path) -> bool {
    false
}

/// True when `a` and `b` name one file: the same canonical directory and name, or one inode.
fn same_file(a: &Path, b: &Path) -> bool {
    let id_a = identity(a);
    (id_a.is_some() && id_a == identity(b)) || same_inode(a, b)
}

/// Refuses an output (each with its flag) that names one of the files the command reads (each
/// with what it is: "the --slo-spec file").
pub(crate) fn refuse_inputs(
    outputs: &[(&Path, &str)],
    inputs: &[(&Path, &str)],
) -> anyhow::Result<()> {
    for (output, out_flag) in outputs {
        if let Some((input, in_flag)) = inputs.iter().find(|(input, _)| same_file(output, input)) {
            bail!(
                "{out_flag} {} is {in_flag} ({}), which this command reads; writing it would \
                 destroy that input: give the output a new name",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}

/// Refuses two of `paths` (each with its flag) that name the same file.
pub(crate) fn refuse_collisions(paths: &[(&Path, &str)]) -> anyhow::Result<()> {
    for (i, (a, flag_a)) in paths.iter().enumerate() {
        for (b, flag_b) in &paths[i + 1..] {
            if same_file(a, b) {
                bail!(
                    "{flag_a} {} and {flag_b} {} name the same file; each output needs a file \
                     of its own",
                    a.display(),
                    b.display()
                );
            }
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tm-paths-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        dir
    }

    #[test]
    fn the_same_file_by_any_name_is_refused() {
        let d = dir("same");
        let run = d.join("run.json");
        let through_dots = d.join("sub/../run.json");
        let error = refuse_collisions(&[(&run, "--json"), (&through_dots, "--trace")])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--json") && error.contains("--trace"),
            "{error}"
        );
        std::os::unix::fs::symlink(&d, d.join("link")).unwrap();
        let through_link = d.join("link/run.json");
        assert!(refuse_collisions(&[(&run, "--json"), (&through_link, "--html")]).is_err());
        std::fs::write(&run, "x").unwrap();
        std::fs::hard_link(&run, d.join("sub/hard.json")).unwrap();
        let hard = d.join("sub/hard.json");
        assert!(refuse_collisions(&[(&run, "--json"), (&hard, "--trace")]).is_err());
        let other = d.join("trace.jsonl");
        assert!(refuse_collisions(&[(&run, "--json"), (&other, "--trace")]).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let d = dir("inputs");
        let shard = d.join("s0.jsonl");
        std::fs::write(&shard, "{}").unwrap();
        let other = d.join("s1.jsonl");
        let inputs = [
            (shard.as_path(), "a trace to merge"),
            (other.as_path(), "a trace to merge"),
        ];
        let through_dots = d.join("sub/../s0.jsonl");
        let error = refuse_inputs(&[(&through_dots, "--json")], &inputs)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--json") && error.contains("s0.jsonl") && error.contains("reads"),
            "{error}"
        );
        std::fs::hard_link(&shard, d.join("sub/hard.jsonl")).unwrap();
        let hard = d.join("sub/hard.jsonl");
        assert!(refuse_inputs(&[(&hard, "--html")], &inputs).is_err());
        let report = d.join("report.json");
        assert!(refuse_inputs(&[(&report, "--json")], &inputs).is_ok());
        assert_eq!(std::fs::read_to_string(&shard).unwrap(), "{}", "untouched");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_symbolic_link_is_refused_dangling_or_not() {
        let d = dir("link");
        let target = d.join("precious.txt");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("out.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = refuse_symlink(&link, "--json").unwrap_err().to_string();
        assert!(
            error.contains("symbolic link") && error.contains("precious.txt"),
            "{error}"
        );
        let dangling = d.join("dangling.json");
        std::os::unix::fs::symlink(d.join("nowhere"), &dangling).unwrap();
        assert!(refuse_symlink(&dangling, "--trace").is_err());
        assert!(refuse_symlink(&target, "--json").is_ok());
        assert!(refuse_symlink(&d.join("new.json"), "--json").is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }
}
