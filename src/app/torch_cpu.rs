//! `cargo xtask torch-cpu --python PY --out DIR`: the `opgen_torch` package (the project's
//! `package` name, `project.toml`) for a CPU-only
//! PyTorch, its kernels being the generated AscendC kernels and op_host code compiled against
//! the CPU twin. `PYTHONPATH=DIR PY -c "import opgen_torch"` then registers
//! `torch.ops.opgen.<op>` for the CPU, Meta and Autograd keys without torch_npu or CANN.
//!
//! DIR/opgen_torch/ holds the package's Python files, `libopgen_twin.so` (the twin runtime, its
//! op_host API and every op's op_host code: one registry of ops, one simulated machine),
//! `kernels/<stem>_c<column>.so` (one kernel per dtype combination: the kernel source is
//! compiled with other DTYPE_* macros each time, so each gets a library of its own, loaded with
//! RTLD_LOCAL, its symbols hidden but the launch shim's) and `libopgen_torch_cpu.so` (schemas,
//! Meta and Autograd kernels, the CPU kernels). Objects are cached in DIR/.build keyed by content
//! hashes (the source's, the twin headers' and the generated headers' beside it): a second run
//! with nothing changed compiles nothing, and a changed header recompiles what includes it.
//!
//! Not sanitized (ASan inside a Python process needs the interpreter preloaded with it): the
//! sanitized twin is `opgen verify`'s job; the twin's own rule checks do run.

use super::gen::{load_specs, render};
use super::AppError;
use crate::codegen::{render_twin_launch, Project};
use crate::spec::OpSpec;
use crate::toolchain::command::Cmd;
use crate::toolchain::user_cache::{compiler_cache_dir, prune_build_caches, tree_hash, Fnv};
use crate::verify::twin_build::{compile_all, unique_suffix, Compile};
use crate::verify::{twin_dir, TwinFlags};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `torch-cpu` builds.
#[derive(Debug, Clone)]
pub struct TorchCpuOptions {
    /// The Python whose torch the extension is built for.
    pub python: PathBuf,
    /// The directory that receives the `opgen_torch` package.
    pub out: PathBuf,
    /// Only these ops (default: the catalogue).
    pub ops: Vec<String>,
    /// A spec file or directory (default: the catalogue); its `project.toml` names the package.
    pub specs: Option<PathBuf>,
    /// Also write the package's wheel into this directory (`pip wheel`; the build backend comes
    /// through pip's build isolation).
    pub wheel: Option<PathBuf>,
}

/// The twin sources that make up a runner executable, not a library.
const RUNNER_ONLY: &[&str] = &["runner.cpp", "runner_args.cpp", "runner_launch.cpp"];

/// The twin's flags (kernels/twin/cxxflags.sh) and what a shared library for torch adds.
fn base_flags() -> Vec<&'static str> {
    let twin = TwinFlags::get();
    let mut flags = twin.cxx.clone();
    flags.extend(["-O2", "-fPIC"]);
    flags.extend(twin.warnings.iter().copied());
    // Inline functions' statics and template statics become ordinary weak symbols, not
    // STB_GNU_UNIQUE ones: the dynamic loader merges unique symbols across the whole process
    // even for RTLD_LOCAL libraries, so two projects' packages in one process would share
    // (and overwrite) each other's twin and extension state.
    flags.push("-fno-gnu-unique");
    flags
}

fn io(path: &Path, e: std::io::Error) -> AppError {
    AppError::failed(format!("torch-cpu: {}: {e}", path.display()))
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), AppError> {
    if fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    fs::write(path, text).map_err(|e| io(path, e))
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
    }
}

/// The torch package directory of `python`, found without importing torch.
fn torch_dir(python: &Path) -> Result<PathBuf, AppError> {
    let out = Cmd::new(python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')",
        ])
        .stdin_null()
        .timeout(Duration::from_secs(120))
        .run_checked()
        .map_err(|e| AppError::input(format!("torch-cpu: --python {}: {e}", python.display())))?;
    let dir = PathBuf::from(out.stdout_lossy().trim());
    if dir.as_os_str().is_empty() || !dir.join("include").join("torch").join("library.h").is_file() {
        return Err(AppError::input(format!(
            "torch-cpu: --python {}: no torch with headers installed (looked for torch/include/torch/library.h; \
             found `{}`); `scripts/torch-venv.sh` makes a venv with one",
            python.display(),
            dir.display()
        )));
    }
    Ok(dir)
}

/// `key` with the text of the generated headers in `dir` (its .h files: opgen_torch.h, the
/// op_host's tiling and common headers, the kernels' common header). The sources include them,
/// so a change of one alone must change the objects' keys, not link the stale objects.
fn with_headers_of(key: &str, dir: &Path) -> String {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "h")).collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .fold(Fnv::new().bytes(key.as_bytes()), |h, f| h.bytes(&fs::read(f).unwrap_or_default()))
        .hex()
}

/// An object compiled from `source` with `args`, cached under `obj` by content.
fn object(obj: &ObjectCache, source: &Path, headers: &str, args: Vec<String>) -> Compile {
    let key = Fnv::new()
        .bytes(&fs::read(source).unwrap_or_default())
        .bytes(headers.as_bytes())
        .bytes(obj.portable(&args.join(" ")).as_bytes())
        .hex();
    let name = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Compile { source: source.to_path_buf(), object: obj.dir.join(format!("{name}-{key}.o")), args }
}

/// The objects' directory, in the per-user cache every clone shares, and the clone's own
/// directories that appear in compiler arguments: the keys name them by role, not by path (the
/// contents they hold are in the key already), so another clone's build finds the objects.
struct ObjectCache {
    dir: PathBuf,
    /// (path, its name in keys), the longest first.
    local: Vec<(String, &'static str)>,
}

impl ObjectCache {
    fn portable(&self, args: &str) -> String {
        self.local.iter().fold(args.to_string(), |a, (path, name)| a.replace(path.as_str(), name))
    }
}

/// Links `objects` into the shared library `lib`, unless the stamp beside it says the same
/// objects made it.
fn link(lib: &Path, objects: &[PathBuf], extra: &[String]) -> Result<bool, AppError> {
    let key = objects
        .iter()
        .fold(Fnv::new(), |h, o| h.bytes(o.to_string_lossy().as_bytes()))
        .bytes(extra.join(" ").as_bytes())
        .hex();
    let stamp = lib.with_extension("so.key");
    if lib.exists() && fs::read_to_string(&stamp).ok().as_deref() == Some(key.as_str()) {
        return Ok(false);
    }
    if let Some(dir) = lib.parent() {
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    let partial = lib.with_extension(format!("so.part{}", unique_suffix()));
    Cmd::new("g++")
        .args(["-shared", "-Wl,--no-undefined"])
        .args(objects)
        .args(extra)
        .arg("-o")
        .arg(&partial)
        .timeout(Duration::from_secs(600))
        .stdin_null()
        .run_checked()
        .map_err(|e| AppError::failed(format!("torch-cpu: linking {} failed:\n{e}", lib.display())))?;
    fs::rename(&partial, lib).map_err(|e| io(lib, e))?;
    fs::write(&stamp, key).map_err(|e| io(&stamp, e))?;
    Ok(true)
}

fn strings<I, S>(items: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    items.into_iter().map(Into::into).collect()
}

/// Builds the package; prints what it did and how long it took.
pub fn torch_cpu(opts: &TorchCpuOptions) -> Result<(), AppError> {
    let started = Instant::now();
    let specs = load_specs(opts.specs.as_deref(), &opts.ops)?;
    let project = render(&specs)?;
    let names = crate::codegen::project_names(&specs.iter().collect::<Vec<_>>())
        .map_err(|e| AppError::input(format!("torch-cpu: {e}")))?;
    let torch = torch_dir(&opts.python)?;
    let out = absolute(&opts.out);
    let package = out.join(&names.package);
    let package_files = format!("torch/{}/", names.package);
    let build = out.join(".build");
    let src = build.join("src");
    prune_build_caches();
    let obj = ObjectCache {
        dir: compiler_cache_dir("torch-cpu"),
        local: vec![
            (build.display().to_string(), "<build>"),
            (crate::repo_root().display().to_string(), "<repo>"),
        ],
    };
    fs::create_dir_all(&obj.dir).map_err(|e| io(&obj.dir, e))?;

    write_sources(&project, &specs, &src)?;
    for file in project.files.iter().filter(|f| f.path.starts_with(&package_files)) {
        write_if_changed(&package.join(&file.path[package_files.len()..]), &file.contents)?;
    }

    let twin = twin_dir();
    let include = twin.join("include");
    let headers = tree_hash(&include, Fnv::new()).hex();
    let base = |extra: &[String]| -> Vec<String> {
        strings(base_flags())
            .into_iter()
            .chain(extra.iter().cloned())
            .chain(["-I".to_string(), include.display().to_string()])
            .collect()
    };

    // lib<library>_twin.so (libopgen_twin.so by default): the twin runtime and op_host API, and every op's op_host code.
    let mut twin_sources: Vec<PathBuf> = fs::read_dir(twin.join("src"))
        .map_err(|e| io(&twin.join("src"), e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .filter(|p| !RUNNER_ONLY.iter().any(|r| p.file_name().is_some_and(|n| n == *r)))
        .collect();
    twin_sources.sort();
    let mut twin_jobs: Vec<Compile> =
        twin_sources.iter().map(|s| object(&obj, s, &headers, base(&[]))).collect();
    let host_include = strings(["-I".to_string(), src.join("op_host").display().to_string()]);
    let host_headers = with_headers_of(&headers, &src.join("op_host"));
    for spec in &specs {
        let source = src.join("op_host").join(format!("{}.cpp", spec.file_stem()));
        twin_jobs.push(object(&obj, &source, &host_headers, base(&host_include)));
    }

    // One kernel library per op and dtype combination.
    let hidden = strings(["-fvisibility=hidden", "-fvisibility-inlines-hidden"]);
    let mut kernels: Vec<(PathBuf, Vec<Compile>)> = Vec::new();
    let kernel_headers = with_headers_of(&headers, &src.join("op_kernel"));
    for spec in &specs {
        let stem = spec.file_stem();
        let shim = object(&obj, &src.join("launch").join(format!("{stem}.cpp")), &headers, base(&[]));
        for column in 0..spec.columns() {
            let defines: Vec<String> = spec
                .column(column)
                .into_iter()
                .map(|(name, dtype)| format!("-DDTYPE_{}={}", name.to_ascii_uppercase(), dtype.cpp_type()))
                .chain(hidden.iter().cloned())
                .collect();
            let kernel = object(
                &obj,
                &src.join("op_kernel").join(format!("{stem}.cpp")),
                &kernel_headers,
                base(&defines),
            );
            let lib = package.join("kernels").join(format!("{stem}_c{column}.so"));
            kernels.push((lib, vec![kernel, shim_copy(&shim)]));
        }
    }

    // The extension: schemas, Meta/Autograd kernels, CPU kernels.
    // C++20 for the files that include torch (after the twin's -std=c++17, so it wins): torch
    // 2.14's ATen.h stops on anything older ("C++20 or later compatible compiler is required").
    let torch_flags: Vec<String> = strings([
        "-std=c++20".to_string(),
        "-D_GLIBCXX_USE_CXX11_ABI=1".to_string(),
        "-I".to_string(),
        src.join("torch").display().to_string(),
        "-isystem".to_string(),
        torch.join("include").display().to_string(),
        "-isystem".to_string(),
        torch.join("include/torch/csrc/api/include").display().to_string(),
    ]);
    let ext_headers = with_headers_of(&headers, &src.join("torch"));
    let ext_jobs: Vec<Compile> = ["opgen_schema.cpp", "opgen_cpu.cpp"]
        .iter()
        .map(|f| object(&obj, &src.join("torch").join(f), &ext_headers, base(&torch_flags)))
        .collect();

    let mut all: Vec<Compile> = Vec::new();
    let twin_objects: Vec<PathBuf> = twin_jobs.iter().map(|c| c.object.clone()).collect();
    let ext_objects: Vec<PathBuf> = ext_jobs.iter().map(|c| c.object.clone()).collect();
    all.extend(twin_jobs);
    all.extend(ext_jobs);
    let mut seen = std::collections::BTreeSet::new();
    for (_, jobs) in &kernels {
        for c in jobs {
            if seen.insert(c.object.clone()) {
                all.push(shim_copy(c));
            }
        }
    }
    let todo = all.iter().filter(|c| !c.object.exists()).count();
    println!("torch-cpu: {} objects, {todo} to compile (torch at {})", all.len(), torch.display());
    compile_all(all, 2).map_err(|e| AppError::failed(format!("torch-cpu: {e}")))?;

    // Named per project: a second package's DT_NEEDED on the same name would bind to the first
    // package's twin (the loader matches an already loaded library by name).
    let twin_name = names.twin_library();
    let twin_lib = package.join(format!("lib{twin_name}.so"));
    link(&twin_lib, &twin_objects, &[format!("-Wl,-soname,lib{twin_name}.so")])?;
    let twin_link = strings([
        format!("-L{}", package.display()),
        format!("-l{twin_name}"),
        "-Wl,-rpath,$ORIGIN/..".to_string(),
    ]);
    for (lib, jobs) in &kernels {
        let objects: Vec<PathBuf> = jobs.iter().map(|c| c.object.clone()).collect();
        link(lib, &objects, &twin_link)?;
    }
    let torch_lib = torch.join("lib");
    let ext_link = strings([
        format!("-L{}", torch_lib.display()),
        "-lc10".to_string(),
        "-ltorch".to_string(),
        "-ltorch_cpu".to_string(),
        format!("-L{}", package.display()),
        format!("-l{twin_name}"),
        "-ldl".to_string(),
        "-Wl,-rpath,$ORIGIN".to_string(),
        format!("-Wl,-rpath,{}", torch_lib.display()),
    ]);
    link(&package.join(format!("lib{}_cpu.so", names.package)), &ext_objects, &ext_link)?;
    println!(
        "torch-cpu: {} ops, {} kernel libraries in {} ({:.0} s); use it with PYTHONPATH={} {} -c \"import {}\"",
        specs.len(),
        kernels.len(),
        package.display(),
        started.elapsed().as_secs_f64(),
        out.display(),
        opts.python.display(),
        names.package
    );
    if let Some(dist) = &opts.wheel {
        let t = Instant::now();
        let stage = build.join("wheel");
        super::wheel::stage(&project, &names, &package, &stage)?;
        let run = |cmd: Cmd, what: &str| {
            cmd.run_checked().map_err(|e| AppError::failed(format!("torch-cpu: {what} failed:\n{e}")))
        };
        run(
            super::wheel::build_info_cmd(&opts.python, &stage.join(&names.package), "cpu", None),
            "recording the versions",
        )?;
        let dist = absolute(dist);
        run(super::wheel::wheel_cmd(&opts.python, &stage, &dist), "pip wheel")?;
        let wheel = super::wheel::built_wheel(&dist, &names)?;
        println!(
            "torch-cpu: wheel {} ({:.0} s); `pip install` it, then `import {}` (no PYTHONPATH)",
            wheel.display(),
            t.elapsed().as_secs_f64(),
            names.package
        );
    }
    Ok(())
}

fn shim_copy(c: &Compile) -> Compile {
    Compile { source: c.source.clone(), object: c.object.clone(), args: c.args.clone() }
}

/// The generated sources the build compiles, under `src`: op_host/, op_kernel/, torch/ and one
/// launch shim per op in launch/.
fn write_sources(project: &Project, specs: &[OpSpec], src: &Path) -> Result<(), AppError> {
    for file in &project.files {
        if file.path.starts_with("op_host/")
            || file.path.starts_with("op_kernel/")
            || file.path.starts_with("torch/")
        {
            write_if_changed(&src.join(&file.path), &file.contents)?;
        }
    }
    for spec in specs {
        let launch = render_twin_launch(spec).map_err(|e| AppError::failed(format!("torch-cpu: {e}")))?;
        write_if_changed(&src.join("launch").join(format!("{}.cpp", spec.file_stem())), &launch)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::scratch::ScratchDir;

    #[test]
    fn a_changed_header_changes_the_key_and_a_changed_source_does_not() {
        // The sources are keyed by their own text; the key of what includes a header must follow
        // the header (opgen_torch.h changed alone once linked stale objects).
        let dir = ScratchDir::new("torch-cpu-key").unwrap();
        let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).unwrap();
        write("opgen_torch.h", "inline int checks() { return 1; }\n");
        write("opgen_schema.cpp", "#include \"opgen_torch.h\"\n");
        let before = with_headers_of("twin", dir.path());
        write("opgen_schema.cpp", "#include \"opgen_torch.h\"\nint unrelated;\n");
        assert_eq!(with_headers_of("twin", dir.path()), before);
        write("opgen_torch.h", "inline int checks() { return 2; }\n");
        let after = with_headers_of("twin", dir.path());
        assert_ne!(after, before);
        assert_ne!(with_headers_of("other twin headers", dir.path()), after);
    }
}
