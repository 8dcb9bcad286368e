//! Frequency dynamic adjustment (Atys 5.2, Algorithm 1).
//!
//! After each window the shares of its hottest leaf functions are compared
//! with the previous window's by Jensen-Shannon divergence (base 2, so in
//! [0, 1]). Above θ the hot spots moved and the next window samples at f/λ;
//! once K windows in a row are at or below θ they hold still, and every
//! further stable window samples at f·λ; always within [min, max].
//!
//! The stable run is not restarted by lowering, as Algorithm 1 reads ("D ≤ θ
//! in more than K consecutive windows"): K windows of evidence buy the
//! right to keep descending while nothing moves. Restarting it after every
//! step would need K·log(f_min/f_max)/log(λ) stable windows (90 at the
//! defaults) to reach the floor, longer than most services hold still.
//!
//! The compared distribution is the union of both windows' top-N leaf
//! functions plus one "everything else" bucket, each as a share of all the
//! window's samples, so it sums to one and a function leaving the top N
//! still counts.
//!
//! Why θ = 0.05 bits by default: a hot spot swinging from 75/25 to 50/50
//! between two functions is a divergence of 0.049, the smallest change worth
//! more samples; and two windows of the *same* program differ by sampling
//! noise alone by about (k-1) / (4 n ln 2) bits for k effective functions
//! and n samples per window, which stays under 0.05 from about 70 samples
//! per window for ten functions. So FDA lowers the frequency while windows
//! keep enough samples to tell noise from change, and stops there (the
//! paper uses 0.05 for its VGG16 workload).

use std::collections::HashMap;

use odp_core::cost::AdjustReason;

/// Validated FDA parameters (see [`odp_core::cost::FdaSettings`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FdaParams {
    pub theta: f64,
    pub lambda: f64,
    pub stable_windows: u32,
    pub top_n: usize,
    pub min_hz: u32,
    pub max_hz: u32,
}

/// Jensen-Shannon divergence of two distributions over the same support,
/// in bits. Zero entries contribute nothing.
pub fn js_divergence(p: &[f64], q: &[f64]) -> f64 {
    fn kl_to_mid(a: f64, m: f64) -> f64 {
        if a > 0.0 {
            a * (a / m).log2()
        } else {
            0.0
        }
    }
    let d: f64 = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let m = (a + b) / 2.0;
            kl_to_mid(a, m) + kl_to_mid(b, m)
        })
        .sum();
    (d / 2.0).clamp(0.0, 1.0)
}

/// The `n` keys with the highest values, ties broken by name.
fn top(counts: &HashMap<String, u64>, n: usize) -> Vec<&str> {
    let mut ranked: Vec<(&str, u64)> = counts.iter().map(|(k, &v)| (k.as_str(), v)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.into_iter().take(n).map(|(k, _)| k).collect()
}

/// The divergence between two windows' leaf counts over their top `n`
/// functions and an "everything else" bucket. `None` when either window is
/// empty (nothing to compare).
pub fn hotspot_divergence(
    previous: &HashMap<String, u64>,
    current: &HashMap<String, u64>,
    n: usize,
) -> Option<f64> {
    let total_p: u64 = previous.values().sum();
    let total_q: u64 = current.values().sum();
    if total_p == 0 || total_q == 0 {
        return None;
    }
    let mut keys = top(previous, n);
    keys.extend(top(current, n));
    keys.sort_unstable();
    keys.dedup();
    let share = |counts: &HashMap<String, u64>, total: u64, key: &str| {
        counts.get(key).copied().unwrap_or(0) as f64 / total as f64
    };
    let mut p: Vec<f64> = keys.iter().map(|k| share(previous, total_p, k)).collect();
    let mut q: Vec<f64> = keys.iter().map(|k| share(current, total_q, k)).collect();
    p.push((1.0 - p.iter().sum::<f64>()).max(0.0));
    q.push((1.0 - q.iter().sum::<f64>()).max(0.0));
    Some(js_divergence(&p, &q))
}

/// What one window did to FDA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FdaStep {
    pub divergence: Option<f64>,
    /// Set when FDA moved the frequency.
    pub reason: Option<AdjustReason>,
}

/// The FDA state of one profile.
#[derive(Debug, Clone)]
pub struct Fda {
    params: FdaParams,
    hz: u32,
    stable: u32,
    previous: Option<HashMap<String, u64>>,
}

impl Fda {
    /// Starts at the requested frequency, brought within the bounds.
    pub fn new(params: FdaParams, requested_hz: u32) -> Self {
        let hz = requested_hz.clamp(params.min_hz, params.max_hz);
        Fda {
            params,
            hz,
            stable: 0,
            previous: None,
        }
    }

    pub fn frequency(&self) -> u32 {
        self.hz
    }

    /// The frequency actually applied (another limit may have lowered it).
    pub fn set_frequency(&mut self, hz: u32) {
        self.hz = hz;
    }

    /// Algorithm 1 for one closed window of leaf counts. An empty window
    /// (idle target, duty cycle off) is skipped: it says nothing of hot
    /// spots and neither counts as stable nor replaces the reference.
    pub fn observe(&mut self, leaves: &HashMap<String, u64>) -> FdaStep {
        if leaves.values().all(|&c| c == 0) {
            return FdaStep {
                divergence: None,
                reason: None,
            };
        }
        let divergence = self
            .previous
            .as_ref()
            .and_then(|prev| hotspot_divergence(prev, leaves, self.params.top_n));
        self.previous = Some(leaves.clone());
        let p = &self.params;
        let mut reason = None;
        match divergence {
            Some(d) if d > p.theta => {
                self.stable = 0;
                let up = (f64::from(self.hz) / p.lambda).ceil() as u32;
                let next = up.clamp(p.min_hz, p.max_hz);
                if next != self.hz {
                    self.hz = next;
                    reason = Some(AdjustReason::HotspotsChanged);
                }
            }
            Some(_) => {
                self.stable = self.stable.saturating_add(1);
                if self.stable >= p.stable_windows {
                    let down = (f64::from(self.hz) * p.lambda).floor() as u32;
                    let next = down.clamp(p.min_hz, p.max_hz);
                    if next != self.hz {
                        self.hz = next;
                        reason = Some(AdjustReason::HotspotsStable);
                    }
                }
            }
            None => {}
        }
        FdaStep { divergence, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
        pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
    }

    fn params() -> FdaParams {
        FdaParams {
            theta: 0.05,
            lambda: 0.8,
            stable_windows: 3,
            top_n: 10,
            min_hz: 19,
            max_hz: 999,
        }
    }

    #[test]
    fn js_divergence_matches_hand_computed_values() {
        assert_eq!(js_divergence(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
        // Disjoint supports: the maximum, one bit.
        assert!((js_divergence(&[1.0, 0.0], &[0.0, 1.0]) - 1.0).abs() < 1e-12);
        // 75/25 vs 50/50: M = (5/8, 3/8);
        // KL(P||M) = .75 log2(1.2) + .25 log2(2/3) = 0.197276 - 0.146241 = 0.051035
        // KL(Q||M) = .5 log2(0.8) + .5 log2(4/3)   = -0.160964 + 0.207519 = 0.046554
        // JS = (0.051035 + 0.046554) / 2           = 0.048795
        let d = js_divergence(&[0.75, 0.25], &[0.5, 0.5]);
        assert!((d - 0.048_795).abs() < 1e-5, "{d}");
        // (1, 0) vs (1/2, 1/2): M = (3/4, 1/4);
        // KL(P||M) = log2(4/3) = 0.415037, KL(Q||M) = .5 log2(2/3) + .5 log2(2) = 0.207519
        let d = js_divergence(&[1.0, 0.0], &[0.5, 0.5]);
        assert!((d - 0.311_278).abs() < 1e-5, "{d}");
        // Symmetric.
        assert_eq!(
            js_divergence(&[0.2, 0.8], &[0.6, 0.4]),
            js_divergence(&[0.6, 0.4], &[0.2, 0.8])
        );
    }

    #[test]
    fn hotspot_divergence_compares_top_functions_and_the_rest() {
        let a = counts(&[("f", 75), ("g", 25)]);
        let b = counts(&[("f", 50), ("g", 50)]);
        let d = hotspot_divergence(&a, &b, 10).unwrap();
        assert!((d - 0.048_795).abs() < 1e-5);
        // With top 1 the support is {f, rest}: same numbers here.
        let d1 = hotspot_divergence(&a, &b, 1).unwrap();
        assert!((d1 - 0.048_795).abs() < 1e-5);
        // Scale does not matter, only shares.
        let c = counts(&[("f", 750), ("g", 250)]);
        assert_eq!(hotspot_divergence(&a, &c, 10), Some(0.0));
        assert_eq!(hotspot_divergence(&a, &HashMap::new(), 10), None);
        // A new hot function is a large change.
        let phase = counts(&[("h", 90), ("f", 10)]);
        assert!(hotspot_divergence(&a, &phase, 10).unwrap() > 0.5);
    }

    #[test]
    fn raises_on_a_phase_change_and_lowers_each_window_after_k_stable_ones() {
        let mut fda = Fda::new(params(), 500);
        let steady = counts(&[("f", 300), ("g", 100)]);
        // The first window has nothing to compare with.
        assert_eq!(fda.observe(&steady).divergence, None);
        // Two stable windows: not yet K = 3.
        for _ in 0..2 {
            let step = fda.observe(&steady);
            assert_eq!(step.divergence, Some(0.0));
            assert_eq!(step.reason, None);
        }
        let step = fda.observe(&steady);
        assert_eq!(step.reason, Some(AdjustReason::HotspotsStable));
        assert_eq!(fda.frequency(), 400); // 500 · 0.8
                                          // Still stable: every further window lowers it again.
        fda.observe(&steady);
        assert_eq!(fda.frequency(), 320);
        fda.observe(&steady);
        assert_eq!(fda.frequency(), 256);
        // Phase change: up by 1/λ, and the stable run restarts.
        let step = fda.observe(&counts(&[("h", 380), ("f", 20)]));
        assert_eq!(step.reason, Some(AdjustReason::HotspotsChanged));
        assert_eq!(fda.frequency(), 320);
        // K = 3 stable windows again before the next step down.
        let phase_b = counts(&[("h", 380), ("f", 20)]);
        fda.observe(&phase_b);
        fda.observe(&phase_b);
        assert_eq!(fda.frequency(), 320);
        fda.observe(&phase_b);
        assert_eq!(fda.frequency(), 256);
        // Empty windows are skipped entirely.
        let idle = fda.observe(&HashMap::new());
        assert_eq!((idle.divergence, idle.reason), (None, None));
        assert_eq!(fda.frequency(), 256);
    }

    #[test]
    fn stays_within_bounds() {
        let mut fda = Fda::new(params(), 5000);
        assert_eq!(fda.frequency(), 999, "clamped to max at start");
        let a = counts(&[("f", 10)]);
        let b = counts(&[("g", 10)]);
        for i in 0..10 {
            fda.observe(if i % 2 == 0 { &a } else { &b });
            assert_eq!(fda.frequency(), 999);
        }
        let mut fda = Fda::new(params(), 30);
        for _ in 0..40 {
            fda.observe(&a);
            assert!(fda.frequency() >= 19);
        }
        assert_eq!(fda.frequency(), 19);
    }
}
