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

    /// Writes a file of a process's directory (`cmdline`, `cgroup`...).
    fn file(&self, pid: u32, name: &str, content: &[u8]) {
        fs::write(self.root.join(pid.to_string()).join(name), content).unwrap();
    }

    /// Re-parents a process (the `stat` field after the state).
    fn parent(&self, pid: u32, ppid: u32) {
        self.file(pid, "stat", format!("{pid} (x) S {ppid} 0 0").as_bytes());
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

/// A cgroup v2-only host (systemd, a Docker container).
const CGROUP_V2: &str = "0::/system.slice/docker-4f1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8.scope\n";
/// A hybrid host: v1 hierarchies plus the empty v2 one, a Kubernetes pod.
const CGROUP_V1: &str = "\
12:memory:/kubepods/burstable/pod1234/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
11:cpu,cpuacct:/kubepods/burstable/pod1234/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
1:name=systemd:/kubepods/burstable/pod1234/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
0::/
garbage line
x:cpu:/not-a-hierarchy
";

#[test]
fn parses_cgroup_v1_and_v2_lines() {
    assert_eq!(
        parse_cgroup_paths(CGROUP_V2),
        vec!["/system.slice/docker-4f1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8.scope"]
    );
    let v1 = parse_cgroup_paths(CGROUP_V1);
    assert_eq!(v1.len(), 2, "{v1:?}");
    assert_eq!(v1[1], "/");
    assert!(v1[0].starts_with("/kubepods/burstable/pod1234/0123"));
    assert_eq!(
        parse_cgroup_paths("0::/a/b (deleted)\n0::/a/b\n"),
        vec!["/a/b"]
    );
    assert!(parse_cgroup_paths("").is_empty());
}

#[test]
fn cgroup_selectors_take_a_subtree_or_a_container() {
    let path = |p: &str| CgroupTarget::parse(p).unwrap();
    assert!(path("/a/b").matches("/a/b"));
    assert!(path("/a/b/").matches("/a/b/c"));
    assert!(!path("/a/b").matches("/a/bc"));
    assert!(!path("/a/b").matches("/a"));
    assert!(path("/").matches("/anything"));
    let v2 = &parse_cgroup_paths(CGROUP_V2)[0];
    assert!(path("/system.slice").matches(v2));
    // A short id (as `docker ps` shows) and a full one, any case.
    assert!(path("4f1d2c3b4a5e").matches(v2));
    assert!(path("4F1D2C3B4A5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F8").matches(v2));
    let pod = &parse_cgroup_paths(CGROUP_V1)[0];
    assert!(path("0123456789abcdef").matches(pod));
    assert!(!path("4f1d2c3b4a5e").matches(pod));

    for bad in [
        "",
        "abc",
        "system.slice",
        "4f1d2c3b4a5",
        "/a/../b",
        "/a\nb",
        &"a".repeat(65),
    ] {
        assert!(CgroupTarget::parse(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn command_lines_join_arguments_and_match_unanchored() {
    assert_eq!(
        join_cmdline(b"java\0-jar\0app.jar\0--name=checkout\0"),
        "java -jar app.jar --name=checkout"
    );
    assert_eq!(join_cmdline(b""), "");
    let selector = CmdlineSelector::new(r"app\.jar .*checkout").unwrap();
    assert!(selector.matches("java -jar app.jar --name=checkout"));
    assert!(!selector.matches("java -jar app.jar --name=cart"));
    assert!(CmdlineSelector::new("(").is_err());
    assert!(CmdlineSelector::new("").is_err());
    assert!(CmdlineSelector::new(&"a".repeat(1001)).is_err());
    // Counted repetition blows the compiled-size limit, not the CPU.
    assert!(CmdlineSelector::new(r"(\w{500}){500}").is_err());
}

#[test]
fn resolves_by_cmdline_and_cgroup_leaving_out_the_agent_tree() {
    let proc = FakeProc::new();
    for pid in [10, 11, 12, 13, 20, 21] {
        proc.process(pid, "java", 'R', &[pid]);
    }
    proc.process(14, "kworker", 'R', &[14]);
    proc.file(10, "cmdline", b"java\0-jar\0checkout.jar\0");
    proc.file(11, "cmdline", b"java\0-jar\0checkout.jar\0--worker\0");
    proc.file(12, "cmdline", b"java\0-jar\0cart.jar\0");
    proc.file(13, "cmdline", b"java\0-jar\0checkout.jar\0");
    proc.process(13, "java", 'Z', &[]);
    proc.file(13, "cmdline", b"java\0-jar\0checkout.jar\0");
    // 20 is the agent; 21 its helper, whose command line names the target.
    proc.file(20, "cmdline", b"odp-profiler-service\0");
    proc.file(21, "cmdline", b"jcmd\0checkout.jar\0JFR.start\0");
    proc.parent(21, 20);
    for pid in [10, 11] {
        proc.file(pid, "cgroup", CGROUP_V2.as_bytes());
    }
    proc.file(12, "cgroup", CGROUP_V1.as_bytes());
    for pid in [20, 21] {
        proc.file(pid, "cgroup", CGROUP_V2.as_bytes());
    }

    let procfs = proc.procfs().excluding(Some(20));
    let cmdline = |re: &str| procfs.resolve(&Target::CommandLine(re.into())).unwrap();
    assert_eq!(cmdline("checkout"), vec![10, 11]);
    assert_eq!(cmdline("^java -jar c"), vec![10, 11, 12]);
    // Kernel threads have no command line, so even `.*` skips them.
    assert_eq!(cmdline(".*"), vec![10, 11, 12]);
    assert!(procfs.resolve(&Target::CommandLine("(".into())).is_err());
    // Without the exclusion (a fake tree has no agent) the helper shows up.
    assert_eq!(
        proc.procfs()
            .resolve(&Target::CommandLine("checkout".into()))
            .unwrap(),
        vec![10, 11, 21]
    );

    let cgroup = |c: &str| procfs.resolve(&Target::Cgroup(c.into())).unwrap();
    assert_eq!(cgroup("/system.slice"), vec![10, 11]);
    assert_eq!(cgroup("4f1d2c3b4a5e"), vec![10, 11]);
    assert_eq!(cgroup("/kubepods/burstable"), vec![12]);
    assert_eq!(cgroup("/"), vec![10, 11, 12]);
    assert!(cgroup("/nope").is_empty());
    assert!(procfs.resolve(&Target::Cgroup("nope".into())).is_err());
}

#[test]
fn parent_pid_comes_after_the_state() {
    assert_eq!(parse_stat_ppid("42 (a) b) S 7 42 42"), Some(7));
    assert_eq!(parse_stat_ppid("42 (x) R"), None);
}

#[test]
fn any_live_answers_every_selector_in_one_pass_as_resolve_would() {
    let proc = FakeProc::new();
    proc.process(10, "checkout", 'S', &[10]);
    proc.file(10, "cmdline", b"checkout\0--port=80\0");
    proc.file(10, "cgroup", CGROUP_V2.as_bytes());
    proc.process(11, "cart", 'Z', &[]);
    proc.file(11, "cmdline", b"cart\0");
    // 20 is the agent, 21 its helper: out of broad targets, not of names.
    proc.process(20, "odp-agent", 'S', &[20]);
    proc.process(21, "helper", 'S', &[21]);
    proc.file(21, "cmdline", b"helper\0--for=search\0");
    proc.file(21, "cgroup", CGROUP_V1.as_bytes());
    proc.parent(21, 20);
    let procfs = proc.procfs().excluding(Some(20));

    let targets = [
        Target::ProcessName("checkout".into()),
        Target::ProcessName("cart".into()),
        Target::CommandLine("--port=80".into()),
        Target::CommandLine("search".into()),
        Target::Cgroup("4f1d2c3b4a5e".into()),
        Target::Cgroup("/kubepods".into()),
        Target::ProcessName("x".into()),
        Target::Pid(21),
        Target::Pid(11),
        Target::Imported("pprof".into()),
    ];
    let selectors: Vec<Selector> = targets.iter().map(|t| Selector::new(t).unwrap()).collect();
    let live = procfs.any_live(&selectors).unwrap();
    assert_eq!(
        live,
        [true, false, true, false, true, false, false, true, false, false]
    );
    for (target, live) in targets.iter().zip(&live) {
        assert_eq!(
            !procfs.resolve(target).unwrap().is_empty(),
            *live,
            "{target}"
        );
    }
    assert!(procfs.any_live(&[]).unwrap().is_empty());
    assert!(Selector::new(&Target::CommandLine("(".into())).is_err());
    assert!(Selector::new(&Target::Cgroup("nope".into())).is_err());
}

#[test]
fn resident_memory_is_statm_pages_times_the_page_size() {
    assert_eq!(
        parse_statm_resident("5284 1024 700 12 0 900 0\n"),
        Some(1024)
    );
    assert_eq!(parse_statm_resident("5284"), None);
    let proc = FakeProc::new();
    proc.process(10, "grower", 'S', &[10]);
    proc.file(10, "statm", b"5284 1024 700 12 0 900 0\n");
    let page = rustix::param::page_size() as u64;
    assert_eq!(proc.procfs().rss_bytes(10), Some(1024 * page));
    assert_eq!(proc.procfs().rss_bytes(11), None);
    // This process has some memory resident.
    let mine = ProcFs::default().rss_bytes(std::process::id()).unwrap();
    assert!(mine > 1 << 20, "{mine} bytes");
}

#[test]
fn proc_times_tick_at_the_rate_the_kernel_says() {
    // `/proc`'s CPU times are in USER_HZ, which sysconf(_SC_CLK_TCK) gives.
    assert_eq!(rustix::param::clock_ticks_per_second(), TICKS_PER_SECOND);
}

#[test]
fn a_pid_with_its_children_is_its_live_tree() {
    let proc = FakeProc::new();
    // 10 → 11 → 12 (a zombie) and 11 → 13; 20 is a stranger; 14 forked
    // by 10 but re-parented to init when its parent exited.
    for pid in [10, 11, 12, 13, 14, 20] {
        proc.process(pid, "sh", 'S', &[pid]);
    }
    proc.parent(11, 10);
    proc.parent(13, 11);
    proc.file(12, "stat", b"12 (sh) Z 11 0 0");
    let procfs = proc.procfs();
    let selector = Selector::of_profile(&Target::Pid(10), true).unwrap();
    assert_eq!(
        procfs.resolve_selector(&selector).unwrap(),
        vec![10, 11, 13]
    );
    assert!(procfs.designates(&selector, 13));
    assert!(!procfs.designates(&selector, 14) && !procfs.designates(&selector, 20));
    assert_eq!(procfs.any_live(&[selector]).unwrap(), vec![true]);
    // Without the option, the pid alone; the option changes no other target.
    let alone = Selector::of_profile(&Target::Pid(10), false).unwrap();
    assert_eq!(procfs.resolve_selector(&alone).unwrap(), vec![10]);
    let name = Selector::of_profile(&Target::ProcessName("sh".into()), true).unwrap();
    assert!(matches!(name, Selector::Name(_)));
    // Once the pid exited (its children re-parented), nothing is left.
    proc.file(10, "stat", b"10 (sh) Z 1 0 0");
    let selector = Selector::of_profile(&Target::Pid(10), true).unwrap();
    assert_eq!(
        procfs.resolve_selector(&selector).unwrap(),
        Vec::<u32>::new()
    );
}
