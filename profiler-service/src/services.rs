//! What heartbeats say about the host besides its profiles: its labels, and
//! which defined services have live processes on it.
//!
//! Service definitions arrive in a signed `sync_services` command and
//! replace the held set wholesale. The set is kept in the agent's state
//! directory ([`ServiceStore`]), so a restarted agent reports the same
//! services (and the same digest) before any new sync. Each heartbeat scans
//! `/proc` once for all definitions with the profiles' own matching rules
//! ([`ProcFs::any_live`]), off the async threads.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use odp_core::continuous::ContinuousAssignment;
use odp_core::service::{
    clean_label_value, services_digest, ServiceDefinition, SyncServices, LABEL_ARCH, LABEL_CORES,
    LABEL_CPU_MODEL, LABEL_KERNEL,
};
use odp_core::trigger::TriggerAssignment;
use odp_core::Target;

use crate::targets::{ProcFs, Selector};

/// The service definitions an agent holds, compiled for scanning.
#[derive(Debug, Clone)]
pub struct ServiceBook {
    services: Vec<ServiceDefinition>,
    selectors: Vec<Selector>,
    /// Certificates the api-server revoked: heartbeats they sign are not
    /// this host's agents' ([`crate::peers`]).
    revoked: HashSet<Uuid>,
    /// The services profiled continuously ([`crate::continuous`]), sorted
    /// by id, each for a service of `services`.
    continuous: Vec<ContinuousAssignment>,
    /// The triggers ([`crate::triggers`]), sorted by id, each for a
    /// service of `services`.
    triggers: Vec<TriggerAssignment>,
    digest: String,
}

impl Default for ServiceBook {
    /// No definitions (never synced, or synced to none).
    fn default() -> Self {
        ServiceBook {
            services: Vec::new(),
            selectors: Vec::new(),
            revoked: HashSet::new(),
            continuous: Vec::new(),
            triggers: Vec::new(),
            digest: services_digest(&[]),
        }
    }
}

impl ServiceBook {
    /// The definitions of a sync, after checking them and their digest
    /// ([`SyncServices::check`]) and compiling their targets.
    pub fn new(sync: &SyncServices) -> Result<ServiceBook, String> {
        sync.check().map_err(|e| e.to_string())?;
        let selectors = sync
            .services
            .iter()
            .map(|s| Selector::new(&s.target).map_err(|e| format!("service {:?}: {e}", s.name)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ServiceBook {
            services: sync.services.clone(),
            selectors,
            revoked: sync.revoked.iter().copied().collect(),
            continuous: sync.continuous.clone(),
            triggers: sync.triggers.clone(),
            digest: sync.digest.clone(),
        })
    }

    /// Whether the api-server revoked the certificate `id`.
    pub fn is_revoked(&self, id: Uuid) -> bool {
        self.revoked.contains(&id)
    }

    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }

    pub fn definitions(&self) -> &[ServiceDefinition] {
        &self.services
    }

    /// The continuous profiles assigned, checked with the definitions
    /// ([`SyncServices::check`]).
    pub fn assignments(&self) -> &[ContinuousAssignment] {
        &self.continuous
    }

    /// The triggers assigned, checked with the definitions
    /// ([`SyncServices::check`]).
    pub fn triggers(&self) -> &[TriggerAssignment] {
        &self.triggers
    }

    /// The target of the service named `name`, if defined.
    pub fn target_of(&self, name: &str) -> Option<&Target> {
        self.services
            .iter()
            .find(|s| s.name == name)
            .map(|s| &s.target)
    }

    /// The live processes of the service named `name`, sorted, by its
    /// target compiled once ([`ProcFs::resolve`]'s rules); none when it is
    /// not defined.
    pub fn resolve(&self, name: &str, procfs: &ProcFs) -> io::Result<Vec<u32>> {
        match self.services.iter().position(|s| s.name == name) {
            Some(index) => procfs.resolve_selector(&self.selectors[index]),
            None => Ok(Vec::new()),
        }
    }

    /// The digest of the sync held ([`odp_core::service::sync_digest`]).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The names of the services with at least one live process now,
    /// sorted: one pass over `/proc` for all of them.
    pub fn live(&self, procfs: &ProcFs) -> io::Result<Vec<String>> {
        let found = procfs.any_live(&self.selectors)?;
        let mut names: Vec<String> = self
            .services
            .iter()
            .zip(found)
            .filter(|(_, live)| *live)
            .map(|(service, _)| service.name.clone())
            .collect();
        names.sort_unstable();
        Ok(names)
    }
}

/// The held definitions on disk: `services.json` in the state directory,
/// the last sync's action as JSON (`{"services": [...], "digest": ...}`).
#[derive(Debug, Clone)]
pub struct ServiceStore {
    path: PathBuf,
}

const FILE: &str = "services.json";

impl ServiceStore {
    pub fn new(state_dir: &Path) -> ServiceStore {
        ServiceStore {
            path: state_dir.join(FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The definitions an earlier run kept; `None` when it kept none. A
    /// file that does not parse or whose definitions this agent refuses is
    /// an `InvalidData` error (the caller starts with none: the api-server
    /// sees the empty set's digest and syncs again).
    pub fn load(&self) -> io::Result<Option<ServiceBook>> {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
        let sync: SyncServices =
            serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        ServiceBook::new(&sync).map(Some).map_err(invalid)
    }

    /// Replaces the kept definitions: written to a temporary file, synced
    /// and renamed over the old one, so a crash leaves the old set or the
    /// new one, never a torn file.
    pub fn save(&self, sync: &SyncServices) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(sync).map_err(io::Error::other)?;
        replace_file(&self.path, &json)
    }
}

/// Writes `bytes` to `path` through a synced temporary file renamed over
/// it, so a crash leaves the old content or the new, never a torn file:
/// how the agent keeps its state across restarts.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = path.with_extension("json.tmp");
    {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    // The rename itself is durable once the directory is.
    fs::File::open(dir).and_then(|d| d.sync_all())
}

/// The host's labels: the discovered ones ([`discover_labels`]) and the
/// operator's (already checked not to use a discovered name).
pub fn host_labels(operator: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = discover_labels(Path::new("/"));
    for (key, value) in operator {
        labels.insert(key.clone(), value.clone());
    }
    labels
}

/// What the agent finds out about the host under `root` (`/` but in
/// tests): `kernel` (`/proc/sys/kernel/osrelease`, as `uname -r`),
/// `cpu_model` (`/proc/cpuinfo`), `cores` (online CPUs of
/// `/sys/devices/system/cpu/online`, else `/proc/cpuinfo`'s processors)
/// and `arch` (the agent's build). A value it cannot read is left out.
pub fn discover_labels(root: &Path) -> BTreeMap<String, String> {
    let read = |path: &str| fs::read_to_string(root.join(path)).ok();
    let cpuinfo = read("proc/cpuinfo").unwrap_or_default();
    let mut labels = BTreeMap::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(value) = value.as_deref().and_then(clean_label_value) {
            labels.insert(key.to_owned(), value);
        }
    };
    put(LABEL_KERNEL, read("proc/sys/kernel/osrelease"));
    put(LABEL_CPU_MODEL, parse_cpu_model(&cpuinfo));
    let cores = read("sys/devices/system/cpu/online")
        .and_then(|list| parse_cpu_list(&list))
        .or_else(|| count_processors(&cpuinfo));
    put(LABEL_CORES, cores.map(|n| n.to_string()));
    put(LABEL_ARCH, Some(std::env::consts::ARCH.to_owned()));
    labels
}

/// The CPU's model in `/proc/cpuinfo`: `model name` (x86, and arm64 on
/// recent kernels), else what other architectures call it.
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Hardware", "cpu model", "Processor", "cpu"]
        .iter()
        .find_map(|wanted| {
            cpuinfo.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                let value = value.trim();
                (key.trim() == *wanted && !value.is_empty()).then(|| value.to_owned())
            })
        })
}

/// The number of CPUs in a kernel CPU list (`0-3,6,8-9` → 7).
pub fn parse_cpu_list(list: &str) -> Option<usize> {
    let mut count = 0usize;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (low, high) = match part.split_once('-') {
            Some((low, high)) => (low.parse::<usize>().ok()?, high.parse::<usize>().ok()?),
            None => {
                let cpu = part.parse::<usize>().ok()?;
                (cpu, cpu)
            }
        };
        count += high.checked_sub(low)? + 1;
    }
    (count > 0).then_some(count)
}

fn count_processors(cpuinfo: &str) -> Option<usize> {
    let n = cpuinfo
        .lines()
        .filter(|line| {
            line.split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor")
        })
        .count();
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sync(services: &[(&str, Target)]) -> SyncServices {
        SyncServices::new(
            services
                .iter()
                .map(|(name, target)| ServiceDefinition {
                    name: (*name).to_owned(),
                    target: target.clone(),
                })
                .collect(),
        )
    }

    #[test]
    fn cpu_lists_and_models_parse() {
        assert_eq!(parse_cpu_list("0-3,6,8-9\n"), Some(7));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(count_processors(x86), Some(2));
        let arm =
            "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(parse_cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn this_hosts_labels_are_discovered() {
        let labels = discover_labels(Path::new("/"));
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(labels[LABEL_KERNEL], release.trim());
        let cores: usize = labels[LABEL_CORES].parse().unwrap();
        assert!(cores >= 1);
        assert_eq!(labels[LABEL_ARCH], std::env::consts::ARCH);
        if cfg!(target_arch = "x86_64") {
            assert!(!labels[LABEL_CPU_MODEL].is_empty());
        }
        for (key, value) in &labels {
            odp_core::service::check_label_key(key).unwrap();
            odp_core::service::check_label_value(key, value).unwrap();
        }
        // Operator labels join them.
        let operator = BTreeMap::from([("zone".to_owned(), "eu-1".to_owned())]);
        let all = host_labels(&operator);
        assert_eq!(all["zone"], "eu-1");
        assert_eq!(all[LABEL_KERNEL], labels[LABEL_KERNEL]);
        // A root without the files gives only what the build knows.
        let empty = tempfile::tempdir().unwrap();
        let none = discover_labels(empty.path());
        assert_eq!(none.keys().collect::<Vec<_>>(), [LABEL_ARCH]);
    }

    #[test]
    fn revocations_are_kept_with_the_definitions() {
        let dir = tempfile::tempdir().unwrap();
        let store = ServiceStore::new(dir.path());
        let stolen = Uuid::from_u128(7);
        let sync = SyncServices::with_revoked(Vec::new(), vec![stolen]);
        store.save(&sync).unwrap();
        let book = store.load().unwrap().unwrap();
        assert!(book.is_revoked(stolen));
        assert!(!book.is_revoked(Uuid::from_u128(8)));
        assert_eq!(book.digest(), sync.digest);
        assert!(!ServiceBook::default().is_revoked(stolen));
    }

    #[test]
    fn continuous_assignments_are_kept_with_the_definitions() {
        let dir = tempfile::tempdir().unwrap();
        let store = ServiceStore::new(dir.path());
        let assignment = ContinuousAssignment {
            id: Uuid::from_u128(3),
            service: "sleeper".into(),
            event: odp_core::EventKind::CpuClock,
            frequency_hz: 19,
            cpu_budget_ppm: 5_000,
            hosts: Some(vec!["web-1".into()]),
        };
        let sync = SyncServices::with_continuous(
            sync(&[("sleeper", Target::ProcessName("sleep".into()))]).services,
            Vec::new(),
            vec![assignment.clone()],
        );
        store.save(&sync).unwrap();
        let book = store.load().unwrap().unwrap();
        assert_eq!(book.assignments(), [assignment]);
        assert_eq!(book.digest(), sync.digest);
        assert_eq!(
            book.target_of("sleeper"),
            Some(&Target::ProcessName("sleep".into()))
        );
        assert_eq!(book.target_of("other"), None);
        assert!(ServiceBook::default().assignments().is_empty());
    }

    #[test]
    fn triggers_are_kept_with_the_definitions() {
        let dir = tempfile::tempdir().unwrap();
        let store = ServiceStore::new(dir.path());
        let trigger = TriggerAssignment {
            id: Uuid::from_u128(5),
            service: "sleeper".into(),
            condition: odp_core::trigger::TriggerCondition::CpuAbove {
                percent: 80,
                for_secs: 30,
            },
            cooldown_secs: 600,
            hosts: Some(vec!["web-1".into()]),
        };
        let sync = sync(&[("sleeper", Target::ProcessName("sleep".into()))])
            .with_triggers(vec![trigger.clone()]);
        store.save(&sync).unwrap();
        let book = store.load().unwrap().unwrap();
        assert_eq!(book.triggers(), [trigger]);
        assert_eq!(book.digest(), sync.digest);
        assert!(ServiceBook::default().triggers().is_empty());
        // A trigger for a service the sync does not define is refused.
        let mut orphan = sync.clone();
        orphan.triggers[0].service = "other".into();
        let orphan = SyncServices::new(orphan.services).with_triggers(orphan.triggers);
        assert!(ServiceBook::new(&orphan).is_err());
    }

    #[test]
    fn the_store_keeps_the_last_sync_and_refuses_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = ServiceStore::new(&dir.path().join("state"));
        assert!(store.load().unwrap().is_none(), "nothing kept yet");

        let first = sync(&[("sleeper", Target::ProcessName("sleep".into()))]);
        store.save(&first).unwrap();
        let book = store.load().unwrap().unwrap();
        assert_eq!(book.digest(), first.digest);
        assert_eq!(book.definitions(), first.services.as_slice());

        // Replaced wholesale, by an empty set too.
        let empty = sync(&[]);
        store.save(&empty).unwrap();
        let book = store.load().unwrap().unwrap();
        assert!(book.is_empty());
        assert_eq!(book.digest(), ServiceBook::default().digest());
        assert!(!dir.path().join("state/services.json.tmp").exists());

        // A file edited by hand: the digest no longer matches.
        let mut edited = first.clone();
        edited.services[0].name = "other".into();
        fs::write(store.path(), serde_json::to_vec(&edited).unwrap()).unwrap();
        let err = store.load().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("digest"), "{err}");
        fs::write(store.path(), b"{").unwrap();
        assert_eq!(store.load().unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_book_lists_the_services_with_live_processes() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // The kernel wakes a vfork parent before it renames the child, so
        // the new name can lag `spawn` returning on a loaded machine.
        let comm = format!("/proc/{}/comm", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while fs::read_to_string(&comm).unwrap_or_default().trim() != "sleep" {
            assert!(std::time::Instant::now() < deadline, "sleep never named");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let book = ServiceBook::new(&sync(&[
            ("sleeper", Target::ProcessName("sleep".into())),
            ("nobody", Target::ProcessName("no-such-process-x".into())),
            ("everything", Target::Cgroup("/".into())),
        ]))
        .unwrap();
        // The test process is the agent here: its own child is left out of
        // broad targets, by name it counts.
        let procfs = ProcFs::default();
        let live = book.live(&procfs).unwrap();
        assert!(live.contains(&"sleeper".to_owned()), "{live:?}");
        assert!(!live.contains(&"nobody".to_owned()), "{live:?}");
        assert!(live.contains(&"everything".to_owned()), "{live:?}");
        assert!(ServiceBook::default().live(&procfs).unwrap().is_empty());
        child.kill().unwrap();
        child.wait().unwrap();

        let bad = SyncServices {
            services: Vec::new(),
            revoked: Vec::new(),
            continuous: Vec::new(),
            triggers: Vec::new(),
            digest: "0".repeat(64),
        };
        assert!(ServiceBook::new(&bad).unwrap_err().contains("digest"));
    }
}
