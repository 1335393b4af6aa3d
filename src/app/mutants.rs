//! `cargo xtask mutants`: the mutation suite. Each mutant (tests/mutants/mutants.toml) is one
//! textual change of a generated kernel — a cast round mode, an off-by-one tail, a skipped
//! write, a removed synchronisation. It is applied to a copy of the generated project, which is
//! then verified with `verify --from` restricted to the mutant's op and one dtype. A mutant is
//! killed when verification fails; a surviving non-equivalent mutant means the gates, inputs or
//! twin rules miss a real bug.
//!
//! Sync-removal mutants (`sync-*` categories) need the twin's pipe-ordering checker (issue 11
//! point 1); until `sync_checked = true` in the list, their survivals are reported apart and do
//! not fail the run.

use super::gen::{load_specs, render};
use super::AppError;
use crate::codegen::write_atomically;
use crate::toolchain::scratch::ScratchDir;
use crate::verify::Sweep;
use crate::verify::{run_verify, VerifyError, VerifyOptions};
use crate::DType;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The list's default location, relative to the repository root.
pub const MUTANTS_FILE: &str = "tests/mutants/mutants.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutantList {
    /// Whether the twin checks pipe ordering, so that sync-removal mutants must die too.
    #[serde(default)]
    pub sync_checked: bool,
    #[serde(rename = "mutant")]
    pub mutants: Vec<Mutant>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutant {
    pub id: String,
    pub op: String,
    /// The dtype combination verified (the first input's dtype).
    pub dtype: String,
    /// Relative to the project root; default `op_kernel/<stem>.cpp`.
    #[serde(default)]
    pub file: Option<String>,
    /// Exact text in the generated file; it must occur exactly once, or `occurrence` picks one
    /// (1-based) of several.
    pub find: String,
    pub replace: String,
    #[serde(default)]
    pub occurrence: Option<usize>,
    pub category: String,
    /// For an equivalent mutant, why no correct check can tell it from the original.
    #[serde(default)]
    pub equivalent: Option<String>,
}

impl Mutant {
    pub fn is_sync(&self) -> bool {
        self.category.starts_with("sync")
    }
}

/// A mutant list that cannot be used (file, mutant id, what is wrong).
#[derive(Debug, Clone, PartialEq)]
pub struct MutantsError {
    pub file: PathBuf,
    pub mutant: Option<String>,
    pub message: String,
}

impl fmt::Display for MutantsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.mutant {
            Some(id) => write!(f, "{}: mutant `{id}`: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for MutantsError {}

pub fn load(path: &Path) -> Result<MutantList, MutantsError> {
    let error = |mutant: Option<&str>, message: String| MutantsError {
        file: path.to_path_buf(),
        mutant: mutant.map(str::to_string),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(None, e.to_string()))?;
    let list: MutantList = toml::from_str(&text).map_err(|e| error(None, e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    for m in &list.mutants {
        if !seen.insert(m.id.as_str()) {
            return Err(error(Some(&m.id), "duplicate id".into()));
        }
        if DType::parse(&m.dtype).is_none() {
            return Err(error(Some(&m.id), format!("field `dtype`: unknown dtype `{}`", m.dtype)));
        }
        if m.find == m.replace {
            return Err(error(Some(&m.id), "`find` and `replace` are the same text".into()));
        }
    }
    Ok(list)
}

/// Why a mutant's `find` text does not pick one place of the generated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyError {
    NotFound,
    Ambiguous { occurrences: usize },
    NoSuchOccurrence { occurrence: usize, occurrences: usize },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::NotFound => f.write_str("the `find` text does not occur in the generated file"),
            ApplyError::Ambiguous { occurrences } => {
                write!(f, "the `find` text occurs {occurrences} times; set `occurrence`")
            }
            ApplyError::NoSuchOccurrence { occurrence, occurrences } => {
                write!(f, "occurrence {occurrence} of {occurrences}")
            }
        }
    }
}

impl std::error::Error for ApplyError {}

/// `text` with occurrence `which` (1-based; None: the only one) of `find` replaced.
pub fn apply(text: &str, m: &Mutant) -> Result<String, ApplyError> {
    let positions: Vec<usize> = text.match_indices(&m.find).map(|(i, _)| i).collect();
    let at = match (m.occurrence, positions.len()) {
        (_, 0) => return Err(ApplyError::NotFound),
        (None, 1) => positions[0],
        (None, n) => return Err(ApplyError::Ambiguous { occurrences: n }),
        (Some(k), n) if k == 0 || k > n => {
            return Err(ApplyError::NoSuchOccurrence { occurrence: k, occurrences: n })
        }
        (Some(k), _) => positions[k - 1],
    };
    Ok(format!("{}{}{}", &text[..at], m.replace, &text[at + m.find.len()..]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Verification failed (a gate, a twin rule, the host code): the mutant is detected.
    Killed,
    Survived,
    /// The mutated project did not build: the mutant is not a valid program.
    BuildFailed,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub mutant: Mutant,
    pub verdict: Verdict,
    /// The first failure verification reported (or the build error).
    pub evidence: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, Default)]
pub struct MutantsOptions {
    /// Default: [`MUTANTS_FILE`].
    pub list: Option<PathBuf>,
    /// Only mutants whose id, op or category contains this text.
    pub filter: Option<String>,
    /// Only these ids (the CI subset).
    pub ids: Vec<String>,
    pub sweep: Option<Sweep>,
}

#[derive(Debug, Clone, Default)]
pub struct MutantsReport {
    pub outcomes: Vec<Outcome>,
    pub sync_checked: bool,
}

impl MutantsReport {
    fn counted(&self, o: &Outcome) -> bool {
        o.mutant.equivalent.is_none() && (self.sync_checked || !o.mutant.is_sync())
    }

    /// (killed, counted) over the non-equivalent mutants that must die.
    pub fn kill_rate(&self) -> (usize, usize) {
        let counted: Vec<&Outcome> = self.outcomes.iter().filter(|o| self.counted(o)).collect();
        (counted.iter().filter(|o| o.verdict == Verdict::Killed).count(), counted.len())
    }

    /// Mutants that make the run fail: counted survivors, mutants that did not build, and
    /// mutants marked equivalent that were killed (their argument is wrong, or a gate fails a
    /// correct kernel: either way the list no longer says what is true).
    pub fn failures(&self) -> Vec<&Outcome> {
        self.outcomes
            .iter()
            .filter(|o| match o.verdict {
                Verdict::BuildFailed => true,
                Verdict::Survived => self.counted(o),
                Verdict::Killed => o.mutant.equivalent.is_some(),
            })
            .collect()
    }

    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<34} {:<22} {:<5} {:<16} {:>6}  {}\n",
            "mutant", "op", "dtype", "category", "time", "verdict"
        );
        for o in &self.outcomes {
            let verdict = match (o.verdict, &o.mutant.equivalent) {
                (Verdict::Killed, Some(_)) => "KILLED (marked equivalent)".to_string(),
                (Verdict::Killed, None) => "killed".to_string(),
                (Verdict::BuildFailed, _) => "BUILD FAILED".to_string(),
                (Verdict::Survived, Some(_)) => "survived (equivalent)".to_string(),
                (Verdict::Survived, None) if o.mutant.is_sync() && !self.sync_checked => {
                    "survived (sync: awaits the pipe-ordering checker)".to_string()
                }
                (Verdict::Survived, None) => "SURVIVED".to_string(),
            };
            s.push_str(&format!(
                "{:<34} {:<22} {:<5} {:<16} {:>5.1}s  {verdict}\n",
                o.mutant.id, o.mutant.op, o.mutant.dtype, o.mutant.category, o.seconds
            ));
        }
        let (killed, counted) = self.kill_rate();
        let sync: Vec<&Outcome> = self.outcomes.iter().filter(|o| o.mutant.is_sync()).collect();
        let equivalent = self.outcomes.iter().filter(|o| o.mutant.equivalent.is_some()).count();
        s.push_str(&format!(
            "kill rate: {killed}/{counted} non-equivalent mutants killed{}; {equivalent} equivalent\n",
            if counted > 0 {
                format!(" ({:.0}%)", 100.0 * killed as f64 / counted as f64)
            } else {
                String::new()
            }
        ));
        if !self.sync_checked && !sync.is_empty() {
            let sync_killed = sync.iter().filter(|o| o.verdict == Verdict::Killed).count();
            s.push_str(&format!(
                "sync-removal mutants (not counted until sync_checked = true): {sync_killed}/{} killed\n",
                sync.len()
            ));
        }
        s
    }
}

/// Runs the selected mutants and returns the report.
pub fn run_mutants(opts: &MutantsOptions) -> Result<MutantsReport, AppError> {
    let path = opts.list.clone().unwrap_or_else(|| crate::repo_root().join(MUTANTS_FILE));
    let list = load(&path).map_err(|e| AppError::input(e.to_string()))?;
    let selected: Vec<&Mutant> = list
        .mutants
        .iter()
        .filter(|m| opts.ids.is_empty() || opts.ids.contains(&m.id))
        .filter(|m| {
            opts.filter
                .as_ref()
                .is_none_or(|f| m.id.contains(f.as_str()) || m.op == *f || m.category.contains(f.as_str()))
        })
        .collect();
    if selected.is_empty() {
        return Err(AppError::input(format!("{}: no mutant matches the selection", path.display())));
    }
    let specs = load_specs(None, &[])?;
    let project = render(&specs)?;
    // Removed on drop: an early `?` below (an unknown op, a needle that does not match) or a
    // panic leaves no mutated projects behind.
    let scratch = ScratchDir::new("mutants").map_err(|e| AppError::failed(e.to_string()))?;
    let mut report = MutantsReport { outcomes: Vec::new(), sync_checked: list.sync_checked };
    for m in selected {
        let started = Instant::now();
        let spec = specs.iter().find(|s| s.name == m.op).ok_or_else(|| {
            AppError::input(format!("{}: mutant `{}`: unknown op `{}`", path.display(), m.id, m.op))
        })?;
        let file = m.file.clone().unwrap_or_else(|| format!("op_kernel/{}.cpp", spec.file_stem()));
        let mut mutated = project.clone();
        let target = mutated.files.iter_mut().find(|f| f.path == file).ok_or_else(|| {
            AppError::input(format!("{}: mutant `{}`: the project has no {file}", path.display(), m.id))
        })?;
        target.contents = apply(&target.contents, m)
            .map_err(|e| AppError::input(format!("{}: mutant `{}`: {file}: {e}", path.display(), m.id)))?;
        let dir = scratch.path().join(&m.id);
        write_atomically(&dir, &mutated).map_err(|e| AppError::failed(e.to_string()))?;
        let dtype = DType::parse(&m.dtype).expect("checked by load");
        let result = run_verify(&VerifyOptions {
            from: Some(dir.clone()),
            ops: vec![m.op.clone()],
            dtypes: vec![dtype],
            sweep: opts.sweep.unwrap_or(Sweep::Quick),
            sanitize: false,
            // One failing case kills a mutant; a survivor still runs the whole sweep.
            fail_fast: true,
            ..VerifyOptions::default()
        });
        let (verdict, evidence) = match result {
            Ok(r) if r.failures.is_empty() && r.cases_run > 0 => (Verdict::Survived, String::new()),
            Ok(r) if r.cases_run == 0 => {
                (Verdict::BuildFailed, format!("no case ran for {} {}", m.op, m.dtype))
            }
            Ok(r) => (Verdict::Killed, r.failures[0].clone()),
            Err(VerifyError::Build(m)) => (Verdict::BuildFailed, m),
            Err(e) => (Verdict::Killed, e.to_string()),
        };
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!("mutants: {}: {:?}", m.id, verdict);
        report.outcomes.push(Outcome {
            mutant: m.clone(),
            verdict,
            evidence,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok(report)
}

pub fn mutants(opts: &MutantsOptions) -> Result<(), AppError> {
    let report = run_mutants(opts)?;
    print!("{}", report.table());
    let failures = report.failures();
    if failures.is_empty() {
        return Ok(());
    }
    let mut message =
        format!("mutants: {} mutant(s) not killed, or killed though marked equivalent:", failures.len());
    for o in failures {
        let marked = if o.mutant.equivalent.is_some() { " (marked equivalent)" } else { "" };
        message.push_str(&format!(
            "\n  {} ({} {}, {}): {:?}{marked} {}",
            o.mutant.id, o.mutant.op, o.mutant.dtype, o.mutant.category, o.verdict, o.evidence
        ));
    }
    Err(AppError::failed(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutant(find: &str, replace: &str, occurrence: Option<usize>) -> Mutant {
        Mutant {
            id: "m".into(),
            op: "rms_norm".into(),
            dtype: "f16".into(),
            file: None,
            find: find.into(),
            replace: replace.into(),
            occurrence,
            category: "cast-round".into(),
            equivalent: None,
        }
    }

    fn outcome(id: &str, equivalent: bool, verdict: Verdict) -> Outcome {
        let mut m = mutant("RINT", "TRUNC", None);
        m.id = id.into();
        m.equivalent = equivalent.then(|| "no correct check can tell".into());
        Outcome { mutant: m, verdict, evidence: String::new(), seconds: 0.0 }
    }

    #[test]
    fn a_killed_equivalent_mutant_fails_the_run() {
        let report = MutantsReport {
            outcomes: vec![
                outcome("dies", false, Verdict::Killed),
                outcome("equal", true, Verdict::Survived),
                outcome("not-equal-after-all", true, Verdict::Killed),
            ],
            sync_checked: false,
        };
        let failed: Vec<&str> = report.failures().iter().map(|o| o.mutant.id.as_str()).collect();
        assert_eq!(failed, ["not-equal-after-all"]);
        assert_eq!(report.kill_rate(), (1, 1));
        assert!(report.table().contains("KILLED (marked equivalent)"), "{}", report.table());
        // The same list without the wrong mark passes.
        let fine = MutantsReport { outcomes: report.outcomes[..2].to_vec(), sync_checked: false };
        assert!(fine.failures().is_empty());
    }

    #[test]
    fn apply_replaces_exactly_one_occurrence() {
        assert_eq!(apply("a RINT b", &mutant("RINT", "TRUNC", None)).unwrap(), "a TRUNC b");
        assert!(apply("RINT RINT", &mutant("RINT", "TRUNC", None))
            .unwrap_err()
            .to_string()
            .contains("2 times"));
        assert_eq!(apply("RINT RINT", &mutant("RINT", "TRUNC", Some(2))).unwrap(), "RINT TRUNC");
        assert!(apply("x", &mutant("RINT", "TRUNC", None)).is_err());
        assert!(apply("RINT", &mutant("RINT", "TRUNC", Some(2))).is_err());
    }

    #[test]
    fn the_catalogue_list_loads_and_every_mutant_applies() {
        let list = load(&crate::repo_root().join(MUTANTS_FILE)).unwrap();
        assert!(list.mutants.len() >= 30, "{} mutants", list.mutants.len());
        let specs = load_specs(None, &[]).unwrap();
        let project = render(&specs).unwrap();
        for m in &list.mutants {
            let spec =
                specs.iter().find(|s| s.name == m.op).unwrap_or_else(|| panic!("{}: op {}", m.id, m.op));
            let file = m.file.clone().unwrap_or_else(|| format!("op_kernel/{}.cpp", spec.file_stem()));
            let text = &project.file(&file).unwrap_or_else(|| panic!("{}: {file}", m.id)).contents;
            if let Err(e) = apply(text, m) {
                panic!("mutant {}: {e}", m.id);
            }
            assert!(
                m.equivalent.as_ref().is_none_or(|why| why.len() > 40),
                "{}: say why it is equivalent",
                m.id
            );
        }
        // Every family is mutated.
        for family in ["rms_norm", "rotary_mul", "gelu_tanh", "bsnd_to_bnsd", "reshape_and_cache_int8"] {
            assert!(list.mutants.iter().any(|m| m.op == family), "no mutant of {family}");
        }
    }
}
