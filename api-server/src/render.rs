//! Stacks as the file formats flame graph tools read: JSON (the caller's
//! own shape), folded text, SVG, pprof and speedscope. Every endpoint that
//! answers with stacks (one profile, and aggregates of several) renders
//! them here, and every SVG (differential ones too) is drawn here.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use odp_api_types::SampleUnit;
use odp_core::pprof::{self, PprofMeta};
use odp_core::{folded, speedscope, EventKind, WeightedStack};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::read_budget::ReadLimits;
use crate::service_error::ServiceError;

/// The response's format: a JSON document of the endpoint's own shape,
/// folded stacks, an SVG flame graph, gzip pprof or speedscope JSON.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    #[default]
    Json,
    Folded,
    Svg,
    /// gzip-compressed protocol buffers, as `go tool pprof` reads them.
    Pprof,
    /// speedscope's JSON file format.
    Speedscope,
}

/// Which way up an SVG flame graph is drawn: roots at the bottom (a flame
/// graph) or at the top (an icicle graph), as the web UI shows it.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Orientation {
    #[default]
    Flame,
    Icicle,
}

impl Orientation {
    pub(crate) fn parse(text: &str) -> Result<Orientation, ServiceError> {
        match text {
            "flame" => Ok(Orientation::Flame),
            "icicle" => Ok(Orientation::Icicle),
            other => Err(ServiceError::Invalid(format!(
                "unknown orientation {other:?}; expected flame or icicle"
            ))),
        }
    }
}

/// What is rendered: stacks and what they measure.
#[derive(Debug, Clone)]
pub(crate) struct Rendering {
    /// Shown as the SVG's title and the speedscope profile's name.
    pub title: String,
    /// File name of downloads, without extension (`profile-<id>`).
    pub file_stem: String,
    /// What the counts measure (`cpu-clock`, ...), when known.
    pub event: Option<EventKind>,
    /// Nanoseconds one sample stands for, for time-based events.
    pub period_nanos: Option<i64>,
    pub duration_nanos: Option<i64>,
    /// When sampling started, Unix nanoseconds.
    pub time_nanos: Option<i64>,
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
    /// SVG only: which way up.
    pub orientation: Orientation,
}

/// Renders `data` as `format`; [`Format::Json`] is `json`'s response, as
/// each endpoint has its own JSON shape (bounded by its node budget). The
/// other formats are refused (422) past `limits`' output bytes.
pub(crate) async fn render(
    format: Format,
    data: Rendering,
    limits: &ReadLimits,
    json: impl FnOnce(Rendering) -> Response,
) -> Result<Response, ServiceError> {
    match format {
        Format::Json => Ok(json(data)),
        Format::Folded => {
            let text = folded::to_folded(&data.stacks);
            limits.check_output(text.len())?;
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
        }
        Format::Svg => {
            if data.samples == 0 {
                return Err(ServiceError::NotFound(format!(
                    "{} has no samples yet",
                    data.title
                )));
            }
            let text = folded::to_folded(&data.stacks);
            // The SVG draws at least every line of its input.
            limits.check_output(text.len())?;
            let title = format!(
                "{} ({})",
                data.title,
                data.event.map_or("samples", EventKind::as_str)
            );
            let orientation = data.orientation;
            let svg = blocking(move || render_svg(&text, title, orientation)).await??;
            limits.check_output(svg.len())?;
            Ok(([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response())
        }
        Format::Pprof => {
            let disposition = format!("attachment; filename=\"{}.pb.gz\"", data.file_stem);
            let bytes = blocking(move || {
                let meta = PprofMeta {
                    event: data.event,
                    period_nanos: data.period_nanos,
                    duration_nanos: data.duration_nanos,
                    time_nanos: data.time_nanos,
                };
                pprof::encode(&data.stacks, &meta)
            })
            .await?;
            limits.check_output(bytes.len())?;
            Ok((
                [
                    (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
                    (header::CONTENT_DISPOSITION, disposition),
                ],
                bytes,
            )
                .into_response())
        }
        Format::Speedscope => {
            let period = data.period_nanos.and_then(|p| u64::try_from(p).ok());
            let file = speedscope::to_speedscope(&data.stacks, &data.title, period);
            let bytes =
                serde_json::to_vec(&file).map_err(|e| ServiceError::Internal(e.to_string()))?;
            limits.check_output(bytes.len())?;
            Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
        }
    }
}

/// Runs CPU-heavy rendering off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ServiceError::Internal(e.to_string()))
}

fn render_svg(
    folded_text: &str,
    title: String,
    orientation: Orientation,
) -> Result<Vec<u8>, ServiceError> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    if orientation == Orientation::Icicle {
        options.direction = inferno::flamegraph::Direction::Inverted;
    }
    options.count_name = "samples".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded_text.lines(), &mut svg)
        .map_err(|e| ServiceError::Internal(format!("flame graph rendering failed: {e}")))?;
    Ok(svg)
}

/// The differential SVG of two sides' folded stacks: inferno's
/// `differential` turns them into `stack baseline target` lines, normalized
/// so both sides have the same total, and `flamegraph` draws them with the
/// target's widths, colored by growth (red) or shrinkage (blue).
pub(crate) fn differential_svg(
    baseline_folded: &str,
    target_folded: &str,
    title: String,
) -> Result<Vec<u8>, ServiceError> {
    let failed =
        |e: &dyn std::fmt::Display| ServiceError::Internal(format!("diff rendering failed: {e}"));
    let options = inferno::differential::Options {
        normalize: true,
        strip_hex: false,
    };
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        options,
        baseline_folded.as_bytes(),
        target_folded.as_bytes(),
        &mut lines,
    )
    .map_err(|e| failed(&e))?;
    let text = String::from_utf8(lines).map_err(|e| failed(&e))?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    options.count_name = "samples".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg)
        .map_err(|e| failed(&e))?;
    Ok(svg)
}

/// What one sample of `event` stands for, each standing for `period` of
/// its units: views multiply counts by it to show time (or bytes), so that
/// a wall or off-CPU profile reads in seconds, not samples.
pub(crate) fn sample_unit(event: Option<EventKind>, period: Option<f64>) -> SampleUnit {
    SampleUnit {
        unit: event.map_or("samples", EventKind::unit).to_owned(),
        period: period.filter(|p| *p > 0.0 && event.is_some()),
    }
}

/// Nanoseconds per sample, for time-based events.
pub(crate) fn nanos_per_sample(units: &SampleUnit) -> Option<i64> {
    let timed = units.unit == "nanoseconds";
    units.period.filter(|_| timed).map(|p| p.round() as i64)
}

/// The period of a profile sampled at `frequency_hz` of `event`, when the
/// event is time-based (its samples stand for a span of time): for the
/// profiles stored before reads reported their windows' own period.
pub(crate) fn period_nanos(event: Option<EventKind>, frequency_hz: i64) -> Option<i64> {
    let timed = event.is_some_and(EventKind::is_timed);
    (timed && frequency_hz > 0).then(|| 1_000_000_000 / frequency_hz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::to_bytes;

    fn data() -> Rendering {
        Rendering {
            title: "profile x".into(),
            file_stem: "profile-x".into(),
            event: Some(EventKind::CpuClock),
            period_nanos: Some(10_000_000),
            duration_nanos: Some(1_000_000_000),
            time_nanos: None,
            samples: 9,
            stacks: vec![
                WeightedStack {
                    frames: vec!["main".into(), "hot".into()],
                    count: 6,
                },
                WeightedStack {
                    frames: vec!["main".into(), "warm".into()],
                    count: 3,
                },
            ],
            orientation: Orientation::Flame,
        }
    }

    async fn body(response: Response) -> Vec<u8> {
        to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    #[test]
    fn renders_an_svg_with_the_functions() {
        let svg = render_svg("main;hot 6\nmain;warm 3\n", "t".into(), Orientation::Flame).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("hot") && svg.contains("warm"));
    }

    #[test]
    fn renders_a_differential_svg() {
        let baseline = "main;hot 60\nmain;warm 40\n";
        // Twice the samples; hot went from 60% to 30%, cool is new.
        let target = "main;hot 60\nmain;warm 80\nmain;cool 60\n";
        let svg = differential_svg(baseline, target, "diff".into()).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"));
        for name in ["hot", "warm", "cool"] {
            assert!(svg.contains(name), "{name}");
        }
        // Differential colors: hot shrank (blue), cool grew (red).
        assert!(svg.contains("rgb(") && svg.contains("diff"));
    }

    /// The height at which the SVG draws `function`'s frame.
    fn frame_y(svg: &str, function: &str) -> f64 {
        let at = svg
            .find(&format!("<title>{function} ("))
            .unwrap_or_else(|| panic!("no {function} frame"));
        let y = &svg[at..][svg[at..].find(" y=\"").expect("a y") + 4..];
        y[..y.find('"').expect("a quote")]
            .parse()
            .expect("a number")
    }

    #[test]
    fn an_icicle_graph_draws_the_root_on_top() {
        let folded = "main;hot 6\nmain;warm 3\n";
        let flame =
            String::from_utf8(render_svg(folded, "t".into(), Orientation::Flame).unwrap()).unwrap();
        let icicle =
            String::from_utf8(render_svg(folded, "t".into(), Orientation::Icicle).unwrap())
                .unwrap();
        assert!(
            frame_y(&flame, "main") > frame_y(&flame, "hot"),
            "roots below"
        );
        assert!(
            frame_y(&icicle, "main") < frame_y(&icicle, "hot"),
            "roots on top"
        );
        assert!(matches!(
            Orientation::parse("sideways"),
            Err(ServiceError::Invalid(_))
        ));
    }

    #[tokio::test]
    async fn pprof_is_a_download_that_decodes_to_the_stacks() {
        let response = render(
            Format::Pprof,
            data(),
            &ReadLimits::default(),
            |_| unreachable!(),
        )
        .await
        .unwrap();
        assert_eq!(
            response.headers()[header::CONTENT_DISPOSITION],
            "attachment; filename=\"profile-x.pb.gz\""
        );
        let decoded = pprof::decode(&body(response).await, None).unwrap();
        assert_eq!(decoded.sample_type, "cpu-clock");
        assert_eq!(decoded.period_nanos, Some(10_000_000));
        assert_eq!(decoded.stacks, data().stacks);
    }

    #[tokio::test]
    async fn speedscope_and_json_and_empty_svg() {
        let response = render(
            Format::Speedscope,
            data(),
            &ReadLimits::default(),
            |_| unreachable!(),
        )
        .await
        .unwrap();
        let file: serde_json::Value = serde_json::from_slice(&body(response).await).unwrap();
        assert_eq!(
            file["profiles"][0]["weights"],
            serde_json::json!([60_000_000, 30_000_000])
        );
        let response = render(Format::Json, data(), &ReadLimits::default(), |d| {
            d.title.into_response()
        })
        .await
        .unwrap();
        assert_eq!(body(response).await, b"profile x");
        let empty = Rendering {
            samples: 0,
            stacks: vec![],
            ..data()
        };
        assert!(matches!(
            render(
                Format::Svg,
                empty,
                &ReadLimits::default(),
                |_| unreachable!()
            )
            .await,
            Err(ServiceError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn outputs_past_the_byte_budget_are_refused() {
        let tight = ReadLimits::new(crate::read_budget::LimitOptions {
            read_max_output_bytes: 10,
            ..Default::default()
        });
        for format in [
            Format::Folded,
            Format::Svg,
            Format::Pprof,
            Format::Speedscope,
        ] {
            match render(format, data(), &tight, |_| unreachable!()).await {
                Err(ServiceError::Invalid(m)) => assert!(m.contains("narrow"), "{m}"),
                other => panic!(
                    "{format:?}: expected 422, got {:?}",
                    other.map(|r| r.status())
                ),
            }
        }
    }

    #[test]
    fn sample_units_follow_the_event() {
        let wall = sample_unit(Some(EventKind::Wall), Some(10_101_010.1));
        assert_eq!(wall.unit, "nanoseconds");
        assert_eq!(nanos_per_sample(&wall), Some(10_101_010));
        let bytes = sample_unit(Some(EventKind::AllocBytes), Some(524_288.0));
        assert_eq!(
            (bytes.unit.as_str(), nanos_per_sample(&bytes)),
            ("bytes", None)
        );
        let unknown = sample_unit(None, Some(5.0));
        assert_eq!((unknown.unit.as_str(), unknown.period), ("samples", None));
        assert_eq!(
            nanos_per_sample(&sample_unit(Some(EventKind::OffCpu), None)),
            None
        );
    }

    #[test]
    fn only_time_based_events_have_a_period() {
        assert_eq!(
            period_nanos(Some(EventKind::CpuClock), 100),
            Some(10_000_000)
        );
        assert_eq!(period_nanos(Some(EventKind::Cycles), 100), None);
        assert_eq!(period_nanos(Some(EventKind::Wall), 0), None);
        for timed in [EventKind::Wall, EventKind::OffCpu, EventKind::Lock] {
            assert_eq!(period_nanos(Some(timed), 1000), Some(1_000_000), "{timed}");
        }
        assert_eq!(period_nanos(Some(EventKind::AllocBytes), 100), None);
        assert_eq!(period_nanos(None, 99), None);
    }
}
