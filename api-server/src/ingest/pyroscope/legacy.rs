//! Pyroscope's original ingest API:
//! `POST /ingest?name=APP.SUFFIX{k=v,…}&from=&until=&format=&sampleRate=&spyName=&units=&aggregationType=`
//! with folded stacks, `lines` (one stack per line), pprof, raw or as the
//! multipart form (`profile`, `previous_profile`, `sample_type_config`)
//! the Go SDK sends, or JFR, raw or as the Java agent's form (`jfr`,
//! `labels`).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::multipart::MultipartError;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use odp_api_types::IngestedProfiles;
use odp_core::model::EventKind;
use odp_core::{folded, pprof, WeightedStack};
use odp_store::Labels;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::auth::Ingester;
use crate::error::ApiError;
use crate::extract::AppQuery;
use crate::formats::rich::parse_jfr_kinds;
use crate::formats::{Framed, Parsed};
use crate::ingest::openapi::{BinaryBody, IngestForm};
use crate::ingest::pprof_events::{self, known_types};
use crate::ingest::{body, digest_hex, store, Incoming};
use crate::openapi::{CommonErrors, ErrorBody};
use crate::AppState;

/// The query of `/ingest`, as Pyroscope's clients send it.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct IngestQuery {
    /// `APP` or `APP{key=value,…}`: the service, with an optional
    /// profile-type suffix (`checkout.cpu`, `.wall`, `.alloc_space`,
    /// `.inuse_space`, `.lock_duration`…), and the profile's labels.
    #[param(min_length = 1, example = "checkout.cpu{region=eu-west}")]
    name: String,
    /// Start of the samples' time range, Unix seconds; now when absent.
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, maximum = 253_402_300_798_i64)]
    from: Option<String>,
    /// End of the samples' time range, Unix seconds, not before `from`;
    /// now when absent.
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 0, maximum = 253_402_300_798_i64)]
    until: Option<String>,
    /// The body's format: `folded` (`frame;frame;frame count` lines, the
    /// default), `lines` (one `frame;frame;frame` line per sample), or
    /// `pprof` or `jfr`, raw or in the multipart form.
    #[serde(default)]
    #[param(value_type = Option<IngestFormat>, inline)]
    format: Option<String>,
    /// Folded and line stacks: the sampling rate in Hz, which gives their
    /// period; 100 when absent.
    #[serde(default, rename = "sampleRate")]
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1_000_000)]
    sample_rate: Option<String>,
    /// The profiler (`pyspy`, `rbspy`, `gospy`…), kept as the label `spy`.
    #[serde(default, rename = "spyName")]
    spy_name: Option<String>,
    /// Folded and line stacks without a suffix in `name`: what they
    /// count, `samples` (CPU, the default), `bytes` (allocated, or in use
    /// with `aggregationType=average`) or `lock_nanoseconds`.
    #[serde(default)]
    units: Option<String>,
    /// `sum` (the default) or `average`, which makes `bytes` in use.
    #[serde(default, rename = "aggregationType")]
    aggregation_type: Option<String>,
}

/// The formats of `/ingest`'s body, for the document: the handler reads
/// `format` as text, so that another answers 422 naming these.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum IngestFormat {
    Folded,
    Lines,
    Pprof,
    Jfr,
}

/// Take a profile in Pyroscope's ingest API.
///
/// What Pyroscope's older SDKs (`pyroscope-io` 0.8), its Java agent and
/// Grafana Alloy's legacy components send: a profile of a service, stored
/// once however often it is sent, as one ODP profile per event it
/// measures, labelled `source=pyroscope`.
#[utoipa::path(
    post,
    path = "/ingest",
    operation_id = "pyroscope_ingest",
    tag = "ingest",
    params(IngestQuery),
    request_body(
        description = "At most 32 MiB (128 MiB once a gzip `Content-Encoding` is undone): \
                       folded or line stacks (UTF-8 text), a pprof profile or a JFR \
                       recording, raw or in a multipart form",
        content(
            (BinaryBody = "text/plain"),
            (BinaryBody = "application/octet-stream"),
            (IngestForm = "multipart/form-data"),
        ),
    ),
    responses(
        (status = 200, description = "Stored, or stored before (a retry)", body = IngestedProfiles),
        (status = 413, description = "The body exceeds 32 MiB, or inflates past 128 MiB (a gzip bomb)", body = ErrorBody),
        CommonErrors,
    ),
)]
pub(super) async fn ingest(
    State(state): State<AppState>,
    by: Ingester,
    AppQuery(query): AppQuery<IngestQuery>,
    request: Request,
) -> Result<Response, ApiError> {
    let upload = Upload::read(request, &state).await?;
    let profiles = tokio::task::spawn_blocking(move || incoming(&query, upload))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))??;
    let mut ids = Vec::new();
    for profile in profiles {
        if let Some(stored) = store(&state, &by, profile).await? {
            ids.push(stored.row().id);
        }
    }
    Ok((StatusCode::OK, Json(IngestedProfiles { profiles: ids })).into_response())
}

/// The profile file of a request: its body, or the `profile` (pprof) or
/// `jfr` part of a multipart form.
struct Upload {
    file: Bytes,
    /// Whether the file came in a multipart form.
    multipart: bool,
}

impl Upload {
    async fn read(request: Request, state: &AppState) -> Result<Upload, ApiError> {
        let multipart = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("multipart/form-data"));
        if !multipart {
            let headers: HeaderMap = request.headers().clone();
            let file = body::received(Bytes::from_request(request, state).await)?;
            return Ok(Upload {
                file: body::decoded(&headers, file)?,
                multipart: false,
            });
        }
        let mut form = Multipart::from_request(request, state)
            .await
            .map_err(|e| ApiError::BadRequest(format!("malformed multipart form: {e}")))?;
        let mut file = None;
        while let Some(field) = form.next_field().await.map_err(form_error)? {
            // `previous_profile` (the cumulative profile a delta was taken
            // from) and `sample_type_config` are not needed: the SDKs
            // send deltas, and the sample types name their units. The JFR
            // form's `labels` are per-context labels of its samples, which
            // ODP's stacks do not carry.
            if matches!(field.name(), Some("profile" | "jfr")) {
                file = Some(field.bytes().await.map_err(form_error)?);
            }
        }
        let file = file.ok_or_else(|| {
            ApiError::BadRequest("the multipart form has no `profile` or `jfr` part".into())
        })?;
        Ok(Upload {
            file,
            multipart: true,
        })
    }
}

/// Why a multipart form could not be read: too large (the body limit cut
/// it off) or malformed.
fn form_error(e: MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(format!(
            "the request body exceeds {} bytes",
            body::MAX_INGEST_BYTES
        ))
    } else {
        ApiError::BadRequest(format!("malformed multipart form: {e}"))
    }
}

/// The profiles of one `/ingest` request.
fn incoming(query: &IngestQuery, upload: Upload) -> Result<Vec<Incoming>, ApiError> {
    let name = AppName::parse(&query.name)?;
    let (service, suffix_event) = split_suffix(&name.app)?;
    let span = TimeSpan::of(query)?;
    let format = query.format.as_deref().unwrap_or("folded");
    if upload.multipart && !matches!(format, "pprof" | "jfr") {
        return Err(ApiError::BadRequest(format!(
            "a multipart form carries pprof or jfr, not format {format:?}"
        )));
    }
    let mut labels = name.labels;
    if let Some(spy) = &query.spy_name {
        labels.insert("spy".to_owned(), spy.clone());
    }
    let identity = format!(
        "ingest/{}",
        digest_hex(&[
            query.name.as_bytes(),
            format.as_bytes(),
            &span.from_secs.to_le_bytes(),
            &span.until_secs.to_le_bytes(),
            &upload.file,
        ])
    );
    let parsed: Vec<Framed> = match format {
        "folded" | "lines" => {
            let event = match suffix_event {
                Some(event) => event,
                None => event_of_units(query)?,
            };
            let stacks = if format == "folded" {
                folded_stacks(&upload.file)?
            } else {
                line_stacks(&upload.file)?
            };
            vec![stacks_parsed(stacks, event, query, &span)?.into()]
        }
        "pprof" => {
            let (parsed, tags) = pprof_parsed(&upload.file, suffix_event, &span)?;
            for (key, value) in tags {
                labels.entry(key).or_insert(value);
            }
            parsed.into_iter().map(Framed::from).collect()
        }
        "jfr" => jfr_parsed(&upload.file, suffix_event, &span)?,
        other => {
            return Err(ApiError::Unprocessable(format!(
                "format {other:?} is not supported: folded, lines, pprof or jfr"
            )))
        }
    };
    Ok(parsed
        .into_iter()
        .map(|parsed| Incoming {
            service: service.clone(),
            host: labels
                .get("hostname")
                .or_else(|| labels.get("host.name"))
                .cloned(),
            labels: labels.clone(),
            source: "pyroscope",
            parsed,
            identity: identity.clone(),
        })
        .collect())
}

/// `APP{key=value,…}`: the application (with a profile-type suffix) and
/// its labels.
#[derive(Debug, PartialEq)]
struct AppName {
    app: String,
    labels: Labels,
}

impl AppName {
    fn parse(name: &str) -> Result<AppName, ApiError> {
        let bad = |why: &str| {
            ApiError::BadRequest(format!(
                "`name` {name:?}: {why}; expected APP or APP{{key=value,…}}"
            ))
        };
        let (app, rest) = match name.find('{') {
            Some(at) => (&name[..at], Some(&name[at + 1..])),
            None => (name, None),
        };
        let mut labels = Labels::new();
        if let Some(rest) = rest {
            let inner = rest
                .strip_suffix('}')
                .ok_or_else(|| bad("no closing `}`"))?;
            for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
                let (key, value) = pair
                    .split_once('=')
                    .ok_or_else(|| bad("a label without `=`"))?;
                labels.insert(key.trim().to_owned(), value.trim().to_owned());
            }
        }
        let app = app.trim();
        if app.is_empty() {
            return Err(bad("no application name"));
        }
        Ok(AppName {
            app: app.to_owned(),
            labels,
        })
    }
}

/// Application name suffixes naming a profile type, and the ODP event of
/// each (`None`: a count of objects or events ODP does not measure).
const SUFFIXES: &[(&str, Option<EventKind>)] = &[
    (".cpu", Some(EventKind::CpuClock)),
    (".itimer", Some(EventKind::CpuClock)),
    (".wall", Some(EventKind::Wall)),
    (".alloc_space", Some(EventKind::AllocBytes)),
    (".alloc_in_new_tlab_bytes", Some(EventKind::AllocBytes)),
    (".inuse_space", Some(EventKind::HeapBytes)),
    (".lock_duration", Some(EventKind::Lock)),
    (".mutex_duration", Some(EventKind::Lock)),
    (".block_duration", Some(EventKind::Lock)),
    (".alloc_objects", None),
    (".alloc_in_new_tlab_objects", None),
    (".inuse_objects", None),
    (".goroutines", None),
    (".lock_count", None),
    (".mutex_count", None),
    (".block_count", None),
];

/// The service an application name is of, and the event its suffix names.
fn split_suffix(app: &str) -> Result<(String, Option<EventKind>), ApiError> {
    for &(suffix, event) in SUFFIXES {
        if let Some(service) = app.strip_suffix(suffix) {
            return match event {
                Some(event) => Ok((service.to_owned(), Some(event))),
                None => Err(ApiError::Unprocessable(format!(
                    "{app:?}: `{}` profiles count objects or events, which ODP does not \
                     measure; it takes cpu, wall, alloc_space, inuse_space and lock durations",
                    &suffix[1..]
                ))),
            };
        }
    }
    Ok((app.to_owned(), None))
}

/// The event of folded or line stacks whose name has no suffix.
fn event_of_units(query: &IngestQuery) -> Result<EventKind, ApiError> {
    let average = query.aggregation_type.as_deref() == Some("average");
    match query.units.as_deref().unwrap_or("samples") {
        "samples" | "" => Ok(EventKind::CpuClock),
        "bytes" if average => Ok(EventKind::HeapBytes),
        "bytes" => Ok(EventKind::AllocBytes),
        "lock_nanoseconds" => Ok(EventKind::Lock),
        other => Err(ApiError::Unprocessable(format!(
            "units {other:?}: ODP takes samples, bytes or lock_nanoseconds"
        ))),
    }
}

/// `from` and `until`, in Unix seconds.
struct TimeSpan {
    from_secs: i64,
    until_secs: i64,
}

impl TimeSpan {
    fn of(query: &IngestQuery) -> Result<TimeSpan, ApiError> {
        let now = chrono::Utc::now().timestamp();
        let seconds = |what: &str, value: &Option<String>| match value {
            None => Ok(now),
            Some(text) => text
                .parse::<i64>()
                .ok()
                .filter(|&s| (0..253_402_300_799).contains(&s))
                .ok_or_else(|| {
                    ApiError::BadRequest(format!("`{what}` {text:?} is not a time in Unix seconds"))
                }),
        };
        let from_secs = seconds("from", &query.from)?;
        let until_secs = seconds("until", &query.until)?;
        if until_secs < from_secs {
            return Err(ApiError::BadRequest(format!(
                "`until` ({until_secs}) is before `from` ({from_secs})"
            )));
        }
        Ok(TimeSpan {
            from_secs,
            until_secs,
        })
    }
}

fn text(file: &[u8]) -> Result<&str, ApiError> {
    std::str::from_utf8(file)
        .map_err(|e| ApiError::BadRequest(format!("the stacks must be UTF-8 text: {e}")))
}

fn folded_stacks(file: &[u8]) -> Result<Vec<WeightedStack>, ApiError> {
    folded::parse_folded(text(file)?)
        .map_err(|e| ApiError::BadRequest(format!("not folded stacks: {e}")))
}

/// `lines`: each line one sample of the stack it spells, root first.
fn line_stacks(file: &[u8]) -> Result<Vec<WeightedStack>, ApiError> {
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for line in text(file)?.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *counts.entry(line).or_insert(0) += 1;
    }
    Ok(counts
        .into_iter()
        .map(|(line, count)| WeightedStack {
            frames: line.split(';').map(str::to_owned).collect(),
            count,
        })
        .collect())
}

fn stacks_parsed(
    stacks: Vec<WeightedStack>,
    event: EventKind,
    query: &IngestQuery,
    span: &TimeSpan,
) -> Result<Parsed, ApiError> {
    let rate = match &query.sample_rate {
        None => 100,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|r| (1..=1_000_000).contains(r))
            .ok_or_else(|| {
                ApiError::BadRequest(format!("`sampleRate` {text:?} is not a rate in Hz"))
            })?,
    };
    let sampled = matches!(event, EventKind::CpuClock | EventKind::Wall);
    Ok(Parsed {
        stacks,
        sample_type: "samples".into(),
        event: Some(event),
        period_nanos: sampled.then(|| 1_000_000_000 / i64::from(rate)),
        time_nanos: Some(span.from_secs * 1_000_000_000),
        duration_nanos: Some((span.until_secs - span.from_secs) * 1_000_000_000),
    })
}

/// Labels every sample of a pprof profile carries.
type SampleTags = Vec<(String, String)>;

/// One profile per event the pprof file measures, or the one the name's
/// suffix asks for, and the tags on its samples; times the file lacks come
/// from `from` and `until`.
fn pprof_parsed(
    file: &[u8],
    wanted: Option<EventKind>,
    span: &TimeSpan,
) -> Result<(Vec<Parsed>, SampleTags), ApiError> {
    let unusable =
        |e: pprof::PprofError| ApiError::BadRequest(format!("not a usable pprof profile: {e}"));
    let profile = pprof::decode_message(file).map_err(unusable)?;
    let types = pprof::sample_types(&profile).map_err(unusable)?;
    let measures: Vec<_> = pprof_events::measures(&types)
        .into_iter()
        .filter(|m| wanted.is_none_or(|event| m.event == event))
        .collect();
    if measures.is_empty() {
        return Err(ApiError::Unprocessable(format!(
            "the profile's sample types measure no ODP event{}; ODP counts {}",
            wanted.map_or(String::new(), |e| format!(" of {e}")),
            known_types()
        )));
    }
    let parsed = measures
        .iter()
        .map(|measure| {
            let mut parsed = pprof_events::parsed(&profile, measure)?;
            parsed.time_nanos = parsed.time_nanos.or(Some(span.from_secs * 1_000_000_000));
            parsed.duration_nanos = parsed
                .duration_nanos
                .or(Some((span.until_secs - span.from_secs) * 1_000_000_000));
            Ok(parsed)
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok((parsed, pprof_events::sample_tags(&profile)?))
}

/// Each kind of a JFR recording (CPU, allocation, lock), or the one the
/// name's suffix asks for.
fn jfr_parsed(
    file: &[u8],
    wanted: Option<EventKind>,
    span: &TimeSpan,
) -> Result<Vec<Framed>, ApiError> {
    let mut kinds: Vec<Framed> = parse_jfr_kinds(file)?
        .into_iter()
        .filter(|k| wanted.is_none_or(|event| k.event == Some(event)))
        .collect();
    if kinds.is_empty() {
        return Err(ApiError::Unprocessable(format!(
            "the recording has no {} events",
            wanted.map_or("", EventKind::as_str)
        )));
    }
    for kind in &mut kinds {
        kind.time_nanos = kind.time_nanos.or(Some(span.from_secs * 1_000_000_000));
        kind.duration_nanos = kind
            .duration_nanos
            .or(Some((span.until_secs - span.from_secs) * 1_000_000_000));
    }
    Ok(kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_application_and_its_labels() {
        let name = AppName::parse("ride-sharing.cpu{region=eu-north, vehicle=car}").unwrap();
        assert_eq!(name.app, "ride-sharing.cpu");
        assert_eq!(
            name.labels,
            Labels::from([
                ("region".to_owned(), "eu-north".to_owned()),
                ("vehicle".to_owned(), "car".to_owned())
            ])
        );
        assert_eq!(AppName::parse("plain").unwrap().labels, Labels::new());
        for bad in ["app{region=eu", "{a=b}", "app{novalue}"] {
            assert!(
                matches!(AppName::parse(bad), Err(ApiError::BadRequest(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn suffixes_name_events_or_are_refused() {
        assert_eq!(
            split_suffix("app.cpu").unwrap(),
            ("app".to_owned(), Some(EventKind::CpuClock))
        );
        assert_eq!(
            split_suffix("app.inuse_space").unwrap(),
            ("app".to_owned(), Some(EventKind::HeapBytes))
        );
        assert_eq!(split_suffix("my.app").unwrap(), ("my.app".to_owned(), None));
        assert!(matches!(
            split_suffix("app.alloc_objects"),
            Err(ApiError::Unprocessable(_))
        ));
    }

    #[test]
    fn lines_count_one_sample_each() {
        let mut stacks = line_stacks(b"main;a\nmain;b\n\nmain;a\n").unwrap();
        stacks.sort_by(|x, y| x.frames.cmp(&y.frames));
        let counts: Vec<(String, u64)> = stacks
            .iter()
            .map(|s| (s.frames.join(";"), s.count))
            .collect();
        assert_eq!(counts, [("main;a".to_owned(), 2), ("main;b".to_owned(), 1)]);
    }
}
