//! Alerts as plain-text email through an SMTP relay.
//!
//! An email channel names its relay as `smtp://host[:port]` (port 25 by
//! default). Mail goes over plain SMTP, without TLS or authentication: the
//! relay is expected to be a local MTA or a sidecar that forwards it on,
//! which keeps a TLS stack and credentials out of the worker. Each alert is
//! one message whose `Message-ID` is derived from the delivery id, so a
//! mailbox can drop the copy a retried send may produce. The relay is
//! checked against the address policy, and the connection made to the
//! address checked.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use odp_plumbing::egress::{EgressError, EgressPolicy, Host};
use odp_store::DueDelivery;

use super::{error_chain, Failure, Notifier, Sending, Sent};
use super::{CONNECT_FAILED, REMOTE_ERROR, SEND_FAILED, SEND_TIMEOUT, TIMED_OUT};
use crate::AlertOptions;

/// Port of a relay URL that names none.
pub const DEFAULT_SMTP_PORT: u16 = 25;
/// Heaviest matching stacks listed in a message.
const STACKS_SHOWN: usize = 5;

/// The relay's host and port from `smtp://host[:port]` (a bare
/// `host[:port]` too; IPv6 hosts in brackets).
pub fn relay_address(url: &str) -> Result<(String, u16), String> {
    let rest = match url.split_once("://") {
        Some(("smtp", rest)) => rest,
        Some((scheme, _)) => {
            return Err(format!(
                "unsupported SMTP relay scheme {scheme:?} (only smtp://)"
            ))
        }
        None => url,
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = if let Some(bracketed) = rest.strip_prefix('[') {
        let (host, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("unclosed IPv6 host in SMTP relay {url:?}"))?;
        (host, after.strip_prefix(':'))
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    if host.is_empty() || host.contains(['/', '@', ' ']) {
        return Err(format!("no usable host in SMTP relay {url:?}"));
    }
    let port = match port {
        Some(port) => port
            .parse()
            .map_err(|_| format!("bad port in SMTP relay {url:?}"))?,
        None => DEFAULT_SMTP_PORT,
    };
    Ok((host.to_owned(), port))
}

/// Where the web UI shows a profile, when its base URL is configured.
pub fn profile_link(base_url: &str, profile_id: uuid::Uuid) -> String {
    format!("{}/#/profiles/{profile_id}", base_url.trim_end_matches('/'))
}

/// Where the web UI shows a run.
pub fn run_link(base_url: &str, run_id: uuid::Uuid) -> String {
    format!("{}/#/runs/{run_id}", base_url.trim_end_matches('/'))
}

/// Where the web UI shows a profile against the one it was compared with.
pub fn diff_link(base_url: &str, baseline: uuid::Uuid, target: uuid::Uuid) -> String {
    format!(
        "{}/#/compare?baseline={baseline}&target={target}",
        base_url.trim_end_matches('/')
    )
}

/// The subject line: what fired, where, and how much.
pub fn subject(d: &DueDelivery) -> String {
    match d.run_id {
        Some(_) => format!(
            "[ODP] {} in a run of {}: {:.1}% of samples, most on {}",
            d.rule.title, d.service, d.share, d.host
        ),
        None => format!(
            "[ODP] {} in {} on {}: {:.1}% of samples",
            d.rule.title, d.service, d.host, d.share
        ),
    }
}

/// The plain-text body: everything a reader needs to act without opening
/// the UI, and the link to it when there is one.
pub fn body(d: &DueDelivery, profile_base_url: Option<&str>) -> String {
    let mut text = String::new();
    let mut line = |s: String| {
        text.push_str(&s);
        text.push('\n');
    };
    match d.run_id {
        Some(_) => line("ODP flagged a common issue in a run, across its hosts.".into()),
        None => line("ODP flagged a common issue in a profile.".into()),
    }
    line(String::new());
    line(format!("Service:   {}", d.service));
    if d.run_id.is_none() {
        line(format!("Host:      {}", d.host));
    }
    line(format!("Rule:      {} ({})", d.rule.title, d.rule_id));
    line(format!(
        "Share:     {:.1}% of samples (threshold {:.1}%)",
        d.share, d.threshold_pct
    ));
    line(format!("Detected:  {}", d.detected_at.to_rfc3339()));
    match d.run_id {
        Some(run_id) => {
            line(format!("Run:       {run_id}"));
            if let Some(base) = profile_base_url {
                line(format!("View:      {}", run_link(base, run_id)));
            }
            line("Hosts where it is highest:".into());
            for host in &d.hosts {
                line(format!(
                    "  {}: {:.1}% of {} samples",
                    host.host, host.share, host.samples
                ));
            }
        }
        None => {
            line(format!("Profile:   {}", d.profile_id));
            if let Some(base) = profile_base_url {
                line(format!("View:      {}", profile_link(base, d.profile_id)));
            }
            if let Some(baseline) = d.compared_with {
                line(format!("Baseline:  {baseline}"));
                if let Some(base) = profile_base_url {
                    line(format!(
                        "Diff:      {}",
                        diff_link(base, baseline, d.profile_id)
                    ));
                }
            }
        }
    }
    line(String::new());
    line("Why it matters:".into());
    line(d.rule.explanation.clone());
    line(String::new());
    line("Suggested fix:".into());
    line(d.rule.fix.clone());
    if !d.rule.link.is_empty() {
        line(format!("More: {}", d.rule.link));
    }
    if !d.stacks.is_empty() {
        line(String::new());
        line("Heaviest matching stacks (root first):".into());
        for stack in d.stacks.iter().take(STACKS_SHOWN) {
            let mut entry = format!("  {} samples: ", stack.count);
            let _ = write!(entry, "{}", stack.frames.join(";"));
            line(entry);
        }
    }
    text
}

/// Why a delivery's email cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("email channel without a from address")]
    NoSender,
    #[error("email channel without recipients")]
    NoRecipients,
    #[error("bad from address: {0}")]
    Sender(lettre::address::AddressError),
    #[error("bad recipient {address:?}: {source}")]
    Recipient {
        address: String,
        source: lettre::address::AddressError,
    },
    #[error("building the message: {0}")]
    Message(#[from] lettre::error::Error),
}

/// The message for a delivery; a malformed address is an error.
pub fn compose(d: &DueDelivery, profile_base_url: Option<&str>) -> Result<Message, ComposeError> {
    let from: Mailbox = d
        .email_from
        .as_deref()
        .ok_or(ComposeError::NoSender)?
        .parse()
        .map_err(ComposeError::Sender)?;
    let mut builder = Message::builder()
        .from(from)
        .subject(subject(d))
        .message_id(Some(format!("<{}@odp.alerts>", d.id)))
        .header(ContentType::TEXT_PLAIN);
    if d.email_to.is_empty() {
        return Err(ComposeError::NoRecipients);
    }
    for to in &d.email_to {
        let mailbox: Mailbox = to.parse().map_err(|source| ComposeError::Recipient {
            address: to.clone(),
            source,
        })?;
        builder = builder.to(mailbox);
    }
    // lettre picks the transfer encoding: 7bit when every line is short,
    // quoted-printable otherwise.
    Ok(builder.body(body(d, profile_base_url))?)
}

/// Where to connect for the relay `host`: an IP literal the policy
/// allows, an allow-listed name as it is, or else the first address of
/// the name once every address it resolves to is allowed.
pub async fn relay_destination(policy: &EgressPolicy, host: &str) -> Result<String, EgressError> {
    let host = Host::parse(host);
    if policy.check_host(&host)? {
        return Ok(host.to_string());
    }
    let name = host.to_string();
    let addresses = policy.resolve(&name).await?;
    Ok(addresses.first().map_or(name, std::net::IpAddr::to_string))
}

/// Sends one alert email; returns the relay's reply code on success, and
/// why not in our words on failure (the relay's reply is not recorded).
pub async fn send(
    d: &DueDelivery,
    profile_base_url: Option<&str>,
    policy: &EgressPolicy,
    timeout: Duration,
) -> Sent {
    let ours = |error: String| Failure::new(error.clone(), error);
    let (host, port) = relay_address(&d.url).map_err(ours)?;
    let message = compose(d, profile_base_url).map_err(|e| ours(e.to_string()))?;
    let connect_to = relay_destination(policy, &host)
        .await
        .map_err(Failure::destination)?;
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(connect_to)
        .port(port)
        .timeout(Some(timeout))
        .build();
    match transport.send(message).await {
        Ok(response) => Ok(u16::from(response.code())),
        Err(e) => {
            let reason = if e.is_transient() || e.is_permanent() || e.is_response() {
                REMOTE_ERROR
            } else if e.is_timeout() {
                TIMED_OUT
            } else if e.is_client() {
                SEND_FAILED
            } else {
                CONNECT_FAILED
            };
            Err(Failure::new(reason, error_chain(&e)))
        }
    }
}

/// Mails alerts to email channels.
pub struct EmailNotifier {
    /// Where a message links to its profile, when the UI's URL is known.
    profile_base_url: Option<String>,
    policy: Arc<EgressPolicy>,
}

impl EmailNotifier {
    pub fn new(options: &AlertOptions, policy: Arc<EgressPolicy>) -> Self {
        EmailNotifier {
            profile_base_url: options.profile_base_url.clone(),
            policy,
        }
    }
}

impl Notifier for EmailNotifier {
    fn kind(&self) -> &'static str {
        "email"
    }

    fn send<'a>(&'a self, delivery: &'a DueDelivery) -> Sending<'a> {
        Box::pin(send(
            delivery,
            self.profile_base_url.as_deref(),
            &self.policy,
            SEND_TIMEOUT,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use odp_store::{IssueStack, RuleText};
    use uuid::Uuid;

    fn delivery() -> DueDelivery {
        DueDelivery {
            id: Uuid::from_u128(7),
            attempt: 1,
            channel_id: Uuid::from_u128(1),
            kind: "email".into(),
            url: "smtp://127.0.0.1:2525".into(),
            secret: String::new(),
            email_from: Some("ODP <odp@example.com>".into()),
            email_to: vec!["oncall@example.com".into(), "team@example.com".into()],
            profile_id: Uuid::from_u128(42),
            service: "checkout".into(),
            host: "h-1".into(),
            rule_id: "jvm-stringbuffer".into(),
            rule: RuleText {
                title: "java.lang.StringBuffer".into(),
                explanation: "Synchronized appends.".into(),
                fix: "Use StringBuilder.".into(),
                link: "https://example.com/sb".into(),
            },
            share: 30.0,
            threshold_pct: 1.0,
            stacks: vec![IssueStack {
                stack_id: Uuid::from_u128(9),
                count: 300,
                frames: vec!["main".into(), "work".into(), "append".into()],
            }],
            detected_at: Utc.timestamp_opt(1_700_000_000, 0).unwrap(),
            run_id: None,
            hosts: Vec::new(),
            compared_with: None,
        }
    }

    #[test]
    fn relay_addresses_parse_with_and_without_scheme_and_port() {
        assert_eq!(
            relay_address("smtp://mail.local:2525"),
            Ok(("mail.local".into(), 2525))
        );
        assert_eq!(
            relay_address("smtp://mail.local"),
            Ok(("mail.local".into(), 25))
        );
        assert_eq!(relay_address("10.0.0.1:587/"), Ok(("10.0.0.1".into(), 587)));
        assert_eq!(relay_address("smtp://[::1]:26"), Ok(("::1".into(), 26)));
        assert!(relay_address("https://mail.local").is_err());
        assert!(relay_address("smtp://:25").is_err());
        assert!(relay_address("smtp://mail.local:port").is_err());
        assert!(relay_address("smtp://[::1").is_err());
    }

    #[tokio::test]
    async fn relays_inside_are_refused_unless_allowed() {
        use odp_plumbing::egress::Refusal;
        let strict = EgressPolicy::default();
        for (host, refusal) in [
            ("127.0.0.1", EgressError::Refused(Refusal::Loopback)),
            ("::1", EgressError::Refused(Refusal::Loopback)),
            ("10.0.0.2", EgressError::Refused(Refusal::Private)),
            ("localhost", EgressError::ResolvesTo(Refusal::Loopback)),
            // Not an IP literal in an smtp:// URL: resolved, to 127.0.0.1.
            ("127.1", EgressError::ResolvesTo(Refusal::Loopback)),
        ] {
            assert_eq!(
                relay_destination(&strict, host).await,
                Err(refusal),
                "{host}"
            );
        }
        let allowed = EgressPolicy::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert_eq!(
            relay_destination(&allowed, "127.0.0.1").await.as_deref(),
            Ok("127.0.0.1")
        );
        let by_name = EgressPolicy::new(vec!["localhost".parse().unwrap()]);
        assert_eq!(
            relay_destination(&by_name, "localhost").await.as_deref(),
            Ok("localhost")
        );
    }

    #[test]
    fn the_body_says_what_fired_where_and_links_the_profile() {
        let d = delivery();
        let text = body(&d, Some("https://odp.example.com/"));
        for expected in [
            "Service:   checkout",
            "Host:      h-1",
            "Rule:      java.lang.StringBuffer (jvm-stringbuffer)",
            "Share:     30.0% of samples (threshold 1.0%)",
            "Synchronized appends.",
            "Use StringBuilder.",
            "More: https://example.com/sb",
            "View:      https://odp.example.com/#/profiles/00000000-0000-0000-0000-00000000002a",
            "  300 samples: main;work;append",
        ] {
            assert!(text.contains(expected), "{expected:?} missing from\n{text}");
        }
        assert!(!body(&d, None).contains("View:"));
        assert!(!text.contains("Diff:"), "nothing was compared");
        assert_eq!(
            subject(&d),
            "[ODP] java.lang.StringBuffer in checkout on h-1: 30.0% of samples"
        );
    }

    #[test]
    fn a_regression_links_its_diff_against_the_baseline() {
        let d = DueDelivery {
            rule_id: "continuous-regression".into(),
            compared_with: Some(Uuid::from_u128(41)),
            ..delivery()
        };
        let text = body(&d, Some("https://odp.example.com"));
        assert!(
            text.contains(
                "Diff:      https://odp.example.com/#/compare?baseline=00000000-0000-0000-0000-000000000029&target=00000000-0000-0000-0000-00000000002a"
            ),
            "{text}"
        );
        let json = serde_json::to_value(super::super::webhook::AlertPayload::of(&d)).unwrap();
        assert_eq!(
            json["compared_with"],
            "00000000-0000-0000-0000-000000000029"
        );
    }

    #[test]
    fn a_run_s_alert_links_the_run_and_names_its_hottest_hosts() {
        let host = |name: &str, share, samples| odp_rules::run::HostShare {
            host: name.into(),
            profile_id: Uuid::from_u128(samples as u128),
            share,
            samples,
        };
        let d = DueDelivery {
            run_id: Some(Uuid::from_u128(5)),
            hosts: vec![host("h-1", 61.5, 990), host("h-2", 12.0, 985)],
            ..delivery()
        };
        let text = body(&d, Some("https://odp.example.com"));
        for expected in [
            "ODP flagged a common issue in a run, across its hosts.",
            "Run:       00000000-0000-0000-0000-000000000005",
            "View:      https://odp.example.com/#/runs/00000000-0000-0000-0000-000000000005",
            "  h-1: 61.5% of 990 samples",
            "  h-2: 12.0% of 985 samples",
        ] {
            assert!(text.contains(expected), "{expected:?} missing from\n{text}");
        }
        assert!(!text.contains("Host:  "), "a run has many hosts:\n{text}");
        assert_eq!(
            subject(&d),
            "[ODP] java.lang.StringBuffer in a run of checkout: 30.0% of samples, most on h-1"
        );
    }

    #[test]
    fn bad_addresses_are_refused_before_sending() {
        let mut d = delivery();
        let message = compose(&d, None).unwrap().formatted();
        let text = String::from_utf8_lossy(&message);
        assert!(text.contains("Message-ID: <00000000-0000-0000-0000-000000000007@odp.alerts>"));
        d.email_to.push("not an address".into());
        assert!(matches!(
            compose(&d, None),
            Err(ComposeError::Recipient { address, .. }) if address == "not an address"
        ));
        d.email_to.clear();
        assert!(matches!(compose(&d, None), Err(ComposeError::NoRecipients)));
        d.email_to.push("a@example.com".into());
        d.email_from = None;
        assert!(matches!(compose(&d, None), Err(ComposeError::NoSender)));
    }
}
