use proptest::prelude::*;

use super::recording::{self, timespan_nanos, Kind};
use super::*;

/// Two seconds of core/tests/fixtures/ImportWorkload.java recorded by JDK
/// 17 (see make_jfr_fixture.sh there, which prints the numbers below as
/// the JDK's own `jfr` tool reads them).
const RECORDING: &[u8] = include_bytes!("../../../core/tests/fixtures/import-workload.jfr");
const EXECUTION_SAMPLES: u64 = 127;
const ALLOCATION_SAMPLES: u64 = 132;
const ALLOCATED_BYTES: u128 = 136_750_880;
const MONITOR_ENTERS: u64 = 118;
const PARKS: u64 = 279;
/// Nanoseconds the JDK prints for the waits; ticks convert to
/// nanoseconds with at most one lost per event.
const WAITED_NANOS: u128 = 915_605_842 + 1_744_266_063;

fn names(stacks: &[recording::JfrStack]) -> Vec<String> {
    stacks
        .iter()
        .flat_map(|s| s.frames.iter().map(|f| f.function.clone()))
        .collect()
}

#[test]
fn a_jdk_recording_reads_as_the_jdk_counts_it() {
    let rec = recording::read(RECORDING.to_vec()).unwrap();
    assert_eq!(
        rec.kinds_present(),
        vec![Kind::Cpu, Kind::Alloc, Kind::Lock]
    );
    assert_eq!(rec.default_kind(), Some(Kind::Cpu));
    let cpu = &rec.kinds[&Kind::Cpu];
    assert_eq!(
        (cpu.events, cpu.weight),
        (EXECUTION_SAMPLES, EXECUTION_SAMPLES.into())
    );
    let summed: u64 = cpu.stacks.iter().map(|s| s.weight).sum();
    assert_eq!(summed, EXECUTION_SAMPLES);
    assert!(names(&cpu.stacks).contains(&"ImportWorkload.spin".to_owned()));
    let alloc = &rec.kinds[&Kind::Alloc];
    assert_eq!(
        (alloc.events, alloc.weight),
        (ALLOCATION_SAMPLES, ALLOCATED_BYTES)
    );
    assert!(names(&alloc.stacks).contains(&"ImportWorkload.allocate".to_owned()));
    let lock = &rec.kinds[&Kind::Lock];
    assert_eq!(lock.events, MONITOR_ENTERS + PARKS);
    assert!(
        WAITED_NANOS.abs_diff(lock.weight) <= u128::from(lock.events),
        "{} ns waited, the JDK says {WAITED_NANOS}",
        lock.weight
    );
    let leaves: Vec<&str> = lock
        .stacks
        .iter()
        .map(|s| s.frames.last().unwrap().function.as_str())
        .collect();
    assert!(
        leaves.contains(&"[monitor] ImportWorkload$Ledger"),
        "{leaves:?}"
    );
    assert!(
        leaves.contains(&"[park] java.util.concurrent.locks.ReentrantLock$FairSync"),
        "{leaves:?}"
    );
    // The settings name the 10 ms of make_jfr_fixture.sh.
    assert_eq!(rec.cpu_period_nanos, Some(10_000_000));
    let (start, duration) = (rec.start_nanos.unwrap(), rec.duration_nanos.unwrap());
    assert!(start > 1_700_000_000_000_000_000, "{start}");
    assert!(
        (1_000_000_000..10_000_000_000).contains(&duration),
        "{duration}"
    );
    assert!(
        rec.threads.values().any(|n| n == "contender-0"),
        "{:?}",
        rec.threads
    );
}

#[test]
fn the_plugins_readers_agree_with_the_import() {
    let chunks = parse(RECORDING.to_vec(), SampleEvent::Execution).unwrap();
    let samples: u64 = chunks.iter().map(|c| c.samples.len() as u64).sum();
    assert_eq!(samples, EXECUTION_SAMPLES);
    let allocated: u128 = parse(RECORDING.to_vec(), SampleEvent::Allocation)
        .unwrap()
        .iter()
        .flat_map(|c| &c.samples)
        .map(|s| u128::from(s.weight))
        .sum();
    assert_eq!(allocated, ALLOCATED_BYTES);
    let waits = waits::parse(RECORDING.to_vec()).unwrap();
    let count: u64 = waits.iter().map(|c| c.events.len() as u64).sum();
    assert_eq!(count, MONITOR_ENTERS + PARKS);
}

#[test]
fn real_recordings_are_far_from_the_value_limit() {
    let values = check::check(RECORDING).unwrap();
    assert_eq!(values, 13_833);
    // About one value per 10 bytes: a recording of the import's 32 MiB
    // holds some 3 million, and one twice as dense still passes.
    let projected = values * (32 << 20) / RECORDING.len() as u64;
    assert!(2 * projected <= MAX_VALUES, "{projected} values in 32 MiB");
    // What a value costs in jfrs, as the limit's docs say.
    let node = std::mem::size_of::<jfrs::reader::value_descriptor::ValueDescriptor>();
    assert!(node <= 40, "{node} bytes a value");
}

#[test]
fn timespans_read_as_the_jdk_writes_them() {
    assert_eq!(timespan_nanos("10 ms"), Some(10_000_000));
    assert_eq!(timespan_nanos("20ms"), Some(20_000_000));
    assert_eq!(timespan_nanos("1 s"), Some(1_000_000_000));
    assert_eq!(timespan_nanos("100 us"), Some(100_000));
    assert_eq!(timespan_nanos("everyChunk"), None);
    assert_eq!(timespan_nanos("0 ns"), None);
    assert_eq!(timespan_nanos("99999999999999 d"), None);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(parse(Vec::new(), SampleEvent::Execution).is_err());
    assert!(parse(
        b"not a recording at all, clearly".repeat(4),
        SampleEvent::Execution
    )
    .is_err());
    // A chunk header claiming more bytes than the file has.
    let mut lying = b"FLR\0\0\x02\0\x01".to_vec();
    lying.extend_from_slice(&i64::MAX.to_be_bytes());
    lying.resize(80, 0);
    let error = parse(lying, SampleEvent::Execution).unwrap_err();
    assert!(error.to_string().contains("claims"), "{error}");
    let truncated = RECORDING[..RECORDING.len() / 2].to_vec();
    assert!(recording::read(truncated).is_err());
}

/// A chunk of raw (uncompressed) integers, written field by field: enough
/// of the format to declare a few classes and write events of them.
struct ChunkWriter {
    strings: Vec<String>,
}

/// A class of the metadata: id, name, fields as (name, class id, array).
type ClassDef<'a> = (i64, &'a str, &'a [(&'a str, i64, bool)]);

impl ChunkWriter {
    fn string(&mut self, s: &str) -> i32 {
        let index = match self.strings.iter().position(|x| x == s) {
            Some(i) => i,
            None => {
                self.strings.push(s.to_owned());
                self.strings.len() - 1
            }
        };
        index as i32
    }

    /// A chunk declaring `classes`, then `events` (each its bytes after
    /// the size and type id: `(type, body, declared size or None)`), and
    /// the constant pool deltas `pools` (offsets of constant pool events
    /// with no pools, each pointing at the next).
    fn chunk(classes: &[ClassDef<'_>], events: &[(i64, Vec<u8>, Option<i32>)]) -> Vec<u8> {
        let mut w = ChunkWriter {
            strings: Vec::new(),
        };
        // The element tree, with string indexes.
        let mut tree = Vec::new();
        let put = |out: &mut Vec<u8>, v: i32| out.extend_from_slice(&v.to_be_bytes());
        let (metadata, class, field) = (w.string("metadata"), w.string("class"), w.string("field"));
        let (id, name, class_attr) = (w.string("id"), w.string("name"), w.string("class"));
        let dimension = w.string("dimension");
        let one = w.string("1");
        put(&mut tree, w.string("root"));
        put(&mut tree, 0); // root attributes
        put(&mut tree, 1); // root children
        put(&mut tree, metadata);
        put(&mut tree, 0);
        put(&mut tree, classes.len() as i32);
        for (class_id, class_name, fields) in classes {
            put(&mut tree, class);
            put(&mut tree, 2);
            let (k, v) = (id, w.string(&class_id.to_string()));
            put(&mut tree, k);
            put(&mut tree, v);
            let v = w.string(class_name);
            put(&mut tree, name);
            put(&mut tree, v);
            put(&mut tree, fields.len() as i32);
            for (field_name, field_class, array) in *fields {
                put(&mut tree, field);
                put(&mut tree, if *array { 3 } else { 2 });
                let v = w.string(field_name);
                put(&mut tree, name);
                put(&mut tree, v);
                let v = w.string(&field_class.to_string());
                put(&mut tree, class_attr);
                put(&mut tree, v);
                if *array {
                    put(&mut tree, dimension);
                    put(&mut tree, one);
                }
                put(&mut tree, 0);
            }
        }
        let mut body = Vec::new();
        body.extend_from_slice(&0i64.to_be_bytes()); // type: metadata
        body.extend_from_slice(&[0; 24]); // start, duration, id
        put(&mut body, w.strings.len() as i32);
        for s in &w.strings {
            body.push(3);
            put(&mut body, s.len() as i32);
            body.extend_from_slice(s.as_bytes());
        }
        body.extend_from_slice(&tree);
        let mut events_bytes = Vec::new();
        let metadata_offset = 68;
        events_bytes.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        events_bytes.extend_from_slice(&body);
        for (kind, event, size) in events {
            let size = size.unwrap_or(event.len() as i32 + 12);
            events_bytes.extend_from_slice(&size.to_be_bytes());
            events_bytes.extend_from_slice(&kind.to_be_bytes());
            events_bytes.extend_from_slice(event);
        }
        let mut chunk = b"FLR\0\0\x02\0\x01".to_vec();
        chunk.extend_from_slice(&(68 + events_bytes.len() as i64).to_be_bytes());
        chunk.extend_from_slice(&0i64.to_be_bytes()); // no constant pool
        chunk.extend_from_slice(&(metadata_offset as i64).to_be_bytes());
        chunk.extend_from_slice(&1_700_000_000_000_000_000i64.to_be_bytes());
        chunk.extend_from_slice(&1_000_000_000i64.to_be_bytes());
        chunk.extend_from_slice(&0i64.to_be_bytes());
        chunk.extend_from_slice(&1_000_000_000i64.to_be_bytes());
        chunk.extend_from_slice(&0i32.to_be_bytes()); // raw integers
        chunk.extend_from_slice(&events_bytes);
        chunk
    }
}

const INT: ClassDef<'static> = (4, "int", &[]);

#[test]
fn the_chunk_writer_writes_what_jfrs_reads() {
    let chunk = ChunkWriter::chunk(
        &[
            INT,
            (20, "test.Event", &[("value", 4, false), ("many", 4, true)]),
        ],
        &[(
            20,
            [7i32, 2, 8, 9]
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
            None,
        )],
    );
    let read = read_events(chunk, |_, name, value, _| {
        let number = value
            .get_field("value")
            .and_then(|v| i32::try_from(v.value).ok());
        Some((name.to_owned(), number))
    })
    .unwrap();
    assert_eq!(read[0].events, vec![("test.Event".to_owned(), Some(7))]);
}

#[test]
fn what_jfrs_cannot_read_safely_is_refused_before_it_reads() {
    let refused = |chunk: Vec<u8>, why: &str| {
        let error = read_events(chunk, |_, _, _, _| Some(())).unwrap_err();
        assert!(error.to_string().contains(why), "{error}, not {why}");
    };
    // A class holding itself inline: a recursion without end in jfrs.
    let selfish = (21, "test.Node", &[("next", 21, false)][..]);
    refused(
        ChunkWriter::chunk(&[INT, selfish], &[(21, vec![0; 8], None)]),
        "nests deeper",
    );
    // An array declaring two billion elements: one allocation of 80 GB.
    let arrays = (20, "test.Event", &[("many", 4, true)][..]);
    refused(
        ChunkWriter::chunk(
            &[INT, arrays],
            &[(20, i32::MAX.to_be_bytes().to_vec(), None)],
        ),
        "array elements declared",
    );
    refused(
        ChunkWriter::chunk(
            &[INT, arrays],
            &[(20, (-1i32).to_be_bytes().to_vec(), None)],
        ),
        "array elements declared",
    );
    // An event of size 0: jfrs reads it again and again.
    let plain = (20, "test.Event", &[("value", 4, false)][..]);
    refused(
        ChunkWriter::chunk(&[INT, plain], &[(20, vec![0; 4], Some(0))]),
        "has size 0",
    );
    // A string declaring more bytes than the chunk has.
    let text = (22, "java.lang.String", &[][..]);
    let strings = (20, "test.Event", &[("text", 22, false)][..]);
    let mut long = vec![3u8];
    long.extend_from_slice(&i32::MAX.to_be_bytes());
    refused(
        ChunkWriter::chunk(&[INT, text, strings], &[(20, long, None)]),
        "string bytes declared",
    );
    // An event of a type the metadata does not declare.
    refused(
        ChunkWriter::chunk(&[INT], &[(99, vec![0; 4], None)]),
        "no class 99",
    );
}

#[test]
fn constant_pools_that_loop_are_refused() {
    let base = ChunkWriter::chunk(&[INT], &[]);
    // A constant pool event holding no pools, `delta` to the one before.
    let pool = |delta: i64| {
        let mut p = 41i32.to_be_bytes().to_vec();
        p.extend_from_slice(&1i64.to_be_bytes());
        p.extend_from_slice(&[0; 16]);
        p.extend_from_slice(&delta.to_be_bytes());
        p.push(0);
        p.extend_from_slice(&0i32.to_be_bytes());
        p
    };
    let (a, b) = (base.len() as i64, base.len() as i64 + 41);
    // The header names the last pool, which names the first.
    let with_pools = |first_delta: i64| {
        let mut chunk = base.clone();
        chunk.extend_from_slice(&pool(first_delta));
        chunk.extend_from_slice(&pool(a - b));
        let size = chunk.len() as i64;
        chunk[8..16].copy_from_slice(&size.to_be_bytes());
        chunk[16..24].copy_from_slice(&b.to_be_bytes());
        chunk
    };
    assert!(read_events(with_pools(0), |_, _, _, _| Some(())).is_ok());
    // The first names the last again: jfrs would read them forever.
    let error = read_events(with_pools(b - a), |_, _, _, _| Some(())).unwrap_err();
    assert!(error.to_string().contains("loop back"), "{error}");
    let error = read_events(with_pools(1 << 40), |_, _, _, _| Some(())).unwrap_err();
    assert!(error.to_string().contains("outside the chunk"), "{error}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = recording::read(bytes.clone());
        let mut chunk = b"FLR\0\0\x02\0\x01".to_vec();
        chunk.extend_from_slice(&((68 + bytes.len()) as i64).to_be_bytes());
        chunk.extend_from_slice(&bytes);
        let _ = recording::read(chunk);
    }

    #[test]
    fn mutated_recordings_never_panic(
        edits in proptest::collection::vec((0..RECORDING.len(), any::<u8>()), 1..16),
        cut in 0..RECORDING.len() * 2,
    ) {
        let mut bytes = RECORDING.to_vec();
        for (at, byte) in edits {
            bytes[at] = byte;
        }
        bytes.truncate(cut);
        if let Ok(rec) = recording::read(bytes) {
            for kind in rec.kinds.values() {
                prop_assert!(kind.stacks.iter().all(|s| !s.frames.is_empty()));
            }
        }
    }
}
