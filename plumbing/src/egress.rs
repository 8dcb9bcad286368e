//! Where ODP may send alerts: one address policy for the api-server (which
//! refuses a channel whose URL points inside) and the pipeline (which
//! checks again when it connects, as a name may resolve elsewhere by then).
//!
//! An address is refused when it is not a public unicast address:
//! loopback, unspecified, link-local, private, shared (carrier-grade NAT),
//! multicast, broadcast, documentation, benchmarking or otherwise reserved
//! ranges, and IPv4 addresses embedded in IPv6 ones (IPv4-mapped,
//! IPv4-compatible, NAT64, 6to4) when the IPv4 address is refused. The
//! operator's allow-list ([`AlertDestinations`],
//! `ODP_ALERT_ALLOWED_DESTINATIONS`) lets named destinations through:
//! address ranges (`10.1.2.0/24`, `127.0.0.1`) and host names
//! (`relay.internal`, or `*.svc.cluster.local` for every name under it).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use std::time::Duration;

/// Why an address is not a destination for alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Loopback,
    Unspecified,
    LinkLocal,
    Private,
    SharedAddressSpace,
    Multicast,
    Broadcast,
    Documentation,
    Reserved,
}

impl Refusal {
    /// The kind of address, as in "resolves to a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            Refusal::Loopback => "a loopback address",
            Refusal::Unspecified => "an unspecified (\"this host\") address",
            Refusal::LinkLocal => "a link-local address",
            Refusal::Private => "a private address",
            Refusal::SharedAddressSpace => "a shared (carrier-grade NAT) address",
            Refusal::Multicast => "a multicast address",
            Refusal::Broadcast => "the broadcast address",
            Refusal::Documentation => "a documentation address",
            Refusal::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why `ip` may not be sent to, or `None` for a public unicast address.
pub fn refused(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn refused_v4(ip: Ipv4Addr) -> Option<Refusal> {
    use Refusal::*;
    let ranges: &[([u8; 4], u32, Refusal)] = &[
        ([0, 0, 0, 0], 8, Unspecified),
        ([10, 0, 0, 0], 8, Private),
        ([100, 64, 0, 0], 10, SharedAddressSpace),
        ([127, 0, 0, 0], 8, Loopback),
        ([169, 254, 0, 0], 16, LinkLocal),
        ([172, 16, 0, 0], 12, Private),
        ([192, 0, 0, 0], 24, Reserved),
        ([192, 0, 2, 0], 24, Documentation),
        ([192, 88, 99, 0], 24, Reserved),
        ([192, 168, 0, 0], 16, Private),
        ([198, 18, 0, 0], 15, Reserved),
        ([198, 51, 100, 0], 24, Documentation),
        ([203, 0, 113, 0], 24, Documentation),
        ([224, 0, 0, 0], 4, Multicast),
        ([255, 255, 255, 255], 32, Broadcast),
        ([240, 0, 0, 0], 4, Reserved),
    ];
    ranges
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, why)| *why)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

fn refused_v6(ip: Ipv6Addr) -> Option<Refusal> {
    use Refusal::*;
    let bits = u128::from(ip);
    let low_v4 = Ipv4Addr::from(bits as u32);
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    // ::ffff:a.b.c.d (mapped), 64:ff9b::a.b.c.d (NAT64): the IPv4 address
    // is where the packets go.
    if in_v6(ip, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96)
        || in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        return refused_v4(low_v4);
    }
    // ::a.b.c.d (IPv4-compatible, deprecated) and ::ffff:0:a.b.c.d
    // (IPv4-translated): nothing public is reached that way.
    if in_v6(ip, [0; 8], 96) || in_v6(ip, [0, 0, 0, 0, 0xffff, 0, 0, 0], 96) {
        return Some(refused_v4(low_v4).unwrap_or(Reserved));
    }
    // 2002:AABB:CCDD::/48 (6to4) embeds the IPv4 address AA.BB.CC.DD.
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let embedded = Ipv4Addr::from((bits >> 80) as u32);
        return refused_v4(embedded);
    }
    let ranges: &[([u16; 8], u32, Refusal)] = &[
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, Private),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, Reserved),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, Documentation),
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, Documentation),
        // IETF protocol assignments, Teredo (whose IPv4 address is
        // obfuscated) included.
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, Reserved),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, Private),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, LinkLocal),
        // Site-local, deprecated but still routed inside some sites.
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, Private),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, Multicast),
    ];
    if let Some((_, _, why)) = ranges
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
    {
        return Some(*why);
    }
    // Global unicast is 2000::/3; the rest is unassigned.
    (!in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3)).then_some(Reserved)
}

/// One entry of the allow-list: an address range, a host name, or every
/// name under a domain (`*.svc.cluster.local`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowEntry {
    Net { base: IpAddr, prefix: u8 },
    Host(String),
    Subdomains(String),
}

impl AllowEntry {
    fn contains(&self, ip: IpAddr) -> bool {
        match (self, canonical(ip)) {
            (AllowEntry::Net { base, prefix }, ip) => match (base, ip) {
                (IpAddr::V4(net), IpAddr::V4(ip)) => in_v4(ip, net.octets(), u32::from(*prefix)),
                (IpAddr::V6(net), IpAddr::V6(ip)) => in_v6(ip, net.segments(), u32::from(*prefix)),
                _ => false,
            },
            _ => false,
        }
    }

    fn names(&self, host: &str) -> bool {
        match self {
            AllowEntry::Host(name) => *name == host,
            AllowEntry::Subdomains(domain) => host
                .strip_suffix(domain.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            AllowEntry::Net { .. } => false,
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is, so an IPv4
/// range of the allow-list covers it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A host name as compared: lower case, without the root's dot.
fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl FromStr for AllowEntry {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bad = || {
            format!(
                "{text:?} is neither an address, an address range (10.0.0.0/8, fd00::/8), \
                 a host name nor *.domain"
            )
        };
        if let Some((address, prefix)) = text.split_once('/') {
            let base: IpAddr = address.parse().map_err(|_| bad())?;
            let max = if base.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(bad)?;
            return Ok(AllowEntry::Net { base, prefix });
        }
        if let Ok(ip) = text.trim_start_matches('[').trim_end_matches(']').parse() {
            let prefix = if matches!(ip, IpAddr::V4(_)) { 32 } else { 128 };
            return Ok(AllowEntry::Net { base: ip, prefix });
        }
        let (wildcard, name) = match text.strip_prefix("*.") {
            Some(domain) => (true, domain),
            None => (false, text),
        };
        let name = normal_name(name);
        let valid = (1..=253).contains(&name.len())
            && name.split('.').all(|label| {
                (1..=63).contains(&label.len())
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        match (valid, wildcard) {
            (false, _) => Err(bad()),
            (true, false) => Ok(AllowEntry::Host(name)),
            (true, true) => Ok(AllowEntry::Subdomains(name)),
        }
    }
}

/// The operator's allow-list, as the api-server and the pipeline read it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AlertDestinations {
    /// Alert destinations (webhook URLs, SMTP relays) allowed although
    /// they are not public addresses, comma-separated: addresses or ranges
    /// (`127.0.0.1`, `10.8.0.0/16`, `fd00::/8`) and host names
    /// (`relay.internal`, `*.svc.cluster.local`). Every other loopback,
    /// private, link-local, … destination is refused.
    #[arg(
        long = "alert-allowed-destinations",
        env = "ODP_ALERT_ALLOWED_DESTINATIONS",
        value_delimiter = ','
    )]
    pub allowed: Vec<AllowEntry>,
}

impl AlertDestinations {
    pub fn policy(&self) -> EgressPolicy {
        EgressPolicy::new(self.allowed.clone())
    }
}

/// The host of a destination URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Host {
    /// `host` as a URL or a relay names it: an IP literal (IPv6 with or
    /// without brackets) or a name.
    pub fn parse(host: &str) -> Host {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match bare.parse() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(normal_name(host)),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Name(name) => f.write_str(name),
        }
    }
}

/// The host of `url` (http, https or smtp), as the `url` crate reads it:
/// for http(s) it normalises IPv4 forms such as `2130706433` and `127.1`
/// to `127.0.0.1`.
pub fn url_host(url: &str) -> Result<Host, EgressError> {
    let parsed = url::Url::parse(url).map_err(|e| EgressError::BadUrl(e.to_string()))?;
    match parsed.host() {
        Some(url::Host::Ipv4(ip)) => Ok(Host::Ip(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => Ok(Host::Ip(IpAddr::V6(ip))),
        // Non-special schemes (smtp://) keep the host as written.
        Some(url::Host::Domain(name)) => Ok(Host::parse(name)),
        None => Err(EgressError::BadUrl("no host".into())),
    }
}

/// Why a destination was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// An IP literal in a refused range.
    #[error("destination is {0}")]
    Refused(Refusal),
    /// A name resolving to an address in a refused range.
    #[error("destination resolves to {0}")]
    ResolvesTo(Refusal),
    #[error("destination does not resolve")]
    Unresolved,
    #[error("destination is not a URL: {0}")]
    BadUrl(String),
}

/// How long a name may take to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The address policy with the operator's allow-list.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    allowed: Vec<AllowEntry>,
}

impl EgressPolicy {
    pub fn new(allowed: Vec<AllowEntry>) -> EgressPolicy {
        EgressPolicy { allowed }
    }

    /// Whether the allow-list names `host` (so whatever it resolves to is
    /// let through).
    pub fn allows_name(&self, host: &str) -> bool {
        let host = normal_name(host);
        self.allowed.iter().any(|entry| entry.names(&host))
    }

    /// `ip` may be sent to: public, or in an allowed range.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        match refused(ip) {
            Some(why) if !self.allowed.iter().any(|entry| entry.contains(ip)) => Err(why),
            _ => Ok(()),
        }
    }

    /// `host` without resolving it: an IP literal checked, a name only
    /// when the allow-list names it (`Ok(true)`: nothing more to check).
    pub fn check_host(&self, host: &Host) -> Result<bool, EgressError> {
        match host {
            Host::Ip(ip) => self
                .check_ip(*ip)
                .map(|()| true)
                .map_err(EgressError::Refused),
            Host::Name(name) => Ok(self.allows_name(name)),
        }
    }

    /// The addresses `name` resolves to, when every one may be sent to
    /// (one refused address refuses the name: which one a connection
    /// would use is not ours to choose). An allow-listed name's addresses
    /// are not checked.
    pub async fn resolve(&self, name: &str) -> Result<Vec<IpAddr>, EgressError> {
        let lookup = tokio::net::lookup_host((name, 0));
        let addresses: Vec<IpAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
            Ok(Ok(found)) => found.map(|socket| socket.ip()).collect(),
            _ => return Err(EgressError::Unresolved),
        };
        if addresses.is_empty() {
            return Err(EgressError::Unresolved);
        }
        if !self.allows_name(name) {
            for ip in &addresses {
                self.check_ip(*ip).map_err(EgressError::ResolvesTo)?;
            }
        }
        Ok(addresses)
    }

    /// `url`'s host checked, its name resolved when it is one; the
    /// addresses it may be sent to (empty when the host is an IP literal
    /// or an allow-listed name).
    pub async fn check_url(&self, url: &str) -> Result<Vec<IpAddr>, EgressError> {
        let host = url_host(url)?;
        if self.check_host(&host)? {
            return Ok(Vec::new());
        }
        match host {
            Host::Name(name) => self.resolve(&name).await,
            Host::Ip(_) => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn policy(allowed: &[&str]) -> EgressPolicy {
        EgressPolicy::new(allowed.iter().map(|a| a.parse().unwrap()).collect())
    }

    #[test]
    fn inside_addresses_are_refused() {
        use Refusal::*;
        for (address, why) in [
            ("127.0.0.1", Loopback),
            ("127.255.0.9", Loopback),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", Unspecified),
            ("169.254.169.254", LinkLocal),
            ("10.1.2.3", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", SharedAddressSpace),
            ("100.127.255.254", SharedAddressSpace),
            ("224.0.0.1", Multicast),
            ("239.1.2.3", Multicast),
            ("255.255.255.255", Broadcast),
            ("240.0.0.1", Reserved),
            ("192.0.0.8", Reserved),
            ("198.18.0.1", Reserved),
            ("192.0.2.1", Documentation),
            ("198.51.100.7", Documentation),
            ("203.0.113.9", Documentation),
            ("::1", Loopback),
            ("::", Unspecified),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fec0::1", Private),
            ("ff02::1", Multicast),
            ("2001:db8::1", Documentation),
            ("100::1", Reserved),
            ("2001::1", Reserved),
            // IPv4 inside IPv6.
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:10.0.0.1", Private),
            ("::ffff:0.0.0.0", Unspecified),
            ("::127.0.0.1", Loopback),
            ("::8.8.8.8", Reserved),
            ("64:ff9b::7f00:1", Loopback),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("2002:7f00:1::1", Loopback),
            ("2002:c0a8:101::", Private),
            ("4000::1", Reserved),
        ] {
            assert_eq!(refused(ip(address)), Some(why), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "169.255.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(refused(ip(address)), None, "{address}");
            assert_eq!(EgressPolicy::default().check_ip(ip(address)), Ok(()));
        }
    }

    #[test]
    fn the_url_crate_normalises_ipv4_forms() {
        for url in [
            "http://127.0.0.1/",
            "http://localhost/",
            "http://[::1]:8080/",
            "http://0.0.0.0/",
            "http://2130706433/",
            "http://127.1/",
            "https://0x7f.1/",
            "http://017700000001/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::ffff:127.0.0.1]/",
            "http://LOCALHOST./",
        ] {
            let host = url_host(url).unwrap();
            let refused = match &host {
                Host::Ip(ip) => EgressPolicy::default().check_ip(*ip).is_err(),
                Host::Name(name) => name == "localhost",
            };
            assert!(refused, "{url}: {host:?}");
        }
        assert_eq!(
            url_host("http://2130706433/").unwrap(),
            Host::Ip(ip("127.0.0.1"))
        );
        assert_eq!(
            url_host("http://127.1:9/").unwrap(),
            Host::Ip(ip("127.0.0.1"))
        );
        assert_eq!(url_host("http://[::1]/x").unwrap(), Host::Ip(ip("::1")));
        assert_eq!(url_host("smtp://[::1]:25").unwrap(), Host::Ip(ip("::1")));
        assert_eq!(
            url_host("smtp://10.0.0.2:2525").unwrap(),
            Host::Ip(ip("10.0.0.2"))
        );
        assert_eq!(
            url_host("https://Hooks.Example.com/x").unwrap(),
            Host::Name("hooks.example.com".into())
        );
        assert!(url_host("not a url").is_err());
    }

    #[test]
    fn the_allow_list_lets_named_destinations_through() {
        let allow = policy(&[
            "127.0.0.1",
            "10.8.0.0/16",
            "fd00::/8",
            "[::1]",
            "Relay.Internal.",
            "*.svc.cluster.local",
        ]);
        for address in [
            "127.0.0.1",
            "::ffff:127.0.0.1",
            "10.8.3.4",
            "fd00::5",
            "::1",
        ] {
            assert_eq!(allow.check_ip(ip(address)), Ok(()), "{address}");
        }
        for address in ["127.0.0.2", "10.9.0.1", "169.254.169.254", "fe80::1"] {
            assert!(allow.check_ip(ip(address)).is_err(), "{address}");
        }
        assert!(allow.allows_name("relay.internal"));
        assert!(allow.allows_name("RELAY.internal."));
        assert!(allow.allows_name("slack.relay.svc.cluster.local"));
        assert!(!allow.allows_name("svc.cluster.local"));
        assert!(!allow.allows_name("evilsvc.cluster.local"));
        assert!(!allow.allows_name("localhost"));
        assert_eq!(allow.check_host(&Host::parse("relay.internal")), Ok(true));
        assert_eq!(allow.check_host(&Host::parse("example.com")), Ok(false));
        assert_eq!(
            EgressPolicy::default().check_host(&Host::parse("[::1]")),
            Err(EgressError::Refused(Refusal::Loopback))
        );
        for bad in ["", "10.0.0.0/33", "::/129", "a b", "http://x", "*."] {
            assert!(bad.parse::<AllowEntry>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_allow_list_is_read_from_the_environment_form() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            destinations: AlertDestinations,
        }
        let cli = Cli::try_parse_from([
            "x",
            "--alert-allowed-destinations=127.0.0.1,relay.internal,10.0.0.0/8",
        ])
        .unwrap();
        assert_eq!(cli.destinations.allowed.len(), 3);
        assert!(Cli::try_parse_from(["x", "--alert-allowed-destinations=a b"]).is_err());
        assert!(Cli::try_parse_from(["x"])
            .unwrap()
            .destinations
            .allowed
            .is_empty());
    }

    #[tokio::test]
    async fn names_are_checked_by_what_they_resolve_to() {
        let strict = EgressPolicy::default();
        assert_eq!(
            strict.resolve("localhost").await,
            Err(EgressError::ResolvesTo(Refusal::Loopback))
        );
        assert_eq!(
            strict.check_url("http://localhost:9/x").await,
            Err(EgressError::ResolvesTo(Refusal::Loopback))
        );
        assert_eq!(
            strict.check_url("http://2130706433:9/x").await,
            Err(EgressError::Refused(Refusal::Loopback))
        );
        let loopback = policy(&["127.0.0.0/8", "::1"]);
        assert!(!loopback.resolve("localhost").await.unwrap().is_empty());
        let by_name = policy(&["localhost"]);
        assert_eq!(
            by_name.check_url("http://localhost:9/").await,
            Ok(Vec::new())
        );
        assert_eq!(
            strict.resolve("no-such-name.invalid").await,
            Err(EgressError::Unresolved)
        );
    }
}
