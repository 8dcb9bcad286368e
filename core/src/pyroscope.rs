//! The messages of Pyroscope's push API (`push.v1.PusherService/Push`),
//! which its SDKs and Grafana Alloy send: series of labels, each with
//! pprof profiles. Field numbers as in Grafana's `push/v1/push.proto` and
//! `types/v1/types.proto`.

use prost::Message;

/// `push.v1.PushRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct PushRequest {
    #[prost(message, repeated, tag = "1")]
    pub series: Vec<RawProfileSeries>,
}

/// `push.v1.RawProfileSeries`: one set of labels and its profiles.
#[derive(Clone, PartialEq, Message)]
pub struct RawProfileSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<RawSample>,
}

/// `types.v1.LabelPair`.
#[derive(Clone, PartialEq, Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `push.v1.RawSample`: a pprof profile, gzip-compressed or not, and the
/// client's id for it (a UUID), which stays the same when it retries.
#[derive(Clone, PartialEq, Message)]
pub struct RawSample {
    #[prost(bytes = "vec", tag = "1")]
    pub raw_profile: Vec<u8>,
    #[prost(string, tag = "2")]
    pub id: String,
}
