//! Folded stacks (`root;child;leaf COUNT` per line), the lingua franca of
//! flame graph tools (Brendan Gregg's `stackcollapse`, inferno).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::model::WeightedStack;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FoldedError {
    #[error("line {line}: expected `frame;frame;... COUNT`")]
    MissingCount { line: usize },
    #[error("line {line}: count {text:?} is not a non-negative integer")]
    BadCount { line: usize, text: String },
    #[error("line {line}: empty stack")]
    EmptyStack { line: usize },
}

/// Writes stacks as folded text, identical stacks merged, lines sorted.
pub fn to_folded(stacks: &[WeightedStack]) -> String {
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for stack in stacks {
        if stack.frames.is_empty() || stack.count == 0 {
            continue;
        }
        let names: Vec<String> = stack.frames.iter().map(|f| sanitize(f)).collect();
        *merged.entry(names.join(";")).or_insert(0) += stack.count;
    }
    let mut out = String::new();
    for (line, count) in merged {
        out.push_str(&line);
        out.push(' ');
        out.push_str(&count.to_string());
        out.push('\n');
    }
    out
}

/// `;` separates frames and a newline ends a stack, so neither may appear
/// inside a frame name.
fn sanitize(frame: &str) -> String {
    frame.replace(';', ":").replace(['\n', '\r'], " ")
}

/// Parses folded text. Blank lines are skipped; anything else malformed is
/// an error naming the line.
pub fn parse_folded(text: &str) -> Result<Vec<WeightedStack>, FoldedError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim_end();
        if trimmed.trim().is_empty() {
            continue;
        }
        let (stack, count) = trimmed
            .rsplit_once(' ')
            .ok_or(FoldedError::MissingCount { line })?;
        let count: u64 = count.parse().map_err(|_| FoldedError::BadCount {
            line,
            text: count.to_owned(),
        })?;
        let frames: Vec<String> = stack
            .split(';')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
        if frames.is_empty() {
            return Err(FoldedError::EmptyStack { line });
        }
        out.push(WeightedStack { frames, count });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn writes_merged_sorted_lines() {
        let text = to_folded(&[
            ws(&["main", "b"], 2),
            ws(&["main", "a"], 1),
            ws(&["main", "b"], 3),
        ]);
        assert_eq!(text, "main;a 1\nmain;b 5\n");
    }

    #[test]
    fn parses_and_reports_bad_lines() {
        assert_eq!(
            parse_folded("main;a 1\n\nmain;b 5\n").unwrap(),
            vec![ws(&["main", "a"], 1), ws(&["main", "b"], 5)]
        );
        assert_eq!(
            parse_folded("main;a\n"),
            Err(FoldedError::MissingCount { line: 1 })
        );
        assert!(matches!(
            parse_folded("ok 1\nmain x\n"),
            Err(FoldedError::BadCount { line: 2, .. })
        ));
        assert_eq!(
            parse_folded(";; 4"),
            Err(FoldedError::EmptyStack { line: 1 })
        );
    }

    #[test]
    fn frame_names_with_separators_are_sanitized() {
        let text = to_folded(&[ws(&["std::map<a;b>", "x y"], 1)]);
        assert_eq!(
            parse_folded(&text).unwrap(),
            vec![ws(&["std::map<a:b>", "x y"], 1)]
        );
    }

    proptest! {
        #[test]
        fn round_trips(stacks in proptest::collection::vec(
            (proptest::collection::vec("[a-zA-Z_:<> ]{0,6}[a-z]", 1..8), 1u64..1000), 0..30)) {
            let stacks: Vec<WeightedStack> = stacks.into_iter().map(|(frames, count)| WeightedStack { frames, count }).collect();
            let text = to_folded(&stacks);
            let parsed = parse_folded(&text).unwrap();
            prop_assert_eq!(to_folded(&parsed), text);
            let total: u64 = stacks.iter().map(|s| s.count).sum();
            prop_assert_eq!(parsed.iter().map(|s| s.count).sum::<u64>(), total);
        }
    }
}
