//! Words and numbers as the CLI prints them: counts with their nouns
//! (`1 host`, `2 hosts`), times, spans and a target's runtime in a line.

use chrono::{DateTime, SecondsFormat, Utc};
use odp_client::types::ProfileRuntime;
use odp_core::cost::StartOptions;
use odp_core::runtime::LibraryKind;
use odp_core::Language;

/// `n` and its noun, the plural made by adding `s`: `1 host`, `2 hosts`,
/// `0 samples`.
pub(crate) fn count(n: impl Into<u128>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {}", noun_for(n, noun))
}

/// `noun` for `n` things (`host` or `hosts`), for where the number is
/// printed apart from its noun.
pub(crate) fn noun_for(n: u128, noun: &str) -> String {
    if n == 1 {
        return noun.to_owned();
    }
    match noun.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'o', 'u']) => format!("{stem}ies"),
        _ if noun.ends_with('s') || noun.ends_with("sh") || noun.ends_with("ch") => {
            format!("{noun}es")
        }
        _ => format!("{noun}s"),
    }
}

/// A count of things in a `usize`.
pub(crate) fn count_of(n: usize, noun: &str) -> String {
    count(n as u128, noun)
}

/// A time as `2026-11-27T14:20:18Z` (UTC, whole seconds).
pub(crate) fn time(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// An optional time, `-` when absent.
pub(crate) fn time_or_dash(at: Option<&DateTime<Utc>>) -> String {
    at.map_or_else(|| "-".to_owned(), time)
}

/// Seconds as `45 s`, `6.1 s`, `12 min 5 s` or `2 h 3 min`.
pub(crate) fn span(secs: f64) -> String {
    let secs = secs.max(0.0);
    // Tenths as shown: 1.999 s is "2 s", like 2 s, not "2.0 s".
    let tenths = (secs * 10.0).round();
    if secs < 10.0 && tenths % 10.0 != 0.0 {
        return format!("{:.1} s", tenths / 10.0);
    }
    let whole = secs.round() as u64;
    match whole {
        0..=59 => format!("{whole} s"),
        60..=3599 => match whole % 60 {
            0 => format!("{} min", whole / 60),
            s => format!("{} min {s} s", whole / 60),
        },
        _ => match (whole % 3600) / 60 {
            0 => format!("{} h", whole / 3600),
            m => format!("{} h {m} min", whole / 3600),
        },
    }
}

/// `yes` or `no`.
pub(crate) fn yes_no(flag: bool) -> &'static str {
    if flag {
        "yes"
    } else {
        "no"
    }
}

/// A target's runtime in one line: `python 3.11, 110 packages, 7 shared
/// libraries, 2 flags`. The libraries themselves are in `--json`.
pub(crate) fn runtime_line(runtime: &ProfileRuntime) -> String {
    let language = runtime.language;
    let mut parts = vec![match (&language, &runtime.runtime_version) {
        (Some(language), Some(version)) => format!("{} {version}", language.as_str()),
        (Some(language), None) => language.as_str().to_owned(),
        (None, Some(version)) => format!("version {version}"),
        (None, None) => "unknown runtime".to_owned(),
    }];
    let info = &runtime.runtime;
    let of_kind = |kind: LibraryKind| info.libraries.iter().filter(|l| l.kind == kind).count();
    // The language's own kind of library is shown even when none was
    // found: "0 jars" says something about a JVM.
    let own = match language {
        Some(Language::Python) => Some(LibraryKind::Python),
        Some(Language::Jvm) => Some(LibraryKind::Jar),
        _ => None,
    };
    for (kind, noun) in [
        (LibraryKind::Python, "package"),
        (LibraryKind::Jar, "jar"),
        (LibraryKind::Shared, "shared library"),
    ] {
        let n = of_kind(kind);
        if n > 0 || own == Some(kind) {
            parts.push(count_of(n, noun));
        }
    }
    if info.libraries_truncated {
        parts.push("more libraries not reported".to_owned());
    }
    if !info.flags.is_empty() {
        parts.push(count_of(info.flags.len(), "flag"));
    }
    parts.join(", ")
}

/// A profile's or schedule's start options in one line, `-` for the
/// agent's defaults.
pub(crate) fn options_line(options: &StartOptions) -> String {
    let mut parts = Vec::new();
    if let Some(plugin) = options.plugin {
        parts.push(format!("plugin {}", plugin.as_str()));
    }
    if let Some(event) = options.event {
        parts.push(format!("event {}", event.as_str()));
    }
    if let Some(us) = options.min_wait_us {
        parts.push(format!("waits from {us} us"));
    }
    if let Some(share) = options.fsp_share {
        parts.push(format!("busiest threads to {:.0}%", share * 100.0));
    }
    if let Some(fda) = &options.fda {
        parts.push(match fda.enabled {
            false => "FDA off".to_owned(),
            true => format!("FDA θ {}", fda.theta),
        });
    }
    if let Some(duty) = &options.duty_cycle {
        parts.push(format!(
            "{} of every {}",
            span(duty.on_ms as f64 / 1000.0),
            span(duty.period_ms as f64 / 1000.0)
        ));
    }
    if let Some(budget) = options.overhead_budget {
        parts.push(format!("overhead budget {}% of a core", budget * 100.0));
    }
    if options.include_children {
        parts.push("with its children".to_owned());
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `key=value` pairs, comma-separated; `-` when there are none.
pub(crate) fn labels<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    if pairs.is_empty() {
        "-".to_owned()
    } else {
        pairs.join(",")
    }
}

/// Lines of `key  value`, the values in one column.
pub(crate) fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        let line = format!("{key:<width$}  {value}");
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::runtime::{Library, RuntimeInfo};

    #[test]
    fn counts_read_right() {
        assert_eq!(count(1u32, "host"), "1 host");
        assert_eq!(count(2u32, "host"), "2 hosts");
        assert_eq!(count(0u32, "sample"), "0 samples");
        assert_eq!(count_of(1, "shared library"), "1 shared library");
        assert_eq!(count_of(7, "shared library"), "7 shared libraries");
        assert_eq!(count_of(3, "day"), "3 days");
        assert_eq!(count_of(2, "match"), "2 matches");
        assert_eq!(count_of(2, "outlier"), "2 outliers");
        assert_eq!(count(u64::MAX, "sample"), format!("{} samples", u64::MAX));
        assert_eq!(noun_for(1, "profile"), "profile");
    }

    #[test]
    fn spans_read_in_the_largest_unit() {
        assert_eq!(span(6.067), "6.1 s");
        assert_eq!(span(6.0), "6 s");
        assert_eq!(span(1.999), "2 s");
        assert_eq!(span(0.004), "0 s");
        assert_eq!(span(45.0), "45 s");
        assert_eq!(span(60.0), "1 min");
        assert_eq!(span(725.0), "12 min 5 s");
        assert_eq!(span(7380.0), "2 h 3 min");
        assert_eq!(span(-3.0), "0 s");
    }

    fn library(kind: LibraryKind, name: &str) -> Library {
        Library {
            kind,
            name: name.into(),
            version: None,
        }
    }

    #[test]
    fn a_runtime_reads_in_one_line() {
        let python = ProfileRuntime {
            language: Some(Language::Python),
            runtime_version: Some("3.11".into()),
            runtime: RuntimeInfo {
                flags: vec!["PYTHONUNBUFFERED=1".into()],
                libraries: vec![
                    library(LibraryKind::Python, "Flask"),
                    library(LibraryKind::Python, "requests"),
                    library(LibraryKind::Shared, "libc"),
                ],
                ..RuntimeInfo::default()
            },
        };
        assert_eq!(
            runtime_line(&python),
            "python 3.11, 2 packages, 1 shared library, 1 flag"
        );
        let jvm = ProfileRuntime {
            language: Some(Language::Jvm),
            runtime_version: Some("17.0.15".into()),
            runtime: RuntimeInfo {
                libraries: vec![library(LibraryKind::Shared, "libjvm")],
                libraries_truncated: true,
                ..RuntimeInfo::default()
            },
        };
        assert_eq!(
            runtime_line(&jvm),
            "jvm 17.0.15, 0 jars, 1 shared library, more libraries not reported"
        );
        assert_eq!(runtime_line(&ProfileRuntime::default()), "unknown runtime");
    }

    #[test]
    fn fields_line_up() {
        let text = fields(&[
            ("id", "a".into()),
            ("service", "b".into()),
            ("x", "".into()),
        ]);
        assert_eq!(text, "id       a\nservice  b\nx\n");
    }
}
