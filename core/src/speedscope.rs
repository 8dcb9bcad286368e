//! speedscope's file format (<https://www.speedscope.app/file-format-schema.json>):
//! frames shared by index, and one sampled profile whose samples are lists
//! of frame indexes, root first, each with a weight.
//!
//! [`to_speedscope`] writes it (as exports do), with the strict types
//! below; [`parse()`] reads any speedscope file, sampled or evented, with
//! lenient types of its own (see `speedscope_parse.rs`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::WeightedStack;

#[path = "speedscope_parse.rs"]
mod parse;

pub use parse::{
    parse, Imported, SpeedscopeError, WeightUnit, MAX_FRAMES, MAX_PROFILES, MAX_STACK_FRAMES,
};

pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// speedscope's file format (`format=speedscope`), as speedscope.app
/// reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = SpeedscopeFile))]
pub struct File {
    #[serde(rename = "$schema")]
    pub schema: String,
    pub shared: Shared,
    pub profiles: Vec<SampledProfile>,
    pub name: String,
    #[serde(rename = "activeProfileIndex")]
    pub active_profile_index: usize,
    pub exporter: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = SpeedscopeShared))]
pub struct Shared {
    pub frames: Vec<FrameName>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = SpeedscopeFrameName))]
pub struct FrameName {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = SpeedscopeSampledProfile))]
pub struct SampledProfile {
    /// Always `sampled`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    /// `none` for plain counts, `nanoseconds` when weights are times.
    pub unit: String,
    #[serde(rename = "startValue")]
    pub start_value: u64,
    #[serde(rename = "endValue")]
    pub end_value: u64,
    /// Frame indexes, root first.
    pub samples: Vec<Vec<usize>>,
    pub weights: Vec<u64>,
}

/// Builds a speedscope file of `stacks` called `name`. With
/// `period_nanos` the weights are nanoseconds (count × period), otherwise
/// sample counts.
pub fn to_speedscope(stacks: &[WeightedStack], name: &str, period_nanos: Option<u64>) -> File {
    let mut frames: Vec<FrameName> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let (mut samples, mut weights) = (Vec::new(), Vec::new());
    let period = period_nanos.filter(|&p| p > 0);
    for stack in stacks {
        if stack.count == 0 || stack.frames.is_empty() {
            continue;
        }
        let sample = stack
            .frames
            .iter()
            .map(|frame| {
                *index.entry(frame.as_str()).or_insert_with(|| {
                    frames.push(FrameName {
                        name: frame.clone(),
                    });
                    frames.len() - 1
                })
            })
            .collect();
        samples.push(sample);
        weights.push(match period {
            Some(p) => stack.count.saturating_mul(p),
            None => stack.count,
        });
    }
    let total = weights.iter().fold(0u64, |a, &w| a.saturating_add(w));
    File {
        schema: SCHEMA.to_owned(),
        shared: Shared { frames },
        profiles: vec![SampledProfile {
            kind: "sampled".to_owned(),
            name: name.to_owned(),
            unit: if period.is_some() {
                "nanoseconds"
            } else {
                "none"
            }
            .to_owned(),
            start_value: 0,
            end_value: total,
            samples,
            weights,
        }],
        name: name.to_owned(),
        active_profile_index: 0,
        exporter: concat!("odp ", env!("CARGO_PKG_VERSION")).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn writes_the_schema_fields_speedscope_reads() {
        let file = to_speedscope(
            &[
                ws(&["main", "hot"], 6),
                ws(&["main", "warm"], 3),
                ws(&["x"], 0),
            ],
            "demo",
            None,
        );
        let json = serde_json::to_value(&file).unwrap();
        assert_eq!(json["$schema"], SCHEMA);
        assert_eq!(
            json["shared"]["frames"],
            serde_json::json!([{"name": "main"}, {"name": "hot"}, {"name": "warm"}])
        );
        let profile = &json["profiles"][0];
        assert_eq!(profile["type"], "sampled");
        assert_eq!(profile["unit"], "none");
        assert_eq!(profile["startValue"], 0);
        assert_eq!(profile["endValue"], 9);
        assert_eq!(profile["samples"], serde_json::json!([[0, 1], [0, 2]]));
        assert_eq!(profile["weights"], serde_json::json!([6, 3]));
        assert_eq!(json["activeProfileIndex"], 0);
        assert!(json["exporter"].as_str().unwrap().starts_with("odp "));
    }

    #[test]
    fn weights_are_nanoseconds_when_the_period_is_known() {
        let file = to_speedscope(&[ws(&["main"], 4)], "p", Some(10_000_000));
        let profile = &file.profiles[0];
        assert_eq!(profile.unit, "nanoseconds");
        assert_eq!(profile.weights, vec![40_000_000]);
        assert_eq!(profile.end_value, 40_000_000);
    }

    #[test]
    fn reads_back_the_stacks() {
        let stacks = vec![ws(&["a", "b", "c"], 2), ws(&["a", "c"], 5)];
        let file = to_speedscope(&stacks, "p", None);
        let back: File = serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
        let profile = &back.profiles[0];
        let rebuilt: Vec<WeightedStack> = profile
            .samples
            .iter()
            .zip(&profile.weights)
            .map(|(sample, &count)| WeightedStack {
                frames: sample
                    .iter()
                    .map(|&i| back.shared.frames[i].name.clone())
                    .collect(),
                count,
            })
            .collect();
        assert_eq!(rebuilt, stacks);
    }
}

#[cfg(test)]
#[path = "speedscope_tests.rs"]
mod parse_tests;
