//! User-supplied regular expressions, which filters and targets take
//! from untrusted input: length-limited and compiled with a size limit,
//! so a pathological pattern is an error (the API's 422), never a slow
//! query. Re-exported by [`crate::filter`].

use regex::{Regex, RegexBuilder};
use thiserror::Error;

/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1000;
/// Compiled program size limit (the `regex` crate's default is 10 MiB).
const COMPILED_SIZE_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum FilterError {
    #[error("`{what}` is longer than {MAX_PATTERN_LEN} bytes")]
    TooLong { what: &'static str },
    #[error("`{what}` is empty")]
    Empty { what: &'static str },
    #[error("`{what}` is not a usable regular expression: {reason}")]
    Invalid { what: &'static str, reason: String },
}

/// Compiles a user-supplied pattern; `what` names the parameter in errors.
pub fn compile(what: &'static str, pattern: &str) -> Result<Regex, FilterError> {
    if pattern.is_empty() {
        return Err(FilterError::Empty { what });
    }
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(FilterError::TooLong { what });
    }
    RegexBuilder::new(pattern)
        .size_limit(COMPILED_SIZE_LIMIT)
        .dfa_size_limit(COMPILED_SIZE_LIMIT)
        .build()
        .map_err(|e| FilterError::Invalid {
            what,
            // The error's text spans several lines with a caret diagram.
            reason: e.to_string().lines().last().unwrap_or("").trim().to_owned(),
        })
}
