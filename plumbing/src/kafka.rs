//! The Kafka cluster a service talks to and the librdkafka settings every
//! one of its clients gets: what a real cluster needs (`security.protocol`,
//! `sasl.*`, `ssl.*`) and what a test broker needs.

use rdkafka::ClientConfig;
use thiserror::Error;

/// The Kafka flags every ODP service takes (also as `ODP_*` variables).
#[derive(Debug, Clone, clap::Args)]
pub struct KafkaArgs {
    /// Kafka bootstrap servers (host:port, comma separated).
    #[arg(
        long = "kafka-bootstrap",
        env = "ODP_KAFKA_BOOTSTRAP",
        default_value = "127.0.0.1:9092"
    )]
    pub bootstrap: String,
    /// Extra librdkafka setting for the Kafka clients, `key=value`
    /// (repeat it, or comma-separate in the environment): e.g.
    /// `security.protocol=SASL_SSL`.
    #[arg(
        long = "kafka-option",
        env = "ODP_KAFKA_OPTIONS",
        value_delimiter = ','
    )]
    pub options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KafkaConfigError {
    #[error("--kafka-bootstrap is empty")]
    NoBootstrap,
    #[error("kafka option {0:?} is not key=value")]
    NotKeyValue(String),
    #[error("kafka option key {0:?} is not a librdkafka property name")]
    BadKey(String),
}

impl KafkaArgs {
    pub fn validate(&self) -> Result<Kafka, KafkaConfigError> {
        Kafka::new(&self.bootstrap, parse_options(&self.options)?)
    }
}

/// A validated Kafka connection: bootstrap servers and the operator's
/// extra settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kafka {
    bootstrap: String,
    options: Vec<(String, String)>,
}

impl Kafka {
    pub fn new(bootstrap: &str, options: Vec<(String, String)>) -> Result<Kafka, KafkaConfigError> {
        if bootstrap.trim().is_empty() {
            return Err(KafkaConfigError::NoBootstrap);
        }
        Ok(Kafka {
            bootstrap: bootstrap.to_owned(),
            options,
        })
    }

    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    /// A client configuration: the caller's `defaults`, the operator's
    /// options over them, then the bootstrap servers. Settings a client
    /// depends on (group id, offsets, partitioner) are set by the caller
    /// afterwards, so no option can break them.
    pub fn client(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut client = ClientConfig::new();
        for (key, value) in defaults {
            client.set(*key, *value);
        }
        for (key, value) in &self.options {
            client.set(key, value);
        }
        client.set("bootstrap.servers", &self.bootstrap);
        client
    }
}

/// Splits `key=value` settings; the key must look like a librdkafka
/// property (`[a-z0-9._]+`), the value may be anything, even empty.
fn parse_options(options: &[String]) -> Result<Vec<(String, String)>, KafkaConfigError> {
    options
        .iter()
        .map(|option| {
            let (key, value) = option
                .split_once('=')
                .ok_or_else(|| KafkaConfigError::NotKeyValue(option.clone()))?;
            let key = key.trim();
            let valid = !key.is_empty()
                && key.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_')
                });
            if !valid {
                return Err(KafkaConfigError::BadKey(key.to_owned()));
            }
            Ok((key.to_owned(), value.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(bootstrap: &str, options: &[&str]) -> KafkaArgs {
        KafkaArgs {
            bootstrap: bootstrap.to_owned(),
            options: options.iter().map(|o| o.to_string()).collect(),
        }
    }

    #[test]
    fn settings_split_on_the_first_equals_sign() {
        let kafka = args(
            "b:9092",
            &[
                "security.protocol=SASL_SSL",
                "sasl.password=a=b",
                "batch.num.messages=1",
            ],
        )
        .validate()
        .unwrap();
        assert_eq!(kafka.options[1], ("sasl.password".into(), "a=b".into()));
        assert_eq!(kafka.options.len(), 3);
        for bad in ["novalue", "=x", "Bad.Key=1", "a b=1"] {
            assert!(args("b:9092", &[bad]).validate().is_err(), "{bad}");
        }
        assert_eq!(
            args(" ", &[]).validate(),
            Err(KafkaConfigError::NoBootstrap)
        );
    }

    #[test]
    fn options_override_defaults_and_never_the_bootstrap() {
        let kafka = args(
            "b:9092",
            &["enable.idempotence=false", "bootstrap.servers=elsewhere:1"],
        )
        .validate()
        .unwrap();
        let client = kafka.client(&[("enable.idempotence", "true"), ("linger.ms", "5")]);
        assert_eq!(client.get("enable.idempotence"), Some("false"));
        assert_eq!(client.get("linger.ms"), Some("5"));
        assert_eq!(client.get("bootstrap.servers"), Some("b:9092"));
    }
}
