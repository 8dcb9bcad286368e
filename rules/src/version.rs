//! Version strings as agents report them (`2.14.1`, `1.1.1w`,
//! `33.0.0-jre`, `2.0-beta9`, `3.12.0rc1`, `1.8.0_392`) and ranges over
//! them (`>=2.0-beta9, <2.15.0`), for the `library_version` and
//! `runtime_option` kinds.
//!
//! Ecosystems disagree on what follows the numbers (Maven qualifiers,
//! PEP 440 pre-releases, OpenSSL letter releases), so the ordering is this
//! one, close to Maven's `ComparableVersion` and PEP 440 where they agree:
//!
//! - A leading `v` before a digit and everything from a `+` on (build
//!   metadata, as in semver and `17.0.15+6`) are ignored.
//! - The *release* is the leading run of dot-separated numbers; releases
//!   compare numerically segment by segment, a missing segment counting as
//!   0 (`2.0` = `2.0.0`, `1.10` > `1.9`).
//! - Equal releases compare their *suffix*, the rest split into runs of
//!   digits and of letters (other characters only separate them), item by
//!   item, a missing item counting as "nothing". Items order as:
//!   pre-release words < nothing < other words < numbers above 0.
//!   - Pre-release words, lowest first: `dev`, `snapshot`, `ea`, `nightly`;
//!     `alpha`; `beta`; `milestone`; `rc`, `cr`, `pre`, `preview`; the
//!     letters `a`, `b`, `m` and `c` count as alpha, beta, milestone and rc
//!     when a digit follows them (`1.0a1`, `2.0b3`). So `2.0-beta9` <
//!     `2.0-rc1` < `2.0` and `3.12.0rc1` < `3.12`.
//!   - `final`, `ga` and `release`, and the number 0, count as nothing
//!     (`5.3.1.Final` = `5.3.1`).
//!   - Other words (`w`, `sp`, `post`, `jre`) mean a later build of the
//!     same release and compare alphabetically, ignoring case: `1.1.1w` >
//!     `1.1.1v` > `1.1.1`, `33.0.0-jre` > `33.0.0`. Any number above 0
//!     comes after them: `2.0-sp1` < `2.0-1`.
//!
//! The ordering is total: two versions are equal exactly when they agree
//! after dropping what counts as nothing at their ends, so ranges behave
//! (`>=v` holds exactly where `<v` does not).

use std::cmp::Ordering;
use std::fmt;

/// One segment of a release or item of a suffix, in the order above (the
/// derived order follows the variants' order, then their contents).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    /// A pre-release word, by rank (0 `dev` … 4 `rc`).
    Pre(u8),
    /// What a missing segment or item counts as: 0, `final`, `ga`.
    Nothing,
    /// Any other word, lowercase.
    Word(String),
    /// A number above 0.
    Number(Digits),
}

/// A number of any length, as its digits without leading zeros (never
/// empty: zero is [`Item::Nothing`]). Longer is larger, then by digits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Digits(String);

impl Ord for Digits {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Digits {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn number(digits: &str) -> Item {
    match digits.trim_start_matches('0') {
        "" => Item::Nothing,
        significant => Item::Number(Digits(significant.to_owned())),
    }
}

fn word(letters: &str, digit_follows: bool) -> Item {
    let lower = letters.to_ascii_lowercase();
    let pre = match lower.as_str() {
        "dev" | "snapshot" | "ea" | "nightly" => Some(0),
        "alpha" => Some(1),
        "beta" => Some(2),
        "milestone" => Some(3),
        "rc" | "cr" | "pre" | "preview" => Some(4),
        "a" if digit_follows => Some(1),
        "b" if digit_follows => Some(2),
        "m" if digit_follows => Some(3),
        "c" if digit_follows => Some(4),
        "final" | "ga" | "release" => return Item::Nothing,
        _ => None,
    };
    pre.map_or(Item::Word(lower), Item::Pre)
}

/// A parsed version; see the module documentation for its ordering. Every
/// string parses (at worst to the empty version, equal to `0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Both without trailing [`Item::Nothing`], so that equal versions are
    /// structurally equal.
    release: Vec<Item>,
    suffix: Vec<Item>,
}

impl Version {
    pub fn parse(text: &str) -> Version {
        let text = text.trim();
        let text = text.split('+').next().unwrap_or_default();
        let text = match text.strip_prefix(['v', 'V']) {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
            _ => text,
        };
        let mut release = Vec::new();
        let mut rest = text;
        loop {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if end == 0 {
                break;
            }
            release.push(number(&rest[..end]));
            rest = &rest[end..];
            match rest.strip_prefix('.') {
                Some(next) if next.starts_with(|c: char| c.is_ascii_digit()) => rest = next,
                _ => break,
            }
        }
        let mut suffix = Vec::new();
        while let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric()) {
            rest = &rest[start..];
            let digits = rest.starts_with(|c: char| c.is_ascii_digit());
            let end = rest
                .find(|c: char| {
                    if digits {
                        !c.is_ascii_digit()
                    } else {
                        !c.is_ascii_alphabetic()
                    }
                })
                .unwrap_or(rest.len());
            let (run, after) = rest.split_at(end);
            suffix.push(if digits {
                number(run)
            } else {
                word(run, after.starts_with(|c: char| c.is_ascii_digit()))
            });
            rest = after;
        }
        for items in [&mut release, &mut suffix] {
            while items.last() == Some(&Item::Nothing) {
                items.pop();
            }
        }
        Version { release, suffix }
    }
}

/// Compares item by item, the shorter padded with [`Item::Nothing`].
fn padded_cmp(a: &[Item], b: &[Item]) -> Ordering {
    let nothing = Item::Nothing;
    (0..a.len().max(b.len()))
        .map(|i| {
            let x = a.get(i).unwrap_or(&nothing);
            let y = b.get(i).unwrap_or(&nothing);
            x.cmp(y)
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        padded_cmp(&self.release, &other.release)
            .then_with(|| padded_cmp(&self.suffix, &other.suffix))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    /// Longest spellings first, so `<=` is not read as `<`.
    const SPELLINGS: [(&'static str, Op); 7] = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("!=", Op::Ne),
        ("==", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
    ];

    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Op::Lt => ordering.is_lt(),
            Op::Le => ordering.is_le(),
            Op::Gt => ordering.is_gt(),
            Op::Ge => ordering.is_ge(),
            Op::Eq => ordering.is_eq(),
            Op::Ne => ordering.is_ne(),
        }
    }
}

/// A comma-separated list of comparators (`<`, `<=`, `>`, `>=`, `=` or
/// `==`, `!=`), all of which a version must satisfy: `>=2.0-beta9, <2.15.0`.
#[derive(Debug, Clone)]
pub struct Range {
    text: String,
    comparators: Vec<(Op, Version)>,
}

/// Why a version range does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("empty comparator in `{0}`")]
    EmptyComparator(String),
    #[error("comparator `{0}` needs an operator: <, <=, >, >=, = or !=")]
    NoOperator(String),
    #[error("comparator `{0}` has no version")]
    NoVersion(String),
    #[error(
        "comparator `{part}`: `{version}` is not a version (it must start with a letter or digit)"
    )]
    NotAVersion { part: String, version: String },
}

impl Range {
    pub fn parse(text: &str) -> Result<Range, RangeError> {
        let mut comparators = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(RangeError::EmptyComparator(text.to_owned()));
            }
            let Some((op, version)) = Op::SPELLINGS
                .iter()
                .find_map(|(spelling, op)| part.strip_prefix(spelling).map(|v| (*op, v.trim())))
            else {
                return Err(RangeError::NoOperator(part.to_owned()));
            };
            if version.is_empty() {
                return Err(RangeError::NoVersion(part.to_owned()));
            }
            if !version.starts_with(|c: char| c.is_ascii_alphanumeric()) {
                return Err(RangeError::NotAVersion {
                    part: part.to_owned(),
                    version: version.to_owned(),
                });
            }
            comparators.push((op, Version::parse(version)));
        }
        Ok(Range {
            text: text.trim().to_owned(),
            comparators,
        })
    }

    pub fn contains(&self, version: &Version) -> bool {
        self.comparators
            .iter()
            .all(|(op, bound)| op.holds(version.cmp(bound)))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(text: &str) -> Version {
        Version::parse(text)
    }

    #[test]
    fn versions_order_as_documented() {
        let ascending = [
            "0",
            "1.0-SNAPSHOT",
            "1.0a1",
            "1.0a2",
            "1.0b1",
            "1.0-m1",
            "1.0rc1",
            "1.0",
            "1.0.post1",
            "1.0-sp1",
            "1.0-1",
            "1.1.1",
            "1.1.1a",
            "1.1.1v",
            "1.1.1w",
            "1.2",
            "1.8.0_72",
            "1.8.0_392",
            "1.10",
            "2.0-beta9",
            "2.0.0-rc1",
            "2.0",
            "2.14.1",
            "2.15.0",
            "3.11.0rc1",
            "3.11",
            "33.0.0",
            "33.0.0-android",
            "33.0.0-jre",
            "99999999999999999999999",
            "100000000000000000000000",
        ];
        for pair in ascending.windows(2) {
            assert_eq!(v(pair[0]).cmp(&v(pair[1])), Ordering::Less, "{pair:?}");
        }
    }

    #[test]
    fn equal_spellings_are_equal() {
        for (a, b) in [
            ("2.0", "2.0.0"),
            ("v1.2", "1.2"),
            ("5.3.1.Final", "5.3.1"),
            ("2.0.0.RELEASE", "2.0"),
            ("17.0.15+6", "17.0.15"),
            ("1.02", "1.2"),
            ("2.0-RC1", "2.0rc1"),
            ("", "0"),
        ] {
            assert_eq!(v(a), v(b), "{a} = {b}");
        }
    }

    #[test]
    fn ranges_hold_all_their_comparators() {
        let log4shell = Range::parse(">=2.0-beta9, <2.15.0, !=2.12.2").unwrap();
        for (version, inside) in [
            ("2.0-beta8", false),
            ("2.0-beta9", true),
            ("2.0", true),
            ("2.12.2", false),
            ("2.14.1", true),
            ("2.15.0", false),
            ("2.17.1", false),
        ] {
            assert_eq!(log4shell.contains(&v(version)), inside, "{version}");
        }
        let exact = Range::parse("== 1.2").unwrap();
        assert!(exact.contains(&v("1.2.0")) && !exact.contains(&v("1.2.1")));
        assert!(Range::parse("<=2").unwrap().contains(&v("2.0.0")));
        assert!(Range::parse(">1").unwrap().contains(&v("1.0.1")));
        assert_eq!(log4shell.to_string(), ">=2.0-beta9, <2.15.0, !=2.12.2");
    }

    #[test]
    fn malformed_ranges_say_why() {
        let err = |text: &str| Range::parse(text).unwrap_err().to_string();
        assert!(err("").contains("empty comparator"));
        assert!(err(">=1.0,").contains("empty comparator"));
        assert!(err("1.0").contains("needs an operator"));
        assert!(err("~1.0").contains("needs an operator"));
        assert!(err(">= ").contains("has no version"));
        assert!(err("<.-").contains("is not a version"));
        assert!(err(">=<1").contains("is not a version"));
    }

    fn version_text() -> impl Strategy<Value = String> {
        let release = prop::collection::vec(0u32..12, 0..4).prop_map(|segments| {
            segments
                .iter()
                .map(|n| {
                    if *n == 11 {
                        "007".into()
                    } else {
                        n.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(".")
        });
        let item = prop_oneof![
            (0u32..4).prop_map(|n| n.to_string()),
            prop::sample::select(vec![
                "a", "b", "c", "m", "w", "alpha", "Beta", "rc", "dev", "SNAPSHOT", "final", "ga",
                "post", "sp", "jre",
            ])
            .prop_map(str::to_owned),
        ];
        let separator = prop::sample::select(vec!["", ".", "-", "_"]);
        let suffix = prop::collection::vec((separator, item), 0..4).prop_map(|items| {
            items
                .into_iter()
                .map(|(s, i)| format!("{s}{i}"))
                .collect::<String>()
        });
        (release, suffix).prop_map(|(r, s)| r + &s)
    }

    proptest! {
        #[test]
        fn the_ordering_is_a_total_order(
            a in version_text(),
            b in version_text(),
            c in version_text(),
        ) {
            let (a, b, c) = (v(&a), v(&b), v(&c));
            prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
            prop_assert_eq!(a.cmp(&b).is_eq(), a == b);
            prop_assert_eq!(a.cmp(&a), Ordering::Equal);
            if a <= b && b <= c {
                prop_assert!(a <= c, "{a:?} <= {b:?} <= {c:?}");
            }
            if a == b {
                prop_assert_eq!(a.cmp(&c), b.cmp(&c));
            }
        }

        #[test]
        fn comparators_agree_with_the_ordering(a in version_text(), b in version_text()) {
            let at = |op: &str| Range::parse(&format!("{op}{b}")).map(|r| r.contains(&v(&a)));
            // An empty bound, or one starting with a separator, is rejected.
            prop_assume!(at("<").is_ok());
            let holds = |op: &str| at(op).unwrap();
            prop_assert_eq!(holds(">="), !holds("<"));
            prop_assert_eq!(holds("<="), !holds(">"));
            prop_assert_eq!(holds("="), holds(">=") && holds("<="));
            prop_assert_eq!(holds("!="), !holds("="));
            prop_assert_eq!(holds("<"), v(&a) < v(&b));
        }

        #[test]
        fn sorting_is_consistent(mut texts in prop::collection::vec(version_text(), 0..20)) {
            texts.sort_by_key(|t| v(t));
            for pair in texts.windows(2) {
                prop_assert!(v(&pair[0]) <= v(&pair[1]));
            }
        }
    }
}
