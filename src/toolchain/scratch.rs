//! Scratch directories under the system temp dir that are removed when dropped: on success, on
//! an early `?` return and on a panic alike, so a failed run leaves nothing behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A directory `opgen-<tag>-<pid>-<n>` under [`std::env::temp_dir`], removed on drop.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl ScratchDir {
    /// Creates a fresh, empty directory (a leftover of an earlier process with the same pid is
    /// removed first).
    pub fn new(tag: &str) -> Result<ScratchDir, ScratchError> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("opgen-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        match std::fs::create_dir_all(&path) {
            Ok(()) => Ok(ScratchDir { path }),
            Err(source) => Err(ScratchError { path, source }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A scratch directory that could not be made: where, and why.
#[derive(Debug)]
pub struct ScratchError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl std::fmt::Display for ScratchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "scratch directory {}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for ScratchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Best effort: a directory that cannot be removed is not worth a second error.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_on_drop_and_on_panic() {
        let dir = ScratchDir::new("scratch-test").unwrap();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("f"), "x").unwrap();
        drop(dir);
        assert!(!path.exists());

        let kept = std::sync::Mutex::new(PathBuf::new());
        let result = std::panic::catch_unwind(|| {
            let dir = ScratchDir::new("scratch-test").unwrap();
            *kept.lock().unwrap() = dir.path().to_path_buf();
            panic!("a failing run");
        });
        assert!(result.is_err());
        let path = kept.lock().unwrap().clone();
        assert!(!path.as_os_str().is_empty() && !path.exists(), "{}", path.display());
    }
}
