//! `cargo bench --bench tiling`: what one call of each generated TilingFunc costs on this
//! machine. The TilingFunc runs on the host before every launch of the op, so it sits on the
//! critical path of eager dispatch (the project's seeds were host-bound). Target: < 1 µs.
//!
//! For every catalogue op (first dtype combination), the generated op_host/<stem>.cpp is compiled
//! with -O2 (no sanitizers) and linked with the twin's op_host library and
//! benches/tiling_bench.cpp, which calls the registered TilingFunc in a loop through the same
//! gert::TilingContext the twin runner uses. Shapes: the first quick-sweep case and the model
//! (Qwen2-7B) shapes of `opgen report`.
//!
//! Two figures per shape: `twin` is the call as the twin runs it, where the twin's emulation of
//! BEGIN_TILING_DATA_DEF (per-object field records with std::strings, a heap byte image)
//! dominates; `generated` is the same op_host source compiled with benches/lean_tilingdata.h
//! force-included (same macro API and layout, no per-object bookkeeping), which leaves the
//! generated logic and the twin's context accessors. The < 1 µs target is judged on
//! `generated`; CANN's own TilingDef has a constructor cost of its own that cannot be measured
//! here.

use ascend_opgen::app::gen::{load_specs, render};
use ascend_opgen::plan::soc;
use ascend_opgen::report::{self, ShapeSet};
use ascend_opgen::spec::OpSpec;
use ascend_opgen::toolchain::command::Cmd;
use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The twin's flags (kernels/twin/cxxflags.sh) at -O2, warnings off.
fn flags() -> Vec<&'static str> {
    let mut flags = ascend_opgen::verify::TwinFlags::get().cxx.clone();
    flags.extend(["-O2", "-w"]);
    flags
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Hash of the twin's headers: objects are rebuilt when any of them changes.
fn headers_hash(include: &Path) -> u64 {
    let mut files = Vec::new();
    collect(include, &mut files);
    files.sort();
    let mut h = DefaultHasher::new();
    for f in files {
        f.hash(&mut h);
        fs::read(&f).unwrap_or_default().hash(&mut h);
    }
    h.finish()
}

/// Compiles `source` to an object in `obj_dir` unless an up-to-date one is there.
fn compile(source: &Path, extra: &[String], headers: u64, obj_dir: &Path) -> PathBuf {
    let mut h = DefaultHasher::new();
    fs::read(source).expect("bench source").hash(&mut h);
    headers.hash(&mut h);
    flags().hash(&mut h);
    extra.hash(&mut h);
    let stem = source.file_stem().unwrap().to_string_lossy().into_owned();
    let object = obj_dir.join(format!("{stem}-{:016x}.o", h.finish()));
    if !object.exists() {
        let partial = object.with_extension("part");
        Cmd::new("g++")
            .args(flags())
            .args(extra)
            .arg("-c")
            .arg(source)
            .arg("-o")
            .arg(&partial)
            .timeout(Duration::from_secs(600))
            .stdin_null()
            .run_checked()
            .unwrap_or_else(|e| panic!("compiling {}: {e}", source.display()));
        fs::rename(&partial, &object).expect("rename object");
    }
    object
}

fn compile_all(jobs: Vec<(PathBuf, Vec<String>)>, headers: u64, obj_dir: &Path) -> Vec<PathBuf> {
    let half = jobs.len().div_ceil(2).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(half)
            .map(|chunk| {
                s.spawn(move || {
                    chunk.iter().map(|(src, extra)| compile(src, extra, headers, obj_dir)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("compile thread")).collect()
    })
}

fn input_args(spec: &OpSpec, column: usize, shapes: &[(String, Vec<usize>)]) -> Vec<String> {
    spec.inputs
        .iter()
        .map(|t| {
            let shape = shapes.iter().find(|(n, _)| n == &t.name).map(|(_, s)| s.clone()).unwrap_or_default();
            let dims = if shape.is_empty() {
                "scalar".to_string()
            } else {
                shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
            };
            format!("{}:{}:{dims}", t.name, t.dtypes[column].name())
        })
        .collect()
}

fn main() {
    let root = ascend_opgen::repo_root();
    let twin = root.join("kernels").join("twin");
    let include = twin.join("include");
    let bench_dir = root.join("target").join("opgen-bench").join("tiling");
    let obj_dir = bench_dir.join("obj");
    fs::create_dir_all(&obj_dir).expect("bench dir");
    let specs = load_specs(None, &[]).expect("catalogue");
    let project = render(&specs).expect("render");
    let soc = soc::find(soc::DEFAULT_SOC).expect("default SoC");
    let headers = headers_hash(&include);
    let inc = vec!["-I".to_string(), include.display().to_string()];

    let mut library: Vec<(PathBuf, Vec<String>)> = fs::read_dir(twin.join("src"))
        .expect("twin sources")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".cpp") && (name.starts_with("host_") || name.starts_with("runtime"))
        })
        .map(|p| (p, inc.clone()))
        .collect();
    library.sort();
    library.push((root.join("benches").join("tiling_bench.cpp"), inc.clone()));
    let started = Instant::now();
    let lib_objects = compile_all(library, headers, &obj_dir);
    eprintln!("tiling bench: twin host library ready in {:.1} s", started.elapsed().as_secs_f64());

    let lean_header = root.join("benches").join("lean_tilingdata.h");
    let lean_header_hash = {
        let mut h = DefaultHasher::new();
        fs::read(&lean_header).expect("lean header").hash(&mut h);
        h.finish()
    };
    println!(
        "TilingFunc cost per call ({}; g++ -O2, no sanitizers; target < 1000 ns for `generated`)",
        soc.name
    );
    println!(
        "{:<22} {:<5} {:<32} {:>10} {:>10} {:>10} {:>7}",
        "op", "dtype", "shape", "twin ns", "generated", "block_dim", "target"
    );
    for spec in &specs {
        let stem = spec.file_stem();
        let dir = bench_dir.join(&stem);
        for rel in [format!("op_host/{stem}.cpp"), format!("op_host/{stem}_tiling.h")] {
            let file = project.file(&rel).unwrap_or_else(|| panic!("no {rel}"));
            let path = dir.join(&rel);
            fs::create_dir_all(path.parent().unwrap()).expect("op dir");
            if fs::read_to_string(&path).ok().as_deref() != Some(file.contents.as_str()) {
                fs::write(&path, &file.contents).expect("write op_host");
            }
        }
        let mut extra = inc.clone();
        extra.extend(["-I".to_string(), dir.join("op_host").display().to_string()]);
        let source = dir.join(format!("op_host/{stem}.cpp"));
        let mut lean_extra = extra.clone();
        lean_extra.extend(["-include".to_string(), lean_header.display().to_string()]);
        let lean_hash = headers ^ lean_header_hash;
        let objects = compile_all(vec![(source.clone(), extra), (source, lean_extra)], lean_hash, &obj_dir);
        let link = |host_obj: &Path, exe: &Path| {
            Cmd::new("g++")
                .args(&lib_objects)
                .arg(host_obj)
                .arg("-o")
                .arg(exe)
                .timeout(Duration::from_secs(300))
                .stdin_null()
                .run_checked()
                .unwrap_or_else(|e| panic!("linking the tiling bench of {}: {e}", spec.name));
        };
        let exe = dir.join("tiling_bench");
        let lean_exe = dir.join("tiling_bench_lean");
        link(&objects[0], &exe);
        link(&objects[1], &lean_exe);

        let column = 0;
        let mut cases = report::cases(spec, ShapeSet::Sweep);
        cases.truncate(1);
        cases.extend(report::cases(spec, ShapeSet::Model));
        for case in cases {
            let run = |exe: &Path| {
                let out = Cmd::new(exe)
                    .args([
                        spec.op_type.as_str(),
                        "0.7",
                        &soc.vector_cores.to_string(),
                        &soc.ub_bytes.to_string(),
                    ])
                    .args(input_args(spec, column, &case.shapes))
                    .timeout(Duration::from_secs(120))
                    .stdin_null()
                    .run_checked()
                    .unwrap_or_else(|e| panic!("running the tiling bench of {}: {e}", spec.name));
                out.stdout_lossy().into_owned()
            };
            let text = run(&exe);
            let lean_text = run(&lean_exe);
            let field = |text: &str, key: &str| {
                let mut words = text.split_whitespace();
                words.by_ref().find(|w| *w == key);
                words.next().unwrap_or("?").to_string()
            };
            let ns: f64 = field(&text, "ns_per_call").parse().unwrap_or(f64::NAN);
            let lean_ns: f64 = field(&lean_text, "ns_per_call").parse().unwrap_or(f64::NAN);
            let label = format!(
                "{}{}",
                case.shape_label(),
                if case.is_model() { format!(" ({})", case.origin) } else { String::new() }
            );
            println!(
                "{:<22} {:<5} {:<32} {:>10.1} {:>10.1} {:>10} {:>7}",
                spec.name,
                spec.inputs[0].dtypes[column].short_name(),
                label,
                ns,
                lean_ns,
                field(&text, "block_dim"),
                if lean_ns < 1000.0 { "met" } else { "MISSED" }
            );
        }
    }
}
