//! The block format is a stored format: a fixed profile must encode to the
//! bytes in `tests/fixtures/profile-v1.odpp` (deflate, [`Level::Small`])
//! and `profile-v2.odpp` (LZ4, [`Level::Quick`]) and decode from them, so
//! a change to the encoding is seen (and old blocks stay readable).
//! `ODP_REGENERATE_FIXTURES=1` rewrites the fixture; review the diff.

use std::path::Path;

use odp_core::{EventKind, Frame};
use odp_profile::{Level, Profile, ProfileBuilder, Window};

fn fixed_profile() -> Profile {
    let mut b = ProfileBuilder::default();
    let frames: Vec<u32> = [
        Frame::function("main").with_module("/usr/bin/demo"),
        Frame::function("demo_hot").with_module("/usr/bin/demo"),
        Frame {
            function: "compile".into(),
            module: "re/__init__".into(),
            file: Some("/usr/lib/python3.11/re/__init__.py".into()),
            line: Some(227),
        },
        Frame::function("").with_module("/lib/x86_64-linux-gnu/libc.so.6"),
    ]
    .iter()
    .map(|f| b.frame(f))
    .collect();
    for (sequence, (event, period)) in [
        (EventKind::CpuClock, 10_101_010),
        (EventKind::CpuClock, 52_631_578),
    ]
    .into_iter()
    .enumerate()
    {
        let w = b.window(Window {
            profile_id: uuid::Uuid::nil(),
            host: "web-1".into(),
            agent_id: "3f2a".into(),
            sequence: sequence as u64,
            start_ms: 1_764_000_000_000 + 10_000 * sequence as i64,
            end_ms: 1_764_000_010_000 + 10_000 * sequence as i64,
            event,
            period,
            frequency_hz: (1_000_000_000 / period) as u32,
        });
        b.thread(w, 4242, "worker-1");
        b.samples(w, 4242, &frames[..2], 600 - 500 * sequence as u64);
        b.samples(w, 4242, &[frames[0], frames[2]], 300);
        b.samples(w, 1, &[frames[0], frames[2], frames[3]], 7);
    }
    b.build()
}

fn fixture(name: &str, level: Level) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let profile = fixed_profile();
    let encoded = profile.encode(level);
    if std::env::var_os("ODP_REGENERATE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, &encoded).unwrap();
    }
    let fixture = std::fs::read(&path).expect("the fixture (ODP_REGENERATE_FIXTURES=1 writes it)");
    assert_eq!(Profile::decode(&fixture).unwrap(), profile);
    assert_eq!(
        encoded, fixture,
        "the encoding changed; regenerate and review"
    );
}

#[test]
fn the_fixed_profile_encodes_to_the_fixtures_and_back() {
    fixture("profile-v1.odpp", Level::Small);
    fixture("profile-v2.odpp", Level::Quick);
}

/// Blocks stored before deflate moved from miniz_oxide to zlib-rs: the
/// same format, other bytes, still read back.
#[test]
fn blocks_deflated_by_miniz_oxide_still_decode() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-v1-miniz.odpp");
    let block = std::fs::read(path).unwrap();
    assert_eq!(Profile::decode(&block).unwrap(), fixed_profile());
    assert_ne!(block, fixed_profile().encode(Level::Small));
}
