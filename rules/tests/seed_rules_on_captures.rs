//! The seed pack (rules/seed.json) over real captures: for every
//! `stack_share` rule, the frames the agent's plugins reported for a small
//! program that runs the code the rule is about (tests/captures/, written
//! by profiler-service/tests/rule_captures.rs from CPython 3.11 through
//! py-spy 0.4.2, JDK 17 through JFR, glibc and the kernel through
//! perf_event). Each rule must fire on its program's capture, clearly above
//! its threshold, and match nothing at all in the plain CPU burners. The
//! lock rules read lock profiles (JFR's monitor and park events, weighted
//! by how long threads waited): their burner is a lock profile of threads
//! waiting for work, never for a lock.

use std::collections::BTreeSet;
use std::path::Path;

use std::sync::Arc;

use odp_core::Frame;
use odp_profile::{FrameRef, FrameSums, ProfileBuilder, ProfileFrames, StackSamples, StackTable};
use odp_rules::seed::seed_rules;
use odp_rules::RuleDef;
use odp_rules::{stack_share, ProfileInput, RuleSet};

/// Every capture and the seed rules that must flag it. Each
/// `stack_share` rule has a program of its own; the others a rule flags
/// there are real overlaps (UUID.randomUUID draws from
/// SecureRandom.nextBytes, Log4j 1 formats into StringBuffers; the CPU
/// rules read lock profiles too, and the UUID threads wait inside
/// UUID.randomUUID). The plain CPU burners, one per runtime, and the idle
/// threads' lock profile must flag none.
const CAPTURES: &[(&str, &[&str])] = &[
    (
        "jvm-uuid",
        &["jvm-uuid-random", "jvm-securerandom-nextbytes"],
    ),
    ("jvm-forkjoin", &["jvm-forkjoin-await-work"]),
    ("jvm-securerandom", &["jvm-securerandom-nextbytes"]),
    ("jvm-log4j1", &["jvm-log4j1-category", "jvm-stringbuffer"]),
    ("jvm-hashtable", &["jvm-hashtable"]),
    ("jvm-throwable", &["jvm-throwable-fillinstacktrace"]),
    ("jvm-regex", &["jvm-regex-pattern"]),
    ("jvm-stringbuffer", &["jvm-stringbuffer"]),
    ("jvm-burn", &[]),
    ("jvm-lock-monitor", &["jvm-lock-contention"]),
    ("jvm-lock-reentrant", &["jvm-lock-contention"]),
    (
        "jvm-lock-uuid",
        &[
            "jvm-lock-contention",
            "jvm-lock-securerandom",
            "jvm-uuid-random",
            "jvm-securerandom-nextbytes",
        ],
    ),
    ("jvm-lock-idle", &[]),
    // Cache misses: the compiler (re._compiler) under re.compile.
    ("python-re-compile", &["py-re-compile"]),
    // Cache hits: only re.compile and _compile of re/__init__.py.
    ("python-re-cached", &["py-re-compile"]),
    ("python-deepcopy", &["py-copy-deepcopy"]),
    ("python-json", &["py-json"]),
    ("python-logging", &["py-logging-format"]),
    ("python-burn", &[]),
    // Wall time: four threads taking turns on a threading.Semaphore; the
    // burner's single thread only computes.
    ("python-threading-wait", &["py-threading-wait"]),
    ("python-burn-wall", &[]),
    ("native-lock", &["native-lock-contention"]),
    // Off CPU, the same program: blocked in the mutex, not spinning in it.
    ("native-lock-off-cpu", &["native-mutex-wait"]),
    ("native-burn-wall", &[]),
    ("native-malloc", &["native-malloc-free"]),
    ("native-memcpy", &["native-memcpy"]),
    ("native-burn", &[]),
];

/// A rule's share on its capture must be at least this many times its
/// threshold, so a recapture's sampling noise cannot flip the outcome.
/// Most are tens of times over it; the least is jvm-forkjoin-await-work,
/// a few percent for a 1% threshold, as JFR sees only awaitWork's Java
/// code (JDK 17 parks idle workers).
const MARGIN: f64 = 2.0;

/// A capture (see profiler-service/tests/rule_captures.rs for the format)
/// as the pipeline hands it to the rules: frames by function and module,
/// samples merged per stack, and the profile's event (its `# event:`
/// line).
fn capture(name: &str) -> ProfileFrames {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/captures")
        .join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let event = text
        .lines()
        .find_map(|l| l.strip_prefix("# event: "))
        .and_then(|l| l.split(' ').next())
        .map(|e| e.parse().expect("a known event"));
    let mut data = ProfileFrames {
        event,
        ..ProfileFrames::default()
    };
    assert!(data.event.is_some(), "{name}: no event line");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        match line.split('\t').collect::<Vec<_>>()[..] {
            ["frame", function, module, _file] => data.frames.push(FrameRef {
                function: function.to_owned(),
                module: module.to_owned(),
            }),
            ["stack", count, frames] => {
                let frames: Vec<u32> = frames.split(' ').map(|i| i.parse().unwrap()).collect();
                assert!(frames.iter().all(|&i| (i as usize) < data.frames.len()));
                let count: u64 = count.parse().unwrap();
                data.samples += count;
                data.stacks.push(StackSamples {
                    stack_id: uuid::Uuid::from_u128(data.stacks.len() as u128 + 1),
                    frames,
                    count,
                });
            }
            _ => panic!("{name}: malformed line {line:?}"),
        }
    }
    assert!(data.samples > 0, "{name}: no samples");
    data
}

fn stack_share_seed_rules() -> Vec<RuleDef> {
    seed_rules()
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == stack_share::KIND)
        .collect()
}

/// The rules of `set` that flag `capture`, with their shares.
fn flagged(set: &RuleSet, capture: &str) -> Vec<(String, f64)> {
    let data = self::capture(capture);
    set.evaluate(&ProfileInput::new("svc", &data))
        .into_iter()
        .map(|d| (d.rule_id, d.share))
        .collect()
}

#[test]
fn every_stack_share_seed_rule_is_exercised_by_a_capture() {
    let ids: BTreeSet<String> = stack_share_seed_rules().into_iter().map(|r| r.id).collect();
    let exercised: BTreeSet<String> = CAPTURES
        .iter()
        .flat_map(|(_, rules)| rules.iter().map(|r| r.to_string()))
        .collect();
    assert_eq!(ids, exercised);
}

#[test]
fn every_capture_is_listed_with_its_rules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/captures");
    let stored: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = CAPTURES
        .iter()
        .map(|(name, _)| format!("{name}.txt"))
        .collect();
    assert_eq!(stored, listed);
}

#[test]
fn each_capture_flags_exactly_its_rules_clearly_above_their_thresholds() {
    let rules = stack_share_seed_rules();
    let (set, errors) = RuleSet::compile(rules.clone());
    assert!(errors.is_empty(), "{errors:?}");
    for (capture, expected) in CAPTURES {
        let found = flagged(&set, capture);
        let ids: BTreeSet<&str> = found.iter().map(|(rule, _)| rule.as_str()).collect();
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(ids, expected, "rules flagging {capture}: {found:?}");
        for (id, share) in &found {
            let threshold = rules.iter().find(|r| &r.id == id).unwrap().threshold_pct;
            assert!(
                *share >= threshold * MARGIN,
                "{id}: {share:.2}% of {capture}, too close to its {threshold}%"
            );
        }
    }
}

#[test]
fn no_rule_matches_a_single_sample_of_the_plain_burners() {
    // At threshold 0 a rule flags any profile it matches at all.
    let at_zero = stack_share_seed_rules().into_iter().map(|mut r| {
        r.threshold_pct = 0.0;
        r
    });
    let (set, errors) = RuleSet::compile(at_zero);
    assert!(errors.is_empty(), "{errors:?}");
    for (burner, _) in CAPTURES.iter().filter(|(_, rules)| rules.is_empty()) {
        assert_eq!(flagged(&set, burner), vec![], "{burner}");
    }
}

/// rules/README.md lists the modules each CPython version reports for the
/// `py-*` rules; these are the 3.11 ones, as captured.
#[test]
fn python_captures_report_the_documented_3_11_modules() {
    for (capture, module) in [
        ("python-re-cached", "re.__init__"),
        ("python-re-compile", "re.__init__"),
        ("python-re-compile", "re._compiler"),
        ("python-deepcopy", "copy"),
        ("python-json", "json.__init__"),
        ("python-json", "json.encoder"),
        ("python-json", "json.decoder"),
        ("python-logging", "logging.__init__"),
    ] {
        let data = self::capture(capture);
        assert!(
            data.frames.iter().any(|f| f.module == module),
            "{capture}: no frame of module {module}"
        );
    }
}

/// `data` as a profile of one window, as the pipeline reads it back.
fn as_profile(data: &ProfileFrames) -> odp_profile::Profile {
    let mut b = ProfileBuilder::default();
    let frames: Vec<u32> = data
        .frames
        .iter()
        .map(|f| {
            b.frame(&Frame {
                module: f.module.clone(),
                ..Frame::function(f.function.clone())
            })
        })
        .collect();
    let window = b.window(odp_profile::Window {
        profile_id: uuid::Uuid::nil(),
        host: "h".into(),
        agent_id: "a".into(),
        sequence: 0,
        start_ms: 0,
        end_ms: 4_000,
        event: data.event.unwrap(),
        period: 5_025_125,
        frequency_hz: 199,
    });
    for stack in &data.stacks {
        let ids: Vec<u32> = stack.frames.iter().map(|&f| frames[f as usize]).collect();
        b.samples(window, 1, &ids, stack.count);
    }
    b.build()
}

/// A worker keeps of a running profile only the stacks some rule reads,
/// the others summed as one: over every capture, the whole seed pack finds
/// on that what it finds on the profile read whole, to the sample and the
/// stack, and of a plain burner, which no rule matches, no stack is kept.
#[test]
fn the_seed_pack_finds_on_a_running_profile_s_kept_stacks_what_it_finds_on_all() {
    let (set, errors) = RuleSet::compile(seed_rules().unwrap());
    assert!(errors.is_empty(), "{errors:?}");
    let set = Arc::new(set);
    for (capture, rules) in CAPTURES {
        let profile = as_profile(&self::capture(capture));
        let whole = ProfileFrames::of(profile.clone());
        let mut table = StackTable::reading(set.running_reads());
        let mut sums = FrameSums::default();
        sums.add(&profile, &mut table);
        let running = sums.frames(&table);
        assert_eq!(running.samples, whole.samples, "{capture}");
        let found = |data| set.evaluate(&ProfileInput::new("svc", data));
        assert_eq!(found(&running), found(&whole), "{capture}");
        let kept = sums.stacks();
        assert!(kept <= whole.stacks.len(), "{capture}");
        if rules.is_empty() {
            assert_eq!(kept, 0, "{capture}: {} stacks", whole.stacks.len());
        }
    }
}
