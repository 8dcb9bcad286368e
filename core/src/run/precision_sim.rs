//! Simulated runs (seeded, so every figure is the same on every machine)
//! against the claims: an i.i.d. run stops near the analytic
//! sample count, the shares it reports are within ±2ε of the truth, and
//! with hosts that differ the between-host error keeps its coverage where
//! the pooled binomial loses it. `--nocapture` prints the figures.

use super::*;
use crate::run::rng::SplitMix64;

/// Three hot functions over eight lukewarm ones: the top 3 are
/// 0.30, 0.20 and 0.10, and 0.30 has the largest variance.
const NAMES: [&str; 11] = [
    "hot", "b", "c", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7",
];
const IID: [f64; 11] = [
    0.3, 0.2, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05,
];

/// One multinomial draw of `n` samples over `probs` (summing to 1), by
/// inverting the cumulative distribution for each sample.
fn multinomial(rng: &mut SplitMix64, n: u64, probs: &[f64]) -> Vec<u64> {
    let mut counts = vec![0u64; probs.len()];
    for _ in 0..n {
        let mut u = rng.next_f64();
        let mut f = 0;
        while f + 1 < probs.len() && u >= probs[f] {
            u -= probs[f];
            f += 1;
        }
        counts[f] += 1;
    }
    counts
}

fn stream(agg: &mut Aggregate, rng: &mut SplitMix64, host: &str, n: u64, probs: &[f64]) {
    for (f, &count) in multinomial(rng, n, probs).iter().enumerate() {
        if count > 0 {
            agg.record(host, NAMES[f], count);
        }
    }
}

fn truth(function: &str) -> f64 {
    IID[NAMES
        .iter()
        .position(|n| *n == function)
        .expect("known function")]
}

/// Streams windows of `per_host` samples from each of `hosts` i.i.d. hosts
/// until the rule is met; the final decision.
fn run(rng: &mut SplitMix64, hosts: usize, per_host: u64, rule: &StopRule) -> StopDecision {
    let ids: Vec<String> = (0..hosts).map(|i| format!("h{i:03}")).collect();
    let mut agg = Aggregate::new();
    loop {
        for id in &ids {
            stream(&mut agg, rng, id, per_host, &IID);
        }
        let decision = rule.evaluate(&agg);
        if decision.met {
            return decision;
        }
        assert!(agg.samples() < 10_000_000, "the run never stopped");
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn iid_run_stops_near_the_analytic_sample_count() {
    const RUNS: usize = 40;
    let rule = StopRule::new(3, 0.005).unwrap();
    let analytic = rule.analytic_samples(&IID) as f64;
    // (hosts, samples per host per window): one host (binomial), eight
    // (the larger of the two) and 256 (between-host), each window about
    // 3% of the analytic count.
    for (hosts, per_host, seed) in [(1usize, 256u64, 1u64), (8, 32, 2), (256, 1, 3)] {
        let window = (hosts as u64 * per_host) as f64;
        let mut rng = SplitMix64::new(seed);
        let mut ratios: Vec<f64> = (0..RUNS)
            .map(|_| run(&mut rng, hosts, per_host, &rule).samples_used as f64 / analytic)
            .collect();
        ratios.sort_by(f64::total_cmp);
        let median = quantile(&ratios, 0.5);
        let within = ratios.iter().filter(|r| (0.8..=1.2).contains(*r)).count();
        println!(
            "i.i.d., {hosts} hosts: analytic N {analytic}, window {window}; stop/N over {RUNS} \
             runs: min {:.2} p10 {:.2} median {median:.2} p90 {:.2} max {:.2}; {within} within 20%",
            ratios[0],
            quantile(&ratios, 0.1),
            quantile(&ratios, 0.9),
            ratios[RUNS - 1]
        );
        match hosts {
            // The binomial error is nearly exact: every run stops within
            // 20%, the typical one within a window of N.
            1 => {
                assert_eq!(within, RUNS, "{ratios:?}");
                assert!((median - 1.0).abs() * analytic <= window, "{ratios:?}");
            }
            // The floor never stops a run early, but a few hosts' noisy
            // between-host error can keep it going past N.
            8 => assert!(
                ratios[0] >= 0.95 && median <= 1.1 && within >= 30,
                "{ratios:?}"
            ),
            // The between-host error of 256 hosts is itself known to about
            // 4.5%, so single runs scatter by about 9% around N.
            _ => assert!((median - 1.0).abs() <= 0.1 && within >= 36, "{ratios:?}"),
        }
    }
}

#[test]
fn reported_shares_cover_the_truth_over_200_repeats() {
    let eps = 0.01;
    let rule = StopRule::new(3, eps).unwrap();
    for (hosts, per_host, seed) in [(4usize, 16u64, 11u64), (32, 2, 12)] {
        let mut rng = SplitMix64::new(seed);
        let (mut covered, mut shares, mut all_three) = (0, 0, 0);
        for _ in 0..200 {
            let d = run(&mut rng, hosts, per_host, &rule);
            let inside = d
                .top
                .iter()
                .filter(|s| (s.share - truth(&s.function)).abs() <= 2.0 * eps)
                .count();
            covered += inside;
            shares += d.top.len();
            all_three += usize::from(inside == d.top.len());
        }
        let coverage = covered as f64 / shares as f64;
        println!(
            "i.i.d., {hosts} hosts, 200 stopped runs: {:.1}% of reported top-3 shares within \
             ±2ε, all three in {:.1}% of runs",
            100.0 * coverage,
            100.0 * all_three as f64 / 200.0
        );
        assert_eq!(shares, 600);
        assert!(coverage >= 0.95, "{hosts} hosts: {coverage}");
    }
}

/// Coverage at ±2 standard errors of the share of `hot` (true population
/// share 0.4) over `repeats` fleets of `hosts`, each host taking 20 to 60
/// samples and, when `differ`, running `hot` at 0.2 or 0.6 by a coin flip:
/// (pooled, between-host, the rule's choice).
fn coverage(hosts: usize, differ: bool, repeats: usize, seed: u64) -> [f64; 3] {
    let mut rng = SplitMix64::new(seed);
    let ids: Vec<String> = (0..hosts).map(|h| format!("h{h:03}")).collect();
    let mut hits = [0usize; 3];
    for _ in 0..repeats {
        let mut agg = Aggregate::new();
        for id in &ids {
            let hot = match (differ, rng.below(2)) {
                (false, _) => 0.4,
                (true, 0) => 0.2,
                (true, _) => 0.6,
            };
            let n = 20 + rng.below(41);
            let rest = (0.75 - hot) / 2.0;
            stream(&mut agg, &mut rng, id, n, &[hot, 0.15, 0.1, rest, rest]);
        }
        let e = agg.estimate("hot").expect("hot was sampled");
        let between = e.between_host_stderr.expect("several hosts");
        for (i, se) in [e.pooled_stderr, between, e.stderr].into_iter().enumerate() {
            hits[i] += usize::from((e.share - 0.4).abs() <= 2.0 * se);
        }
    }
    hits.map(|h| h as f64 / repeats as f64)
}

#[test]
fn between_host_error_keeps_coverage_when_hosts_differ() {
    let repeats = 4_000;
    // The Monte Carlo standard error of a coverage near 95%: 0.34 points.
    let noise = (0.95f64 * 0.05 / repeats as f64).sqrt();
    let mut figures = Vec::new();
    for (hosts, differ, seed) in [
        (32, false, 21),
        (32, true, 22),
        (8, false, 23),
        (8, true, 24),
    ] {
        let [pooled, between, chosen] = coverage(hosts, differ, repeats, seed);
        println!(
            "{hosts} hosts, {}: coverage at ±2 stderr over {repeats} fleets (±{:.2} points): \
             pooled {:.1}%, between-host {:.1}%, rule's choice {:.1}%",
            if differ {
                "hot at 0.2 or 0.6"
            } else {
                "i.i.d."
            },
            100.0 * noise,
            100.0 * pooled,
            100.0 * between,
            100.0 * chosen
        );
        figures.push([pooled, between, chosen]);
    }
    let [iid_pooled, iid_between, _] = figures[0];
    let [het_pooled, het_between, het_chosen] = figures[1];
    // ±2 standard errors cover 95.45% of an exact normal, and 94.6% when
    // the error is estimated from 32 hosts (t with 31 degrees of freedom):
    // a fixed-sample coverage of "at least 95%" is not what 32 hosts can
    // give, so this checks it is within 1.6 points of that (about two
    // Monte Carlo standard errors below t's figure, and the two-point
    // fleet's own skew). The stop rule's promise, ±2ε, does reach 95%
    // when hosts differ: see the next test.
    let floor = 0.93;
    // Hosts that agree: both are right.
    assert!(iid_pooled >= floor && iid_between >= floor, "{figures:?}");
    // Hosts that differ: the between-host error keeps its coverage, the
    // rule uses it, and the pooled binomial is far too narrow.
    assert!(het_between >= floor, "{figures:?}");
    assert_eq!(het_chosen, het_between);
    assert!(het_pooled <= 0.6, "{figures:?}");
    // With eight hosts that differ, the rule's choice still beats the
    // pooled binomial by far (its own coverage is t-limited, see the
    // report printed above).
    assert!(figures[3][2] >= figures[3][0] + 0.3, "{figures:?}");
}

/// Population shares when `hot` runs at 0.2 or 0.6 by host: the rest of
/// each host is spread evenly over f0..f7.
fn het_truth(function: &str) -> f64 {
    match function {
        "hot" => 0.4,
        "b" => 0.15,
        "c" => 0.1,
        _ => 0.35 / 8.0,
    }
}

#[test]
fn stop_rule_keeps_its_promise_when_hosts_differ() {
    // 64 hosts whose `hot` share is 0.2 or 0.6: the between-host error of
    // `hot` cannot go below 0.2 / sqrt(64) = 0.025, so ε = 0.03 is
    // reachable. The same stream is judged by the rule (between-host) and
    // by a rule on the pooled binomial.
    let eps = 0.03;
    let rule = StopRule::new(3, eps).unwrap();
    let repeats = 300;
    let ids: Vec<String> = (0..64).map(|h| format!("h{h:03}")).collect();
    let mut rng = SplitMix64::new(31);
    // [between, pooled]: hot shares covered, all shares covered, samples.
    let mut hot = [0usize; 2];
    let mut all = [0usize; 2];
    let mut samples = [0u64; 2];
    for _ in 0..repeats {
        let probs: Vec<Vec<f64>> = ids
            .iter()
            .map(|_| {
                let hot = if rng.below(2) == 0 { 0.2 } else { 0.6 };
                let mut p = vec![hot, 0.15, 0.1];
                p.extend([(0.75 - hot) / 8.0; 8]);
                p
            })
            .collect();
        let mut agg = Aggregate::new();
        let mut stopped = [false; 2];
        while !(stopped[0] && stopped[1]) {
            for (id, p) in ids.iter().zip(&probs) {
                stream(&mut agg, &mut rng, id, 2, p);
            }
            assert!(agg.samples() < 1_000_000, "the run never stopped");
            let decision = rule.evaluate(&agg);
            assert_eq!(decision.method, StderrMethod::BetweenHost);
            let pooled_met = decision.top.iter().all(|s| s.pooled_stderr <= eps);
            for (i, met) in [decision.met, pooled_met].into_iter().enumerate() {
                if met && !stopped[i] {
                    stopped[i] = true;
                    samples[i] += agg.samples();
                    for s in &decision.top {
                        let inside = (s.share - het_truth(&s.function)).abs() <= 2.0 * eps;
                        all[i] += usize::from(inside);
                        hot[i] += usize::from(inside && s.function == "hot");
                    }
                }
            }
        }
    }
    let rate = |hits: usize, of: usize| hits as f64 / of as f64;
    for (i, name) in ["between-host", "pooled"].into_iter().enumerate() {
        println!(
            "64 hosts, hot at 0.2 or 0.6, ε {eps}, {repeats} runs: a rule on the {name} error \
             stops after {:.0} samples on average; hot within ±2ε in {:.1}%, all top-3 shares \
             in {:.1}%",
            samples[i] as f64 / repeats as f64,
            100.0 * rate(hot[i], repeats),
            100.0 * rate(all[i], 3 * repeats)
        );
    }
    assert!(rate(hot[0], repeats) >= 0.95 && rate(all[0], 3 * repeats) >= 0.95);
    // The pooled rule stops on less than half the samples and loses it.
    assert!(rate(hot[1], repeats) < 0.95, "{hot:?}");
    assert!(samples[1] * 2 < samples[0], "{samples:?}");
}
