use super::*;

fn def(name: &str, target: Target) -> ServiceDefinition {
    ServiceDefinition {
        name: name.into(),
        target,
    }
}

fn sample() -> Vec<ServiceDefinition> {
    vec![
        def("checkout", Target::ProcessName("checkout".into())),
        def("search", Target::CommandLine("java .*--app=search".into())),
        def("cart", Target::Cgroup("/system.slice/cart.service".into())),
    ]
}

#[test]
fn digest_is_stable_and_order_independent() {
    let services = sample();
    let digest = services_digest(&services);
    assert_eq!(digest.len(), 64);
    assert!(digest
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    // Every order of the same definitions has the same digest.
    let mut reversed = services.clone();
    reversed.reverse();
    assert_eq!(services_digest(&reversed), digest);
    let mut rotated = services.clone();
    rotated.rotate_left(1);
    assert_eq!(services_digest(&rotated), digest);
    // Pinned (and reproduced by an independent Python implementation of
    // the documented encoding): a change must be deliberate, versioned.
    assert_eq!(
        digest,
        "7f123203aafbc5600e6d6611a8907cfc74b6d4e2f6ab7f1afcc86510e7144796"
    );
    assert_eq!(
        services_digest(&[]),
        "c1963a3fdde54e9aa0916a820cc1567ae1283816efc35c58ae1ac8f2e9c55418"
    );
}

#[test]
fn digest_sees_every_field() {
    let base = services_digest(&sample());
    let mut renamed = sample();
    renamed[0].name = "checkout2".into();
    let mut retargeted = sample();
    retargeted[0].target = Target::CommandLine("checkout".into());
    let mut fewer = sample();
    fewer.pop();
    for other in [renamed, retargeted, fewer, Vec::new()] {
        assert_ne!(services_digest(&other), base);
    }
    // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
    assert_ne!(
        services_digest(&[def("ab", Target::ProcessName("c".into()))]),
        services_digest(&[def("a", Target::ProcessName("bc".into()))])
    );
}

#[test]
fn sync_sorts_and_carries_its_digest() {
    let sync = SyncServices::new(sample());
    let names: Vec<&str> = sync.services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["cart", "checkout", "search"]);
    assert_eq!(sync.digest, services_digest(&sample()));
    sync.check().unwrap();

    let mut forged = sync.clone();
    forged.services.pop();
    assert!(matches!(
        forged.check(),
        Err(ServiceError::DigestMismatch { .. })
    ));
    let json = serde_json::to_value(&sync).unwrap();
    assert_eq!(json["services"][0]["name"], "cart");
    assert_eq!(json["services"][0]["target"]["by"], "cgroup");
    assert_eq!(json["digest"], sync.digest.as_str());
}

#[test]
fn revocations_change_the_digest_and_are_checked_with_it() {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let none = SyncServices::new(sample());
    let revoking = SyncServices::with_revoked(sample(), vec![b, a, b]);
    assert_eq!(revoking.revoked, [a, b], "sorted, once each");
    assert_ne!(revoking.digest, none.digest);
    assert_eq!(
        SyncServices::with_revoked(sample(), vec![a, b]).digest,
        revoking.digest,
        "the order given does not matter"
    );
    revoking.check().unwrap();
    // Nothing revoked: the digest agents reported before revocations.
    assert_eq!(none.digest, services_digest(&sample()));
    assert!(serde_json::to_value(&none)
        .unwrap()
        .get("revoked")
        .is_none());
    // A revocation taken out in transit no longer matches.
    let mut forged = revoking.clone();
    forged.revoked.pop();
    assert!(matches!(
        forged.check(),
        Err(ServiceError::DigestMismatch { .. })
    ));
    // An older api-server's sync reads with nothing revoked.
    let old: SyncServices =
        serde_json::from_value(serde_json::json!({"services": [], "digest": services_digest(&[])}))
            .unwrap();
    assert!(old.revoked.is_empty());
    old.check().unwrap();
    let many: Vec<Uuid> = (0..=MAX_REVOKED as u128).map(Uuid::from_u128).collect();
    assert!(matches!(
        SyncServices::with_revoked(Vec::new(), many).check(),
        Err(ServiceError::TooManyRevoked { .. })
    ));
}

fn assignment(id: u128, service: &str) -> ContinuousAssignment {
    ContinuousAssignment {
        id: Uuid::from_u128(id),
        service: service.into(),
        event: crate::model::EventKind::CpuClock,
        frequency_hz: crate::continuous::DEFAULT_FREQUENCY_HZ,
        cpu_budget_ppm: crate::continuous::DEFAULT_CPU_BUDGET_PPM,
        hosts: None,
    }
}

#[test]
fn continuous_profiles_change_the_digest_and_are_checked_with_it() {
    let revoked = vec![Uuid::from_u128(1)];
    let plain = SyncServices::with_revoked(sample(), revoked.clone());
    let continuous = SyncServices::with_continuous(
        sample(),
        revoked.clone(),
        vec![assignment(9, "search"), assignment(3, "checkout")],
    );
    assert_eq!(continuous.continuous[0].id, Uuid::from_u128(3), "sorted");
    assert_ne!(continuous.digest, plain.digest);
    continuous.check().unwrap();
    // None: the digest agents reported before continuous profiles.
    assert_eq!(
        SyncServices::with_continuous(sample(), revoked.clone(), Vec::new()).digest,
        plain.digest
    );
    // Every field is in the digest: a rate, budget or host list changed
    // in transit no longer matches.
    let changes: [fn(&mut ContinuousAssignment); 5] = [
        |a| a.frequency_hz += 1,
        |a| a.cpu_budget_ppm += 1,
        |a| a.hosts = Some(vec!["web-1".into()]),
        |a| a.event = crate::model::EventKind::Wall,
        |a| a.service = "cart".into(),
    ];
    for change in changes {
        let mut forged = continuous.clone();
        change(&mut forged.continuous[0]);
        assert!(
            matches!(forged.check(), Err(ServiceError::DigestMismatch { .. })),
            "{:?}",
            forged.continuous[0]
        );
    }
    // An assignment of a service the sync does not define, or twice.
    let unknown =
        SyncServices::with_continuous(sample(), Vec::new(), vec![assignment(1, "billing")]);
    assert!(matches!(
        unknown.check(),
        Err(ServiceError::Continuous(
            AssignmentError::UnknownService { .. }
        ))
    ));
    let twice = SyncServices::with_continuous(
        sample(),
        Vec::new(),
        vec![assignment(1, "cart"), assignment(1, "search")],
    );
    assert!(matches!(
        twice.check(),
        Err(ServiceError::Continuous(AssignmentError::Duplicate { .. }))
    ));
}

fn trigger(id: u128, service: &str) -> crate::trigger::TriggerAssignment {
    crate::trigger::TriggerAssignment {
        id: Uuid::from_u128(id),
        service: service.into(),
        condition: crate::trigger::TriggerCondition::CpuAbove {
            percent: 80,
            for_secs: 30,
        },
        cooldown_secs: 600,
        hosts: None,
    }
}

#[test]
fn triggers_change_the_digest_and_are_checked_with_it() {
    let continuous = vec![assignment(3, "checkout")];
    let plain = SyncServices::with_continuous(sample(), Vec::new(), continuous.clone());
    let triggered = plain
        .clone()
        .with_triggers(vec![trigger(9, "search"), trigger(2, "cart")]);
    assert_eq!(triggered.triggers[0].id, Uuid::from_u128(2), "sorted");
    assert_ne!(triggered.digest, plain.digest);
    triggered.check().unwrap();
    // None: the digest agents reported before triggers.
    assert_eq!(plain.clone().with_triggers(Vec::new()).digest, plain.digest);
    // A threshold changed in transit no longer matches.
    let mut forged = triggered.clone();
    forged.triggers[0].cooldown_secs += 1;
    assert!(matches!(
        forged.check(),
        Err(ServiceError::DigestMismatch { .. })
    ));
    let unknown = plain.clone().with_triggers(vec![trigger(1, "billing")]);
    assert!(matches!(
        unknown.check(),
        Err(ServiceError::Trigger(
            crate::trigger::TriggerError::UnknownService { .. }
        ))
    ));
    let twice = plain.with_triggers(vec![trigger(1, "cart"), trigger(1, "search")]);
    assert!(matches!(
        twice.check(),
        Err(ServiceError::Trigger(
            crate::trigger::TriggerError::Duplicate { .. }
        ))
    ));
}

#[test]
fn definitions_are_checked() {
    let err = |services: Vec<ServiceDefinition>| check_definitions(&services).unwrap_err();
    assert!(matches!(
        err(vec![def("a b", Target::ProcessName("x".into()))]),
        ServiceError::Name { .. }
    ));
    assert!(matches!(
        err(vec![def("", Target::ProcessName("x".into()))]),
        ServiceError::Name { .. }
    ));
    assert!(matches!(
        err(vec![
            def("a", Target::ProcessName("x".into())),
            def("a", Target::ProcessName("y".into()))
        ]),
        ServiceError::Duplicate { .. }
    ));
    assert!(matches!(
        err(vec![def("a", Target::Pid(7))]),
        ServiceError::TargetKind { .. }
    ));
    assert!(matches!(
        err(vec![def("a", Target::Imported("pprof".into()))]),
        ServiceError::TargetKind { .. }
    ));
    assert!(matches!(
        err(vec![def("a", Target::CommandLine("(".into()))]),
        ServiceError::Target { .. }
    ));
    assert!(matches!(
        err(vec![def("a", Target::Cgroup("relative".into()))]),
        ServiceError::Target { .. }
    ));
    let many: Vec<ServiceDefinition> = (0..=MAX_SERVICES)
        .map(|i| def(&format!("s{i}"), Target::ProcessName("x".into())))
        .collect();
    assert!(matches!(err(many), ServiceError::TooMany { .. }));
    check_definitions(&sample()).unwrap();
    check_definitions(&[]).unwrap();
    let message = err(vec![def("a", Target::Pid(7))]).to_string();
    assert!(
        message.contains("\"a\"") && message.contains("pid 7"),
        "{message}"
    );
}

#[test]
fn operator_labels_parse_and_validate() {
    let labels = parse_operator_labels(["zone=eu-1", "version=1.2.3", "team=a=b"]).unwrap();
    assert_eq!(labels["zone"], "eu-1");
    assert_eq!(labels["version"], "1.2.3");
    assert_eq!(labels["team"], "a=b", "split at the first `=`");
    assert!(parse_operator_labels([]).unwrap().is_empty());

    let err = |items: &[&str]| parse_operator_labels(items.iter().copied()).unwrap_err();
    assert!(matches!(err(&["zone"]), LabelError::NotKeyValue { .. }));
    assert_eq!(err(&["=a"]), LabelError::EmptyKey);
    assert!(matches!(err(&["Zone=a"]), LabelError::Key { .. }));
    assert!(matches!(err(&["zo ne=a"]), LabelError::Key { .. }));
    assert!(matches!(err(&["-zone=a"]), LabelError::Key { .. }));
    assert!(matches!(err(&["zöne=a"]), LabelError::Key { .. }));
    let long_key = format!("{}=a", "k".repeat(MAX_LABEL_KEY_LEN + 1));
    assert!(matches!(err(&[&long_key]), LabelError::Key { .. }));
    let longest_key = format!("{}=a", "k".repeat(MAX_LABEL_KEY_LEN));
    parse_operator_labels([longest_key.as_str()]).unwrap();
    assert!(matches!(err(&["zone="]), LabelError::EmptyValue { .. }));
    let long_value = format!("zone={}", "v".repeat(MAX_LABEL_VALUE_LEN + 1));
    assert!(matches!(
        err(&[&long_value]),
        LabelError::ValueTooLong { .. }
    ));
    assert!(matches!(err(&["zone=a\nb"]), LabelError::ValueChars { .. }));
    assert!(matches!(
        err(&["zone=a", "zone=b"]),
        LabelError::Duplicate { .. }
    ));
    for key in DISCOVERED_LABELS {
        let item = format!("{key}=x");
        let e = err(&[&item]);
        assert!(matches!(e, LabelError::Discovered { .. }), "{key}: {e}");
        assert!(e.to_string().contains("discovered"));
    }
    let many: Vec<String> = (0..=MAX_OPERATOR_LABELS)
        .map(|i| format!("k{i}=v"))
        .collect();
    assert!(matches!(
        parse_operator_labels(many.iter().map(String::as_str)).unwrap_err(),
        LabelError::TooMany { .. }
    ));
    assert_eq!(
        err(&["zone="]).to_string(),
        "label \"zone\" has an empty value"
    );
}

#[test]
fn discovered_values_are_cleaned() {
    assert_eq!(
        clean_label_value("  Intel(R) Xeon(R)\tCPU,  E5 \n").as_deref(),
        Some("Intel(R) Xeon(R) CPU E5")
    );
    assert_eq!(clean_label_value(" \n\t"), None);
    let long = "w".repeat(MAX_LABEL_VALUE_LEN + 10);
    assert_eq!(clean_label_value(&long).unwrap().len(), MAX_LABEL_VALUE_LEN);
    let words = "ab ".repeat(100);
    let cleaned = clean_label_value(&words).unwrap();
    assert!(cleaned.len() <= MAX_LABEL_VALUE_LEN && cleaned.ends_with("ab"));
    let wide = "é".repeat(MAX_LABEL_VALUE_LEN);
    let cleaned = clean_label_value(&wide).unwrap();
    assert!(cleaned.len() <= MAX_LABEL_VALUE_LEN);
    for value in [cleaned.as_str(), "Intel(R) Xeon(R) CPU E5"] {
        check_label_value("cpu_model", value).unwrap();
    }
}
