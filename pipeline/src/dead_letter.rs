//! The dead-letter topic: undecodable, unauthenticated or unstorable
//! messages, with the reason and where they came from in headers, the
//! original key, bytes and signature headers untouched so they can be
//! inspected (who signed it?) and replayed.

use std::time::Duration;

use odp_core::identity::{CERTIFICATE_HEADER, SIGNATURE_HEADER};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::batch::Rejected;
use crate::PipelineError;

pub(crate) async fn publish(
    producer: &FutureProducer,
    topic: &str,
    rejected: &Rejected,
) -> Result<(), PipelineError> {
    let m = &rejected.message;
    let partition = m.partition.to_string();
    let offset = m.offset.to_string();
    let mut headers = OwnedHeaders::new()
        .insert(Header {
            key: "odp-reason",
            value: Some(rejected.reason.as_bytes()),
        })
        .insert(Header {
            key: "odp-source-topic",
            value: Some(m.topic.as_bytes()),
        })
        .insert(Header {
            key: "odp-source-partition",
            value: Some(partition.as_bytes()),
        })
        .insert(Header {
            key: "odp-source-offset",
            value: Some(offset.as_bytes()),
        });
    for (key, value) in [
        (CERTIFICATE_HEADER, &m.certificate),
        (SIGNATURE_HEADER, &m.signature),
    ] {
        if let Some(value) = value {
            headers = headers.insert(Header {
                key,
                value: Some(value.as_slice()),
            });
        }
    }
    let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic)
        .payload(m.payload.as_slice())
        .headers(headers);
    if let Some(key) = &m.key {
        record = record.key(key.as_slice());
    }
    producer
        .send(record, Duration::from_secs(30))
        .await
        .map_err(|(e, _)| PipelineError::DeadLetter(e.to_string()))?;
    tracing::warn!(
        topic = %m.topic, partition = m.partition, offset = m.offset,
        reason = %rejected.reason, "message sent to dead-letter topic"
    );
    Ok(())
}
