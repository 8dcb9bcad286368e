//! The profile list: a client's query checked into the store's filter,
//! and one page of profiles, newest first, with an opaque cursor to the
//! next (keyset pagination, so pages stay stable while new profiles
//! arrive).

use chrono::{DateTime, Utc};
use odp_api_types::ProfilesPage;
use odp_store::{Labels, ProfileFilter, ProfileStatus, Profiles};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::service::MAX_PAGE;
use crate::service_error::ServiceError;
use crate::validate::{validate_labels, validate_name};
use crate::views;

/// What a client may filter the list by: the query string of
/// `GET /api/v1/profiles`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub service: Option<String>,
    #[param(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")]
    pub host: Option<String>,
    /// requested, dispatched, running, finished, stopped, failed or expired.
    pub status: Option<String>,
    /// RFC 3339 time; profiles created at or after it.
    pub since: Option<DateTime<Utc>>,
    /// RFC 3339 time; profiles created before it.
    pub until: Option<DateTime<Utc>>,
    /// Page size; 50 when absent.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// `key:value` pairs, comma-separated: only profiles with all of them.
    pub labels: Option<String>,
}

/// One page of the profiles `query` asks for.
pub(crate) async fn page(
    profiles: &Profiles,
    query: ListQuery,
) -> Result<ProfilesPage, ServiceError> {
    let filter = query.into_filter()?;
    let rows = profiles.list(&filter).await?;
    let next_cursor = (rows.len() as i64 == filter.limit)
        .then(|| rows.last().map(|r| encode_cursor(r.created_at, r.id)))
        .flatten();
    Ok(ProfilesPage {
        profiles: rows.into_iter().map(views::profile).collect(),
        next_cursor,
    })
}

impl ListQuery {
    fn into_filter(self) -> Result<ProfileFilter, ServiceError> {
        if let Some(service) = &self.service {
            validate_name("service", service)?;
        }
        if let Some(host) = &self.host {
            validate_name("host", host)?;
        }
        let status = self
            .status
            .map(|s| {
                s.parse::<ProfileStatus>()
                    .map_err(|_| ServiceError::Invalid(format!("unknown status {s:?}")))
            })
            .transpose()?;
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if since >= until {
                return Err(ServiceError::Invalid(
                    "`since` must be before `until`".into(),
                ));
            }
        }
        let limit = self.limit.unwrap_or(50);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ServiceError::Invalid(format!(
                "`limit` must be between 1 and {MAX_PAGE}"
            )));
        }
        let after = self.cursor.as_deref().map(decode_cursor).transpose()?;
        let labels = self.labels.as_deref().map(parse_labels).transpose()?;
        Ok(ProfileFilter {
            service: self.service,
            host: self.host,
            status,
            since: self.since,
            until: self.until,
            after,
            limit,
            labels: labels.unwrap_or_default(),
        })
    }
}

/// `env:prod,team:checkout` into labels (values may hold `:`; spaces
/// around keys and values are ignored).
fn parse_labels(text: &str) -> Result<Labels, ServiceError> {
    let mut labels = Labels::new();
    for pair in text.split(',') {
        let (key, value) = pair.split_once(':').ok_or_else(|| {
            ServiceError::Invalid(format!("label filter {pair:?} is not key:value"))
        })?;
        labels.insert(key.trim().to_owned(), value.trim().to_owned());
    }
    validate_labels(&labels)?;
    Ok(labels)
}

fn encode_cursor(at: DateTime<Utc>, id: Uuid) -> String {
    format!("{}.{}", at.timestamp_micros(), id.simple())
}

fn decode_cursor(cursor: &str) -> Result<(DateTime<Utc>, Uuid), ServiceError> {
    let bad = || ServiceError::Malformed(format!("invalid cursor {cursor:?}"));
    let (micros, id) = cursor.split_once('.').ok_or_else(bad)?;
    let at = micros
        .parse::<i64>()
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_micros)
        .ok_or_else(bad)?;
    let id = Uuid::try_parse(id).map_err(|_| bad())?;
    Ok((at, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let at = DateTime::<Utc>::from_timestamp_micros(1_790_000_000_123_456).unwrap();
        let id = Uuid::new_v4();
        assert_eq!(decode_cursor(&encode_cursor(at, id)).unwrap(), (at, id));
        for bad in [
            "",
            "x",
            "1.2",
            "abc.00000000000000000000000000000000",
            "99999999999999999999.x",
        ] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn filters_are_validated() {
        let q = |json: serde_json::Value| {
            serde_json::from_value::<ListQuery>(json)
                .unwrap()
                .into_filter()
        };
        assert_eq!(q(serde_json::json!({})).unwrap().limit, 50);
        assert!(q(serde_json::json!({"limit": 0})).is_err());
        assert!(q(serde_json::json!({"limit": 501})).is_err());
        assert!(q(serde_json::json!({"status": "sleeping"})).is_err());
        assert!(q(serde_json::json!({"host": "a b"})).is_err());
        assert!(q(
            serde_json::json!({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"})
        )
        .is_err());
        let f = q(serde_json::json!({"status": "running", "service": "checkout"})).unwrap();
        assert_eq!(
            (f.status, f.service.as_deref()),
            (Some(ProfileStatus::Running), Some("checkout"))
        );
    }
}
