//! The host list a continuous profile or a trigger may be limited to
//! (absent: every host running its service): what makes one valid, whether
//! it covers a host, and its encoding in a sync's digest, which the texts
//! of both share.

/// Most hosts an assignment may name.
pub const MAX_ASSIGNED_HOSTS: usize = 10_000;

/// A text in a digest: its length (u64 little-endian), then its UTF-8.
pub(crate) fn digest_text(ctx: &mut ring::digest::Context, text: &str) {
    ctx.update(&(text.len() as u64).to_le_bytes());
    ctx.update(text.as_bytes());
}

/// A host list in a digest: the count (u64, `u64::MAX` for every host),
/// then each host ([`digest_text`]).
pub(crate) fn digest_hosts(ctx: &mut ring::digest::Context, hosts: Option<&[String]>) {
    match hosts {
        None => ctx.update(&u64::MAX.to_le_bytes()),
        Some(hosts) => {
            ctx.update(&(hosts.len() as u64).to_le_bytes());
            for host in hosts {
                digest_text(ctx, host);
            }
        }
    }
}

/// Whether a host list of an assignment or a trigger covers `host`
/// (absent: every host).
pub(crate) fn hosts_cover(hosts: Option<&[String]>, host: &str) -> bool {
    hosts.is_none_or(|hosts| hosts.binary_search_by(|h| h.as_str().cmp(host)).is_ok())
}

/// Whether a host list is what agents rely on: sorted, unique and at most
/// [`MAX_ASSIGNED_HOSTS`].
pub(crate) fn hosts_are_valid(hosts: Option<&[String]>) -> bool {
    hosts.is_none_or(|hosts| {
        hosts.len() <= MAX_ASSIGNED_HOSTS && hosts.windows(2).all(|pair| pair[0] < pair[1])
    })
}
