//! The whole generated project, in memory, before anything touches the disk.

use super::context::{banner_source, OpContext};
use super::env::{environment, TEMPLATES};
use super::RenderError;
use crate::spec::{AttrValue, OpSpec};
use minijinja::{context, Environment, State, Value};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    pub contents: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Sorted by path.
    pub files: Vec<GeneratedFile>,
}

impl Project {
    pub fn file(&self, path: &str) -> Option<&GeneratedFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// The embedded templates, by name (tests edit one to prove the staleness check works).
pub fn template_sources() -> Vec<(&'static str, String)> {
    TEMPLATES.iter().map(|(name, text)| (*name, text.to_string())).collect()
}

/// Renders the project for `specs` with the embedded templates.
pub fn render_project(specs: &[&OpSpec]) -> Result<Project, RenderError> {
    render_project_with(specs, &template_sources())
}

/// Renders with a given template set (tests swap one template to prove staleness checks).
pub fn render_project_with(
    specs: &[&OpSpec],
    templates: &[(&'static str, String)],
) -> Result<Project, RenderError> {
    let mut env = environment(templates).map_err(|e| render_error("(all)", "(environment)", &e))?;
    env.add_function("banner", banner);
    let mut files = Vec::new();
    for spec in specs {
        files.extend(render_op(&env, spec)?);
    }
    files.extend(render_shared(&env, specs)?);
    files.extend(super::torch::render(&env, specs)?);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Project { files })
}

/// The per-op twin launch shim (not part of the project; the twin build writes it).
pub fn render_twin_launch(spec: &OpSpec) -> Result<String, RenderError> {
    let mut env =
        environment(&template_sources()).map_err(|e| render_error(&spec.name, "(environment)", &e))?;
    env.add_function("banner", banner);
    let cx = OpContext::new(spec).map_err(|m| RenderError {
        op: spec.name.clone(),
        template: "(context)".into(),
        message: m.to_string(),
    })?;
    render(&env, spec, "twin/launch.cpp.j2", Value::from_serialize(cx))
}

fn render_op(env: &Environment<'static>, spec: &OpSpec) -> Result<Vec<GeneratedFile>, RenderError> {
    let cx = OpContext::new(spec).map_err(|m| RenderError {
        op: spec.name.clone(),
        template: "(context)".into(),
        message: m.to_string(),
    })?;
    let stem = cx.stem.clone();
    let crate::family::Templates { kernel, host, .. } = crate::family::templates(spec);
    let value = Value::from_serialize(&cx);
    Ok(vec![
        GeneratedFile {
            path: format!("op_kernel/{stem}.cpp"),
            contents: render(env, spec, kernel, value.clone())?,
        },
        GeneratedFile {
            path: format!("op_host/{stem}.cpp"),
            contents: render(env, spec, host, value.clone())?,
        },
        GeneratedFile {
            path: format!("op_host/{stem}_tiling.h"),
            contents: render(env, spec, "host/tiling.h.j2", value)?,
        },
        GeneratedFile { path: format!("{stem}.json"), contents: msopgen_json(spec) },
    ])
}

/// The helper header every op_host file includes (`templates/host/opgen_host_common.h.j2`).
pub const HOST_COMMON_HEADER: &str = "op_host/opgen_host_common.h";
/// The helper header every kernel includes (`templates/kernel/opgen_kernel_common.h.j2`).
pub const KERNEL_COMMON_HEADER: &str = "op_kernel/opgen_kernel_common.h";

fn render_shared(env: &Environment<'static>, specs: &[&OpSpec]) -> Result<Vec<GeneratedFile>, RenderError> {
    let units: BTreeSet<&str> = specs.iter().flat_map(|s| s.targets.iter().map(String::as_str)).collect();
    let sources: Vec<String> = specs.iter().map(|s| banner_source(&s.source)).collect();
    let ops = specs
        .iter()
        .map(|s| OpContext::new(s).map(Value::from_serialize))
        .collect::<Result<Vec<Value>, _>>()
        .map_err(|m| RenderError {
            op: "(project)".into(),
            template: "(context)".into(),
            message: m.to_string(),
        })?;
    let names = super::project_names(specs)?;
    let cx = context! {
        ops => ops,
        compute_units => units.iter().collect::<Vec<_>>(),
        vendor => names.vendor.as_str(),
        source => sources.join(", "),
        ub_reserved_bytes => crate::plan::soc::UB_API_SCRATCH_BYTES_A2,
    };
    let mut files = Vec::new();
    for (path, template) in [
        ("CMakeLists.txt", "project/CMakeLists.txt.j2"),
        ("op_host/CMakeLists.txt", "project/op_host.CMakeLists.txt.j2"),
        ("op_kernel/CMakeLists.txt", "project/op_kernel.CMakeLists.txt.j2"),
        (HOST_COMMON_HEADER, "host/opgen_host_common.h.j2"),
        (KERNEL_COMMON_HEADER, "kernel/opgen_kernel_common.h.j2"),
        ("build.sh", "project/build.sh.j2"),
    ] {
        let contents = env
            .get_template(template)
            .and_then(|t| t.render(&cx))
            .map_err(|e| render_error("(project)", template, &e))?;
        files.push(GeneratedFile { path: path.to_string(), contents });
    }
    files.push(GeneratedFile {
        path: "CMakePresets.json".to_string(),
        contents: cmake_presets(&units.into_iter().collect::<Vec<_>>(), &sources, &names.vendor),
    });
    Ok(files)
}

fn render(
    env: &Environment<'static>,
    spec: &OpSpec,
    template: &str,
    cx: Value,
) -> Result<String, RenderError> {
    env.get_template(template).and_then(|t| t.render(cx)).map_err(|e| render_error(&spec.name, template, &e))
}

fn render_error(op: &str, template: &str, e: &minijinja::Error) -> RenderError {
    let mut message = format!("{e:#}");
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(&format!("\ncaused by: {cause}"));
        source = cause.source();
    }
    RenderError { op: op.to_string(), template: template.to_string(), message }
}

/// `{{ banner("//") }}`: the do-not-edit header naming the spec(s) and the command.
pub(crate) fn banner(state: &State, prefix: String) -> Result<String, minijinja::Error> {
    let source = state.lookup("source").and_then(|v| v.as_str().map(str::to_string)).ok_or_else(|| {
        minijinja::Error::new(minijinja::ErrorKind::UndefinedError, "banner() needs `source`")
    })?;
    Ok(banner_text(&prefix, &source))
}

fn banner_text(prefix: &str, source: &str) -> String {
    format!(
        "{prefix} Generated by ascend-opgen from {source} with `cargo xtask gen-ops`.\n\
         {prefix} Do not edit by hand: change the spec or the template, then run `cargo xtask gen-ops` again."
    )
}

/// The op as msOpGen's JSON describes it (one object in an array). JSON has no comments, so
/// this is the one generated file without a banner.
pub fn msopgen_json(spec: &OpSpec) -> String {
    use serde_json::json;
    let tensor = |t: &crate::spec::TensorArg| {
        json!({
            "name": t.name,
            "param_type": "required",
            "format": t.dtypes.iter().map(|_| "ND").collect::<Vec<_>>(),
            "type": t.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>(),
        })
    };
    let attrs: Vec<serde_json::Value> = spec
        .attrs
        .iter()
        .map(|a| {
            let mut v = json!({
                "name": a.name,
                "param_type": if a.default.is_some() { "optional" } else { "required" },
                "type": a.kind.name(),
            });
            if let Some(d) = &a.default {
                v["default_value"] = match d {
                    AttrValue::Float(f) => json!(f),
                    AttrValue::Int(i) => json!(i),
                    AttrValue::Bool(b) => json!(b),
                    AttrValue::String(s) => json!(s),
                };
            }
            v
        })
        .collect();
    let op = json!([{
        "op": spec.op_type,
        "language": "cpp",
        "input_desc": spec.inputs.iter().map(tensor).collect::<Vec<_>>(),
        "output_desc": spec.outputs.iter().map(tensor).collect::<Vec<_>>(),
        "attr": attrs,
    }]);
    serde_json::to_string_pretty(&op).expect("JSON of plain values") + "\n"
}

/// CMakePresets.json; the banner rides in the `vendor` object, which CMake reserves for
/// tools' own data. msOpGen's cross-compile and shared-library switches are left out: the
/// project does not support them (its CMakeLists.txt stops when one is turned on).
fn cmake_presets(units: &[&str], sources: &[String], vendor: &str) -> String {
    use serde_json::json;
    let var = |ty: &str, value: &str| json!({ "type": ty, "value": value });
    let presets = json!({
        "version": 1,
        "cmakeMinimumRequired": { "major": 3, "minor": 19, "patch": 0 },
        "vendor": { "ascend-opgen": {
            "generated": banner_text("", &sources.join(", ")).replace("\n ", " ").trim().to_string()
        }},
        "configurePresets": [{
            "name": "default",
            "displayName": "Default Config",
            "description": "ascend-opgen custom ops, Unix Makefiles",
            "generator": "Unix Makefiles",
            "binaryDir": "${sourceDir}/build_out",
            "cacheVariables": {
                "CMAKE_BUILD_TYPE": var("STRING", "Release"),
                "ENABLE_SOURCE_PACKAGE": var("BOOL", "True"),
                "ENABLE_BINARY_PACKAGE": var("BOOL", "True"),
                "ASCEND_COMPUTE_UNIT": var("STRING", &units.join(";")),
                "ENABLE_TEST": var("BOOL", "False"),
                "vendor_name": var("STRING", vendor),
                "ASCEND_CANN_PACKAGE_PATH": var("PATH", "/usr/local/Ascend/ascend-toolkit/latest"),
                "ASCEND_PYTHON_EXECUTABLE": var("STRING", "python3"),
                "CMAKE_INSTALL_PREFIX": var("PATH", "${sourceDir}/build_out"),
            }
        }]
    });
    serde_json::to_string_pretty(&presets).expect("JSON of plain values") + "\n"
}
