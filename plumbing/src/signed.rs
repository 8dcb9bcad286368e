//! Agent messages on Kafka carry their sender's certificate and signature
//! in two headers ([`odp_core::identity`]); this writes and reads them.

use odp_core::identity::{
    Certificate, Channel, IdentityError, MessageSignature, MessageVerifier, CERTIFICATE_HEADER,
    SIGNATURE_HEADER,
};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::Message;

/// The headers that authenticate one message.
pub fn headers(signature: &MessageSignature<'_>) -> OwnedHeaders {
    OwnedHeaders::new_with_capacity(2)
        .insert(Header {
            key: CERTIFICATE_HEADER,
            value: Some(signature.certificate.as_bytes()),
        })
        .insert(Header {
            key: SIGNATURE_HEADER,
            value: Some(signature.signature.as_bytes()),
        })
}

/// The value of a message's first header named `name`.
pub fn header<'a, M: Message>(message: &'a M, name: &str) -> Option<&'a [u8]> {
    let headers = message.headers()?;
    headers
        .iter()
        .find(|header| header.key == name)
        .and_then(|header| header.value)
}

/// The certificate and signature headers of a message, owned.
pub fn signature_of<M: Message>(message: &M) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    (
        header(message, CERTIFICATE_HEADER).map(<[u8]>::to_vec),
        header(message, SIGNATURE_HEADER).map(<[u8]>::to_vec),
    )
}

/// Verifies a message as it came off the consumer.
pub fn verify<M: Message>(
    verifier: &MessageVerifier,
    channel: Channel,
    message: &M,
    now_unix_s: i64,
) -> Result<Certificate, IdentityError> {
    verifier.verify(
        channel,
        message.payload().unwrap_or_default(),
        header(message, CERTIFICATE_HEADER),
        header(message, SIGNATURE_HEADER),
        now_unix_s,
    )
}

/// Now, in unix seconds, for certificate times.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
