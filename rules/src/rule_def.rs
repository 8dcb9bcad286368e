//! A rule as admins and the seed pack write it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A rule as the pack file and the database hold it. `kind` selects the
/// rule kind and `spec` carries its kind-specific parameters, so new kinds
/// need no schema change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    pub id: String,
    pub title: String,
    pub explanation: String,
    pub fix: String,
    pub link: String,
    pub kind: String,
    pub spec: serde_json::Value,
    /// Flag at or above this percentage of samples.
    pub threshold_pct: f64,
    /// Per-service overrides of `threshold_pct`.
    #[serde(default)]
    pub service_thresholds: BTreeMap<String, f64>,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

impl RuleDef {
    /// The threshold that applies to a profile of `service`.
    pub fn threshold_for(&self, service: &str) -> f64 {
        self.service_thresholds
            .get(service)
            .copied()
            .unwrap_or(self.threshold_pct)
    }
}
