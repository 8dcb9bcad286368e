use std::fs;
use std::path::PathBuf;

use super::*;

/// A throwaway procfs-like tree, removed on drop.
struct FakeProc {
    root: PathBuf,
}

impl FakeProc {
    fn new() -> Self {
        let root = std::env::temp_dir().join(format!("odp-fake-proc-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&root).unwrap();
        FakeProc { root }
    }

    fn process(&self, pid: u32, comm: &str, state: char, tids: &[u32]) {
        let dir = self.root.join(pid.to_string());
        fs::create_dir_all(dir.join("task")).unwrap();
        fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
        fs::write(
            dir.join("stat"),
            format!("{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194304"),
        )
        .unwrap();
        for tid in tids {
            let task = dir.join("task").join(tid.to_string());
            fs::create_dir_all(&task).unwrap();
            fs::write(task.join("comm"), format!("{comm}-t{tid}\n")).unwrap();
        }
    }

    fn procfs(&self) -> ProcFs {
        ProcFs::at(&self.root)
    }
}

impl Drop for FakeProc {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn resolves_by_name_every_live_match_and_skips_zombies() {
    let proc = FakeProc::new();
    proc.process(10, "burner", 'R', &[10, 11]);
    proc.process(12, "burner", 'S', &[12]);
    proc.process(13, "burner", 'Z', &[]);
    proc.process(14, "other", 'R', &[14]);
    fs::create_dir_all(proc.root.join("self-not-a-pid")).unwrap();
    fs::write(proc.root.join("uptime"), "1.0 2.0").unwrap();

    let procfs = proc.procfs();
    let pids = procfs
        .resolve(&Target::ProcessName("burner".into()))
        .unwrap();
    assert_eq!(pids, vec![10, 12]);
    assert!(procfs
        .resolve(&Target::ProcessName("nope".into()))
        .unwrap()
        .is_empty());
    assert!(procfs
        .resolve(&Target::ProcessName(String::new()))
        .unwrap()
        .is_empty());
}

#[test]
fn resolves_by_pid_only_when_alive() {
    let proc = FakeProc::new();
    proc.process(10, "burner", 'R', &[10]);
    proc.process(13, "burner", 'Z', &[]);
    let procfs = proc.procfs();
    assert_eq!(procfs.resolve(&Target::Pid(10)).unwrap(), vec![10]);
    assert!(procfs.resolve(&Target::Pid(13)).unwrap().is_empty());
    assert!(procfs.resolve(&Target::Pid(99)).unwrap().is_empty());
}

#[test]
fn lists_threads_and_their_names() {
    let proc = FakeProc::new();
    proc.process(10, "burner", 'R', &[12, 10, 11]);
    let procfs = proc.procfs();
    assert_eq!(procfs.threads(10).unwrap(), vec![10, 11, 12]);
    assert_eq!(procfs.thread_comm(10, 11).as_deref(), Some("burner-t11"));
    assert_eq!(procfs.comm(10).as_deref(), Some("burner"));
    assert!(procfs.threads(99).is_err());
    assert_eq!(procfs.thread_comm(10, 99), None);
}

#[test]
fn long_names_match_the_truncated_comm() {
    assert!(comm_matches("my-long-service", "my-long-service-name"));
    assert!(comm_matches("short", "short"));
    assert!(!comm_matches("short", "shor"));
    assert!(!comm_matches("my-long-servic", "my-long-service-name"));
}

#[test]
fn stat_state_survives_odd_process_names() {
    assert_eq!(parse_stat_state("42 (a) b) c) S 1 2 3"), Some('S'));
    assert_eq!(parse_stat_state("42 (x) R"), Some('R'));
    assert_eq!(parse_stat_state("42 (x)"), None);
    assert_eq!(parse_stat_state("garbage"), None);
}

#[test]
fn parses_executable_mappings_only() {
    let text = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234 /usr/bin/burner
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1234 /usr/bin/burner
7f0000000000-7f0000100000 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000200000-7f0000201000 r-xp 00000000 00:00 0
7f0000300000-7f0000301000 r-xp 00000000 08:01 7 /tmp/with space (deleted)
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]
not a maps line
zz-yy r-xp 0 0 0 /bad/range
";
    let maps = parse_maps(text);
    let names: Vec<&str> = maps.iter().map(Mapping::module_name).collect();
    assert_eq!(names, vec!["burner", "libc.so.6", "with space", "[vdso]"]);
    assert_eq!(maps[0].start, 0x55d0c0a01000);
    assert_eq!(maps[0].end, 0x55d0c0a02000);

    assert_eq!(
        find_mapping(&maps, 0x55d0c0a01800).map(Mapping::module_name),
        Some("burner")
    );
    assert_eq!(find_mapping(&maps, 0x55d0c0a02000), None);
    assert_eq!(
        find_mapping(&maps, 0x7f0000000000).map(Mapping::module_name),
        Some("libc.so.6")
    );
    assert_eq!(find_mapping(&maps, 0x1), None);
    assert_eq!(find_mapping(&maps, u64::MAX), None);
}
