//! Spec errors: each names the file, line, column and field.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    pub file: PathBuf,
    /// 1-based; 0 when the error concerns the whole file.
    pub line: usize,
    pub column: usize,
    /// Dotted path of the field, e.g. `inputs[1].dtypes`; empty for whole-file errors.
    pub field: String,
    pub message: String,
}

impl SpecError {
    pub fn whole_file(file: &Path, message: String) -> Self {
        SpecError { file: file.to_path_buf(), line: 0, column: 0, field: String::new(), message }
    }

    /// An error located at byte `offset` of `text`.
    pub fn at(file: &Path, text: &str, offset: usize, field: &str, message: String) -> Self {
        let (line, column) = line_column(text, offset);
        SpecError { file: file.to_path_buf(), line, column, field: field.to_string(), message }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SpecError {}

/// Collects located errors while validating one spec.
pub(crate) struct Reporter<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    pub errors: SpecErrors,
}

impl Reporter<'_> {
    pub fn error<T>(&mut self, spanned: &toml::Spanned<T>, field: &str, message: String) {
        self.error_at(spanned.span().start, field, message);
    }

    /// An error at a byte offset of the spec text (e.g. inside an expression string).
    pub fn error_at(&mut self, offset: usize, field: &str, message: String) {
        let e = SpecError::at(self.path, self.text, offset, field, message);
        self.errors.push(e);
    }
}

/// Every problem found in one run, so a user fixes them all at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl SpecErrors {
    pub fn one(error: SpecError) -> Self {
        SpecErrors(vec![error])
    }
    pub fn push(&mut self, error: SpecError) {
        self.0.push(error);
    }
    pub fn extend(&mut self, other: SpecErrors) {
        self.0.extend(other.0);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_result<T>(self, value: T) -> Result<T, SpecErrors> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}
