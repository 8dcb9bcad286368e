//! What the OpenAPI document says of the bodies the ingest routes take and
//! answer that are other projects' messages: OTLP's, Pyroscope's push API
//! and Connect's errors. The handlers read and write those with prost and
//! by hand (OTLP/JSON), so these types only describe them; they are never
//! built.

#![allow(dead_code)]

use utoipa::ToSchema;

/// A protocol buffers message or a profile file, as sent: any bytes.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub(crate) struct BinaryBody(Vec<u8>);

/// An OTLP `ExportProfilesServiceRequest` (`opentelemetry-proto` 1.10,
/// `profiles/v1development`) in OTLP/JSON: keys in lowerCamelCase (others
/// are ignored as unknown fields), absent fields at their default, 64-bit
/// integers as strings or numbers, trace, span and profile ids in hex,
/// other bytes in base64. docs/ingest.md says what ODP makes of it.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct OtlpExportRequest {
    /// `ResourceProfiles`: a resource (its `service.name` attribute names
    /// the ODP service, `host.name` the host), and its scopes' profiles.
    #[schema(value_type = Vec<Value>, required = false)]
    resource_profiles: Vec<()>,
    /// The `ProfilesDictionary` the request's profiles index: strings,
    /// mappings, locations, functions, links, attributes and stacks,
    /// each table's entry 0 the zero value.
    #[schema(value_type = Value, required = false)]
    dictionary: (),
}

/// An OTLP `ExportProfilesServiceResponse` in OTLP/JSON: empty when every
/// profile was stored as sent.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct OtlpExportResponse {
    partial_success: Option<OtlpPartialSuccess>,
}

/// `ExportProfilesPartialSuccess`: the profiles refused and why, and what
/// was kept but changed.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub(crate) struct OtlpPartialSuccess {
    /// How many of the request's profiles were refused (and not stored
    /// in part), an int64 as a string as proto3's JSON mapping writes it.
    #[schema(pattern = "^[0-9]+$", example = "1")]
    rejected_profiles: String,
    /// Each refused profile by its place in the request and why, then
    /// what was kept but changed (attributes dropped, traces past the
    /// bound), `; `-separated.
    error_message: String,
}

/// A `google.rpc.Status`, OTLP/HTTP's error body, in the request's
/// encoding: protocol buffers, or JSON as here.
#[derive(ToSchema)]
pub(crate) struct OtlpStatus {
    /// The gRPC status code: 3 invalid argument, 7 permission denied, 8
    /// resource exhausted, 14 unavailable, 16 unauthenticated.
    #[schema(format = Int32)]
    code: i32,
    message: String,
}

/// An error as the Connect protocol spells it (Pyroscope's push API is a
/// Connect call), which the Pyroscope SDKs log.
#[derive(ToSchema)]
pub(crate) struct ConnectError {
    /// `invalid_argument`, `unauthenticated`, `permission_denied`,
    /// `resource_exhausted` or `unavailable`.
    code: String,
    message: String,
}

/// The multipart form of `/ingest`: the Pyroscope SDKs' (`profile`, with
/// `format=pprof`) or the Java agent's (`jfr`, with `format=jfr`).
#[derive(ToSchema)]
pub(crate) struct IngestForm {
    /// A pprof profile, gzip-compressed or not.
    #[schema(value_type = String, format = Binary, required = false)]
    profile: (),
    /// The cumulative profile a delta was taken from: not needed, as the
    /// SDKs send deltas, and ignored.
    #[schema(value_type = String, format = Binary, required = false)]
    previous_profile: (),
    /// Ignored: the sample types name their units.
    #[schema(value_type = String, format = Binary, required = false)]
    sample_type_config: (),
    /// A JFR recording.
    #[schema(value_type = String, format = Binary, required = false)]
    jfr: (),
    /// The recording's per-context labels, which ODP's stacks do not
    /// carry: ignored.
    #[schema(value_type = String, format = Binary, required = false)]
    labels: (),
}
