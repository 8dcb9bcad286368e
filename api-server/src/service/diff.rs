//! Differential flame graph of two profiles, aggregates or runs (or
//! strata of runs), each side normalized by its own total samples.
//!
//! Both sides are read within one heavy read's turn and node budget (see
//! [`crate::read_budget`]). The JSON tree is cut to `max_nodes` like a
//! flame graph: the heaviest nodes (by the larger of their two shares) are
//! kept, each with its path, and each kept node's other children become one
//! `other` child carrying their counts, so every total stays exact.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::{DiffJson, SideSummary};
use odp_core::filter::StackFilter;
use odp_core::folded::to_folded;
use odp_profile::View;
use odp_store::{Read, ReadResult, ReadScope};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::read_budget::decoded_nodes;
use crate::render::{differential_svg, sample_unit};
use crate::service::profiles;
use crate::service::runs::{self, reads};
use crate::service_error::ServiceError;
use crate::AppState;

/// JSON (per-frame shares and the biggest changes) or an SVG
/// differential flame graph.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DiffFormat {
    #[default]
    Json,
    Svg,
}

/// One side of the comparison.
#[derive(Debug, Clone)]
pub(crate) enum Side {
    Profile(Uuid),
    Aggregate {
        service: String,
        since: chrono::DateTime<chrono::Utc>,
        until: chrono::DateTime<chrono::Utc>,
    },
    /// A run's members, only those of the hosts in the stratum when it
    /// names labels.
    Run {
        id: Uuid,
        stratum: Vec<(String, String)>,
    },
}

/// A checked comparison: its two sides and how to answer.
#[derive(Debug)]
pub(crate) struct ValidDiff {
    pub(crate) baseline: Side,
    pub(crate) target: Side,
    pub(crate) filter: StackFilter,
    pub(crate) format: DiffFormat,
    pub(crate) limit: usize,
    pub(crate) max_nodes: usize,
    pub(crate) event: Option<odp_core::EventKind>,
}

struct LoadedSide {
    summary: SideSummary,
    result: ReadResult,
}

async fn load_side(
    state: &AppState,
    side: &Side,
    filter: &StackFilter,
    event: Option<odp_core::EventKind>,
) -> Result<LoadedSide, ServiceError> {
    if let Side::Run { id, stratum } = side {
        let row = runs::row(state, *id).await?;
        let read = Read {
            event,
            ..reads::run_read(*id, None, filter.clone())
        };
        let result = reads::read_stratum(state, &row, &read, stratum).await?;
        let label = match stratum.is_empty() {
            true => format!("run {id}"),
            false => {
                let pairs: Vec<String> = stratum.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("run {id} [{}]", pairs.join(","))
            }
        };
        return Ok(loaded(label, result));
    }
    let (label, read) = match side {
        Side::Run { .. } => unreachable!("read above"),
        Side::Profile(id) => {
            profiles::get(&state.profiles, *id).await?;
            (format!("profile {id}"), Read::profile(*id))
        }
        Side::Aggregate {
            service,
            since,
            until,
        } => (
            format!("{service} {} .. {}", since.to_rfc3339(), until.to_rfc3339()),
            Read {
                scope: ReadScope::Service {
                    service: service.clone(),
                    hosts: Vec::new(),
                },
                from: Some(*since),
                to: Some(*until),
                event,
                ..Read::profile(Uuid::nil())
            },
        ),
    };
    let read = Read {
        stacks: filter.clone(),
        ..read
    };
    let result = odp_store::read(&state.pool, &read).await?;
    Ok(loaded(label, result))
}

fn loaded(label: String, result: ReadResult) -> LoadedSide {
    LoadedSide {
        summary: SideSummary {
            label,
            event: result.event,
            units: sample_unit(result.event, result.period),
            samples: result.samples(),
            profiles: result.profiles,
        },
        result,
    }
}

/// Reads both sides of `valid` and compares them as its format asks.
pub(crate) async fn compare(state: &AppState, valid: ValidDiff) -> Result<Response, ServiceError> {
    let limits = state.read_limits.clone();
    let _turn = limits.heavy_read().await?;
    let baseline = load_side(state, &valid.baseline, &valid.filter, valid.event).await?;
    let baseline_nodes = decoded_nodes(&baseline.result);
    limits.check_nodes(baseline_nodes)?;
    let target = load_side(state, &valid.target, &valid.filter, valid.event).await?;
    limits.check_nodes(baseline_nodes + decoded_nodes(&target.result))?;
    if let (Some(b), Some(t)) = (&baseline.summary.event, &target.summary.event) {
        if b != t {
            return Err(ServiceError::Invalid(format!(
                "cannot compare {b} with {t}: their samples measure different things"
            )));
        }
    }
    match valid.format {
        DiffFormat::Json => {
            let (limit, max_nodes) = (valid.limit, valid.max_nodes);
            let (before, after) = (baseline.result, target.result);
            let (root, changes) = tokio::task::spawn_blocking(move || {
                let (before, after) = (views(&before), views(&after));
                (
                    odp_profile::diff::diff_tree(&before, &after, max_nodes),
                    odp_profile::diff::changes(&before, &after, limit),
                )
            })
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
            Ok(Json(DiffJson {
                baseline: baseline.summary,
                target: target.summary,
                root,
                changes,
            })
            .into_response())
        }
        DiffFormat::Svg => {
            for side in [&baseline, &target] {
                if side.summary.samples == 0 {
                    return Err(ServiceError::NotFound(format!(
                        "{} has no samples to compare",
                        side.summary.label
                    )));
                }
            }
            let title = format!(
                "{} vs {} ({})",
                baseline.summary.label,
                target.summary.label,
                target.summary.event.map_or("samples", |e| e.as_str())
            );
            let (before, after) = (baseline.result, target.result);
            let svg = tokio::task::spawn_blocking(move || {
                differential_svg(&drawn_folded(&before), &drawn_folded(&after), title)
            })
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))??;
            limits.check_output(svg.len())?;
            Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
        }
    }
}

/// Every view a side read: its hosts' profiles and its rollups.
fn views(result: &ReadResult) -> Vec<&View> {
    let hosts = result.hosts.iter().flat_map(|h| &h.views);
    hosts.chain(&result.rollups).collect()
}

/// The folded stacks of a side an SVG draws (inferno reads text):
/// subtrees narrower than inferno draws (under 1/12,000 of the side's
/// samples) fold into their parents, as for a profile's SVG.
fn drawn_folded(result: &ReadResult) -> String {
    let stacks = odp_profile::stacks::pruned_stacks(&result.merged(), result.samples() / 12_000);
    to_folded(&stacks)
}
