//! Cost control of a profile, as pure logic the
//! [sampling thread](crate::sampling_thread) drives once per window:
//!
//! - [`fsp`]: function selective pruning (Atys 5.1), dropping the samples
//!   of the least busy threads before the snapshot leaves the agent;
//! - [`fda`]: frequency dynamic adjustment (Atys 5.2, Algorithm 1),
//!   sampling more when the hot functions change and less when they hold;
//! - [`duty`]: duty cycling (instant profiling), sampling `on` out of every
//!   `period`;
//! - [`budget`]: the agent's own CPU time held under a share of a core by
//!   capping the frequency.
//!
//! [`CostDefaults`] (from flags) and the command's
//! [`StartOptions`] resolve, once and
//! validated, into the [`CostSettings`] of one profile; [`Governor`] combines
//! FDA and the budget into the frequency of the next window.

pub mod budget;
pub mod control;
pub mod duty;
pub mod fda;
pub mod fsp;

use std::collections::HashMap;
use std::time::Duration;

use odp_core::cost::{
    check_share, AdjustReason, DutyCycle, FdaSettings, OptionsError, StartOptions,
};

pub use self::budget::Budget;
pub use self::fda::{Fda, FdaParams};

/// The agent-wide defaults, from flags.
#[derive(Debug, Clone, PartialEq)]
pub struct CostDefaults {
    /// FSP share; 1 keeps every thread.
    pub fsp_share: f64,
    /// FDA settings for profiles that do not say; `None` leaves FDA off.
    pub fda: Option<FdaSettings>,
    pub duty_cycle: Option<DutyCycle>,
    /// Share of one core; `None` means no budget.
    pub overhead_budget: Option<f64>,
}

impl Default for CostDefaults {
    fn default() -> Self {
        CostDefaults {
            fsp_share: 0.99,
            fda: None,
            duty_cycle: None,
            overhead_budget: Some(0.01),
        }
    }
}

/// The cost control of one profile, validated. The default is everything
/// off: every thread kept, the requested frequency throughout.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostSettings {
    /// `None` (or a share of 1) keeps every thread.
    pub fsp_share: Option<f64>,
    pub fda: Option<FdaParams>,
    pub duty_cycle: Option<DutyCycle>,
    pub overhead_budget: Option<f64>,
}

impl CostDefaults {
    /// Checks the flags themselves (against a nominal 99 Hz profile).
    pub fn validate(&self) -> Result<(), OptionsError> {
        self.resolve(99, &StartOptions::default()).map(|_| ())
    }

    /// The settings of a profile asking for `frequency_hz` with `options`,
    /// or why the options are unacceptable.
    pub fn resolve(
        &self,
        frequency_hz: u32,
        options: &StartOptions,
    ) -> Result<CostSettings, OptionsError> {
        let fsp = check_share(
            "fsp_share",
            options.fsp_share.unwrap_or(self.fsp_share),
            1.0,
        )?;
        let fda = match options.fda.as_ref().or(self.fda.as_ref()) {
            Some(settings) if settings.enabled => Some(FdaParams::resolve(settings, frequency_hz)?),
            _ => None,
        };
        let duty_cycle = options.duty_cycle.or(self.duty_cycle);
        if let Some(d) = duty_cycle {
            d.check()?;
        }
        let budget = match options.overhead_budget.or(self.overhead_budget) {
            Some(b) => Some(check_share("overhead_budget", b, 1.0)?),
            None => None,
        };
        Ok(CostSettings {
            fsp_share: (fsp < 1.0).then_some(fsp),
            fda,
            duty_cycle: duty_cycle.filter(|d| d.on_ms < d.period_ms),
            overhead_budget: budget,
        })
    }
}

impl FdaParams {
    fn resolve(s: &FdaSettings, frequency_hz: u32) -> Result<Self, OptionsError> {
        let (min_hz, max_hz) = s.bounds(frequency_hz)?;
        Ok(FdaParams {
            theta: s.theta,
            lambda: s.lambda,
            stable_windows: s.stable_windows,
            top_n: s.top_n as usize,
            min_hz,
            max_hz,
        })
    }
}

/// What the governor decided after one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub divergence: Option<f64>,
    pub cpu_share: Option<f64>,
    /// The new frequency and why, when it changes.
    pub change: Option<(u32, AdjustReason)>,
}

/// The frequency of a profile, window after window: FDA's choice (or the
/// requested frequency) under the overhead budget's cap.
#[derive(Debug, Clone)]
pub struct Governor {
    fda: Option<Fda>,
    budget: Option<Budget>,
    hz: u32,
    requested: u32,
}

impl Governor {
    pub fn new(requested_hz: u32, settings: &CostSettings) -> Self {
        let fda = settings.fda.clone().map(|p| Fda::new(p, requested_hz));
        let hz = fda.as_ref().map_or(requested_hz, Fda::frequency);
        let floor = settings.fda.as_ref().map_or(1, |p| p.min_hz);
        let budget = settings
            .overhead_budget
            .map(|share| Budget::new(share, floor, requested_hz));
        Governor {
            fda,
            budget,
            hz,
            requested: requested_hz,
        }
    }

    /// The frequency in force.
    pub fn frequency(&self) -> u32 {
        self.hz
    }

    /// Takes one closed window: its samples per leaf function and the CPU
    /// the profile spent over `wall`.
    pub fn window(
        &mut self,
        leaves: &HashMap<String, u64>,
        cpu: Option<(Duration, Duration)>,
    ) -> Step {
        let (divergence, wanted, fda_reason) = match self.fda.as_mut() {
            Some(fda) => {
                let step = fda.observe(leaves);
                (step.divergence, fda.frequency(), step.reason)
            }
            None => (None, self.requested, None),
        };
        let mut cpu_share = None;
        let cap = match (self.budget.as_mut(), cpu) {
            (Some(budget), Some((used, wall))) => {
                cpu_share = budget.observe(used, wall, self.hz);
                budget.cap()
            }
            (Some(budget), None) => budget.cap(),
            (None, _) => u32::MAX,
        };
        let next = wanted.min(cap);
        let change = (next != self.hz).then(|| {
            let reason = match fda_reason {
                Some(reason) if next == wanted => reason,
                _ => AdjustReason::OverheadBudget,
            };
            (next, reason)
        });
        self.hz = next;
        if let Some(fda) = self.fda.as_mut() {
            fda.set_frequency(next);
        }
        Step {
            divergence,
            cpu_share,
            change,
        }
    }
}

#[cfg(test)]
mod tests;
