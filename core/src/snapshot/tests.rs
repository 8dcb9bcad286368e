use super::*;
use proptest::prelude::*;

fn header(sequence: u64) -> SnapshotHeader {
    SnapshotHeader {
        profile_id: Uuid::from_u128(0x1234),
        host: "host-a".into(),
        agent_id: "agent-1".into(),
        sequence,
        window_start_ms: 1_700_000_000_000,
        window_end_ms: 1_700_000_010_000,
        event: EventKind::CpuClock,
        period: 10_101_010,
        frequency_hz: 99,
    }
}

fn sample_snapshot() -> Snapshot {
    let main = Frame::function("main").with_module("/usr/bin/demo");
    let hot = Frame::function("demo_hot").with_module("/usr/bin/demo");
    let warm = Frame {
        function: "demo_warm".into(),
        module: "/usr/bin/demo".into(),
        file: Some("demo.c".into()),
        line: Some(42),
    };
    let mut b = SnapshotBuilder::new();
    b.add(&[main.clone(), hot.clone()], 7, 60);
    b.add(&[main.clone(), warm], 7, 30);
    b.add(&[main.clone(), hot], 7, 5);
    b.add(&[main], 8, 1);
    b.name_thread(7, "worker");
    b.build(header(3))
}

#[test]
fn builder_deduplicates_frames_and_merges_stacks() {
    let s = sample_snapshot();
    assert_eq!(s.frames.len(), 3);
    assert_eq!(s.stacks.len(), 3);
    assert_eq!(s.total_samples(), 96);
    let hot = s
        .stacks
        .iter()
        .find(|st| s.stack_frames(st).last().unwrap().function == "demo_hot")
        .unwrap();
    assert_eq!(hot.count, 65);
}

#[test]
fn round_trips_compressed_and_plain() {
    let s = sample_snapshot();
    assert_eq!(Snapshot::decode(&s.encode()).unwrap(), s);
    assert_eq!(Snapshot::decode(&s.encode_uncompressed()).unwrap(), s);
}

#[test]
fn only_what_encode_writes_is_in_the_current_form() {
    let s = sample_snapshot();
    assert!(is_current_form(&s.encode()));
    assert!(!is_current_form(&s.encode_uncompressed()));
    assert!(!is_current_form(b"ODPS"));
    assert!(!is_current_form(b"garbage of some length"));
}

#[test]
fn encoding_is_deterministic() {
    assert_eq!(sample_snapshot().encode(), sample_snapshot().encode());
}

#[test]
fn rejects_garbage_with_reasons() {
    assert!(matches!(
        Snapshot::decode(b""),
        Err(SnapshotError::BadMagic)
    ));
    assert!(matches!(
        Snapshot::decode(b"not a snapshot at all"),
        Err(SnapshotError::BadMagic)
    ));
    let mut bytes = sample_snapshot().encode();
    bytes[4] = 9;
    assert!(matches!(
        Snapshot::decode(&bytes),
        Err(SnapshotError::UnsupportedVersion(9))
    ));
    let mut bytes = sample_snapshot().encode();
    bytes[5] = 7;
    assert!(matches!(
        Snapshot::decode(&bytes),
        Err(SnapshotError::UnknownCodec(7))
    ));
    let mut bytes = sample_snapshot().encode();
    bytes[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Snapshot::decode(&bytes),
        Err(SnapshotError::BodyTooLarge(_))
    ));
}

#[test]
fn rejects_frame_index_out_of_range() {
    let mut s = sample_snapshot();
    s.stacks[0].frames.push(99);
    let err = Snapshot::decode(&s.encode()).unwrap_err();
    assert!(
        matches!(err, SnapshotError::FrameOutOfRange { index: 99, .. }),
        "{err}"
    );
}

#[test]
fn rejects_counts_no_window_can_earn_and_never_wraps_a_total() {
    let mut s = sample_snapshot();
    let others = s.total_samples() - s.stacks[0].count;
    s.stacks[0].count = MAX_WINDOW_SAMPLES - others + 1;
    assert_eq!(s.total_samples(), MAX_WINDOW_SAMPLES + 1);
    assert!(matches!(
        Snapshot::decode(&s.encode()),
        Err(SnapshotError::TooManySamples)
    ));
    s.stacks[0].count -= 1;
    let decoded = Snapshot::decode(&s.encode()).unwrap();
    assert_eq!(decoded.total_samples(), MAX_WINDOW_SAMPLES);
    // Two stacks of u64::MAX - 1 (what a forger sent) neither wrap nor pass.
    s.stacks[0].count = u64::MAX - 1;
    s.stacks[1].count = u64::MAX - 1;
    assert_eq!(s.total_samples(), u64::MAX);
    assert!(Snapshot::decode(&s.encode()).is_err());
}

#[test]
fn rejects_trailing_bytes_and_inverted_windows() {
    let s = sample_snapshot();
    let mut plain = s.encode_uncompressed();
    plain.push(0);
    let len = (plain.len() - HEADER_LEN) as u32;
    plain[6..10].copy_from_slice(&len.to_le_bytes());
    assert!(matches!(
        Snapshot::decode(&plain),
        Err(SnapshotError::TrailingBytes(1))
    ));
    let mut inverted = s;
    inverted.window_end_ms = inverted.window_start_ms - 1;
    assert!(matches!(
        Snapshot::decode(&inverted.encode()),
        Err(SnapshotError::InvertedWindow { .. })
    ));
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    for bytes in [
        sample_snapshot().encode(),
        sample_snapshot().encode_uncompressed(),
    ] {
        for len in 0..bytes.len() {
            assert!(
                Snapshot::decode(&bytes[..len]).is_err(),
                "prefix of {len} bytes decoded"
            );
        }
    }
}

fn arb_frame() -> impl Strategy<Value = Frame> {
    (
        "[a-z_:]{1,12}",
        "(/[a-z]{1,6}){0,3}",
        proptest::option::of("[a-z]{1,8}\\.c"),
        proptest::option::of(1u32..100_000),
    )
        .prop_map(|(function, module, file, line)| Frame {
            function,
            module,
            file,
            line,
        })
}

fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    (
        proptest::collection::vec(arb_frame(), 1..20),
        proptest::collection::vec(
            (
                proptest::collection::vec(0usize..1000, 1..30),
                0u32..4,
                1u64..1_000_000,
            ),
            0..40,
        ),
        any::<u64>(),
        any::<i64>(),
        0i64..1_000_000,
        any::<u32>(),
    )
        .prop_map(|(frames, stacks, sequence, start, len, freq)| {
            let mut b = SnapshotBuilder::new();
            for (picks, tid, count) in stacks {
                let stack: Vec<Frame> = picks
                    .iter()
                    .map(|p| frames[p % frames.len()].clone())
                    .collect();
                b.add(&stack, tid, count);
            }
            b.name_thread(1, "main");
            let mut h = header(sequence);
            h.window_start_ms = start / 2;
            h.window_end_ms = start / 2 + len;
            h.frequency_hz = freq;
            b.build(h)
        })
}

proptest! {
    #[test]
    fn snapshots_round_trip(s in arb_snapshot()) {
        prop_assert_eq!(Snapshot::decode(&s.encode()).unwrap(), s.clone());
        prop_assert_eq!(Snapshot::decode(&s.encode_uncompressed()).unwrap(), s);
    }

    #[test]
    fn decoder_never_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Snapshot::decode(&bytes);
    }

    #[test]
    fn decoder_never_panics_on_corrupted_snapshots(s in arb_snapshot(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = s.encode_uncompressed();
        for (pos, value) in flips {
            let i = pos % bytes.len();
            bytes[i] = value;
        }
        let _ = Snapshot::decode(&bytes);
    }
}

#[test]
fn a_window_lost_on_the_way_leaves_its_samples_counted_as_lost() {
    use crate::coverage::{Coverage, LossReason, Losses};
    let mut window = sample_snapshot();
    let mut lost = Losses::default();
    lost.add(LossReason::Overflow, 2);
    window.coverage = Coverage {
        expected: Some(window.total_samples() + 5),
        lost,
    };
    let record = window.lost_in_transport().expect("a window with samples");
    let back = Snapshot::decode(&record.encode()).unwrap();
    assert_eq!(back.total_samples(), 0);
    assert_eq!(
        (back.profile_id, back.sequence, back.host.as_str()),
        (window.profile_id, window.sequence, window.host.as_str())
    );
    assert_eq!(back.coverage.expected, window.coverage.expected);
    assert_eq!(
        (back.coverage.lost.overflow, back.coverage.lost.transport),
        (2, window.total_samples())
    );
    // The record itself has nothing more to lose.
    assert!(back.lost_in_transport().is_none());
}

#[test]
fn version_1_snapshots_without_coverage_are_still_read() {
    let window = sample_snapshot();
    let v2 = window.encode_uncompressed();
    // Version 1: the same body without the coverage trailer (an unknown
    // expected and no losses: two zero bytes).
    let body = &v2[10..v2.len() - 2];
    let mut v1 = b"ODPS".to_vec();
    v1.extend([1, 0]);
    v1.extend((body.len() as u32).to_le_bytes());
    v1.extend(body);
    let back = Snapshot::decode(&v1).unwrap();
    assert_eq!(back, window);
    // Read, but not kept as it came: stored blocks are the current form.
    assert!(!is_current_form(&v1));
    assert!(matches!(
        Snapshot::decode(&[b"ODPS".as_slice(), &[3, 0, 0, 0, 0, 0]].concat()),
        Err(SnapshotError::UnsupportedVersion(3))
    ));
}
