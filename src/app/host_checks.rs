//! The NPU-less checks of what the project builds for a real torch and torch_npu, as
//! `cargo xtask` commands (they were shell scripts; every command goes through the one runner,
//! `toolchain::command::Cmd`):
//!
//! - `fetch-wheels`: downloads (once) and unpacks the torch and torch_npu wheels the generated
//!   extension builds against, into `$OPGEN_CACHE` (default `~/.cache/ascend-opgen`);
//! - `check-torch-ext`: generates the project for the whole catalogue, configures, compiles and
//!   links its torch/ against the wheels with --no-undefined and installs it, then checks its
//!   NEEDED entries (torch/torch_npu, no CANN library: CANN's libraries are dependencies of
//!   libtorch_npu only), loads the generated schemas and runs the Meta kernels in the wheel's
//!   libtorch (scripts/torch_meta_check/meta_check.cpp), and runs the Python package's loader
//!   tests (python/opgen_torch/tests);
//! - `check-acl`: bindgen over the ACL headers the torch_npu wheel ships; the cfg(opgen_acl)
//!   code is built, linted and tested against them in its own target directory.
//!
//! Each step prints `  <label>: <seconds> s`; a failing step prints its command line, working
//! directory, exit code and the last 200 lines of its output, and the command exits with the
//! step's exit code.

use super::gen::{gen_ops, GenOptions};
use super::AppError;
use crate::toolchain::command::{Cmd, CommandError};
use crate::toolchain::user_cache::user_cache_dir;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// torch_npu 2.14.0 (the newest on PyPI) is built for torch 2.14.0 (its metadata: `torch==2.14.0.*`);
/// on x86_64 PyPI's torch is the CUDA build: its headers and CPU libraries are the same API, and
/// nothing here links its CUDA libraries.
/// scripts/lib/wheels.sh (torch-venv.sh's wheel lookup) names the same versions; a test checks.
pub const TORCH_VERSION: &str = "2.14.0";
pub const TORCH_NPU_VERSION: &str = "2.14.0";
/// The CPython the wheels are for (cp311).
pub const WHEEL_PYTHON: &str = "311";

/// Long enough for a cold download or the extension's compile on a loaded 2-core machine.
const STEP_TIMEOUT: Duration = Duration::from_secs(3 * 3600);

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
}

fn secs(since: Instant) -> String {
    format!("{:.1}", since.elapsed().as_secs_f64())
}

/// Runs one step: prints its label and time, returns its output (stderr then stdout); on
/// failure an error with the command, cwd, exit code and the output's last 200 lines.
fn step(label: &str, cmd: Cmd) -> Result<String, AppError> {
    let started = Instant::now();
    let cwd =
        cmd.get_cwd().map(Path::to_path_buf).or_else(|| std::env::current_dir().ok()).unwrap_or_default();
    match cmd.timeout(STEP_TIMEOUT).stdin_null().run_checked() {
        Ok(out) => {
            println!("  {label}: {} s", secs(started));
            Ok(out.combined_lossy())
        }
        Err(e) => Err(step_failed(label, &cwd, &e)),
    }
}

fn step_failed(label: &str, cwd: &Path, e: &CommandError) -> AppError {
    let code = match e {
        CommandError::NonZeroExit { code, .. } => *code,
        _ => 1,
    };
    let output = format!("{}{}", e.stderr().unwrap_or(""), e.stdout().unwrap_or(""));
    let lines: Vec<&str> = output.lines().collect();
    let tail: Vec<String> =
        lines[lines.len().saturating_sub(200)..].iter().map(|l| format!("    {l}")).collect();
    let what = match e {
        CommandError::NonZeroExit { .. } => String::new(),
        other => format!("  error: {other}\n"),
    };
    AppError {
        code,
        message: format!(
            "FAILED: {label}\n  command: {}\n  cwd: {}\n  exit code: {code}\n{what}  output (last 200 lines of {}):\n{}",
            e.command(),
            cwd.display(),
            lines.len(),
            tail.join("\n")
        ),
    }
}

fn fail(message: impl std::fmt::Display) -> AppError {
    AppError::failed(format!("error: {message}"))
}

fn io(path: &Path, e: std::io::Error) -> AppError {
    fail(format!("{}: {e}", path.display()))
}

/// The machine's architecture as wheel platform tags spell it (`uname -m`).
fn arch() -> &'static str {
    std::env::consts::ARCH
}

/// The unpacked wheels: package directories as a site-packages would have them.
#[derive(Debug, Clone)]
pub struct Wheels {
    pub torch: PathBuf,
    pub torch_npu: PathBuf,
    /// The torch wheel file (its METADATA pins the CUDA runtime).
    pub torch_wheel: PathBuf,
}

/// The cached wheel of `dist==version` for this Python and machine, if any. Wheel names use the
/// distribution name with `_` and may carry a build tag (`torch-2.14.0-3-cp311-…`).
fn wheel_file(dir: &Path, dist: &str, version: &str) -> Option<PathBuf> {
    let python = env_or("OPGEN_WHEEL_PYTHON", WHEEL_PYTHON);
    first_wheel(dir, |name| {
        name.starts_with(&format!("{dist}-{version}-"))
            && name.contains(&format!("cp{python}-"))
            && name.contains("manylinux")
            && name.ends_with(&format!("_{}.whl", arch()))
    })
}

/// The first (by name) file in `dir` whose name `matches`.
fn first_wheel(dir: &Path, matches: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&matches))
        .collect();
    found.sort();
    found.into_iter().next()
}

fn pip_download(python: &str, platforms: &[String], abis: &[String], dest: &Path, requirement: &str) -> Cmd {
    let mut cmd = Cmd::new("python3").args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--python-version",
        python,
        "--implementation",
        "cp",
    ]);
    for abi in abis {
        cmd = cmd.arg("--abi").arg(abi);
    }
    for platform in platforms {
        cmd = cmd.arg("--platform").arg(platform);
    }
    cmd.arg("-d").arg(dest).arg(requirement)
}

/// The wheel of `pin` that `find` sees in the wheels cache `dir`; when it sees none, `download`
/// (a `pip download` into `dir`) first.
fn cached_wheel(
    pin: &str,
    dir: &Path,
    find: impl Fn() -> Option<PathBuf>,
    download: Cmd,
) -> Result<PathBuf, AppError> {
    if let Some(wheel) = find() {
        println!("  {pin}: cached ({})", wheel.file_name().unwrap_or_default().to_string_lossy());
        return Ok(wheel);
    }
    fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    step(&format!("download {pin}"), download)?;
    find().ok_or_else(|| fail(format!("pip downloaded {pin} but no matching wheel is in {}", dir.display())))
}

/// Downloads the wheel unless it is cached; returns its path.
fn fetch_wheel(dist: &str, version: &str) -> Result<PathBuf, AppError> {
    let dir = user_cache_dir().join("wheels");
    let pin = format!("{}=={version}", dist.replace('_', "-"));
    let python = env_or("OPGEN_WHEEL_PYTHON", WHEEL_PYTHON);
    let download =
        pip_download(&python, &[format!("manylinux_2_28_{}", arch())], &[format!("cp{python}")], &dir, &pin);
    cached_wheel(&pin, &dir, || wheel_file(&dir, dist, version), download)
}

/// Extracts PACKAGE/include/ and PACKAGE/lib/ (less the CUDA libraries of torch's PyPI build,
/// 1.2 GB the extension never links) into `dest`, atomically; skipped when `dest` was unpacked
/// from the same file.
const UNPACK_PY: &str = r#"
import re
import sys
import zipfile

wheel, package, dest = sys.argv[1:4]
cuda = re.compile(r"cuda|nvrtc|nvshmem|cudnn|cublas|cufft|cusparse|nccl")
wanted = (f"{package}/include/", f"{package}/lib/")
count = size = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(wanted) or name.endswith("/"):
            continue
        if name.startswith(f"{package}/lib/") and cuda.search(name.rsplit("/", 1)[-1]):
            continue
        z.extract(info, dest)
        count += 1
        size += info.file_size
print(f"{count} files, {size / 1e6:.0f} MB")
if count == 0:
    sys.exit(f"no {package}/include or {package}/lib in {wheel}")
"#;

fn unpack_wheel(wheel: &Path, package: &str, dest: &Path) -> Result<(), AppError> {
    let stamp = dest.join(".unpacked-from");
    let size = fs::metadata(wheel).map_err(|e| io(wheel, e))?.len();
    let id = format!("{} {size}", wheel.file_name().unwrap_or_default().to_string_lossy());
    if fs::read_to_string(&stamp).is_ok_and(|s| s.trim_end() == id) {
        println!("  {package}: already unpacked in {}", dest.display());
        return Ok(());
    }
    let partial = PathBuf::from(format!("{}.partial", dest.display()));
    let _ = fs::remove_dir_all(dest);
    let _ = fs::remove_dir_all(&partial);
    let log = step(
        &format!("unpack {package} include/ and lib/"),
        Cmd::new("python3").arg("-c").arg(UNPACK_PY).arg(wheel).arg(package).arg(&partial),
    )?;
    println!("    {}", log.trim_end());
    fs::write(partial.join(".unpacked-from"), format!("{id}\n")).map_err(|e| io(&partial, e))?;
    fs::rename(&partial, dest).map_err(|e| io(dest, e))
}

/// Downloads (once) and unpacks the torch and torch_npu wheels.
pub fn wheels() -> Result<Wheels, AppError> {
    let started = Instant::now();
    let torch_version = env_or("OPGEN_TORCH_VERSION", TORCH_VERSION);
    let npu_version = env_or("OPGEN_TORCH_NPU_VERSION", TORCH_NPU_VERSION);
    println!(
        "== torch {torch_version} and torch_npu {npu_version} wheels (cache: {})",
        user_cache_dir().display()
    );
    let torch_wheel = fetch_wheel("torch", &torch_version)?;
    let npu_wheel = fetch_wheel("torch_npu", &npu_version)?;
    let unpacked = user_cache_dir().join("unpacked");
    fs::create_dir_all(&unpacked).map_err(|e| io(&unpacked, e))?;
    let torch_dir = unpacked.join(format!("torch-{torch_version}"));
    let npu_dir = unpacked.join(format!("torch_npu-{npu_version}"));
    unpack_wheel(&torch_wheel, "torch", &torch_dir)?;
    unpack_wheel(&npu_wheel, "torch_npu", &npu_dir)?;
    let wheels = Wheels { torch: torch_dir.join("torch"), torch_npu: npu_dir.join("torch_npu"), torch_wheel };
    println!(
        "  wheels ready in {} s: TORCH_PATH={} TORCH_NPU_PATH={}",
        secs(started),
        wheels.torch.display(),
        wheels.torch_npu.display()
    );
    Ok(wheels)
}

/// POSIX shell quoting for the `export` lines.
fn sh_quote(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `cargo xtask fetch-wheels`: the wheels, then `export TORCH_PATH=…` and `export
/// TORCH_NPU_PATH=…` on stdout (progress on stderr is not separated: use `grep '^export '`).
pub fn fetch_wheels() -> Result<(), AppError> {
    let w = wheels()?;
    println!("export TORCH_PATH={}", sh_quote(&w.torch.to_string_lossy()));
    println!("export TORCH_NPU_PATH={}", sh_quote(&w.torch_npu.to_string_lossy()));
    Ok(())
}

/// The CUDA runtime pins in a wheel's METADATA: torch's own up to 2.12 (`nvidia-cuda-runtime-cu12==12.8.90`,
/// ...), or, from torch 2.13's CUDA 13 build, the `cuda-toolkit[...]==13.0.3` meta-package it pins,
/// whose METADATA (read the same way) pins `nvidia-cuda-runtime==13.0.96.*` under its `cudart`
/// extra and `nvidia-cuda-cupti==13.0.85.*` under `cupti`.
const PINS_PY: &str = r#"
import re
import sys
import zipfile

seen = set()
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        m = re.match(r"Requires-Dist: (nvidia-cuda-(?:runtime|cupti)(?:-cu\d+)?)==([\w.*]+)(.*)", line)
        if m:
            extra = re.search(r"extra == ['\"](\w+)['\"]", m.group(3))
            if extra is None or extra.group(1) in ("cudart", "cupti"):
                seen.add(f"{m.group(1)}=={m.group(2)}")
        m = re.match(r"Requires-Dist: (cuda-toolkit)\[[^\]]*\]==([\w.]+)", line)
        if m:
            seen.add(f"{m.group(1)}=={m.group(2)}")
print("\n".join(sorted(seen)))
"#;

const UNPACK_LIBS_PY: &str = r#"
import sys
import zipfile

wheel, dest = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    libs = [n for n in z.namelist() if "/lib/" in n and ".so" in n.rsplit("/", 1)[-1]]
    for n in libs:
        z.extract(n, dest)
print(f"{len(libs)} libraries")
"#;

/// The CUDA runtime pins of `wheel`'s METADATA (PINS_PY).
fn runtime_pins(wheel: &Path) -> Result<Vec<String>, AppError> {
    let out = Cmd::new("python3")
        .arg("-c")
        .arg(PINS_PY)
        .arg(wheel)
        .stdin_null()
        .run_checked()
        .map_err(|e| step_failed("read the CUDA runtime pins", wheel, &e))?;
    Ok(out.stdout_lossy().split_whitespace().map(str::to_string).collect())
}

/// The cached wheel of the exact or wildcard pin `dist==version` (`13.0.85.*`), downloaded once
/// into the wheels cache for this Python and machine.
fn pinned_wheel(pin: &str) -> Result<PathBuf, AppError> {
    let (dist, version) = pin.split_once("==").ok_or_else(|| fail(format!("bad pin `{pin}`")))?;
    let python = env_or("OPGEN_WHEEL_PYTHON", WHEEL_PYTHON);
    let wheels_dir = user_cache_dir().join("wheels");
    let prefix = format!("{}-{}", dist.replace('-', "_"), version.trim_end_matches(".*"));
    let find = || {
        first_wheel(&wheels_dir, |n| {
            // `-` ends an exact version; `.` continues a wildcard's (13.0.85 of 13.0.85.*).
            n.strip_prefix(&prefix).is_some_and(|rest| rest.starts_with('-') || rest.starts_with('.'))
                && n.ends_with(".whl")
        })
    };
    // CUDA 13's runtime wheels are tagged manylinux_2_25; pip does not infer it from 2_28.
    let platforms = ["manylinux_2_28", "manylinux_2_25", "manylinux2014", "manylinux_2_17"]
        .iter()
        .map(|p| format!("{p}_{}", arch()))
        .collect::<Vec<_>>();
    let download =
        pip_download(&python, &platforms, &[format!("cp{python}"), "none".into()], &wheels_dir, pin);
    cached_wheel(pin, &wheels_dir, find, download)
}

/// The two CUDA runtime libraries torch's PyPI build needs just to be loaded (libtorch_cpu.so
/// NEEDs libcudart and libcupti; nothing calls them on a CPU), at the versions torch's own
/// metadata pins, directly or through the cuda-toolkit meta-package, downloaded once and
/// unpacked. Returns what LD_LIBRARY_PATH needs to run a program linked to libtorch_cpu.
fn torch_cpu_runtime(w: &Wheels) -> Result<Vec<PathBuf>, AppError> {
    let mut pins = runtime_pins(&w.torch_wheel)?;
    if let Some(at) = pins.iter().position(|p| p.starts_with("cuda-toolkit==")) {
        let toolkit = pinned_wheel(&pins.remove(at))?;
        pins.extend(runtime_pins(&toolkit)?);
    }
    if pins.is_empty() {
        println!("  torch's metadata pins no CUDA runtime: nothing to add");
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    for pin in pins {
        let dest = user_cache_dir().join("unpacked").join(pin.replace("==", "-").trim_end_matches(".*"));
        if !dest.join(".complete").exists() {
            let wheel = pinned_wheel(&pin)?;
            let _ = fs::remove_dir_all(&dest);
            step(
                &format!("unpack {pin} lib/"),
                Cmd::new("python3").arg("-c").arg(UNPACK_LIBS_PY).arg(&wheel).arg(&dest),
            )?;
            fs::write(dest.join(".complete"), "").map_err(|e| io(&dest, e))?;
        } else {
            println!("  {pin}: already unpacked");
        }
        // nvidia/<component>/lib (cu12 wheels) or nvidia/cu13/lib (CUDA 13's).
        let nvidia = dest.join("nvidia");
        let mut libs: Vec<PathBuf> = fs::read_dir(&nvidia)
            .map_err(|e| io(&nvidia, e))?
            .flatten()
            .map(|e| e.path().join("lib"))
            .filter(|p| p.is_dir())
            .collect();
        libs.sort();
        paths.extend(libs);
    }
    paths.dedup();
    Ok(paths)
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":")
}

/// `scripts/setup-host.sh <package>`: installs a Debian package the check needs when missing.
fn setup_host(package: &str) -> Result<(), AppError> {
    let root = crate::repo_root();
    let out = Cmd::new("bash")
        .arg(root.join("scripts").join("setup-host.sh"))
        .arg(package)
        .cwd(root)
        .timeout(STEP_TIMEOUT)
        .stdin_null()
        .run_checked()
        .map_err(|e| step_failed(&format!("setup-host {package}"), root, &e))?;
    print!("{}", out.stdout_lossy());
    Ok(())
}

/// NEEDED entries of `readelf -d` output.
pub fn needed_libraries(readelf: &str) -> Vec<String> {
    readelf
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l[l.find('[')? + 1..l.rfind(']')?].to_string()))
        .collect()
}

/// CANN libraries the extension must not depend on directly (only libtorch_npu may).
const CANN_LIBRARIES: &[&str] = &[
    "libascendcl",
    "libhccl",
    "libge_runner",
    "libgraph",
    "libacl_op_compiler",
    "libnnopbase",
    "libopapi",
    "libcust_opapi",
];

/// `cargo xtask check-torch-ext [--work DIR]` (default: target/opgen-torch-check).
pub fn check_torch_ext(work: Option<PathBuf>) -> Result<(), AppError> {
    let total = Instant::now();
    let root = crate::repo_root();
    let work = work.unwrap_or_else(|| root.join("target").join("opgen-torch-check"));
    fs::create_dir_all(&work).map_err(|e| io(&work, e))?;
    let work = work.canonicalize().map_err(|e| io(&work, e))?;

    setup_host("cmake")?;
    let w = wheels()?;

    println!("== generate the project (every op of kernels/)");
    // --specs keeps gen from refreshing the golden copy: this check never writes into the repository.
    let project = work.join("project");
    let started = Instant::now();
    gen_ops(&GenOptions {
        specs: Some(root.join("kernels")),
        out: Some(project.clone()),
        ops: Vec::new(),
        check: false,
    })?;
    println!("  opgen gen: {} s", secs(started));

    println!("== configure, compile and link torch/ against the wheels");
    let build = work.join("build");
    let install = work.join("install");
    let _ = fs::remove_dir_all(&build);
    let _ = fs::remove_dir_all(&install);
    let python = crate::toolchain::command::which("python3").ok_or_else(|| fail("python3 is not in PATH"))?;
    step(
        "cmake configure",
        Cmd::new("cmake")
            .arg("-S")
            .arg(project.join("torch"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DTORCH_PATH={}", w.torch.display()))
            .arg(format!("-DTORCH_NPU_PATH={}", w.torch_npu.display()))
            .arg(format!("-DPython3_EXECUTABLE={}", python.display()))
            .cwd(root),
    )?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    step("compile + link", Cmd::new("cmake").arg("--build").arg(&build).arg(format!("-j{jobs}")).cwd(root))?;
    step("install", Cmd::new("cmake").arg("--install").arg(&build).arg("--prefix").arg(&install).cwd(root))?;
    let package = install.join("python").join("opgen_torch");
    let lib = package.join("libopgen_torch.so");
    let size = fs::metadata(&lib).map_err(|_| fail(format!("{} was not installed", lib.display())))?.len();
    println!("  libopgen_torch.so: {size} bytes");

    println!("== dependencies of the library");
    let readelf = Cmd::new("readelf")
        .arg("-d")
        .arg(&lib)
        .stdin_null()
        .run_checked()
        .map_err(|e| step_failed("readelf -d", root, &e))?;
    let needed = needed_libraries(&readelf.stdout_lossy());
    println!("  NEEDED: {} ", needed.join(" "));
    if !needed.iter().any(|n| n == "libtorch_npu.so") {
        return Err(fail(format!("{} does not depend on libtorch_npu.so", lib.display())));
    }
    for cann in CANN_LIBRARIES {
        if needed.iter().any(|n| n.contains(cann)) {
            return Err(fail(format!(
                "{} depends on CANN's {cann} directly; only libtorch_npu may",
                lib.display()
            )));
        }
    }
    let torch_lib = w.torch.join("lib");
    let ldd = Cmd::new("ldd")
        .arg(&lib)
        .env("LD_LIBRARY_PATH", format!("{}:{}", torch_lib.display(), w.torch_npu.join("lib").display()))
        .stdin_null()
        .run()
        .map_err(|e| step_failed("ldd", root, &e))?;
    let mut missing: Vec<String> = ldd
        .stdout_lossy()
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    missing.sort();
    missing.dedup();
    let missing = if missing.is_empty() { "none".to_string() } else { format!("{} ", missing.join(" ")) };
    println!("  not found by ldd (needed by libtorch_npu and torch's CUDA build, absent here): {missing}");

    println!("== the schemas and Meta kernels in real libtorch (no NPU: torch_npu is not involved)");
    // The generated opgen_schema.cpp with a test driver, linked to the wheel's libc10/libtorch_cpu:
    // torch parses every schema at load, and the Meta kernels run on meta tensors.
    let cuda_runtime = torch_cpu_runtime(&w)?;
    let ld_path = join_paths(&cuda_runtime);
    let meta = work.join("meta_check");
    fs::create_dir_all(&meta).map_err(|e| io(&meta, e))?;
    let include = w.torch.join("include");
    let flags: Vec<String> = vec![
        // torch 2.14's headers need C++20 (as the extension build: templates/torch/CMakeLists.txt.j2).
        "-std=c++20".into(),
        "-O0".into(),
        "-D_GLIBCXX_USE_CXX11_ABI=1".into(),
        format!("-I{}", include.display()),
        format!("-I{}", include.join("torch/csrc/api/include").display()),
        format!("-I{}", project.join("torch").display()),
    ];
    // opgen_schema.cpp as the extension build compiled it (PIC objects link into an executable too).
    let mut schema_obj = build.join("CMakeFiles/opgen_torch.dir/opgen_schema.cpp.o");
    if !schema_obj.is_file() {
        schema_obj = meta.join("opgen_schema.o");
        step(
            "compile opgen_schema.cpp",
            Cmd::new("g++")
                .args(&flags)
                .arg("-c")
                .arg(project.join("torch/opgen_schema.cpp"))
                .arg("-o")
                .arg(&schema_obj)
                .cwd(root),
        )?;
    }
    step(
        "compile the Meta check driver",
        Cmd::new("g++")
            .args(&flags)
            .arg("-c")
            .arg(root.join("scripts/torch_meta_check/meta_check.cpp"))
            .arg("-o")
            .arg(meta.join("meta_check.o"))
            .cwd(root),
    )?;
    let driver = meta.join("meta_check");
    step("link the Meta check", link_meta_check(root, &schema_obj, &meta, &driver, &torch_lib, &ld_path))?;
    // The catalogue's op names: one kernel per op in the generated project (op_kernel/opgen_<op>.cpp:
    // the specs of kernels/*.toml and the backward ops derived from them). The check asserts exactly
    // these are registered, so a missing op fails instead of skipping its cases.
    let kernels = project.join("op_kernel");
    let mut catalogue: Vec<String> = fs::read_dir(&kernels)
        .map_err(|e| io(&kernels, e))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let op = name.strip_prefix("opgen_")?.strip_suffix(".cpp")?;
            Some(op.to_string())
        })
        .collect();
    catalogue.sort();
    if catalogue.is_empty() {
        return Err(fail(format!("no op kernels in {}", kernels.display())));
    }
    let run_ld = format!("{}:{ld_path}", torch_lib.display());
    // The op_host's refusals, case by case with its words (the CPU build's test checks the same
    // file against the twin-compiled op_host).
    let refusals = root.join("python/opgen_torch/tests/host_refusals.txt");
    let log = step(
        &format!("run the Meta check ({} catalogue ops)", catalogue.len()),
        Cmd::new(&driver)
            .arg("--refusals")
            .arg(&refusals)
            .args(&catalogue)
            .env("LD_LIBRARY_PATH", &run_ld)
            .cwd(root),
    )?;
    for line in log.lines() {
        println!("    {line}");
    }
    host_checks_mutant(root, &project, &meta, &flags, &torch_lib, &ld_path, &refusals, &catalogue)?;
    // The mutant: an op the library does not register must fail the check (it used to be skipped).
    let mutant = Cmd::new(&driver)
        .args(&catalogue)
        .arg("opgen_not_registered")
        .env("LD_LIBRARY_PATH", &run_ld)
        .cwd(root)
        .timeout(STEP_TIMEOUT)
        .stdin_null()
        .run()
        .map_err(|e| step_failed("the Meta check's mutant", root, &e))?;
    if mutant.success() {
        return Err(fail("the Meta check passed with an op the library lacks (opgen_not_registered)"));
    }
    let said = mutant.combined_lossy();
    if !said.contains("FAILED: catalogue op opgen::opgen_not_registered is registered") {
        let lines: Vec<&str> = said.lines().collect();
        return Err(fail(format!(
            "the Meta check did not name the missing op: {}",
            lines[lines.len().saturating_sub(5)..].join("\n")
        )));
    }
    println!("  a missing op fails the Meta check: ok");

    println!("== the Python package");
    step(
        "py_compile",
        Cmd::new("python3")
            .args(["-m", "py_compile"])
            .arg(package.join("__init__.py"))
            .arg(package.join("ops.py"))
            .cwd(root),
    )?;
    let log = step(
        "loader tests",
        Cmd::new("python3")
            .arg(root.join("python/opgen_torch/tests/test_package.py"))
            .arg(install.join("python"))
            .cwd(root),
    )?;
    println!("    {}", log.lines().last().unwrap_or(""));

    println!("check-torch-extension: passed in {} s", secs(total));
    Ok(())
}

/// The Meta check driver linked with a compiled opgen_schema.cpp (the extension's, or a mutant's).
/// --no-as-needed: the driver only reaches the kernels through static registration in the
/// schema object; libtorch_cpu holds the dispatcher they register with.
fn link_meta_check(
    root: &Path,
    schema: &Path,
    meta: &Path,
    driver: &Path,
    torch_lib: &Path,
    ld_path: &str,
) -> Cmd {
    Cmd::new("g++")
        .arg(schema)
        .arg(meta.join("meta_check.o"))
        .arg("-o")
        .arg(driver)
        .arg(format!("-L{}", torch_lib.display()))
        .args(["-Wl,--no-as-needed", "-lc10", "-ltorch_cpu"])
        .arg(format!("-Wl,-rpath-link,{ld_path}"))
        .cwd(root)
}

/// The mutant: Meta kernels without the shared host checks (the NPU build before them) must fail
/// the refusals, naming the case.
#[allow(clippy::too_many_arguments)]
fn host_checks_mutant(
    root: &Path,
    project: &Path,
    meta: &Path,
    flags: &[String],
    torch_lib: &Path,
    ld_path: &str,
    refusals: &Path,
    catalogue: &[String],
) -> Result<(), AppError> {
    let schema = project.join("torch/opgen_schema.cpp");
    let text = fs::read_to_string(&schema).map_err(|e| io(&schema, e))?;
    let mutated: String = text
        .lines()
        .map(|line| {
            let call = line.strip_prefix("    opgen_torch::").is_some_and(|rest| {
                rest.split_once('(').is_some_and(|(name, _)| {
                    name.ends_with("_host_checks")
                        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
            });
            if call {
                format!("    if (false) {}\n", &line[4..])
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    if !mutated.contains("if (false) opgen_torch::rotary_mul_host_checks(") {
        return Err(fail("the host-checks mutant did not apply"));
    }
    let source = meta.join("schema_mutant.cpp");
    fs::write(&source, mutated).map_err(|e| io(&source, e))?;
    let object = meta.join("schema_mutant.o");
    step(
        "compile the host-checks mutant",
        Cmd::new("g++").args(flags).arg("-c").arg(&source).arg("-o").arg(&object).cwd(root),
    )?;
    let driver = meta.join("meta_check_mutant");
    step("link the host-checks mutant", link_meta_check(root, &object, meta, &driver, torch_lib, ld_path))?;
    let run = Cmd::new(&driver)
        .arg("--refusals")
        .arg(refusals)
        .args(catalogue)
        .env("LD_LIBRARY_PATH", format!("{}:{ld_path}", torch_lib.display()))
        .cwd(root)
        .timeout(STEP_TIMEOUT)
        .stdin_null()
        .run()
        .map_err(|e| step_failed("the host-checks mutant", root, &e))?;
    if run.success() {
        return Err(fail("the Meta check passed with Meta kernels that skip the op_host's checks"));
    }
    let said = run.combined_lossy();
    let expected =
        "FAILED: refusal \"rotary_mul: a table of S=77 for x of S=4096\": the Meta kernel accepted it";
    if !said.contains(expected) {
        let failed: Vec<&str> = said.lines().filter(|l| l.contains("FAILED")).take(3).collect();
        return Err(fail(format!("the host-checks mutant failed for another reason: {}", failed.join("\n"))));
    }
    let cases = said.lines().filter(|l| l.starts_with("FAILED: refusal")).count();
    println!("  Meta kernels without the host checks fail the refusals: ok ({cases} cases)");
    Ok(())
}

/// The first `test result:` line of libtest output.
fn test_result(log: &str) -> &str {
    log.lines().find(|l| l.starts_with("test result")).unwrap_or("")
}

/// `cargo xtask check-acl`: the ACL bindings against the torch_npu wheel's headers, in
/// target/acl (so the default build keeps its cache).
pub fn check_acl() -> Result<(), AppError> {
    let total = Instant::now();
    let root = crate::repo_root();
    setup_host("libclang-dev")?;
    let w = wheels()?;
    let include = w.torch_npu.join("include");
    let target = root.join("target").join("acl");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let cargo = |args: &[&str]| {
        Cmd::new(&cargo)
            .args(args)
            .env("OPGEN_ACL_INCLUDE", &include)
            .env("CARGO_TARGET_DIR", &target)
            .cwd(root)
    };
    println!("== ACL bindings from {} (target dir {})", include.display(), target.display());
    step("cargo build (bindgen + cfg(opgen_acl))", cargo(&["build", "--workspace", "--all-targets"]))?;
    let build = target.join("debug").join("build");
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in fs::read_dir(&build).map_err(|e| io(&build, e))?.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("ascend-opgen-") {
            continue;
        }
        let bindings = entry.path().join("out").join("acl_bindings.rs");
        if let Ok(modified) = fs::metadata(&bindings).and_then(|m| m.modified()) {
            if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, bindings));
            }
        }
    }
    let (_, bindings) =
        newest.ok_or_else(|| fail("the build did not generate acl_bindings.rs (bindgen skipped?)"))?;
    let text = fs::read_to_string(&bindings).map_err(|e| io(&bindings, e))?;
    let bound = text.lines().filter(|l| l.contains("pub unsafe fn acl")).count();
    println!("  {}: {bound} ACL functions bound", bindings.display());
    step(
        "cargo clippy (cfg(opgen_acl))",
        cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]),
    )?;
    let log = step("cargo test --lib acl::", cargo(&["test", "--lib", "acl::"]))?;
    println!("    {}", test_result(&log));
    let log = step("cargo test --test it run_npu::", cargo(&["test", "--test", "it", "run_npu::"]))?;
    println!("    {}", test_result(&log));
    println!("check-acl-bindings: passed in {} s", secs(total));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needed_entries_are_read_from_readelf() {
        let text = " 0x0000000000000001 (NEEDED)             Shared library: [libtorch_npu.so]\n \
                    0x0000000000000001 (NEEDED)             Shared library: [libc10.so]\n \
                    0x000000000000000e (SONAME)             Library soname: [libopgen_torch.so]\n";
        assert_eq!(needed_libraries(text), vec!["libtorch_npu.so", "libc10.so"]);
    }

    #[test]
    fn export_values_are_quoted_for_the_shell() {
        assert_eq!(sh_quote("/root/.cache/x-1.2/torch"), "/root/.cache/x-1.2/torch");
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
    }

    #[test]
    fn the_shell_lookup_names_the_same_wheel_versions() {
        // scripts/lib/wheels.sh (torch-venv.sh finds the torch wheel with it) must name the
        // versions this module downloads.
        let text = std::fs::read_to_string(crate::repo_root().join("scripts/lib/wheels.sh")).unwrap();
        for (var, want) in [
            ("OPGEN_TORCH_VERSION", TORCH_VERSION),
            ("OPGEN_TORCH_NPU_VERSION", TORCH_NPU_VERSION),
            ("OPGEN_WHEEL_PYTHON", WHEEL_PYTHON),
        ] {
            let line = format!("{var}=${{{var}:-{want}}}");
            assert!(text.contains(&line), "scripts/lib/wheels.sh lacks `{line}`");
        }
    }
}
