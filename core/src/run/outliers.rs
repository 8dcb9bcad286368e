//! Which hosts of a run differ from the rest.
//!
//! A run aggregates many hosts of one service on the assumption that they
//! run the same code the same way. A host that does not (another release,
//! a stuck thread, a noisy neighbour) shows as a different mix of
//! functions. Each host is compared with the others pooled (leave one
//! out) by a chi-square test of homogeneity: a 2 × (K + 1) table of the
//! host's and the others' self samples over the run's top K functions and
//! the rest. The test accounts for both sides' sample counts, so a host
//! with few samples needs a large difference to stand out, while a host
//! with many is held to a close match. Categories whose expected count on
//! the host is under [`MIN_EXPECTED`] are pooled into the rest (Cochran's
//! rule), so that sparse counts do not inflate the statistic.
//!
//! Hosts are ranked by statistic; a host is an outlier when its p-value
//! is below `alpha / hosts` (Bonferroni, so that a fleet of identical
//! hosts flags none with probability about `1 - alpha`). Outliers leave
//! the reference one at a time, most different first, so that one odd
//! host does not make all the others look odd against a pool it skews. For each host the
//! function whose self share moved most from the others' is named, over
//! every function (not only the top K): what to look at first.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// Expected host count under which a category joins the rest.
pub const MIN_EXPECTED: f64 = 5.0;

/// One host's self samples per function. `samples` counts every sample
/// of the host; those not attributed to a function count in the rest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostCounts {
    pub host: String,
    pub samples: u64,
    pub functions: BTreeMap<String, u64>,
}

impl HostCounts {
    fn attributed(&self) -> u64 {
        self.functions.values().sum()
    }

    /// Every sample: `samples`, or the attributed ones if more.
    fn total(&self) -> u64 {
        self.samples.max(self.attributed())
    }
}

/// How hosts are compared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct OutlierOptions {
    /// The run's top functions (by self samples) compared one by one; the
    /// others are one category.
    pub top_k: usize,
    /// Family-wise false-positive rate: a host is flagged when its p-value
    /// is below `alpha / hosts`.
    pub alpha: f64,
}

impl Default for OutlierOptions {
    fn default() -> Self {
        OutlierOptions {
            top_k: 10,
            alpha: 0.01,
        }
    }
}

/// The function whose self share differs most between a host and the
/// others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct FunctionMove {
    pub function: String,
    /// Its self share on the host.
    pub host_share: f64,
    /// Its self share on the other hosts pooled.
    pub others_share: f64,
}

/// One host compared with the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HostDeviation {
    pub host: String,
    pub samples: u64,
    /// The chi-square statistic of homogeneity (0 when not tested).
    pub statistic: f64,
    /// Its degrees of freedom: categories compared, minus one (0 when
    /// the host was not tested: no samples, or no other host with any).
    pub df: usize,
    /// The chance of a statistic this large if the host were like the
    /// others (1 when not tested).
    pub p_value: f64,
    /// Total variation distance between the host's and the others'
    /// shares over the categories compared, in [0, 1]: how much differs,
    /// whatever the sample counts.
    pub distance: f64,
    /// `p_value` is below the corrected threshold.
    pub outlier: bool,
    /// The function that moved most, when the host and the others have
    /// any samples.
    pub moved: Option<FunctionMove>,
}

/// Every host compared with the others, most different first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct OutlierReport {
    pub options: OutlierOptions,
    /// The corrected threshold: `alpha / hosts`.
    pub threshold: f64,
    /// The top functions compared, hottest first.
    pub functions: Vec<String>,
    /// By statistic, largest first (ties by host).
    pub hosts: Vec<HostDeviation>,
}

impl OutlierReport {
    /// The flagged hosts, most different first.
    pub fn outliers(&self) -> impl Iterator<Item = &HostDeviation> {
        self.hosts.iter().filter(|h| h.outlier)
    }
}

/// Compares every host of `hosts` with the others: see the module
/// documentation.
///
/// An outlier in the reference would make every other host look unlike
/// it (a function only the outlier runs is missing from all of them), so
/// the comparison is stepwise: the most different host, when
/// significant, is flagged and leaves the reference, and the rest are
/// compared again, until the most different is not significant or half
/// the hosts are flagged (an outlier is a minority). Every host is
/// reported as compared with the reference it was judged against.
pub fn find_outliers(hosts: &[HostCounts], options: OutlierOptions) -> OutlierReport {
    let mut pooled: HashMap<&str, u64> = HashMap::new();
    for host in hosts {
        for (function, &count) in &host.functions {
            *pooled.entry(function.as_str()).or_default() += count;
        }
    }
    let mut ranked: Vec<(&str, u64)> = pooled
        .iter()
        .filter(|(_, &c)| c > 0)
        .map(|(&f, &c)| (f, c))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(options.top_k);
    let top: Vec<&str> = ranked.iter().map(|(f, _)| *f).collect();
    // Per host, per category (top functions, then the rest).
    let rows: Vec<Vec<u64>> = hosts
        .iter()
        .map(|host| {
            let mut row: Vec<u64> = top
                .iter()
                .map(|f| host.functions.get(*f).copied().unwrap_or(0))
                .collect();
            let listed: u64 = row.iter().sum();
            row.push(host.total().saturating_sub(listed));
            row
        })
        .collect();
    let threshold = options.alpha / hosts.len().max(1) as f64;
    let max_flagged = hosts.len().saturating_sub(1) / 2;
    let mut reference: Vec<bool> = vec![true; hosts.len()];
    let mut judged: Vec<Option<HostDeviation>> = vec![None; hosts.len()];
    loop {
        let members: Vec<usize> = (0..hosts.len()).filter(|&i| reference[i]).collect();
        let mut column_totals = vec![0u64; top.len() + 1];
        let mut functions: HashMap<&str, u64> = HashMap::new();
        for &i in &members {
            for (sum, cell) in column_totals.iter_mut().zip(&rows[i]) {
                *sum += cell;
            }
            for (function, &count) in &hosts[i].functions {
                *functions.entry(function.as_str()).or_default() += count;
            }
        }
        let total: u64 = members.iter().map(|&i| hosts[i].total()).sum();
        let deviations: Vec<(usize, HostDeviation)> = members
            .iter()
            .map(|&i| {
                let others: Vec<u64> = column_totals
                    .iter()
                    .zip(&rows[i])
                    .map(|(sum, cell)| sum - cell)
                    .collect();
                let (statistic, df, distance) = homogeneity(&rows[i], &others);
                let p_value = if df == 0 {
                    1.0
                } else {
                    chi_square_sf(statistic, df as f64)
                };
                let deviation = HostDeviation {
                    host: hosts[i].host.clone(),
                    samples: hosts[i].total(),
                    statistic,
                    df,
                    p_value,
                    distance,
                    outlier: false,
                    moved: moved_most(&hosts[i], &functions, total),
                };
                (i, deviation)
            })
            .collect();
        let worst = deviations
            .iter()
            .filter(|(_, d)| d.df > 0)
            .max_by(|a, b| a.1.statistic.total_cmp(&b.1.statistic));
        let flagged = judged.iter().flatten().count();
        match worst {
            Some((i, deviation)) if deviation.p_value < threshold && flagged < max_flagged => {
                reference[*i] = false;
                judged[*i] = Some(HostDeviation {
                    outlier: true,
                    ..deviation.clone()
                });
            }
            _ => {
                for (i, deviation) in deviations {
                    judged[i] = Some(deviation);
                }
                break;
            }
        }
    }
    let mut deviations: Vec<HostDeviation> = judged.into_iter().flatten().collect();
    deviations.sort_by(|a, b| {
        b.statistic
            .total_cmp(&a.statistic)
            .then_with(|| a.host.cmp(&b.host))
    });
    OutlierReport {
        options,
        threshold,
        functions: top.iter().map(|f| (*f).to_owned()).collect(),
        hosts: deviations,
    }
}

/// The chi-square statistic of a 2 × C table (`host` and `others` over
/// the same categories), its degrees of freedom and the total variation
/// distance of the two rows' shares. Categories whose expected host count
/// is under [`MIN_EXPECTED`] are pooled into one (the last category, the
/// rest, is always pooled with them); empty categories are dropped.
fn homogeneity(host: &[u64], others: &[u64]) -> (f64, usize, f64) {
    let (n_host, n_others) = (host.iter().sum::<u64>(), others.iter().sum::<u64>());
    if n_host == 0 || n_others == 0 {
        return (0.0, 0, 0.0);
    }
    let n = (n_host + n_others) as f64;
    let host_fraction = n_host as f64 / n;
    let last = host.len() - 1;
    let mut categories: Vec<(u64, u64)> = Vec::new();
    let mut pooled = (0u64, 0u64);
    for (i, (&h, &o)) in host.iter().zip(others).enumerate() {
        let expected = (h + o) as f64 * host_fraction;
        if i == last || expected < MIN_EXPECTED {
            pooled = (pooled.0 + h, pooled.1 + o);
        } else {
            categories.push((h, o));
        }
    }
    if pooled.0 + pooled.1 > 0 {
        categories.push(pooled);
    }
    // A pooled category too small to stand alone joins the smallest other.
    if categories.len() > 1 {
        let (h, o) = *categories.last().expect("non-empty");
        if ((h + o) as f64 * host_fraction) < MIN_EXPECTED {
            categories.pop();
            let smallest = categories
                .iter_mut()
                .min_by_key(|(h, o)| h + o)
                .expect("non-empty");
            *smallest = (smallest.0 + h, smallest.1 + o);
        }
    }
    if categories.len() < 2 {
        return (0.0, 0, 0.0);
    }
    let mut statistic = 0.0;
    let mut distance = 0.0;
    for &(h, o) in &categories {
        let column = (h + o) as f64;
        for (observed, row) in [(h, n_host), (o, n_others)] {
            let expected = column * row as f64 / n;
            statistic += (observed as f64 - expected).powi(2) / expected;
        }
        distance += (h as f64 / n_host as f64 - o as f64 / n_others as f64).abs();
    }
    (statistic, categories.len() - 1, distance / 2.0)
}

/// The function (of any host) whose self share on `host` differs most
/// from its share on the other hosts pooled; `None` when either side has
/// no samples.
fn moved_most(host: &HostCounts, pooled: &HashMap<&str, u64>, total: u64) -> Option<FunctionMove> {
    let mine = host.total();
    let others_total = total - mine;
    if mine == 0 || others_total == 0 {
        return None;
    }
    let mut best: Option<(f64, FunctionMove)> = None;
    let mut names: Vec<&&str> = pooled.keys().collect();
    names.sort();
    for function in names {
        let own = host.functions.get(*function).copied().unwrap_or(0);
        let others = pooled[*function] - own;
        let host_share = own as f64 / mine as f64;
        let others_share = others as f64 / others_total as f64;
        let change = (host_share - others_share).abs();
        if best.as_ref().is_none_or(|(c, _)| change > *c) {
            best = Some((
                change,
                FunctionMove {
                    function: (*function).to_string(),
                    host_share,
                    others_share,
                },
            ));
        }
    }
    best.map(|(_, m)| m)
}

/// `P(X ≥ x)` for `X` chi-square with `df` degrees of freedom.
pub fn chi_square_sf(x: f64, df: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    upper_gamma_regularized(df / 2.0, x / 2.0)
}

/// `Q(a, x) = Γ(a, x) / Γ(a)`: a series below `a + 1`, a continued
/// fraction above (Numerical Recipes, 6.2).
fn upper_gamma_regularized(a: f64, x: f64) -> f64 {
    const EPS: f64 = 1e-14;
    const ITERATIONS: usize = 1000;
    let log_prefix = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..ITERATIONS {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * EPS {
                break;
            }
        }
        (1.0 - sum * log_prefix.exp()).clamp(0.0, 1.0)
    } else {
        let tiny = f64::MIN_POSITIVE / EPS;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..=ITERATIONS {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < EPS {
                break;
            }
        }
        (log_prefix.exp() * h).clamp(0.0, 1.0)
    }
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::rng::SplitMix64;

    /// `samples` draws from `shares` (function, weight).
    fn draw(rng: &mut SplitMix64, host: &str, samples: u64, shares: &[(&str, f64)]) -> HostCounts {
        let total: f64 = shares.iter().map(|(_, w)| w).sum();
        let mut functions: BTreeMap<String, u64> = BTreeMap::new();
        for _ in 0..samples {
            let mut u = rng.next_f64() * total;
            let mut chosen = shares[shares.len() - 1].0;
            for (function, weight) in shares {
                if u < *weight {
                    chosen = function;
                    break;
                }
                u -= weight;
            }
            *functions.entry(chosen.to_owned()).or_default() += 1;
        }
        HostCounts {
            host: host.to_owned(),
            samples,
            functions,
        }
    }

    const FLEET: &[(&str, f64)] = &[
        ("parse", 0.22),
        ("hash", 0.18),
        ("compress", 0.14),
        ("encode", 0.11),
        ("alloc", 0.09),
        ("memcpy", 0.08),
        ("syscall", 0.07),
        ("lock", 0.05),
        ("log", 0.03),
        ("gc", 0.02),
        ("tls", 0.005),
        ("dns", 0.005),
    ];

    #[test]
    fn the_p_value_matches_known_quantiles() {
        // The 95th and 99th percentiles of chi-square with 1, 5, 10 df.
        for (x, df, p) in [
            (3.841, 1.0, 0.05),
            (6.635, 1.0, 0.01),
            (11.070, 5.0, 0.05),
            (15.086, 5.0, 0.01),
            (18.307, 10.0, 0.05),
            (23.209, 10.0, 0.01),
        ] {
            let got = chi_square_sf(x, df);
            assert!((got - p).abs() < 2e-4, "sf({x}, {df}) = {got}, want {p}");
        }
        assert_eq!(chi_square_sf(0.0, 3.0), 1.0);
        assert!((chi_square_sf(2.0, 2.0) - (-1.0f64).exp()).abs() < 1e-12);
        assert!(chi_square_sf(500.0, 10.0) < 1e-90);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn a_fleet_of_like_hosts_flags_about_none() {
        let mut flagged = 0;
        let mut fleets = 0;
        for seed in 0..20u64 {
            let mut rng = SplitMix64::new(seed);
            let hosts: Vec<HostCounts> = (0..30)
                .map(|i| {
                    let samples = 2_000 + rng.below(8_000);
                    draw(&mut rng, &format!("host-{i:02}"), samples, FLEET)
                })
                .collect();
            let report = find_outliers(&hosts, OutlierOptions::default());
            assert_eq!(report.hosts.len(), 30);
            assert_eq!(report.functions.len(), 10);
            assert!((report.threshold - 0.01 / 30.0).abs() < 1e-15);
            // Ranked by statistic.
            assert!(report
                .hosts
                .windows(2)
                .all(|w| w[0].statistic >= w[1].statistic));
            for host in &report.hosts {
                assert!(host.df > 0 && host.df <= 10, "{host:?}");
                assert!(host.distance < 0.1, "{host:?}");
            }
            let n = report.outliers().count();
            flagged += n;
            fleets += usize::from(n > 0);
        }
        // Each fleet flags any host with probability about alpha (1%).
        assert!(
            fleets <= 1,
            "{fleets} of 20 like fleets flagged {flagged} hosts"
        );
    }

    #[test]
    fn a_host_with_another_hot_function_is_flagged_for_it() {
        let mut rng = SplitMix64::new(7);
        let mut odd: Vec<(&str, f64)> = FLEET.to_vec();
        odd.push(("regex_backtrack", 0.4));
        let mut hosts: Vec<HostCounts> = (0..20)
            .map(|i| draw(&mut rng, &format!("host-{i:02}"), 5_000, FLEET))
            .collect();
        hosts[13] = draw(&mut rng, "host-13", 5_000, &odd);
        let report = find_outliers(&hosts, OutlierOptions::default());
        let outliers: Vec<&HostDeviation> = report.outliers().collect();
        assert_eq!(outliers.len(), 1, "{:#?}", report.hosts);
        let odd = outliers[0];
        assert_eq!(odd.host, "host-13");
        assert_eq!(report.hosts[0].host, "host-13", "ranked first");
        assert!(odd.p_value < 1e-12, "{odd:?}");
        assert!(odd.distance > 0.2, "{odd:?}");
        let moved = odd.moved.as_ref().expect("a function moved");
        assert_eq!(moved.function, "regex_backtrack");
        assert!(
            moved.host_share > 0.25 && moved.others_share == 0.0,
            "{moved:?}"
        );
    }

    #[test]
    fn a_host_with_few_samples_is_not_flagged_for_noise() {
        for seed in 0..50u64 {
            let mut rng = SplitMix64::new(1_000 + seed);
            let mut hosts: Vec<HostCounts> = (0..10)
                .map(|i| draw(&mut rng, &format!("host-{i:02}"), 10_000, FLEET))
                .collect();
            for (i, samples) in [3u64, 12, 40].into_iter().enumerate() {
                hosts.push(draw(&mut rng, &format!("small-{i}"), samples, FLEET));
            }
            let report = find_outliers(&hosts, OutlierOptions::default());
            for host in report.hosts.iter().filter(|h| h.host.starts_with("small")) {
                assert!(!host.outlier, "seed {seed}: {host:?}");
            }
        }
    }

    #[test]
    fn hosts_without_samples_or_peers_are_not_tested() {
        let mut rng = SplitMix64::new(3);
        let one = vec![draw(&mut rng, "solo", 1_000, FLEET)];
        let report = find_outliers(&one, OutlierOptions::default());
        assert_eq!(report.hosts[0].df, 0);
        assert_eq!(report.hosts[0].p_value, 1.0);
        assert!(!report.hosts[0].outlier && report.hosts[0].moved.is_none());
        let two = vec![
            draw(&mut rng, "a", 1_000, FLEET),
            HostCounts {
                host: "idle".into(),
                ..Default::default()
            },
        ];
        let report = find_outliers(&two, OutlierOptions::default());
        assert!(report.hosts.iter().all(|h| h.df == 0 && !h.outlier));
        assert!(find_outliers(&[], OutlierOptions::default())
            .hosts
            .is_empty());
    }

    #[test]
    fn unattributed_samples_count_in_the_rest() {
        let mut rng = SplitMix64::new(11);
        let mut hosts: Vec<HostCounts> = (0..8)
            .map(|i| draw(&mut rng, &format!("h{i}"), 4_000, FLEET))
            .collect();
        // Half of this host's samples have no function (a lost stack).
        let mut lost = draw(&mut rng, "lost", 4_000, FLEET);
        lost.samples = 8_000;
        hosts.push(lost);
        let report = find_outliers(&hosts, OutlierOptions::default());
        assert_eq!(report.hosts[0].host, "lost");
        assert!(report.hosts[0].outlier);
        assert_eq!(report.hosts[0].samples, 8_000);
    }
}
