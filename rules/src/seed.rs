//! The rule pack shipped with ODP (`rules/seed.json`): the issues of ODP's
//! Figure 5 and their Python and native counterparts. Installed into the
//! database at start-up, where admins may override any of them.

use crate::RuleDef;

/// The pack, as built into the binary.
pub const SEED_JSON: &str = include_str!("../seed.json");

/// The parsed pack. The file is checked by this crate's tests, so a
/// malformed pack never ships.
pub fn seed_rules() -> Result<Vec<RuleDef>, serde_json::Error> {
    serde_json::from_str(SEED_JSON)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Detection;
    use crate::{profile, ProfileInput, RuleSet};
    use odp_core::runtime::ProfileRuntime;

    /// A frame each seed rule must recognise, as the plugins report it
    /// (tests/captures/ holds whole captures of real programs).
    const EXAMPLES: &[(&str, &str, &str)] = &[
        ("jvm-uuid-random", "java.util.UUID.randomUUID", "java.util"),
        (
            "jvm-forkjoin-await-work",
            "java.util.concurrent.ForkJoinPool.awaitWork",
            "java.util.concurrent",
        ),
        (
            "jvm-securerandom-nextbytes",
            "java/security/SecureRandom.nextBytes",
            "",
        ),
        (
            "jvm-log4j1-category",
            "org.apache.log4j.Category.callAppenders",
            "org.apache.log4j",
        ),
        ("jvm-hashtable", "java.util.Hashtable.get", "java.util"),
        (
            "jvm-throwable-fillinstacktrace",
            "java.lang.Throwable.fillInStackTrace",
            "java.lang",
        ),
        (
            "jvm-regex-pattern",
            "java.util.regex.Pattern$Curly.match",
            "java.util.regex",
        ),
        (
            "jvm-stringbuffer",
            "java.lang.StringBuffer.append",
            "java.lang",
        ),
        // Lock rules read lock profiles only: their examples are leaves of
        // one (see `events_of`).
        (
            "jvm-lock-contention",
            "[monitor] java.lang.Object",
            "java.lang",
        ),
        (
            "jvm-lock-securerandom",
            "[monitor] sun.security.provider.SecureRandom",
            "sun.security.provider",
        ),
        ("py-re-compile", "_compile", "re.__init__"),
        ("py-copy-deepcopy", "deepcopy", "copy"),
        ("py-json", "dumps", "json.__init__"),
        ("py-logging-format", "format", "logging.__init__"),
        ("py-threading-wait", "wait", "threading"),
        (
            "native-lock-contention",
            "__GI___lll_lock_wait",
            "libc.so.6",
        ),
        ("native-mutex-wait", "__GI___lll_lock_wait", "libc.so.6"),
        ("native-malloc-free", "_int_malloc", "libc.so.6"),
        (
            "native-memcpy",
            "__memmove_avx512_unaligned_erms",
            "libc.so.6",
        ),
    ];

    /// A profile of 100 000 samples, `matched` of them through `frame`.
    fn flag(set: &RuleSet, frame: (&str, &str), matched: u64) -> Vec<String> {
        flag_in(set, None, frame, matched)
    }

    /// The same, of a profile of `event`.
    fn flag_in(
        set: &RuleSet,
        event: Option<&str>,
        frame: (&str, &str),
        matched: u64,
    ) -> Vec<String> {
        let mut data = profile(&[
            (&[("main", "/app"), ("work", "/app"), frame], matched),
            (&[("main", "/app"), ("work", "/app")], 100_000 - matched),
        ]);
        data.event = event.map(|e| e.parse().unwrap());
        set.evaluate(&ProfileInput::new("svc", &data))
            .into_iter()
            .map(|d| d.rule_id)
            .collect()
    }

    /// The events a rule is limited to (`spec.events`), if any.
    fn events_of(rule: &RuleDef) -> Vec<String> {
        rule.spec["events"]
            .as_array()
            .map(|events| {
                events
                    .iter()
                    .map(|e| e.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn every_seed_rule_fires_above_its_threshold_and_not_under_it() {
        let rules = seed_rules().expect("rules/seed.json parses");
        let (set, errors) = RuleSet::compile(rules.clone());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(set.len(), rules.len());
        // Regressions need a schedule's history: share_regression's tests.
        let rules: Vec<RuleDef> = rules
            .into_iter()
            .filter(|r| r.kind == crate::stack_share::KIND)
            .collect();
        let ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        let examples: Vec<&str> = EXAMPLES.iter().map(|e| e.0).collect();
        assert_eq!(ids, examples, "every seed rule has an example here");
        for (rule, (id, function, module)) in rules.iter().zip(EXAMPLES) {
            // A rule limited to some events is tried on a profile of the
            // first; on a CPU profile it must never fire.
            let events = events_of(rule);
            let event = events.first().map(String::as_str);
            let flag = |frame, matched| flag_in(&set, event, frame, matched);
            // Shares in units of 0.001% of 100 000 samples.
            let at_threshold = (rule.threshold_pct * 1000.0).round() as u64;
            assert!(at_threshold >= 2, "{id}: threshold too small to test");
            let above = flag((function, module), at_threshold + 1);
            assert!(above.contains(&id.to_string()), "{id} must fire: {above:?}");
            let exact = flag((function, module), at_threshold);
            assert!(exact.contains(&id.to_string()), "{id} fires at threshold");
            let under = flag((function, module), at_threshold - 1);
            assert!(!under.contains(&id.to_string()), "{id} must not fire");
            if !events.is_empty() {
                // Never on a profile of another event, or of none.
                let other = odp_core::EventKind::ALL
                    .map(|e| e.as_str())
                    .into_iter()
                    .find(|e| !events.iter().any(|x| x == e))
                    .expect("a rule reads some events, not all");
                let elsewhere = flag_in(&set, Some(other), (function, module), 100_000);
                assert!(
                    !elsewhere.contains(&id.to_string()),
                    "{id} fired on {other}"
                );
                let unknown = flag_in(&set, None, (function, module), 100_000);
                assert!(!unknown.contains(&id.to_string()), "{id} fired on no event");
            }
        }
    }

    /// For each seed rule on the runtime: one that it flags and one that
    /// it does not (for these kinds, being under the threshold), as the
    /// `profile_started` event reports them.
    fn runtime_examples() -> Vec<(&'static str, serde_json::Value, serde_json::Value)> {
        use serde_json::json;
        let runtime = |language: &str, version: &str, runtime: serde_json::Value| {
            json!({
                "language": language,
                "runtime_version": version,
                "runtime": runtime,
            })
        };
        let jars = |jars| runtime("jvm", "17.0.15", json!({ "libraries": jars }));
        let wheels = |wheels| runtime("python", "3.12.1", json!({ "libraries": wheels }));
        let flags = |language, flags| runtime(language, "1", json!({ "flags": flags }));
        let python = |version| runtime("python", version, json!({}));
        vec![
            (
                "jvm-log4j1-library",
                jars(json!([{"kind": "jar", "name": "log4j", "version": "1.2.17"}])),
                jars(json!([
                    {"kind": "jar", "name": "log4j-1.2-api", "version": "2.17.1"},
                    {"kind": "jar", "name": "log4j-core", "version": "2.17.1"},
                ])),
            ),
            (
                "jvm-log4shell",
                jars(json!([{"kind": "jar", "name": "log4j-core", "version": "2.14.1"}])),
                jars(json!([{"kind": "jar", "name": "log4j-core", "version": "2.12.2"}])),
            ),
            (
                "jvm-jit-limited",
                flags("jvm", json!(["-XX:TieredStopAtLevel=1"])),
                flags("jvm", json!(["-XX:TieredStopAtLevel=4", "-Xss1m"])),
            ),
            (
                "jvm-serial-gc",
                flags("jvm", json!(["-Xmx512m", "-XX:+UseSerialGC"])),
                flags("jvm", json!(["-XX:-UseSerialGC", "-XX:+UseG1GC"])),
            ),
            (
                "py-runtime-before-3-11",
                python("3.10.12"),
                python("3.11.4"),
            ),
            (
                "py-dev-mode",
                flags("python", json!(["PYTHONMALLOC=debug"])),
                flags("python", json!(["-X importtime", "PYTHONMALLOC=malloc"])),
            ),
            (
                "py-tracemalloc",
                flags("python", json!(["PYTHONTRACEMALLOC=25"])),
                flags("python", json!(["PYTHONTRACEMALLOC=0"])),
            ),
            (
                "py-pydantic-v1",
                wheels(json!([{"kind": "python", "name": "pydantic", "version": "1.10.13"}])),
                wheels(json!([{"kind": "python", "name": "pydantic", "version": "2.5.3"}])),
            ),
        ]
    }

    /// The detections in a profile of 1000 samples run on `runtime`.
    fn evaluate_on(set: &RuleSet, runtime: Option<&ProfileRuntime>) -> Vec<Detection> {
        let data = profile(&[(&[("main", "/app")], 1000)]);
        set.evaluate(&ProfileInput {
            runtime,
            ..ProfileInput::new("svc", &data)
        })
    }

    #[test]
    fn every_runtime_seed_rule_fires_on_its_runtime_and_not_on_others() {
        let rules = seed_rules().unwrap();
        let (set, _) = RuleSet::compile(rules.clone());
        let kinds = [crate::library_version::KIND, crate::runtime_option::KIND];
        let ids: Vec<&str> = rules
            .iter()
            .filter(|r| kinds.contains(&r.kind.as_str()))
            .map(|r| r.id.as_str())
            .collect();
        let examples = runtime_examples();
        let names: Vec<&str> = examples.iter().map(|e| e.0).collect();
        assert_eq!(ids, names, "every runtime seed rule has examples here");
        for (id, flagged, quiet) in examples {
            let runtime = |json| serde_json::from_value::<ProfileRuntime>(json).unwrap();
            let found = evaluate_on(&set, Some(&runtime(flagged)))
                .into_iter()
                .find(|d| d.rule_id == id)
                .unwrap_or_else(|| panic!("{id} must fire"));
            assert_eq!((found.share, found.samples_matched), (100.0, 1000), "{id}");
            assert!(!found.detail.is_null(), "{id} says what matched");
            let others = evaluate_on(&set, Some(&runtime(quiet)));
            assert!(others.iter().all(|d| d.rule_id != id), "{id} must not fire");
        }
        assert!(evaluate_on(&set, None).is_empty(), "no runtime reported");
        assert!(evaluate_on(&set, Some(&ProfileRuntime::default())).is_empty());
    }

    #[test]
    fn seed_rules_are_complete_and_unique() {
        let rules = seed_rules().unwrap();
        let mut ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), rules.len(), "duplicate ids");
        for r in &rules {
            assert!(r.link.starts_with("https://"), "{}", r.id);
            assert!(!r.title.is_empty() && !r.explanation.is_empty() && !r.fix.is_empty());
            assert!(r.enabled);
        }
    }

    #[test]
    fn seed_rules_ignore_lookalikes() {
        let (set, _) = RuleSet::compile(seed_rules().unwrap());
        for frame in [
            ("java.util.HashtableLike.get", ""),
            ("java.lang.StringBuilder.append", ""),
            ("compile", "templates"),
            ("compile", "app.re.__init__"),
            ("deepcopy", "app.copy"),
            ("dumps", "orjson"),
            ("format", "app.logging"),
            ("my_memcpy_wrapper", "/app"),
            ("mallocator", "/app"),
            ("wait", "app.threading"),
            ("wait_for_lock", "threading"),
        ] {
            for event in ["cpu-clock", "wall", "off-cpu", "lock"] {
                let found = flag_in(&set, Some(event), frame, 50_000);
                assert!(found.is_empty(), "{frame:?} in {event}: {found:?}");
            }
        }
    }

    /// What the lock rules must tell apart, as the JVM plugin's lock mode
    /// names its leaves (profiler-service/src/plugin/jvm/lock.rs): waits
    /// for a lock another thread holds, and waits for work or a signal.
    #[test]
    fn lock_rules_tell_contention_from_waiting_for_work() {
        let (set, _) = RuleSet::compile(seed_rules().unwrap());
        let contention = "jvm-lock-contention".to_owned();
        for leaf in [
            ("[monitor] LockWorkloads$Ledger", ""),
            ("[monitor] java.lang.Object", "java.lang"),
            (
                "[park] java.util.concurrent.locks.ReentrantLock$NonfairSync",
                "java.util.concurrent.locks",
            ),
            (
                "[park] java.util.concurrent.locks.ReentrantLock$FairSync",
                "java.util.concurrent.locks",
            ),
            (
                "[park] java.util.concurrent.locks.ReentrantReadWriteLock$NonfairSync",
                "java.util.concurrent.locks",
            ),
            (
                "[park] java.util.concurrent.Semaphore$NonfairSync",
                "java.util.concurrent",
            ),
            (
                "[park] java.util.concurrent.locks.StampedLock",
                "java.util.concurrent.locks",
            ),
        ] {
            let found = flag_in(&set, Some("lock"), leaf, 50_000);
            assert!(found.contains(&contention), "{leaf:?}: {found:?}");
        }
        for leaf in [
            (
                "[park] java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject",
                "java.util.concurrent.locks",
            ),
            (
                "[park] java.util.concurrent.CountDownLatch$Sync",
                "java.util.concurrent",
            ),
            (
                "[park] java.util.concurrent.ForkJoinPool",
                "java.util.concurrent",
            ),
            (
                "[park] java.util.concurrent.SynchronousQueue$TransferStack",
                "java.util.concurrent",
            ),
            ("[park]", ""),
            // A method named like a leaf is no leaf.
            ("com.example.Monitor.lock", "com.example"),
        ] {
            let found = flag_in(&set, Some("lock"), leaf, 100_000);
            assert!(found.is_empty(), "{leaf:?}: {found:?}");
        }
        // SecureRandom's own frames on a lock profile, whatever the leaf;
        // an application's generator is not the JDK's.
        for frame in [
            ("java.security.SecureRandom.nextBytes", "java.security"),
            (
                "sun.security.provider.NativePRNG$RandomIO.implNextBytes",
                "sun.security.provider",
            ),
            (
                "[monitor] sun.security.provider.SecureRandom",
                "sun.security.provider",
            ),
        ] {
            let found = flag_in(&set, Some("lock"), frame, 50_000);
            assert!(
                found.contains(&"jvm-lock-securerandom".to_owned()),
                "{frame:?}"
            );
        }
        let own = flag_in(
            &set,
            Some("lock"),
            ("com.example.MySecureRandom.next", ""),
            50_000,
        );
        assert!(own.is_empty(), "{own:?}");
    }

    /// `(function, module)` pairs.
    type Frames = &'static [(&'static str, &'static str)];

    /// The frames CPython 3.8 to 3.13 report (py-spy 0.4.2: the code
    /// object's name, the file shortened to its package, which the agent
    /// turns into the module) for the code each `py-*` rule is about;
    /// rules/README.md lists them. 3.11 is also captured for real.
    const CPYTHON_FRAMES: &[(&str, &str, Frames)] = &[
        (
            "py-re-compile",
            "3.8-3.10",
            &[
                ("compile", "re"),
                ("_compile", "re"),
                ("compile", "sre_compile"),
                ("_compile", "sre_compile"),
            ],
        ),
        (
            "py-re-compile",
            "3.11-3.13",
            &[
                ("compile", "re.__init__"),
                ("_compile", "re.__init__"),
                ("compile", "re._compiler"),
                ("_compile", "re._compiler"),
            ],
        ),
        (
            "py-copy-deepcopy",
            "3.8-3.13",
            &[
                ("deepcopy", "copy"),
                ("_deepcopy_dict", "copy"),
                ("_deepcopy_list", "copy"),
                ("_deepcopy_tuple", "copy"),
                ("_reconstruct", "copy"),
            ],
        ),
        (
            "py-json",
            "3.8-3.13",
            &[
                ("dumps", "json.__init__"),
                ("loads", "json.__init__"),
                ("encode", "json.encoder"),
                ("iterencode", "json.encoder"),
                ("_iterencode_dict", "json.encoder"),
                ("decode", "json.decoder"),
                ("raw_decode", "json.decoder"),
            ],
        ),
        (
            "py-logging-format",
            "3.8-3.13",
            &[
                ("format", "logging.__init__"),
                ("formatMessage", "logging.__init__"),
                ("formatTime", "logging.__init__"),
                ("getMessage", "logging.__init__"),
                ("usesTime", "logging.__init__"),
            ],
        ),
    ];

    #[test]
    fn python_rules_match_what_every_supported_cpython_reports() {
        let (set, _) = RuleSet::compile(seed_rules().unwrap());
        for (id, versions, frames) in CPYTHON_FRAMES {
            for frame in *frames {
                let found = flag(&set, *frame, 50_000);
                assert!(
                    found.contains(&id.to_string()),
                    "{id} misses {frame:?} of CPython {versions}: {found:?}"
                );
            }
        }
    }
}
