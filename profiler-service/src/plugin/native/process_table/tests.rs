use std::process::Command;
use std::time::{Duration, Instant};

use super::*;
use crate::plugin::native::cpu_wide::{CpuRecord, CpuWideSet, Timed};

fn mapping(start: u64, end: u64, path: &str) -> RecordedMapping {
    RecordedMapping {
        mapping: ExecMapping {
            start,
            end,
            offset: 0,
            path: path.into(),
        },
        build_id: Some(vec![0xab; 20]),
    }
}

fn exec(table: &mut ProcessTable, pid: u32, name: &str) -> Change {
    table.apply(&TaskEvent::Comm {
        pid,
        tid: pid,
        name: name.into(),
        exec: true,
    })
}

fn mmap(table: &mut ProcessTable, pid: u32, mapped: RecordedMapping) -> Change {
    table.apply(&TaskEvent::Mmap { pid, mapped })
}

fn fork(table: &mut ProcessTable, parent: u32, child: u32) -> Change {
    table.apply(&TaskEvent::Fork {
        pid: child,
        ppid: parent,
        tid: child,
        ptid: parent,
    })
}

#[test]
fn exec_starts_a_new_address_space_and_fork_copies_it() {
    let mut table = ProcessTable::new();
    assert_eq!(exec(&mut table, 10, "server"), Change::AddressSpace(10));
    mmap(&mut table, 10, mapping(0x3000, 0x4000, "/lib/libc.so.6"));
    mmap(&mut table, 10, mapping(0x1000, 0x2000, "/usr/bin/server"));
    let maps = table.get(10).unwrap().maps.clone().unwrap();
    let starts: Vec<u64> = maps.iter().map(|m| m.mapping.start).collect();
    assert_eq!(starts, [0x1000, 0x3000], "kept in address order");

    table.entry(10).matched = Some(true);
    assert_eq!(fork(&mut table, 10, 11), Change::AddressSpace(11));
    let child = table.get(11).unwrap();
    assert_eq!(child.comm, "server");
    assert_eq!(child.maps.as_ref(), Some(&maps), "a fork inherits the maps");
    assert_eq!(child.matched, Some(true), "and the target's verdict");
    assert_eq!(table.thread_name(11), Some("server"));

    // The child runs another program: nothing of the parent's is left.
    exec(&mut table, 11, "worker");
    let child = table.get(11).unwrap();
    assert_eq!(child.maps.as_deref(), Some(&[][..]));
    assert_eq!(child.matched, None, "decided again for the new program");
    assert_eq!(table.get(10).unwrap().maps.as_ref(), Some(&maps));
}

#[test]
fn a_mapping_over_another_replaces_it() {
    let mut table = ProcessTable::new();
    exec(&mut table, 5, "jit");
    mmap(&mut table, 5, mapping(0x1000, 0x3000, "/tmp/a"));
    assert_eq!(
        mmap(&mut table, 5, mapping(0x2000, 0x4000, "/tmp/b")),
        Change::Remapped(5)
    );
    let maps = table.get(5).unwrap().maps.clone().unwrap();
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].mapping.path, "/tmp/b");
    // A process running since before the profile has no known maps: a
    // record of one of its mappings does not pretend to know them all.
    table.entry(7);
    mmap(&mut table, 7, mapping(0x1000, 0x2000, "/tmp/c"));
    assert_eq!(table.get(7).unwrap().maps, None);
}

#[test]
fn threads_are_named_and_renamed_and_the_process_by_its_main_thread() {
    let mut table = ProcessTable::new();
    exec(&mut table, 20, "db");
    table.entry(20).matched = Some(true);
    table.apply(&TaskEvent::Fork {
        pid: 20,
        ppid: 20,
        tid: 21,
        ptid: 20,
    });
    assert_eq!(table.thread_name(21), Some("db"));
    let rename = |tid: u32, name: &str| TaskEvent::Comm {
        pid: 20,
        tid,
        name: name.into(),
        exec: false,
    };
    assert_eq!(table.apply(&rename(21, "db-flush")), Change::Nothing);
    assert_eq!(table.thread_name(21), Some("db-flush"));
    assert_eq!(table.get(20).unwrap().matched, Some(true));
    assert_eq!(table.apply(&rename(20, "db-main")), Change::Renamed(20));
    assert_eq!(table.get(20).unwrap().comm, "db-main");
    assert_eq!(table.get(20).unwrap().matched, None);
    table.apply(&TaskEvent::Exit { pid: 20, tid: 21 });
    assert_eq!(table.thread_name(21), None);
    assert!(
        !table.get(20).unwrap().exited,
        "a thread's exit is not the process's"
    );
}

#[test]
fn an_exited_process_is_kept_until_freed() {
    let mut table = ProcessTable::new();
    exec(&mut table, 30, "short");
    mmap(&mut table, 30, mapping(0x1000, 0x2000, "/usr/bin/short"));
    table.apply(&TaskEvent::Exit { pid: 30, tid: 30 });
    let process = table
        .get(30)
        .expect("kept for the samples not yet symbolized");
    assert!(process.exited);
    assert_eq!(process.maps.as_ref().map(Vec::len), Some(1));
    let freed = table.free_exited();
    assert_eq!(freed.len(), 1);
    assert_eq!(freed[0].0, 30);
    assert_eq!(freed[0].1.comm, "short");
    assert!(table.get(30).is_none());
    assert_eq!(table.thread_name(30), None);
    assert!(table.is_empty());
}

/// The records the kernel wrote for one short process run through `sh`:
/// the shell's fork, the exec's name and mappings (with build ids), its
/// samples, its exit.
#[test]
fn records_of_a_real_short_process_describe_it_after_it_exited() {
    let mut set = match CpuWideSet::open(999, false) {
        Ok(set) => set,
        Err(e) => panic!("per-CPU events need root or CAP_PERFMON here: {e}"),
    };
    // A busy child of a shell, long enough to be sampled at 999 Hz.
    let child = Command::new("sh")
        .args(["-c", "timeout 0.2 sh -c 'while :; do :; done'; echo $$"])
        .output()
        .unwrap();
    assert!(child.status.success());
    let shell: u32 = String::from_utf8_lossy(&child.stdout)
        .trim()
        .parse()
        .unwrap();
    let mut records: Vec<Timed> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        set.drain(&mut records);
        std::thread::sleep(Duration::from_millis(20));
    }
    records.sort_by_key(|t| t.time);

    let mut table = ProcessTable::new();
    let mut samples_of = std::collections::HashMap::<u32, u64>::new();
    let mut timeouts = Vec::new();
    let mut exited_with_maps = Vec::new();
    for timed in &records {
        match &timed.record {
            CpuRecord::Sample(s) => *samples_of.entry(s.pid).or_default() += 1,
            CpuRecord::Task(event) => {
                if let TaskEvent::Comm {
                    pid,
                    name,
                    exec: true,
                    ..
                } = event
                {
                    if name == "timeout" {
                        timeouts.push(*pid);
                    }
                }
                if let TaskEvent::Exit { pid, tid } = event {
                    if pid == tid {
                        if let Some(p) = table.get(*pid) {
                            exited_with_maps.push((*pid, p.comm.clone(), p.maps.clone()));
                        }
                    }
                }
                table.apply(event);
            }
        }
    }
    let &[timeout] = &timeouts[..] else {
        panic!("one exec of timeout by the shell, got {timeouts:?}");
    };
    let (_, comm, maps) = exited_with_maps
        .iter()
        .find(|(pid, ..)| *pid == timeout)
        .expect("timeout's exit recorded");
    assert_eq!(comm, "timeout");
    let maps = maps.as_ref().expect("its maps known from its exec on");
    let binary = maps
        .iter()
        .find(|m| m.mapping.path.ends_with("/timeout"))
        .unwrap_or_else(|| panic!("its binary mapped: {maps:?}"));
    assert!(
        binary.build_id.as_ref().is_some_and(|id| id.len() == 20),
        "{binary:?}"
    );
    assert!(maps.iter().any(|m| m.mapping.path.contains("libc.so")));
    // The busy loop is a child of timeout's: a fork, named by its exec.
    let busy: Vec<u32> = samples_of
        .keys()
        .copied()
        .filter(|&pid| {
            table
                .get(pid)
                .is_some_and(|p| p.comm == "sh" && pid != shell)
        })
        .collect();
    assert!(
        busy.iter().any(|pid| samples_of[pid] > 50),
        "the busy shell was sampled: {samples_of:?} {busy:?}"
    );
    assert!(table.get(timeout).unwrap().exited);
    let freed = table.free_exited();
    assert!(freed.iter().any(|(pid, _)| *pid == timeout) && table.get(timeout).is_none());
}
