//! Ids, host and service names as the API takes them. They go into URL
//! paths and queries, so what would change the URL is refused rather than
//! escaped (the API accepts no such names anyway), with exit code 2 like
//! any other malformed argument.

use uuid::Uuid;

use crate::exit::usage;

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
        return Err(usage(format!(
            "{what} {name:?}: names hold only letters, digits, `.`, `-` and `_`"
        )));
    }
    Ok(name)
}

/// `text` as the id of `what` (a profile, a run, a schedule...): a UUID.
pub(crate) fn parse_id(what: &str, text: &str) -> anyhow::Result<Uuid> {
    Uuid::parse_str(text.trim()).map_err(|_| usage(format!("{text:?} is not a {what} id (a UUID)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_change_the_url_are_refused() {
        assert!(checked_name("host", "web-1.eu").is_ok());
        for bad in ["", ".", "..", "a/b", "..%2f", "a?mode=now", "a&b=c", "a b"] {
            let error = checked_name("host", bad).unwrap_err();
            assert_eq!(crate::exit::exit_code(&error), 2, "{bad}");
        }
        assert!(checked_name("host", &"a".repeat(254)).is_err());
    }

    #[test]
    fn ids_are_uuids_and_anything_else_is_bad_usage() {
        let id = "fbd9ebf4-421e-4010-ad22-9c9a68b0baa0";
        assert_eq!(parse_id("profile", id).unwrap().to_string(), id);
        for bad in [
            "",
            "fbd9ebf4",
            "../x",
            "fbd9ebf4-421e-4010-ad22-9c9a68b0baa0x",
        ] {
            let error = parse_id("profile", bad).unwrap_err();
            assert_eq!(crate::exit::exit_code(&error), 2, "{bad}");
            assert!(error.to_string().contains("is not a profile id"), "{error}");
        }
    }
}
