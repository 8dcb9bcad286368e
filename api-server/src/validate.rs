//! Checks of the names and labels every route takes: hosts, services,
//! schedule and channel names, profile labels.

use odp_store::Labels;

use crate::service_error::ServiceError;

pub(crate) const MAX_LABELS: usize = 16;

/// Up to 16 labels; keys of 1 to 63 letters, digits, `.`, `-` or `_`,
/// values of up to 256 characters without control characters or
/// surrounding spaces (list filters trim them).
pub(crate) fn validate_labels(labels: &Labels) -> Result<(), ServiceError> {
    if labels.len() > MAX_LABELS {
        return Err(ServiceError::Invalid(format!(
            "at most {MAX_LABELS} labels"
        )));
    }
    for (key, value) in labels {
        let key_ok = (1..=63).contains(&key.len())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !key_ok {
            return Err(ServiceError::Invalid(format!(
                "label key {key:?} must be 1 to 63 letters, digits, `.`, `-` or `_`"
            )));
        }
        if value.chars().count() > 256
            || value.chars().any(char::is_control)
            || value.trim() != value
        {
            return Err(ServiceError::Invalid(format!(
                "label {key:?}: values are up to 256 characters without control characters \
                 or surrounding spaces"
            )));
        }
    }
    Ok(())
}

/// Hosts and services: 1 to 253 characters of letters, digits, `.`, `-`
/// or `_` (what host names and service names are made of).
pub(crate) fn validate_name(what: &str, value: &str) -> Result<(), ServiceError> {
    let ok = !value.is_empty()
        && value.len() <= 253
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!(
            "`{what}` must be 1 to 253 characters of letters, digits, `.`, `-` or `_`"
        )))
    }
}
