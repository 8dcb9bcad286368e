//! The syntax of a channel's fields, checked before anything is stored,
//! so a channel the pipeline cannot send to is refused with a reason
//! instead of failing every delivery later.

use std::net::Ipv6Addr;

use crate::service_error::ServiceError;

/// Most recipients of an email channel.
pub(super) const MAX_RECIPIENTS: usize = 50;
/// Bounds on a webhook secret, in characters.
pub(super) const MIN_SECRET: usize = 16;
pub(super) const MAX_SECRET: usize = 512;
/// Longest URL (webhook or SMTP relay), in characters.
pub(super) const MAX_URL: usize = 2000;

fn invalid(message: String) -> ServiceError {
    ServiceError::Invalid(message)
}

/// A glob over service names: what names are made of plus `*` and `?`.
pub(super) fn service_pattern(pattern: &str) -> Result<(), ServiceError> {
    let ok = (1..=253).contains(&pattern.len())
        && pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '*' | '?'));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "`service_pattern` must be 1 to 253 characters of letters, digits, `.`, `-`, `_` \
             and the wildcards `*` and `?`"
                .into(),
        ))
    }
}

/// An HMAC key: long enough not to be guessed, and text Postgres stores
/// (no NUL) that survives copy and paste (no control characters).
pub(super) fn secret(secret: &str) -> Result<(), ServiceError> {
    let length = secret.chars().count();
    if !(MIN_SECRET..=MAX_SECRET).contains(&length) || secret.chars().any(char::is_control) {
        return Err(invalid(format!(
            "`secret` must be {MIN_SECRET} to {MAX_SECRET} characters, none of them control \
             characters"
        )));
    }
    Ok(())
}

/// `http://` or `https://`, a host, an optional port, then any path; no
/// credentials, which every reader of the channel would see.
pub(super) fn webhook_url(url: &str) -> Result<(), ServiceError> {
    let bad = |why: &str| {
        invalid(format!(
            "`url` must be an http or https URL with a host: {why}"
        ))
    };
    if url.chars().count() > MAX_URL {
        return Err(bad(&format!("longer than {MAX_URL} characters")));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(bad("it holds spaces or control characters"));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| bad("it starts with neither http:// nor https://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    host_and_port(authority).map_err(|why| bad(&why))
}

/// `smtp://host[:port]`, as the pipeline's email sender reads it.
pub(super) fn smtp_url(url: &str) -> Result<(), ServiceError> {
    let bad = |why: &str| invalid(format!("`smtp_url` must be smtp://host[:port]: {why}"));
    if url.chars().count() > MAX_URL {
        return Err(bad(&format!("longer than {MAX_URL} characters")));
    }
    let authority = url
        .strip_prefix("smtp://")
        .ok_or_else(|| bad("it does not start with smtp://"))?;
    host_and_port(authority).map_err(|why| bad(&why))
}

/// `host[:port]` or `[IPv6][:port]`: a DNS name or IPv4 address made of
/// letters, digits, `-` and `_` in dot-separated labels, and a port from
/// 1 to 65535.
fn host_and_port(authority: &str) -> Result<(), String> {
    if authority.contains('@') {
        return Err("no user name or password may be given in it".into());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (address, after) = bracketed
                .split_once(']')
                .ok_or("the IPv6 address has no closing `]`")?;
            address
                .parse::<Ipv6Addr>()
                .map_err(|_| format!("{address:?} is not an IPv6 address"))?;
            match after {
                "" => (None, None),
                _ => (None, Some(after.strip_prefix(':').ok_or("junk after `]`")?)),
            }
        }
        None => match authority.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(authority), None),
        },
    };
    if let Some(host) = host {
        if !host_name(host, true) {
            return Err(format!("{host:?} is not a host name"));
        }
    }
    if let Some(port) = port {
        let valid = port.len() <= 5
            && port.chars().all(|c| c.is_ascii_digit())
            && port.parse::<u16>().is_ok_and(|p| p >= 1);
        if !valid {
            return Err(format!("{port:?} is not a port (1 to 65535)"));
        }
    }
    Ok(())
}

/// Dot-separated labels of 1 to 63 letters, digits and `-` (and `_` when
/// `underscore`, which some internal DNS names use), 253 at most in all.
fn host_name(host: &str, underscore: bool) -> bool {
    (1..=253).contains(&host.len())
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || (underscore && c == '_'))
        })
}

/// An address `local@domain` (RFC 5321's dot-atom local part, a DNS
/// domain); display names and quoted local parts are refused.
pub(super) fn email_address(field: &str, address: &str) -> Result<(), ServiceError> {
    let valid = address.len() <= 254
        && address.rsplit_once('@').is_some_and(|(local, domain)| {
            (1..=64).contains(&local.len())
                && local.split('.').all(|atom| {
                    !atom.is_empty()
                        && atom
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c))
                })
                && host_name(domain, false)
        });
    if valid {
        Ok(())
    } else {
        Err(invalid(format!(
            "`{field}` must hold email addresses like name@example.com, not {address:?}"
        )))
    }
}

/// 1 to [`MAX_RECIPIENTS`] valid addresses.
pub(super) fn recipients(to: &[String]) -> Result<(), ServiceError> {
    if !(1..=MAX_RECIPIENTS).contains(&to.len()) {
        return Err(invalid(format!(
            "`to` must list 1 to {MAX_RECIPIENTS} addresses"
        )));
    }
    to.iter()
        .try_for_each(|address| email_address("to", address))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_urls_need_a_scheme_and_a_host() {
        for good in [
            "https://hooks.example.com/odp",
            "http://127.0.0.1:8080",
            "http://[::1]:9000/x?y=1",
            "https://alerts_internal.corp:443/a#b",
        ] {
            assert!(webhook_url(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "ftp://example.com",
            "https://",
            "https:///path",
            "https://user:pw@example.com/",
            "https://exa mple.com",
            "https://example..com",
            "https://example.com:0",
            "https://example.com:65536",
            "https://example.com:http",
            "https://[::1/x",
            "https://[nope]/",
            "https://-bad.com",
            "http://example.com\u{0}",
        ] {
            assert!(webhook_url(bad).is_err(), "{bad:?}");
        }
        assert!(webhook_url(&format!("https://x.com/{}", "a".repeat(MAX_URL))).is_err());
    }

    #[test]
    fn smtp_relays_are_a_host_and_port_only() {
        for good in [
            "smtp://mail.local",
            "smtp://10.0.0.2:2525",
            "smtp://[::1]:25",
        ] {
            assert!(smtp_url(good).is_ok(), "{good}");
        }
        for bad in [
            "mail.local",
            "smtps://mail.local",
            "smtp://",
            "smtp://mail.local/path",
            "smtp://u@mail.local",
            "smtp://mail.local:99999",
        ] {
            assert!(smtp_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_secrets_and_patterns() {
        assert!(email_address("from", "odp+alerts@mail.example.com").is_ok());
        assert!(email_address("from", "root@localhost").is_ok());
        for bad in [
            "",
            "nobody",
            "@example.com",
            "a@",
            "a..b@example.com",
            ".a@example.com",
            "a b@example.com",
            "Name <a@example.com>",
            "a@exa_mple.com",
            "a@-example.com",
        ] {
            assert!(email_address("to", bad).is_err(), "{bad}");
        }
        assert!(recipients(&[]).is_err());
        assert!(recipients(&vec!["a@b.c".to_owned(); MAX_RECIPIENTS]).is_ok());
        assert!(recipients(&vec!["a@b.c".to_owned(); MAX_RECIPIENTS + 1]).is_err());
        assert!(secret("0123456789abcdef").is_ok());
        assert!(secret("0123456789abcde").is_err());
        assert!(secret("0123456789abcdef\n").is_err());
        // Characters, not bytes: eight two-byte letters are too short.
        assert!(secret(&"é".repeat(8)).is_err());
        assert!(secret(&"x".repeat(MAX_SECRET + 1)).is_err());
        for good in ["*", "checkout-*", "svc-?", "a.b_c"] {
            assert!(service_pattern(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "check[out]", "x/y"] {
            assert!(service_pattern(bad).is_err(), "{bad}");
        }
    }
}
