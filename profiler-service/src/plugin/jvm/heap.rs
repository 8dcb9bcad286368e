//! `heap-bytes` for JVMs: the live heap by class, taken once when the
//! profile ends (`GC.class_histogram` over the attach socket).
//!
//! A histogram is a state, not a rate: what the heap holds when the profile
//! ends. So the session samples nothing while the profile runs and, at its
//! end (duration elapsed or stopped), takes one histogram per live JVM and
//! publishes it as the profile's single snapshot; a JVM that has exited has
//! no heap left to show. `GC.class_histogram` runs a full collection first
//! (it counts live objects only), a pause paid once per profile.
//!
//! Each class is a one-frame stack weighted by the bytes its instances
//! take: the frame's function is the class as Java spells it (`byte[]`,
//! `java.lang.String`, `com.example.Cache$Entry`), its module the class's
//! package (the element class's for arrays; empty for primitive arrays and
//! the default package), as the frames of JFR stacks name it. The stack is
//! attributed to the JVM's pid, so a target of several JVMs shows whose
//! heap holds what.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use odp_core::{EventKind, Frame};
use tracing::debug;

use super::attach::Attach;
use crate::plugin::{PluginError, PollStats, Session, WindowSink};
use crate::targets::ProcFs;

/// One row of a class histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramRow {
    /// As the JVM names it: `[B`, `java.lang.String`, `[Ljava.lang.Object;`.
    pub class: String,
    pub instances: u64,
    pub bytes: u64,
}

/// Parses `GC.class_histogram` output: ` 1:  15667  933952  [B (java.base@17.0.15)`
/// rows between the header and the `Total` line; anything else is skipped.
pub fn parse_histogram(output: &str) -> Vec<HistogramRow> {
    output
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let rank = fields.next()?;
            rank.strip_suffix(':')?.parse::<u64>().ok()?;
            let instances = fields.next()?.parse().ok()?;
            let bytes = fields.next()?.parse().ok()?;
            let class = fields.next()?.to_owned();
            Some(HistogramRow {
                class,
                instances,
                bytes,
            })
        })
        .collect()
}

/// A JVM class name as Java source spells it, and its package:
/// `[B` → `byte[]`, `[[Ljava.lang.String;` → `java.lang.String[][]`.
pub fn class_frame(class: &str) -> Frame {
    let dims = class.bytes().take_while(|&b| b == b'[').count();
    let element = &class[dims..];
    let name = if dims == 0 {
        element
    } else {
        match element {
            "Z" => "boolean",
            "B" => "byte",
            "C" => "char",
            "S" => "short",
            "I" => "int",
            "J" => "long",
            "F" => "float",
            "D" => "double",
            other => other
                .strip_prefix('L')
                .and_then(|o| o.strip_suffix(';'))
                .unwrap_or(other),
        }
    };
    let package = if dims > 0 && !element.starts_with('L') {
        ""
    } else {
        name.rsplit_once('.').map_or("", |(package, _)| package)
    };
    Frame {
        function: format!("{name}{}", "[]".repeat(dims)),
        module: package.to_owned(),
        file: None,
        line: None,
    }
}

pub struct HeapSession {
    procfs: ProcFs,
    jcmd: PathBuf,
    targets: BTreeMap<u32, Attach>,
}

impl HeapSession {
    /// Checks that each JVM answers on its attach socket (starting its
    /// listener now, so that the histogram at the end is quick).
    pub fn open(procfs: ProcFs, jcmd: PathBuf, pids: &[u32]) -> Result<Self, PluginError> {
        let mut session = HeapSession {
            procfs,
            jcmd,
            targets: BTreeMap::new(),
        };
        session.sync_targets(pids);
        let mut refused = None;
        session
            .targets
            .retain(|&pid, attach| match attach.command("VM.uptime") {
                Ok(_) => true,
                Err(e) => {
                    refused = Some((pid, e.to_string()));
                    false
                }
            });
        if session.targets.is_empty() {
            return Err(super::attach_failure("GC.class_histogram", refused, pids));
        }
        Ok(session)
    }
}

impl Session for HeapSession {
    fn event(&self) -> EventKind {
        EventKind::HeapBytes
    }

    fn pids(&self) -> Vec<u32> {
        self.targets.keys().copied().collect()
    }

    fn window_period(&mut self) -> u64 {
        // Each stack already weighs its bytes.
        1
    }

    fn poll(&mut self, _sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        Ok(PollStats::default())
    }

    fn set_frequency(&mut self, _frequency_hz: u32) {}

    fn set_paused(&mut self, _paused: bool) {}

    fn sync_targets(&mut self, pids: &[u32]) {
        let wanted: HashSet<u32> = pids.iter().copied().collect();
        self.targets.retain(|pid, _| wanted.contains(pid));
        for &pid in pids {
            self.targets
                .entry(pid)
                .or_insert_with(|| Attach::new(self.procfs.clone(), pid, self.jcmd.clone()));
        }
    }

    fn sends_at_end(&self) -> bool {
        true
    }

    /// One histogram per JVM still alive; the profile fails when every
    /// live JVM refused it.
    fn finish(&mut self, sink: &mut WindowSink) -> Result<PollStats, PluginError> {
        let mut stats = PollStats::default();
        let mut failure = None;
        let mut taken = false;
        for (&pid, attach) in &self.targets {
            if !self.procfs.is_alive(pid) {
                debug!(pid, "JVM exited: no heap histogram");
                continue;
            }
            let rows = match attach.command("GC.class_histogram") {
                Ok(output) => parse_histogram(&output),
                Err(e) => {
                    failure = Some((pid, e.to_string()));
                    continue;
                }
            };
            taken = true;
            sink.name_thread(pid, || self.procfs.comm(pid));
            for row in rows.iter().filter(|r| r.bytes > 0) {
                let frame = sink.intern(&class_frame(&row.class));
                sink.add_stack(vec![frame], pid, row.bytes);
                stats.samples += 1;
            }
        }
        match failure {
            Some((pid, message)) if !taken => Err(PluginError::ToolFailed {
                tool: "GC.class_histogram",
                pid,
                message,
            }),
            _ => Ok(stats),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_histogram_parses_into_rows() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/runtime/gc-class-histogram.txt"
        ))
        .unwrap();
        let rows = parse_histogram(&text);
        assert!(rows.len() > 100, "{} rows", rows.len());
        let total: u64 = rows.iter().map(|r| r.bytes).sum();
        let line = text.lines().find(|l| l.starts_with("Total")).unwrap();
        let expected: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert_eq!(total, expected);
        let retained = rows
            .iter()
            .find(|r| r.class == "HeapHolder$Retained")
            .expect("the program's own class, which has no module");
        assert!(retained.instances > 0);
    }

    #[test]
    fn class_names_are_spelled_as_in_java() {
        let cases = [
            ("[B", "byte[]", ""),
            ("java.lang.String", "java.lang.String", "java.lang"),
            ("[Ljava.lang.Object;", "java.lang.Object[]", "java.lang"),
            ("[[J", "long[][]", ""),
            (
                "java.util.HashMap$Node",
                "java.util.HashMap$Node",
                "java.util",
            ),
            ("HeapHolder$Retained", "HeapHolder$Retained", ""),
        ];
        for (jvm, java, package) in cases {
            let frame = class_frame(jvm);
            assert_eq!(
                (frame.function.as_str(), frame.module.as_str()),
                (java, package)
            );
        }
    }
}
