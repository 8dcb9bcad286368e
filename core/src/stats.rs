//! Per-function shares with error bounds.
//!
//! A sampled share is a binomial estimate: with `n` samples of which `k`
//! hit a function, the share is `p = k/n` with standard error
//! `sqrt(p (1 - p) / n)` (see the hardware-counter sampling accuracy paper
//! in the seeds). Reports show shares with that bound so users do not read
//! noise as signal. `odp-profile` computes the tables (`top`).

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    pub function: String,
    /// Samples where the function was the leaf.
    pub self_samples: u64,
    /// Samples where the function was anywhere on the stack (once per
    /// stack, however deep the recursion).
    pub total_samples: u64,
    pub self_share: f64,
    pub total_share: f64,
    /// One binomial standard error of `self_share`.
    pub self_share_stderr: f64,
}

pub fn binomial_stderr(hits: u64, samples: u64) -> f64 {
    if samples == 0 {
        return 0.0;
    }
    let p = hits as f64 / samples as f64;
    (p * (1.0 - p) / samples as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_of_a_share_is_binomial() {
        let expected = (0.6f64 * 0.4 / 100.0).sqrt();
        assert!((binomial_stderr(60, 100) - expected).abs() < 1e-12);
        // A share known exactly, and no samples at all: no error, not NaN.
        assert_eq!(binomial_stderr(100, 100), 0.0);
        assert_eq!(binomial_stderr(0, 0), 0.0);
    }
}
