//! Filters over stacks and threads, as flame graph queries take them from
//! users: a frame regex to include or exclude stacks, and a thread name.
//!
//! Patterns come from untrusted query strings, so they are length-limited
//! and compiled with a size limit: a pathological pattern is an error the
//! API reports as 422, never a slow query.

use regex::Regex;

use crate::model::WeightedStack;
pub use crate::pattern::{compile, FilterError, MAX_PATTERN_LEN};

/// Keeps or drops whole stacks by their frames' names.
#[derive(Debug, Clone, Default)]
pub struct StackFilter {
    /// Keep only stacks with at least one frame matching.
    pub include: Option<Regex>,
    /// Drop stacks with any frame matching.
    pub exclude: Option<Regex>,
}

impl StackFilter {
    /// From the optional `include` and `exclude` query parameters.
    pub fn new(include: Option<&str>, exclude: Option<&str>) -> Result<Self, FilterError> {
        Ok(StackFilter {
            include: include.map(|p| compile("include", p)).transpose()?,
            exclude: exclude.map(|p| compile("exclude", p)).transpose()?,
        })
    }

    pub fn is_noop(&self) -> bool {
        self.include.is_none() && self.exclude.is_none()
    }

    pub fn keeps(&self, frames: &[String]) -> bool {
        if let Some(include) = &self.include {
            if !frames.iter().any(|f| include.is_match(f)) {
                return false;
            }
        }
        match &self.exclude {
            Some(exclude) => !frames.iter().any(|f| exclude.is_match(f)),
            None => true,
        }
    }

    /// The stacks this filter keeps.
    pub fn apply(&self, stacks: Vec<WeightedStack>) -> Vec<WeightedStack> {
        if self.is_noop() {
            return stacks;
        }
        stacks
            .into_iter()
            .filter(|s| self.keeps(&s.frames))
            .collect()
    }
}

/// Selects threads by name: equal to the given text, or matching it as a
/// regular expression (so `worker-1` finds that thread and `^worker-` all
/// workers). Text that is no valid regex (thread names like `pool(1`)
/// matches by equality only.
#[derive(Debug, Clone)]
pub struct ThreadFilter {
    text: String,
    pattern: Option<Regex>,
}

impl ThreadFilter {
    pub fn new(text: &str) -> Result<Self, FilterError> {
        let pattern = match compile("thread", text) {
            Ok(pattern) => Some(pattern),
            Err(FilterError::Invalid { .. }) => None,
            Err(other) => return Err(other),
        };
        Ok(ThreadFilter {
            pattern,
            text: text.to_owned(),
        })
    }

    pub fn matches(&self, name: &str) -> bool {
        name == self.text || self.pattern.as_ref().is_some_and(|p| p.is_match(name))
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    fn names(stacks: &[WeightedStack]) -> Vec<String> {
        stacks.iter().map(|s| s.frames.join(";")).collect()
    }

    #[test]
    fn include_keeps_stacks_with_a_matching_frame() {
        let stacks = vec![
            ws(&["main", "hot"], 6),
            ws(&["main", "warm"], 3),
            ws(&["other"], 1),
        ];
        let filter = StackFilter::new(Some("^(hot|warm)$"), None).unwrap();
        assert_eq!(names(&filter.apply(stacks)), ["main;hot", "main;warm"]);
    }

    #[test]
    fn exclude_drops_stacks_with_any_matching_frame() {
        let stacks = vec![ws(&["main", "hot"], 6), ws(&["main", "warm"], 3)];
        let filter = StackFilter::new(None, Some("hot")).unwrap();
        assert_eq!(names(&filter.apply(stacks)), ["main;warm"]);
    }

    #[test]
    fn include_and_exclude_combine() {
        let stacks = vec![
            ws(&["main", "hot"], 6),
            ws(&["main", "warm"], 3),
            ws(&["idle"], 1),
        ];
        let filter = StackFilter::new(Some("main"), Some("warm")).unwrap();
        assert_eq!(names(&filter.apply(stacks)), ["main;hot"]);
        assert!(!filter.is_noop());
        assert!(StackFilter::default().is_noop());
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(matches!(
            StackFilter::new(Some("(unclosed"), None),
            Err(FilterError::Invalid {
                what: "include",
                ..
            })
        ));
        assert_eq!(
            StackFilter::new(None, Some(&"a".repeat(MAX_PATTERN_LEN + 1))).unwrap_err(),
            FilterError::TooLong { what: "exclude" }
        );
        assert_eq!(
            ThreadFilter::new("").unwrap_err(),
            FilterError::Empty { what: "thread" }
        );
        // Compiles to far more than the size limit.
        assert!(matches!(
            compile("include", r"\w{1000}\w{1000}"),
            Err(FilterError::Invalid { .. })
        ));
    }

    #[test]
    fn threads_match_by_name_or_pattern() {
        let exact = ThreadFilter::new("worker-1").unwrap();
        assert!(exact.matches("worker-1"));
        assert!(!exact.matches("main"));
        let pattern = ThreadFilter::new("^worker-").unwrap();
        assert!(pattern.matches("worker-7") && !pattern.matches("main"));
        // Names that are no valid regex still match exactly.
        let literal = ThreadFilter::new("pool(1").unwrap();
        assert!(literal.matches("pool(1") && !literal.matches("pool1"));
        assert_eq!(literal.as_str(), "pool(1");
    }
}
