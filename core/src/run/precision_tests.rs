//! Tests of the stop rule's formulas and validation on small
//! hand-computed cases; the simulated runs are in `precision_sim.rs`.

use super::*;

#[test]
fn estimates_match_the_formulas() {
    let mut agg = Aggregate::new();
    agg.record("a", "f", 30);
    agg.record("a", "g", 70);
    agg.record("b", "f", 60);
    agg.record("b", "g", 240);
    let f = agg.estimate("f").unwrap();
    assert_eq!(f.share, 90.0 / 400.0);
    let pooled = (0.225f64 * 0.775 / 400.0).sqrt();
    assert!((f.pooled_stderr - pooled).abs() < 1e-15);
    // Residuals 30 - 22.5 and 60 - 67.5: sqrt(2 * 112.5) / 400.
    let between = (2.0f64 * 112.5).sqrt() / 400.0;
    assert!((f.between_host_stderr.unwrap() - between).abs() < 1e-15);
    assert_eq!(agg.method(), StderrMethod::Larger);
    assert_eq!(f.stderr, between.max(pooled));
    assert_eq!((agg.samples(), agg.hosts()), (400, 2));
    assert!(agg.estimate("missing").is_none());
    // A host's unattributed samples count in its total only.
    agg.record_unattributed("b", 100);
    assert_eq!(agg.estimate("f").unwrap().share, 90.0 / 500.0);
}

#[test]
fn method_follows_the_number_of_hosts() {
    let mut agg = Aggregate::new();
    assert_eq!(agg.method(), StderrMethod::Pooled);
    agg.record("h0", "f", 5);
    agg.record("idle", "f", 0);
    assert_eq!((agg.hosts(), agg.method()), (1, StderrMethod::Pooled));
    assert_eq!(agg.estimate("f").unwrap().between_host_stderr, None);
    for i in 1..BETWEEN_HOST_MIN_HOSTS - 1 {
        agg.record(&format!("h{i}"), "f", 5);
        agg.record(&format!("h{i}"), "g", i as u64);
    }
    assert_eq!(agg.hosts(), BETWEEN_HOST_MIN_HOSTS - 1);
    assert_eq!(agg.method(), StderrMethod::Larger);
    agg.record("last", "g", 1);
    assert_eq!(agg.method(), StderrMethod::BetweenHost);
    let g = agg.estimate("g").unwrap();
    assert_eq!(Some(g.stderr), g.between_host_stderr);
}

#[test]
fn top_orders_by_share_then_name() {
    let mut agg = Aggregate::new();
    for (f, n) in [("zeta", 5), ("alpha", 5), ("big", 20), ("small", 1)] {
        agg.record("h", f, n);
    }
    let names: Vec<String> = agg.top(3).into_iter().map(|s| s.function).collect();
    assert_eq!(names, ["big", "alpha", "zeta"]);
    assert_eq!(agg.top(10).len(), 4);
    assert!(Aggregate::new().top(3).is_empty());
}

#[test]
fn stop_rule_refuses_bad_input_with_clear_messages() {
    assert_eq!(
        StopRule::new(0, 0.01).unwrap_err().to_string(),
        "stop_when.top must be at least 1"
    );
    for eps in [0.0, -0.1, 1.0, f64::NAN] {
        assert_eq!(
            StopRule::new(3, eps).unwrap_err().to_string(),
            format!("stop_when.max_stderr {eps} is outside (0, 1)")
        );
    }
    let rule: StopRule = serde_json::from_str(r#"{"top":3,"max_stderr":0.01}"#).unwrap();
    assert_eq!(rule, StopRule::new(3, 0.01).unwrap());
    // An invalid rule is never met, whatever the aggregate.
    let mut agg = Aggregate::new();
    agg.record("h", "f", 1_000_000);
    let bad = StopRule {
        top: 0,
        max_stderr: 0.5,
    };
    assert!(!bad.evaluate(&agg).met);
}

#[test]
fn evaluate_reports_the_epsilon_reached() {
    let rule = StopRule::new(2, 0.01).unwrap();
    let empty = rule.evaluate(&Aggregate::new());
    assert!(!empty.met);
    assert_eq!((empty.reached_epsilon, empty.samples_used), (None, 0));

    let mut agg = Aggregate::new();
    for (f, n) in [("a", 500), ("b", 300), ("c", 200)] {
        agg.record("h", f, n);
    }
    let d = rule.evaluate(&agg);
    // One host: binomial errors; a (0.5) is the widest of the top 2.
    let widest = (0.25f64 / 1000.0).sqrt();
    assert_eq!(d.reached_epsilon, Some(widest));
    assert!(!d.met, "0.0158 is above 0.01");
    assert_eq!(d.top.len(), 2);
    assert_eq!(
        (d.samples_used, d.hosts, d.method),
        (1000, 1, StderrMethod::Pooled)
    );
    // (0.0158 / 0.01)² of the samples so far: 2500.
    assert_eq!(d.projected_samples, Some(2500));
    assert!(StopRule::new(2, 0.02).unwrap().evaluate(&agg).met);
}

#[test]
fn a_share_seen_in_every_sample_is_not_taken_as_exact() {
    let rule = StopRule::new(3, 0.01).unwrap();
    let mut agg = Aggregate::new();
    agg.record("h", "only", 10);
    let d = rule.evaluate(&agg);
    assert_eq!(d.top[0].pooled_stderr, 0.0);
    assert_eq!(d.reached_epsilon, Some(0.15));
    assert!(!d.met);
    agg.record("h", "only", 990);
    assert!(rule.evaluate(&agg).met, "1.5/1000 is within 0.01");
}

#[test]
fn analytic_samples_use_the_widest_top_share() {
    let rule = StopRule::new(3, 0.005).unwrap();
    let shares = [
        0.3, 0.2, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05,
    ];
    assert_eq!(rule.analytic_samples(&shares), 8400);
    let one = StopRule::new(1, 0.01).unwrap();
    assert_eq!(one.analytic_samples(&[0.02, 0.6, 0.45]), 2400);
    let two = StopRule::new(2, 0.01).unwrap();
    assert_eq!(two.analytic_samples(&[0.02, 0.6, 0.45]), 2475);
    assert_eq!(two.analytic_samples(&[]), 0);
}
