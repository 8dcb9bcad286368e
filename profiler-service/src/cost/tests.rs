use super::*;

const SEC: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

fn counts(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

#[test]
fn defaults_resolve_to_p99_and_a_one_percent_budget() {
    let settings = CostDefaults::default()
        .resolve(99, &StartOptions::default())
        .unwrap();
    assert_eq!(settings.fsp_share, Some(0.99));
    assert_eq!(settings.fda, None);
    assert_eq!(settings.duty_cycle, None);
    assert_eq!(settings.overhead_budget, Some(0.01));
    assert!(CostDefaults::default().validate().is_ok());
    assert_eq!(CostSettings::default().fsp_share, None);
}

#[test]
fn options_override_defaults_and_fda_bounds_follow_the_request() {
    let defaults = CostDefaults {
        fda: Some(FdaSettings::default()),
        ..CostDefaults::default()
    };
    let settings = defaults.resolve(499, &StartOptions::default()).unwrap();
    let fda = settings.fda.unwrap();
    assert_eq!((fda.min_hz, fda.max_hz, fda.top_n), (19, 499, 10));
    // A low request lowers the default floor with it.
    let low = defaults.resolve(10, &StartOptions::default()).unwrap();
    assert_eq!(low.fda.map(|f| (f.min_hz, f.max_hz)), Some((10, 10)));

    let options = StartOptions {
        fsp_share: Some(1.0),
        fda: Some(FdaSettings {
            enabled: false,
            ..FdaSettings::default()
        }),
        duty_cycle: Some(DutyCycle {
            on_ms: 500,
            period_ms: 500,
        }),
        overhead_budget: Some(0.05),
        ..StartOptions::default()
    };
    let settings = defaults.resolve(99, &options).unwrap();
    assert_eq!(settings.fsp_share, None, "share 1 keeps every thread");
    assert_eq!(settings.fda, None, "turned off per profile");
    assert_eq!(settings.duty_cycle, None, "always on is no duty cycle");
    assert_eq!(settings.overhead_budget, Some(0.05));
}

#[test]
fn bad_values_are_refused_with_a_reason() {
    let defaults = CostDefaults::default();
    let refuse = |options: StartOptions| defaults.resolve(99, &options).unwrap_err().to_string();
    let fda = |f: FdaSettings| StartOptions {
        fda: Some(f),
        ..StartOptions::default()
    };
    for share in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(refuse(StartOptions {
            fsp_share: Some(share),
            ..StartOptions::default()
        })
        .contains("fsp_share"));
    }
    for lambda in [0.0, 1.0, 2.0] {
        assert!(refuse(fda(FdaSettings {
            lambda,
            ..FdaSettings::default()
        }))
        .contains("lambda"));
    }
    assert!(refuse(fda(FdaSettings {
        theta: 0.0,
        ..FdaSettings::default()
    }))
    .contains("theta"));
    assert!(refuse(fda(FdaSettings {
        min_hz: 200,
        max_hz: Some(100),
        ..FdaSettings::default()
    }))
    .contains("bounds"));
    assert!(refuse(fda(FdaSettings {
        stable_windows: 0,
        ..FdaSettings::default()
    }))
    .contains("stable_windows"));
    assert!(refuse(StartOptions {
        duty_cycle: Some(DutyCycle {
            on_ms: 2000,
            period_ms: 1000
        }),
        ..StartOptions::default()
    })
    .contains("duty cycle"));
    assert!(refuse(StartOptions {
        overhead_budget: Some(0.0),
        ..StartOptions::default()
    })
    .contains("overhead_budget"));
}

#[test]
fn governor_follows_fda_under_the_budget_cap() {
    let settings = CostSettings {
        fda: Some(FdaParams {
            theta: 0.05,
            lambda: 0.8,
            stable_windows: 2,
            top_n: 10,
            min_hz: 19,
            max_hz: 999,
        }),
        overhead_budget: Some(0.01),
        ..CostSettings::default()
    };
    let mut gov = Governor::new(999, &settings);
    let steady = counts(&[("f", 100), ("g", 30)]);
    let light = Some((MS, SEC));
    // Window 0: first for both FDA and the budget.
    assert_eq!(gov.window(&steady, Some((50 * MS, SEC))).change, None);
    assert_eq!(gov.window(&steady, light).change, None);
    let step = gov.window(&steady, light);
    assert_eq!(step.change, Some((799, AdjustReason::HotspotsStable)));
    assert_eq!(step.divergence, Some(0.0));
    // Over budget: the cap wins over FDA's wish.
    let step = gov.window(&steady, Some((16 * MS, SEC)));
    assert_eq!(step.change, Some((499, AdjustReason::OverheadBudget)));
    assert_eq!(gov.frequency(), 499);
    // A phase change asks for more, within the cap (which relaxes slowly).
    let step = gov.window(&counts(&[("h", 100)]), Some((2 * MS, SEC)));
    assert_eq!(step.change, Some((624, AdjustReason::HotspotsChanged)));
}

#[test]
fn governor_without_fda_holds_the_request_unless_over_budget() {
    let settings = CostSettings {
        overhead_budget: Some(0.01),
        ..CostSettings::default()
    };
    let mut gov = Governor::new(99, &settings);
    let leaves = counts(&[("f", 10)]);
    assert_eq!(gov.window(&leaves, Some((SEC, SEC))).change, None);
    assert_eq!(gov.window(&leaves, None).change, None);
    let step = gov.window(&leaves, Some((20 * MS, SEC)));
    assert_eq!(step.change, Some((49, AdjustReason::OverheadBudget)));
    assert_eq!(step.cpu_share, Some(0.02));
    assert_eq!(
        gov.window(&leaves, Some((MS, SEC))).change.map(|c| c.0),
        Some(62)
    );

    let mut off = Governor::new(99, &CostSettings::default());
    assert_eq!(off.window(&leaves, Some((SEC, SEC))).change, None);
    assert_eq!(off.frequency(), 99);
}
