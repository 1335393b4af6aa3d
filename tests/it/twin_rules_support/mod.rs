//! Reads the twin's C++ source for the places it stops (`opgen_twin::fail(api, rule, detail)`
//! and the planner's `rule(api, rule, detail)`) and its test sources for the rules they expect,
//! so the meta-test in `twin_suites.rs` needs no hand-kept list of rules: a rule added to the
//! twin is uncovered until a test expects it, and a test deleted uncovers its rule.
//!
//! Conventions it reads (documented in kernels/twin/tests/run_negative.sh):
//! - a kernel test's first line `// expect: <text>`: the twin must stop (exit 3) with <text> in
//!   stderr; a stop test covers every rule whose text is contained in <text>;
//! - host_registry_test.cpp's `check_fails(what, fn, "<expected>")` (the child must stop with
//!   <expected>) and `CHECK_EQ(result.rule, std::string("<rule>"))` (a planner result);
//! - at a stop site whose rule text is not a literal, a comment `// twin rule: "<text>" ...`
//!   (on the call's line or the comment lines right above it) names the rules it can raise, or
//!   `// twin rule: forwarded` when it re-raises rules raised (and collected) elsewhere;
//! - `// twin rule untested: <reason>` at a site exempts its rule, and the reason is printed.

#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};

/// One place the twin can stop.
#[derive(Debug, Clone)]
pub struct StopSite {
    /// `kernels/twin/src/runtime.cpp:147`
    pub at: String,
    /// The rule texts this site can raise (empty when it forwards rules of other sites).
    pub rules: Vec<String>,
    /// Why the site has no negative test, when it is exempted.
    pub untested: Option<String>,
}

/// A C++ file split into code (comments blanked, string literals kept) and its comments by line.
struct Source {
    code: Vec<char>,
    comments: Vec<String>,
}

fn split(text: &str) -> Source {
    let chars: Vec<char> = text.chars().collect();
    let lines = text.lines().count() + 2;
    let mut comments = vec![String::new(); lines];
    let mut code = Vec::with_capacity(chars.len());
    let (mut i, mut line) = (0, 0);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                comments[line].push(chars[i]);
                code.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                if chars[i] == '\n' {
                    line += 1;
                    code.push('\n');
                } else {
                    comments[line].push(chars[i]);
                    code.push(' ');
                }
                i += 1;
            }
            code.extend([' ', ' ']);
            i += 2;
            continue;
        }
        if c == '"' || c == '\'' {
            // A literal: copied as is, escapes included.
            code.push(c);
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    code.push(chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    code.push(chars[i]);
                    i += 1;
                }
            }
            code.push(c);
            i += 1;
            continue;
        }
        if c == '\n' {
            line += 1;
        }
        code.push(c);
        i += 1;
    }
    Source { code, comments }
}

/// The string literal starting at `code[i]` (after whitespace), unescaped enough for rule texts
/// (which contain no escapes), and the index after it; adjacent literals are concatenated.
fn literal_at(code: &[char], mut i: usize) -> Option<(String, usize)> {
    let mut out = None;
    loop {
        while i < code.len() && code[i].is_whitespace() {
            i += 1;
        }
        if code.get(i) != Some(&'"') {
            return out.map(|s| (s, i));
        }
        let mut s: String = out.unwrap_or_default();
        i += 1;
        while i < code.len() && code[i] != '"' {
            if code[i] == '\\' {
                i += 1;
            }
            s.push(code[i]);
            i += 1;
        }
        i += 1;
        out = Some(s);
    }
}

/// The top-level arguments of the call whose `(` is at `code[open]`, as char ranges.
fn arguments(code: &[char], open: usize) -> Vec<(usize, usize)> {
    let mut args = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, open + 1, open + 1);
    while i < code.len() {
        match code[i] {
            '"' | '\'' => {
                let q = code[i];
                i += 1;
                while i < code.len() && code[i] != q {
                    if code[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' => {
                args.push((start, i));
                return args;
            }
            ',' if depth == 0 => {
                args.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    args
}

fn line_of(code: &[char], i: usize) -> usize {
    code[..i].iter().filter(|&&c| c == '\n').count()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Calls of `name(` in code (not definitions or declarations: `void fail(`, `bool rule(`).
fn calls(code: &[char], name: &str) -> Vec<usize> {
    let pat: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + pat.len() < code.len() {
        if code[i..i + pat.len()] == pat[..]
            && (i == 0 || !is_ident(code[i - 1]))
            && code[i + pat.len()] == '('
        {
            let before: String = code[i.saturating_sub(24)..i].iter().collect();
            let prev = before.split_whitespace().last().unwrap_or("");
            if !matches!(prev, "void" | "bool") {
                out.push(i + pat.len());
            }
        }
        i += 1;
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("h" | "cpp")) {
            out.push(p);
        }
    }
}

/// Every stop site of the twin (kernels/twin/include and kernels/twin/src), or the sites whose
/// rule cannot be read (not a literal and not annotated) as errors.
pub fn stop_sites(root: &Path) -> (Vec<StopSite>, Vec<String>) {
    let mut files = Vec::new();
    sources(&root.join("kernels/twin/include"), &mut files);
    sources(&root.join("kernels/twin/src"), &mut files);
    let (mut sites, mut errors) = (Vec::new(), Vec::new());
    for file in files {
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        let src = split(&std::fs::read_to_string(&file).unwrap());
        let code_text: String = src.code.iter().collect();
        let code_lines: Vec<&str> = code_text.split('\n').collect();
        for name in ["fail", "rule"] {
            for open in calls(&src.code, name) {
                let line = line_of(&src.code, open);
                let at = format!("{rel}:{}", line + 1);
                // The call's line and the comment-only lines right above it.
                let mut near = src.comments[line].clone();
                let mut l = line;
                while l > 0
                    && line - l < 3
                    && !src.comments[l - 1].is_empty()
                    && code_lines[l - 1].trim().is_empty()
                {
                    l -= 1;
                    near = format!("{}\n{near}", src.comments[l]);
                }
                let untested = near
                    .split("twin rule untested:")
                    .nth(1)
                    .map(|r| r.lines().next().unwrap_or("").trim().to_string());
                let args = arguments(&src.code, open);
                if args.len() < 3 {
                    // `rule` is also a plain word of the twin's prose-like identifiers; only the
                    // three-argument calls are stops.
                    continue;
                }
                let mut rules = Vec::new();
                match literal_at(&src.code, args[1].0) {
                    Some((text, end)) if src.code[end..args[1].1].iter().all(|c| c.is_whitespace()) => {
                        rules.push(text)
                    }
                    _ => {
                        let Some(note) = near.split("twin rule:").nth(1) else {
                            errors.push(format!(
                                "{at}: {name}() with a rule text that is not a literal: name the rules it \
                                 can raise in a `// twin rule: \"...\"` comment"
                            ));
                            continue;
                        };
                        let note: Vec<char> = note.chars().collect();
                        if !note.iter().collect::<String>().trim_start().starts_with("forwarded") {
                            let mut i = 0;
                            while let Some(p) = note[i..].iter().position(|&c| c == '"') {
                                let start = i + p + 1;
                                let Some(len) = note[start..].iter().position(|&c| c == '"') else { break };
                                rules.push(note[start..start + len].iter().collect());
                                i = start + len + 1;
                            }
                            if rules.is_empty() {
                                errors.push(format!("{at}: `// twin rule:` names no quoted rule text"));
                            }
                        }
                    }
                }
                sites.push(StopSite { at, rules, untested });
            }
        }
    }
    (sites, errors)
}

/// What one test expects.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// `kernels/twin/tests/r03_leak.cpp` or `host_registry_test.cpp:255`
    pub test: String,
    pub text: String,
}

/// The first line's expectation of every kernel test (`r*`, `pos_*`, `cf_*`), `None` when the
/// line is not `// expect: ...`.
pub fn kernel_tests(root: &Path) -> Vec<(String, Option<String>)> {
    let dir = root.join("kernels/twin/tests");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".cpp") && (n.starts_with('r') || n.starts_with("pos_") || n.starts_with("cf_"))
        })
        .filter(|n| n.as_bytes().get(1).is_some_and(u8::is_ascii_digit) || !n.starts_with('r'))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            let first = text.lines().next().unwrap_or("");
            (
                format!("kernels/twin/tests/{n}"),
                first.strip_prefix("// expect: ").map(|s| s.trim().to_string()),
            )
        })
        .collect()
}

/// Every stop a test expects: kernel stop tests and host_registry_test's checks.
pub fn expectations(root: &Path) -> Vec<Expectation> {
    let mut out: Vec<Expectation> = kernel_tests(root)
        .into_iter()
        .filter_map(|(test, e)| e.map(|text| Expectation { test, text }))
        .filter(|e| e.text != "ok" && !e.text.starts_with("compile error: "))
        .collect();
    let host = "kernels/twin/tests/host_registry_test.cpp";
    let src = split(&std::fs::read_to_string(root.join(host)).unwrap());
    for open in calls(&src.code, "check_fails") {
        let args = arguments(&src.code, open);
        if let Some(&(start, _)) = args.last() {
            if let Some((text, _)) = literal_at(&src.code, start) {
                let at = format!("{host}:{}", line_of(&src.code, open) + 1);
                out.push(Expectation { test: at, text });
            }
        }
    }
    for open in calls(&src.code, "CHECK_EQ") {
        let args = arguments(&src.code, open);
        let first: String = args.first().map(|&(s, e)| src.code[s..e].iter().collect()).unwrap_or_default();
        if first.trim().ends_with(".rule") && args.len() == 2 {
            let second: String = src.code[args[1].0..args[1].1].iter().collect();
            let second: Vec<char> = second.chars().collect();
            if let Some(p) = second.iter().position(|&c| c == '"') {
                if let Some((text, _)) = literal_at(&second, p) {
                    let at = format!("{host}:{}", line_of(&src.code, open) + 1);
                    out.push(Expectation { test: at, text });
                }
            }
        }
    }
    out
}
