//! Extra librdkafka settings (`--kafka-option key=value`) that every
//! service passes to its Kafka clients: what a real cluster needs
//! (`security.protocol`, `sasl.*`, `ssl.*`) and what a test broker needs.

/// Splits `key=value` settings; the key must look like a librdkafka
/// property (`[a-z0-9._]+`), the value may be anything, even empty.
pub fn parse(options: &[String]) -> Result<Vec<(String, String)>, String> {
    options
        .iter()
        .map(|option| {
            let (key, value) = option
                .split_once('=')
                .ok_or_else(|| format!("kafka option {option:?} is not key=value"))?;
            let key = key.trim();
            let valid = !key.is_empty()
                && key.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_')
                });
            if !valid {
                return Err(format!(
                    "kafka option key {key:?} is not a librdkafka property name"
                ));
            }
            Ok((key.to_owned(), value.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_split_on_the_first_equals_sign() {
        let parsed = parse(&[
            "security.protocol=SASL_SSL".into(),
            "sasl.password=a=b".into(),
            "batch.num.messages=1".into(),
        ])
        .unwrap();
        assert_eq!(parsed[1], ("sasl.password".into(), "a=b".into()));
        assert_eq!(parsed.len(), 3);
        for bad in ["novalue", "=x", "Bad.Key=1", "a b=1"] {
            assert!(parse(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
