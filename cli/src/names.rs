//! Host and service names as the API takes them. They go into URL paths
//! and queries, so what would change the URL is refused rather than
//! escaped (the API accepts no such names anyway).

use anyhow::bail;

/// `name` if it is 1 to 253 letters, digits, `.`, `-` or `_`, and not
/// only dots (`.` and `..` are a path's dot segments); `what` names it in
/// the error.
pub(crate) fn checked_name<'a>(what: &str, name: &'a str) -> anyhow::Result<&'a str> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.chars().any(|c| c != '.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if !valid {
        bail!("{what} {name:?}: names hold only letters, digits, `.`, `-` and `_`");
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_change_the_url_are_refused() {
        assert!(checked_name("host", "web-1.eu").is_ok());
        for bad in ["", ".", "..", "a/b", "..%2f", "a?mode=now", "a&b=c", "a b"] {
            assert!(checked_name("host", bad).is_err(), "{bad}");
        }
        assert!(checked_name("host", &"a".repeat(254)).is_err());
    }
}
