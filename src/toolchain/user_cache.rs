//! The per-user cache every clone of the repository shares: `$OPGEN_CACHE`, else
//! `~/.cache/ascend-opgen` (the shell scripts' `scripts/lib/common.sh` default too). The torch
//! wheels and venv live there, and the twin's content-addressed objects and runners
//! (`verify::twin_build`), so a clean clone (CI) rebuilds only what its sources changed.
//!
//! Entries are content-addressed ([`Fnv`] keys over contents, never over a clone's paths) and
//! written by rename, so clones and processes share them safely; the build caches are bounded by
//! [`prune_build_caches`], which removes the least recently used files past a size cap, never
//! one used within the last hour (a concurrent run may be about to use it).

use super::command::Cmd;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// `$OPGEN_CACHE`, else `~/.cache/ascend-opgen`.
pub fn user_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OPGEN_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| OsString::from("/root"));
    PathBuf::from(home).join(".cache").join("ascend-opgen")
}

/// A build cache of this machine's compiler: `<user cache>/<kind>/gxx-<hash of g++ --version>`
/// (a compiler upgrade starts a new directory; the old one ages out by the size cap).
pub fn compiler_cache_dir(kind: &str) -> PathBuf {
    static COMPILER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let id = COMPILER.get_or_init(|| {
        let version = Cmd::new("g++")
            .arg("--version")
            .timeout(Duration::from_secs(60))
            .stdin_null()
            .run_checked()
            .map(|o| o.stdout_lossy().into_owned())
            .unwrap_or_default();
        format!("gxx-{}", Fnv::new().bytes(version.as_bytes()).hex())
    });
    user_cache_dir().join(kind).join(id)
}

/// The compiled-object caches [`prune_build_caches`] bounds.
const BUILD_CACHES: [&str; 2] = ["twin", "torch-cpu"];

/// The build caches' size cap: `$OPGEN_TWIN_CACHE_GIB` GiB, default 12 (a sanitized twin runner
/// is ~20 MB; the catalogue's runners, plain and sanitized, are ~1.6 GB per version of the
/// kernels).
fn build_cache_cap() -> u64 {
    let gib = std::env::var("OPGEN_TWIN_CACHE_GIB").ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(12);
    gib << 30
}

/// Once per process, before its first build: the least recently used files of the build caches
/// go until the cap holds (never one used within the hour), with a line saying so.
pub fn prune_build_caches() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dirs: Vec<PathBuf> = BUILD_CACHES.iter().map(|k| user_cache_dir().join(k)).collect();
        let p = prune_lru(&dirs, build_cache_cap(), Duration::from_secs(3600));
        if p.files > 0 {
            eprintln!(
                "opgen: build caches over {} GiB: removed {} least recently used files ({} MiB) under {}",
                build_cache_cap() >> 30,
                p.files,
                p.bytes >> 20,
                user_cache_dir().display()
            );
        }
    });
}

/// FNV-1a 64: a stable hash for cache keys (std's hasher may change between releases).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn bytes(mut self, data: &[u8]) -> Self {
        for b in data {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator so ("ab","c") and ("a","bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        self
    }
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Hash of every file under `dir`: its path relative to `dir` and its contents, sorted (so two
/// clones' copies of one tree hash alike).
pub(crate) fn tree_hash(dir: &Path, mut h: Fnv) -> Fnv {
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    for (f, _, _) in files {
        let rel = f.strip_prefix(dir).unwrap_or(&f);
        h = h.bytes(rel.to_string_lossy().as_bytes()).bytes(&fs::read(&f).unwrap_or_default());
    }
    h
}

/// Marks a cache entry as used now (its mtime), so [`prune_lru`] keeps it. Best effort: a
/// file another process just pruned is rebuilt by its caller's next miss.
pub fn touch(path: &Path) {
    if let Ok(file) = fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// What [`prune_lru`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    pub files: usize,
    pub bytes: u64,
}

/// Removes the least recently used regular files under `dirs` (by mtime, oldest first) until
/// their total size is at most `cap` bytes, skipping files used within `keep_recent` (they
/// may be in use by a concurrent run). Empty directories left behind are removed too.
pub fn prune_lru(dirs: &[PathBuf], cap: u64, keep_recent: Duration) -> Pruned {
    let mut files = Vec::new();
    for d in dirs {
        walk(d, &mut files);
    }
    let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
    let mut pruned = Pruned::default();
    if total <= cap {
        return pruned;
    }
    let now = SystemTime::now();
    files.sort_by_key(|(path, _, mtime)| (*mtime, path.clone()));
    for (path, len, mtime) in files {
        if total <= cap {
            break;
        }
        if now.duration_since(mtime).unwrap_or_default() < keep_recent {
            break; // sorted by mtime: every later file is as recent
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
            pruned.files += 1;
            pruned.bytes += len;
            if let Some(parent) = path.parent() {
                let _ = fs::remove_dir(parent); // only succeeds when empty
            }
        }
    }
    pruned
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64, SystemTime)>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if meta.is_dir() {
            walk(&e.path(), out);
        } else if meta.is_file() {
            out.push((e.path(), meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, len: usize, age: Duration) -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, vec![0u8; len]).unwrap();
        let f = fs::File::options().append(true).open(&p).unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
        p
    }

    #[test]
    fn the_oldest_files_go_first_until_the_cap_holds_and_recent_ones_stay() {
        let scratch = crate::toolchain::scratch::ScratchDir::new("prune").unwrap();
        let dir = scratch.path().to_path_buf();
        fs::create_dir_all(dir.join("sub")).unwrap();
        let day = Duration::from_secs(86_400);
        let oldest = file(&dir, "a", 100, 3 * day);
        let older = file(&dir.join("sub"), "b", 100, 2 * day);
        let old = file(&dir, "c", 100, day);
        let recent = file(&dir, "d", 100, Duration::from_secs(60));
        // 400 bytes, cap 250: the two oldest go (then 200 <= 250), the rest stay.
        let p = prune_lru(std::slice::from_ref(&dir), 250, Duration::from_secs(3600));
        assert_eq!(p, Pruned { files: 2, bytes: 200 });
        assert!(!oldest.exists() && !older.exists() && old.exists() && recent.exists());
        assert!(!dir.join("sub").exists(), "the emptied directory is removed");
        // Cap 0: everything past the hour goes, the recent file stays.
        let p = prune_lru(std::slice::from_ref(&dir), 0, Duration::from_secs(3600));
        assert_eq!(p, Pruned { files: 1, bytes: 100 });
        assert!(!old.exists() && recent.exists());
        // Under the cap: nothing is touched.
        assert_eq!(prune_lru(std::slice::from_ref(&dir), 1000, Duration::ZERO), Pruned::default());
        // A touch makes a file recent again.
        let p = file(&dir, "e", 10, 3 * day);
        touch(&p);
        assert_eq!(prune_lru(std::slice::from_ref(&dir), 0, Duration::from_secs(3600)), Pruned::default());
    }
}
