//! The windows a simulated host sends: real captures of the demo workload
//! (`demo/cpu-split.c`) through the real agent, kept as snapshot files in
//! `devstack/fixtures/fleet/`, their header rewritten and their counts
//! scaled to the command's frequency and window length.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odp_core::Snapshot;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use uuid::Uuid;

use crate::error::{kafka_error, DevError, IoContext, Result};

/// Where the recorded windows are kept (`devstack/fixtures/fleet`).
pub fn fixture_dir() -> PathBuf {
    crate::tools::repo_root()
        .join("devstack")
        .join("fixtures")
        .join("fleet")
}

/// The recorded windows of `dir` (`*.odps`, in file-name order). An empty
/// or missing directory is an error: the simulator sends only real
/// captures.
pub fn load_fixtures(dir: &Path) -> Result<Vec<Snapshot>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .io_context(|| format!("listing {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "odps"))
        .collect();
    paths.sort();
    let mut windows = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = std::fs::read(&path).io_context(|| format!("reading {}", path.display()))?;
        let snapshot = Snapshot::decode(&bytes)
            .map_err(|e| DevError::Invalid(format!("{}: {e}", path.display())))?;
        if snapshot.total_samples() == 0 || snapshot.window_end_ms <= snapshot.window_start_ms {
            return Err(DevError::Invalid(format!(
                "{}: a fixture window needs samples and a length",
                path.display()
            )));
        }
        windows.push(snapshot);
    }
    if windows.is_empty() {
        return Err(DevError::Invalid(format!(
            "no fleet fixtures (*.odps) in {}; record them (devstack/fixtures/fleet/README.md)",
            dir.display()
        )));
    }
    Ok(windows)
}

/// What a rewritten window says about itself.
#[derive(Debug, Clone)]
pub(crate) struct WindowHeader<'a> {
    pub profile_id: Uuid,
    pub host: &'a str,
    pub agent_id: &'a str,
    pub sequence: u64,
    pub window_start_ms: i64,
    pub window_end_ms: i64,
    pub frequency_hz: u32,
}

/// `fixture` as a window of another profile: the header rewritten, the
/// counts scaled by `(frequency × window length) / (recorded frequency ×
/// recorded length)`, apportioned by largest remainder so the total is
/// the scaled total rounded. Stacks left with no sample are dropped.
pub(crate) fn rewrite(fixture: &Snapshot, header: &WindowHeader<'_>) -> Snapshot {
    let recorded_ms = (fixture.window_end_ms - fixture.window_start_ms).max(1) as f64;
    let recorded_hz = f64::from(fixture.frequency_hz.max(1));
    let window_ms = (header.window_end_ms - header.window_start_ms).max(0) as f64;
    let factor = (f64::from(header.frequency_hz) * window_ms) / (recorded_hz * recorded_ms);
    let exact: Vec<f64> = fixture
        .stacks
        .iter()
        .map(|s| s.count as f64 * factor)
        .collect();
    let total = exact.iter().sum::<f64>().round() as u64;
    let mut counts: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut short = total.saturating_sub(counts.iter().sum::<u64>());
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for i in order {
        if short == 0 {
            break;
        }
        counts[i] += 1;
        short -= 1;
    }
    let mut out = fixture.clone();
    out.stacks = fixture
        .stacks
        .iter()
        .zip(counts)
        .filter(|(_, count)| *count > 0)
        .map(|(stack, count)| odp_core::snapshot::StackCount {
            count,
            ..stack.clone()
        })
        .collect();
    out.profile_id = header.profile_id;
    out.host = header.host.to_owned();
    out.agent_id = header.agent_id.to_owned();
    out.sequence = header.sequence;
    out.window_start_ms = header.window_start_ms;
    out.window_end_ms = header.window_end_ms;
    if fixture.frequency_hz > 0 && header.frequency_hz > 0 {
        // Event units per sample follow the rate (ns per sample for cpu-clock).
        out.period =
            fixture.period * u64::from(fixture.frequency_hz) / u64::from(header.frequency_hz);
    }
    out.frequency_hz = header.frequency_hz;
    out
}

/// Records the windows of `profile_id` from the stacks topic (read from
/// its beginning) into `dir` as `window-NN.odps`, once `windows` of them
/// arrived: the host and agent become `recorded-host` and
/// `recorded-agent`, module paths under the repository are made relative
/// to it, the rest is the capture as the agent sent it. Returns the files.
pub async fn record_fixtures(
    kafka_bootstrap: &str,
    stacks_topic: &str,
    profile_id: Uuid,
    windows: usize,
    dir: &Path,
    timeout: Duration,
) -> Result<Vec<PathBuf>> {
    let (bootstrap, topic) = (kafka_bootstrap.to_owned(), stacks_topic.to_owned());
    let found = tokio::task::spawn_blocking(move || {
        collect_windows(&bootstrap, &topic, profile_id, windows, timeout)
    })
    .await
    .map_err(|e| DevError::Invalid(format!("recording task failed: {e}")))??;
    std::fs::create_dir_all(dir).io_context(|| format!("creating {}", dir.display()))?;
    let root = crate::tools::repo_root();
    let root = format!("{}/", root.display());
    let mut paths = Vec::new();
    for (i, mut snapshot) in found.into_iter().enumerate() {
        snapshot.host = "recorded-host".into();
        snapshot.agent_id = "recorded-agent".into();
        for frame in &mut snapshot.frames {
            if let Some(relative) = frame.module.strip_prefix(&root) {
                frame.module = relative.to_owned();
            }
        }
        let path = dir.join(format!("window-{i:02}.odps"));
        std::fs::write(&path, snapshot.encode())
            .io_context(|| format!("writing {}", path.display()))?;
        paths.push(path);
    }
    Ok(paths)
}

fn collect_windows(
    bootstrap: &str,
    topic: &str,
    profile_id: Uuid,
    windows: usize,
    timeout: Duration,
) -> Result<Vec<Snapshot>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("odp-fleet-record-{}", Uuid::new_v4()))
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| kafka_error("creating the recording consumer", e))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .map_err(|e| kafka_error(format!("metadata of {topic}"), e))?;
    let partitions = metadata
        .topics()
        .first()
        .map_or(0, |t| t.partitions().len() as i32);
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(|e| kafka_error("assigning partitions", e))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| kafka_error("assigning partitions", e))?;
    let deadline = std::time::Instant::now() + timeout;
    let mut found: Vec<Snapshot> = Vec::new();
    while found.len() < windows {
        if std::time::Instant::now() > deadline {
            return Err(DevError::Timeout {
                what: format!("{windows} windows of profile {profile_id} on {topic}"),
                timeout,
                detail: format!(" ({} arrived)", found.len()),
            });
        }
        let Some(message) = consumer.poll(Duration::from_millis(500)) else {
            continue;
        };
        let message = message.map_err(|e| kafka_error("reading the stacks topic", e))?;
        if let Some(snapshot) = message.payload().and_then(|p| Snapshot::decode(p).ok()) {
            if snapshot.profile_id == profile_id && snapshot.total_samples() > 0 {
                found.push(snapshot);
            }
        }
    }
    found.sort_by_key(|s| s.sequence);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use odp_core::snapshot::{SnapshotBuilder, SnapshotHeader};
    use odp_core::{EventKind, Frame};

    fn recorded() -> Snapshot {
        let mut b = SnapshotBuilder::new();
        b.add(&[Frame::function("main"), Frame::function("hot")], 1, 119);
        b.add(&[Frame::function("main"), Frame::function("warm")], 1, 60);
        b.add(&[Frame::function("main"), Frame::function("cool")], 1, 19);
        b.build(SnapshotHeader {
            profile_id: Uuid::nil(),
            host: "recorded-host".into(),
            agent_id: "recorded-agent".into(),
            sequence: 3,
            window_start_ms: 1_000,
            window_end_ms: 3_000,
            event: EventKind::CpuClock,
            period: 10_101_010,
            frequency_hz: 99,
        })
    }

    #[test]
    fn the_committed_windows_are_captures_of_the_demo() {
        let windows = load_fixtures(&fixture_dir()).unwrap();
        assert!(windows.len() >= 2);
        for w in &windows {
            let length_ms = w.window_end_ms - w.window_start_ms;
            println!(
                "seq {} {} ms {} Hz {:?} period {} samples {} stacks {} frames {}",
                w.sequence,
                length_ms,
                w.frequency_hz,
                w.event,
                w.period,
                w.total_samples(),
                w.stacks.len(),
                w.frames.len()
            );
            assert!(w.frequency_hz > 0 && length_ms > 0);
            assert!(w.frames.iter().any(|f| f.function.starts_with("demo_")));
        }
    }

    #[test]
    fn a_rewrite_scales_counts_to_rate_and_length_and_renames_the_window() {
        let fixture = recorded();
        let id = Uuid::new_v4();
        let header = WindowHeader {
            profile_id: id,
            host: "h-1",
            agent_id: "a-1",
            sequence: 7,
            window_start_ms: 50_000,
            window_end_ms: 60_000,
            frequency_hz: 49,
        };
        let out = rewrite(&fixture, &header);
        // 198 samples × (49 × 10 s) / (99 × 2 s) = 490.
        assert_eq!(out.total_samples(), 490);
        assert_eq!(
            (out.profile_id, out.host.as_str(), out.agent_id.as_str()),
            (id, "h-1", "a-1")
        );
        assert_eq!(
            (out.sequence, out.window_start_ms, out.window_end_ms),
            (7, 50_000, 60_000)
        );
        assert_eq!(out.frequency_hz, 49);
        assert_eq!(out.period, 10_101_010 * 99 / 49);
        assert_eq!(out.frames, fixture.frames);
        let decoded = Snapshot::decode(&out.encode()).unwrap();
        assert_eq!(decoded, out);

        // Same rate and length: the capture itself.
        let same = rewrite(
            &fixture,
            &WindowHeader {
                window_start_ms: 0,
                window_end_ms: 2_000,
                frequency_hz: 99,
                ..header
            },
        );
        assert_eq!(same.stacks, fixture.stacks);
    }
}
