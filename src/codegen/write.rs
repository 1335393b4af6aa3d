//! Writing a rendered project: all or nothing. The new tree is written beside the target and
//! swapped in with renames, so a failed run leaves the previous output as it was.

use super::project::Project;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub action: &'static str,
    pub source: std::io::Error,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot {} {}: {}", self.action, self.path.display(), self.source)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

fn io<T>(r: std::io::Result<T>, action: &'static str, path: &Path) -> Result<T, WriteError> {
    r.map_err(|source| WriteError { path: path.to_path_buf(), action, source })
}

/// Replaces `out` with exactly the project's files. `build.sh` is made executable.
pub fn write_atomically(out: &Path, project: &Project) -> Result<(), WriteError> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    io(fs::create_dir_all(parent), "create", parent)?;
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "opgen".into());
    let staging = parent.join(format!(".{name}.new-{}", std::process::id()));
    let retired = parent.join(format!(".{name}.old-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);

    let result = write_tree(&staging, project).and_then(|()| {
        if out.exists() {
            io(fs::rename(out, &retired), "move aside", out)?;
        }
        match fs::rename(&staging, out) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Put the previous output back before reporting.
                let _ = fs::rename(&retired, out);
                Err(WriteError { path: out.to_path_buf(), action: "replace", source: e })
            }
        }
    });
    let _ = fs::remove_dir_all(&staging);
    let _ = fs::remove_dir_all(&retired);
    result
}

fn write_tree(root: &Path, project: &Project) -> Result<(), WriteError> {
    for file in &project.files {
        let path = root.join(&file.path);
        if let Some(dir) = path.parent() {
            io(fs::create_dir_all(dir), "create", dir)?;
        }
        io(fs::write(&path, &file.contents), "write", &path)?;
        if file.path.ends_with(".sh") {
            make_executable(&path)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::PermissionsExt;
    io(fs::set_permissions(path, fs::Permissions::from_mode(0o755)), "chmod", path)
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), WriteError> {
    Ok(())
}

/// How a directory differs from a rendered project.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Files whose contents differ, or that the directory lacks.
    pub stale: Vec<String>,
    /// Files in the directory that the project does not produce.
    pub extra: Vec<String>,
}

impl CheckOutcome {
    pub fn is_fresh(&self) -> bool {
        self.stale.is_empty() && self.extra.is_empty()
    }
}

/// Compares `dir` with `project` byte for byte (CRLF in the checked-out copy is tolerated).
pub fn check_against(dir: &Path, project: &Project) -> CheckOutcome {
    let mut outcome = CheckOutcome::default();
    for file in &project.files {
        let on_disk = fs::read_to_string(dir.join(&file.path)).map(|t| t.replace("\r\n", "\n"));
        if on_disk.ok().as_deref() != Some(file.contents.as_str()) {
            outcome.stale.push(file.path.clone());
        }
    }
    let mut existing = Vec::new();
    list_files(dir, dir, &mut existing);
    for path in existing {
        if project.file(&path).is_none() {
            outcome.extra.push(path);
        }
    }
    outcome.extra.sort();
    outcome
}

fn list_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            list_files(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}
