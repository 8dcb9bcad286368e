//! Times on the command line: an RFC 3339 time, `now`, or how long ago
//! (`30m`, `1h`, `2d`, `1w`, `1h30m`), as `--since` and `--until` take them.

use chrono::{DateTime, Duration, Utc};

/// A time as given, resolved against the clock once the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    At(DateTime<Utc>),
    /// This long before now (zero is now).
    Ago(Duration),
}

impl When {
    pub(crate) fn at(self, now: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            When::At(at) => at,
            When::Ago(span) => now - span,
        }
    }
}

/// clap's parser of `--since` and `--until`.
pub(crate) fn parse_when(text: &str) -> Result<When, String> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case("now") {
        return Ok(When::Ago(Duration::zero()));
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(trimmed) {
        return Ok(When::At(at.with_timezone(&Utc)));
    }
    let span = trimmed.strip_suffix("ago").unwrap_or(trimmed).trim_end();
    parse_span(span).map(When::Ago).map_err(|_| {
        format!(
            "{text:?} is not a time: give `now`, how long ago (30m, 1h, 2d, 1w, 1h30m) \
             or an RFC 3339 time like 2026-11-21T10:00:00Z"
        )
    })
}

/// `30m`, `1h`, `2d`, `1w`, `90s` or sums like `1h30m`.
pub(crate) fn parse_span(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a span like 30m, 1h, 2d or 1h30m");
    if text.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::zero();
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: i64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let seconds_per = match unit {
            "s" | "sec" | "secs" => 1,
            "m" | "min" | "mins" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 604_800,
            _ => return Err(bad()),
        };
        let seconds = number.checked_mul(seconds_per).ok_or_else(bad)?;
        total = Duration::try_seconds(seconds)
            .and_then(|d| total.checked_add(&d))
            .ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap()
    }

    fn at(text: &str) -> Result<String, String> {
        parse_when(text).map(|w| w.at(now()).to_rfc3339())
    }

    #[test]
    fn spans_before_now() {
        assert_eq!(at("1h").unwrap(), "2026-11-27T11:00:00+00:00");
        assert_eq!(at("2d").unwrap(), "2026-11-25T12:00:00+00:00");
        assert_eq!(at("30m").unwrap(), "2026-11-27T11:30:00+00:00");
        assert_eq!(at("90s").unwrap(), "2026-11-27T11:58:30+00:00");
        assert_eq!(at("1w").unwrap(), "2026-11-20T12:00:00+00:00");
        assert_eq!(at("1h30m").unwrap(), "2026-11-27T10:30:00+00:00");
        assert!(at("2 days ago").is_err());
        assert_eq!(at("2days ago").unwrap(), "2026-11-25T12:00:00+00:00");
        assert_eq!(at("now").unwrap(), "2026-11-27T12:00:00+00:00");
        assert_eq!(at("NOW").unwrap(), "2026-11-27T12:00:00+00:00");
    }

    #[test]
    fn rfc_3339_times_as_before() {
        assert_eq!(
            at("2026-11-21T10:00:00Z").unwrap(),
            "2026-11-21T10:00:00+00:00"
        );
        assert_eq!(
            at("2026-11-21T11:00:00+01:00").unwrap(),
            "2026-11-21T10:00:00+00:00"
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_forms_accepted() {
        for bad in [
            "",
            "h",
            "1",
            "1x",
            "-1h",
            "1.5h",
            "yesterday",
            "1h30",
            "99999999999999999w",
        ] {
            let error = at(bad).unwrap_err();
            assert!(error.contains("30m, 1h, 2d"), "{bad}: {error}");
        }
    }
}
