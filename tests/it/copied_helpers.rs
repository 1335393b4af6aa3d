//! No C++ helper is defined in two templates (issue 25): a helper every family needs lives in
//! the project's common headers (`templates/host/opgen_host_common.h.j2`,
//! `templates/kernel/opgen_kernel_common.h.j2`) or in one shared partial, never in a copy that
//! drifts (a copied helper carried two pipe-ordering bugs into a new family). Read from the
//! template text: every name defined at file scope (column 0: a function, struct/class,
//! constant or macro) in two templates of the same compile world fails here, naming the helper
//! and both files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names every op defines for itself: CANN registers each op's own InferShape, InferDataType and
/// TilingFunc (in the op's namespace), and each op's checks entry is `<stem>_checks::HostChecks`.
const PER_OP: &[&str] = &["TilingFunc", "InferShape", "InferDataType", "HostChecks"];

/// Index constants name positions in each op's own signature (`INPUT_X` is 0 in one family, 1
/// in another): per op, like the functions above.
fn is_per_op(name: &str) -> bool {
    PER_OP.contains(&name) || ["INPUT_", "OUTPUT_", "ATTR_"].iter().any(|p| name.starts_with(p))
}

/// Copies still to share, each with the files that define it. Listed so that a new copy fails
/// and a shared one must leave the list (a stale entry fails too); the list only shrinks.
const KNOWN_COPIES: &[(&str, &[&str])] = &[
    // rotary and rotary_grad: the same plan constants and kernel seed (a rotary partial next).
    ("MAX_CORES", &["host/rotary.cpp.j2", "host/rotary_grad.cpp.j2"]),
    ("MIN_PASSES", &["host/rotary.cpp.j2", "host/rotary_grad.cpp.j2"]),
    ("REPEAT_BYTES", &["host/rotary.cpp.j2", "host/rotary_grad.cpp.j2"]),
    ("SEED", &["kernel/rotary.cpp.j2", "kernel/rotary_grad.cpp.j2"]),
    ("MODE_HALF", &["kernel/rotary.cpp.j2", "kernel/rotary_grad.cpp.j2"]),
    // row_norm and row_norm_grad: the forward's plan modes and planners, copied into the backward.
    ("CHUNK_ALIGN", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("STREAMS", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("MODE_WHOLE_ROW", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("MODE_MULTI_ROW", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("MODE_SPLIT_D", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("MODE_SPLIT_D", &["kernel/row_norm.cpp.j2", "kernel/row_norm_grad.cpp.j2"]),
    ("MODE_BATCHED", &["host/row_norm_batched.j2", "host/row_norm_grad.cpp.j2"]),
    ("BATCHED_MAX_COLS", &["host/row_norm_batched.j2", "host/row_norm_grad.cpp.j2"]),
    ("BATCHED_MAX_ROWS", &["host/row_norm_batched.j2", "host/row_norm_grad.cpp.j2"]),
    ("Plan", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("PlanRows", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("PlanSplitD", &["host/row_norm.cpp.j2", "host/row_norm_grad.cpp.j2"]),
    ("PlanBatched", &["host/row_norm_batched.j2", "host/row_norm_grad.cpp.j2"]),
    // The checks partials' limits (rendered into op_host and opgen_torch.h: a checks partial next).
    ("MAX_RANK", &["host/check_dims.j2", "host/elementwise_checks.j2", "host/row_norm_rows.j2"]),
    ("RoundingOf", &["host/elementwise_checks.j2", "host/rotary_checks.j2", "host/row_norm_checks.j2"]),
    // The KV-layout families' shared sizes.
    ("TARGET_TRANSFER_BYTES", &["host/paged_cache.cpp.j2", "host/permute.cpp.j2"]),
    ("ROW_ALIGN", &["kernel/dequant.cpp.j2", "kernel/paged_cache.cpp.j2"]),
    // The torch glue's check bridge (one in the header, one in the CPU registration file).
    ("host_check", &["torch/opgen_cpu.cpp.j2", "torch/opgen_torch.h.j2"]),
];

/// Where a file-scope definition is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Site {
    file: String,
    line: usize,
}

/// The compile world of a template: kernels (AscendC, one per op) or host code (op_host, the
/// torch glue, the twin's launch shim). The same name in both worlds is two compilers' agreement
/// (a mode value), not a copy one build could share.
fn world(file: &str) -> &'static str {
    if file.starts_with("kernel/") {
        "kernel"
    } else {
        "host"
    }
}

/// The name a column-0 line of C++ defines, if it defines one.
fn defined_name(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '#' || first == '_') {
        return None;
    }
    let ident =
        |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    if let Some(rest) = line.strip_prefix("#define ") {
        return Some(ident(rest));
    }
    if line.starts_with('#') || line.starts_with("using ") || line.starts_with("namespace ") {
        return None;
    }
    for kw in ["struct ", "class ", "union ", "enum class ", "enum "] {
        if let Some(rest) = line.strip_prefix(kw) {
            // A definition, not a forward declaration.
            return (!line.trim_end().ends_with(';')).then(|| ident(rest));
        }
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    // Constants: `[static] [inline] const|constexpr <type> NAME = ...`.
    if words.iter().take(3).any(|w| *w == "const" || *w == "constexpr") {
        if let Some(eq) = words.iter().position(|w| *w == "=") {
            if eq >= 1 {
                return Some(ident(words[eq - 1].trim_start_matches(['*', '&'])));
            }
        }
    }
    // Functions: `<qualifiers> <type> NAME(` on a line that is not a declaration.
    let open = line.find('(')?;
    let head = &line[..open];
    if head.contains('=') || head.contains('"') || line.trim_end().ends_with(';') {
        return None;
    }
    let name: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    // A type before the name (`uint64_t AlignUp(`); a call at column 0 has none.
    let before = &head[..head.len() - name.len()];
    let typed = before.ends_with([' ', '*', '&']) && !before.trim().is_empty();
    let keyword = ["if", "for", "while", "switch", "return", "sizeof"].contains(&name.as_str());
    (typed && !keyword && !name.is_empty()).then_some(name)
}

/// Every file-scope definition of each template, skipping jinja comments (`{# ... #}`).
pub(crate) fn definitions(templates: &[(String, String)]) -> BTreeMap<(String, &'static str), Vec<Site>> {
    let mut defs: BTreeMap<(String, &'static str), Vec<Site>> = BTreeMap::new();
    for (file, text) in templates {
        let lines: Vec<&str> = text.lines().collect();
        let mut in_comment = false;
        for (i, line) in lines.iter().enumerate() {
            if in_comment {
                in_comment = !line.contains("#}");
                continue;
            }
            if line.starts_with("{#") {
                in_comment = !line.contains("#}");
                continue;
            }
            let Some(name) = defined_name(line) else { continue };
            if name.is_empty() || is_per_op(&name) {
                continue;
            }
            // An adapter of the same-named check (`<stem>_checks::NAME` in its body) wraps it.
            let body: String = lines[i..lines.len().min(i + 8)].join("\n");
            if body.contains(&format!("_checks::{name}")) {
                continue;
            }
            defs.entry((name, world(file))).or_default().push(Site { file: file.clone(), line: i + 1 });
        }
    }
    defs
}

/// Names defined in two or more templates of one world, with every site.
pub(crate) fn copies(templates: &[(String, String)]) -> Vec<(String, Vec<Site>)> {
    definitions(templates)
        .into_iter()
        .filter_map(|((name, _), sites)| {
            let mut files: Vec<&str> = sites.iter().map(|s| s.file.as_str()).collect();
            files.dedup();
            (files.len() > 1).then_some((name, sites))
        })
        .collect()
}

fn template_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            template_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "j2") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

fn templates() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut out = Vec::new();
    template_files(&root, &root, &mut out);
    out
}

fn describe(name: &str, sites: &[Site]) -> String {
    let at: Vec<String> = sites.iter().map(|s| format!("templates/{}:{}", s.file, s.line)).collect();
    format!("`{name}` is defined in {}", at.join(" and "))
}

/// A known copy matches when its sites are in exactly the listed files: a further copy of a
/// listed helper in a new template is a new copy, not a known one.
fn is_known(name: &str, sites: &[Site]) -> bool {
    KNOWN_COPIES.iter().any(|(n, files)| *n == name && same_files(files, sites))
}

fn same_files(files: &[&str], sites: &[Site]) -> bool {
    let mut listed: Vec<&str> = files.to_vec();
    listed.sort_unstable();
    listed.dedup();
    let mut found: Vec<&str> = sites.iter().map(|s| s.file.as_str()).collect();
    found.sort_unstable();
    found.dedup();
    listed == found
}

#[test]
fn no_helper_is_defined_in_two_templates() {
    let found = copies(&templates());
    let new: Vec<String> =
        found.iter().filter(|(n, s)| !is_known(n, s)).map(|(n, s)| describe(n, s)).collect();
    assert!(
        new.is_empty(),
        "copied C++ helpers (move each to templates/host/opgen_host_common.h.j2 or \
         templates/kernel/opgen_kernel_common.h.j2, or one partial both templates include):\n{}",
        new.join("\n")
    );
    let stale: Vec<String> = KNOWN_COPIES
        .iter()
        .filter(|(n, files)| !found.iter().any(|(f, s)| f == n && same_files(files, s)))
        .map(|(n, files)| format!("`{n}` in {}", files.join(", ")))
        .collect();
    assert!(stale.is_empty(), "KNOWN_COPIES lists copies that are gone; remove them:\n{}", stale.join("\n"));
}

/// The check catches a reintroduced copy: the common header's `Platform` pasted back into a
/// family's op_host template is reported with both files and the helper's name.
#[test]
fn a_helper_copied_back_into_a_family_template_is_reported() {
    let mut all = templates();
    let header =
        all.iter().find(|(f, _)| f == "host/opgen_host_common.h.j2").expect("the host header").1.clone();
    let platform: String = header
        .lines()
        .skip_while(|l| !l.starts_with("inline ge::graphStatus Platform("))
        .take_while(|l| *l != "}")
        .map(|l| format!("{}\n", l.trim_start_matches("inline ")))
        .collect();
    assert!(platform.starts_with("ge::graphStatus Platform("), "no Platform in the host header:\n{header}");
    let permute = all.iter_mut().find(|(f, _)| f == "host/permute.cpp.j2").expect("permute's op_host");
    permute.1.push_str(&format!("\n{platform}}}\n"));
    let found = copies(&all);
    let platform = found.iter().find(|(n, _)| n == "Platform").map(|(n, s)| describe(n, s));
    let message = platform.expect("the pasted Platform is reported");
    assert!(
        message.contains("templates/host/opgen_host_common.h.j2:")
            && message.contains("templates/host/permute.cpp.j2:"),
        "{message}"
    );
    // A kernel helper too.
    let kernel = all.iter_mut().find(|(f, _)| f == "kernel/dequant.cpp.j2").expect("dequant's kernel");
    kernel.1.push_str(
        "\n__aicore__ inline uint32_t RoundUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }\n",
    );
    let found = copies(&all);
    let round: Vec<String> =
        found.iter().filter(|(n, _)| n == "RoundUp").map(|(n, s)| describe(n, s)).collect();
    assert_eq!(round.len(), 1, "{round:?}");
    assert!(
        round[0].contains("kernel/opgen_kernel_common.h.j2") && round[0].contains("kernel/dequant.cpp.j2")
    );
    // A same-named kernel/host pair is not one (two compilers): opgen_host's AlignUp beside a
    // kernel's.
    let kernel = all.iter_mut().find(|(f, _)| f == "kernel/dequant.cpp.j2").expect("dequant's kernel");
    kernel.1.push_str(
        "\n__aicore__ inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }\n",
    );
    let found = copies(&all);
    let align: Vec<String> =
        found.iter().filter(|(n, _)| n == "AlignUp").map(|(n, s)| describe(n, s)).collect();
    assert!(align.iter().all(|a| !(a.contains("kernel/") && a.contains("host/"))), "{align:?}");
}
