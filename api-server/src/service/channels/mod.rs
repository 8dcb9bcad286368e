//! Alert channels as admins write them: a create request checked into
//! the channel to store, told apart by its `kind`, and a change checked
//! against the kind of the channel it changes; and the stored channels
//! and their deliveries as the API shows them. The fields' syntax is in
//! [`checks`].

mod checks;

use odp_api_types::{
    Channel, ChannelKind, ChannelList, CreateEmailRequest, CreateWebhookRequest, DeliveriesPage,
    Delivery, DeliveryStatus, UpdateChannelRequest,
};
use odp_plumbing::egress::{url_host, EgressError, EgressPolicy};
use odp_store::{ChannelPatch, ChannelRow, DeliveryFilter, NewChannel};
use uuid::Uuid;

use crate::service::MAX_PAGE;
use crate::service_error::ServiceError;
use crate::validate::validate_name;
use crate::views;
use crate::AppState;

/// Creates the channel `body` asks for, once its destination is allowed.
pub(crate) async fn create(
    state: &AppState,
    body: serde_json::Value,
) -> Result<Channel, ServiceError> {
    let new = new_channel(body)?;
    check_destination(&state.egress, new.kind, &new.url).await?;
    let row = odp_store::create_channel(&state.pool, &new).await?;
    Ok(views::channel(row))
}

/// Every channel, by name.
pub(crate) async fn list(state: &AppState) -> Result<ChannelList, ServiceError> {
    let channels = odp_store::list_channels(&state.pool)
        .await?
        .into_iter()
        .map(views::channel)
        .collect();
    Ok(ChannelList { channels })
}

/// Channel `id`.
pub(crate) async fn describe(state: &AppState, id: Uuid) -> Result<Channel, ServiceError> {
    Ok(views::channel(load(state, id).await?))
}

/// Channel `id` changed as `request` asks, a new destination allowed first.
pub(crate) async fn update(
    state: &AppState,
    id: Uuid,
    request: UpdateChannelRequest,
) -> Result<Channel, ServiceError> {
    let kind = load(state, id).await?.kind;
    let patch = patch(kind, request)?;
    if let Some(url) = &patch.url {
        check_destination(&state.egress, kind, url).await?;
    }
    let row = odp_store::update_channel(&state.pool, id, &patch)
        .await?
        .ok_or_else(|| no_channel(id))?;
    Ok(views::channel(row))
}

/// Deletes channel `id` with its deliveries.
pub(crate) async fn delete(state: &AppState, id: Uuid) -> Result<(), ServiceError> {
    if !odp_store::delete_channel(&state.pool, id).await? {
        return Err(no_channel(id));
    }
    Ok(())
}

/// One page of channel `id`'s deliveries, newest first: `limit` of them
/// (50 when absent), queued before delivery `before`.
pub(crate) async fn deliveries(
    state: &AppState,
    id: Uuid,
    status: Option<DeliveryStatus>,
    before: Option<Uuid>,
    limit: Option<i64>,
) -> Result<DeliveriesPage, ServiceError> {
    let limit = limit.unwrap_or(50);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ServiceError::Invalid(format!(
            "`limit` must be between 1 and {MAX_PAGE}"
        )));
    }
    load(state, id).await?;
    let filter = DeliveryFilter {
        channel_id: id,
        status,
        before,
        limit,
    };
    let deliveries = odp_store::channel_deliveries(&state.pool, &filter)
        .await?
        .ok_or_else(|| {
            ServiceError::Invalid("`before` is not a delivery of this channel".into())
        })?;
    let next_before = (deliveries.len() as i64 == limit)
        .then(|| deliveries.last().map(|d| d.id))
        .flatten();
    Ok(DeliveriesPage {
        deliveries: deliveries
            .into_iter()
            .map(|row| without_remote_answers(views::delivery(row)))
            .collect(),
        next_before,
    })
}

async fn load(state: &AppState, id: Uuid) -> Result<ChannelRow, ServiceError> {
    odp_store::get_channel(&state.pool, id)
        .await?
        .ok_or_else(|| no_channel(id))
}

/// A failed attempt shows no status code: what a remote answered is not
/// for the reader to see (the log would be a port scanner). The pipeline
/// no longer records one; attempts recorded before may hold one.
fn without_remote_answers(mut delivery: Delivery) -> Delivery {
    for attempt in &mut delivery.attempt_log {
        if !attempt.success {
            attempt.status_code = None;
        }
    }
    delivery
}

fn no_channel(id: Uuid) -> ServiceError {
    ServiceError::NotFound(format!("no channel {id}"))
}

/// The channel `body` asks for. `kind` is read first, then the body is
/// parsed as that kind's request, so an error names the bad field of the
/// kind given rather than failing both shapes of an untagged enum.
fn new_channel(body: serde_json::Value) -> Result<NewChannel, ServiceError> {
    match body.get("kind").and_then(serde_json::Value::as_str) {
        Some("webhook") => webhook(parse(body)?),
        Some("email") => email(parse(body)?),
        _ => Err(invalid("`kind` must be \"webhook\" or \"email\"")),
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: serde_json::Value) -> Result<T, ServiceError> {
    serde_json::from_value(body).map_err(|e| invalid(format!("invalid request body: {e}")))
}

fn webhook(request: CreateWebhookRequest) -> Result<NewChannel, ServiceError> {
    validate_name("name", &request.name)?;
    checks::service_pattern(&request.service_pattern)?;
    checks::webhook_url(&request.url)?;
    checks::secret(&request.secret)?;
    Ok(NewChannel {
        name: request.name,
        kind: ChannelKind::Webhook,
        url: request.url,
        secret: Some(request.secret),
        email_from: None,
        email_to: Vec::new(),
        service_pattern: request.service_pattern,
        enabled: request.enabled,
    })
}

fn email(request: CreateEmailRequest) -> Result<NewChannel, ServiceError> {
    validate_name("name", &request.name)?;
    checks::service_pattern(&request.service_pattern)?;
    checks::smtp_url(&request.smtp_url)?;
    checks::email_address("from", &request.from)?;
    checks::recipients(&request.to)?;
    Ok(NewChannel {
        name: request.name,
        kind: ChannelKind::Email,
        url: request.smtp_url,
        secret: None,
        email_from: Some(request.from),
        email_to: request.to,
        service_pattern: request.service_pattern,
        enabled: request.enabled,
    })
}

/// The change `request` makes to a channel of `kind`; a field of the
/// other kind is refused.
fn patch(kind: ChannelKind, request: UpdateChannelRequest) -> Result<ChannelPatch, ServiceError> {
    if let Some(pattern) = &request.service_pattern {
        checks::service_pattern(pattern)?;
    }
    let url = match kind {
        ChannelKind::Webhook => {
            not_for(
                kind,
                &[
                    ("smtp_url", request.smtp_url.is_some()),
                    ("from", request.from.is_some()),
                    ("to", request.to.is_some()),
                ],
            )?;
            request
                .url
                .as_deref()
                .map(checks::webhook_url)
                .transpose()?;
            request.secret.as_deref().map(checks::secret).transpose()?;
            request.url
        }
        ChannelKind::Email => {
            not_for(
                kind,
                &[
                    ("url", request.url.is_some()),
                    ("secret", request.secret.is_some()),
                ],
            )?;
            request
                .smtp_url
                .as_deref()
                .map(checks::smtp_url)
                .transpose()?;
            if let Some(from) = &request.from {
                checks::email_address("from", from)?;
            }
            request.to.as_deref().map(checks::recipients).transpose()?;
            request.smtp_url
        }
    };
    Ok(ChannelPatch {
        enabled: request.enabled,
        service_pattern: request.service_pattern,
        url,
        secret: request.secret,
        email_from: request.from,
        email_to: request.to,
    })
}

/// A channel's destination (`url` of a webhook, `smtp_url` of an email
/// channel) must be a public address, or one the operator allow-listed: an
/// IP literal is checked as written (after the URL parser's normalising:
/// `http://2130706433/` is `127.0.0.1`), a name by every address it
/// resolves to now. A name that does not resolve is accepted; the pipeline
/// checks what it resolves to at each delivery anyway.
async fn check_destination(
    policy: &EgressPolicy,
    kind: ChannelKind,
    url: &str,
) -> Result<(), ServiceError> {
    let field = match kind {
        ChannelKind::Webhook => "url",
        ChannelKind::Email => "smtp_url",
    };
    let refused = |what: String| {
        invalid(format!(
            "`{field}` is refused: {what}; alerts go to public addresses only, unless the \
             destination is in the operator's ODP_ALERT_ALLOWED_DESTINATIONS"
        ))
    };
    match policy.check_url(url).await {
        Ok(_) | Err(EgressError::Unresolved) => Ok(()),
        Err(EgressError::Refused(why)) => Err(refused(format!(
            "{} is {why}",
            url_host(url).map_or_else(|_| "its host".to_owned(), |h| h.to_string())
        ))),
        Err(EgressError::ResolvesTo(why)) => Err(refused(format!(
            "{} resolves to {why}",
            url_host(url).map_or_else(|_| "its host".to_owned(), |h| h.to_string())
        ))),
        Err(EgressError::BadUrl(e)) => Err(invalid(format!("`{field}` is not a URL: {e}"))),
    }
}

fn invalid(message: impl Into<String>) -> ServiceError {
    ServiceError::Invalid(message.into())
}

/// A field given for the other kind of channel.
fn not_for(kind: ChannelKind, fields: &[(&str, bool)]) -> Result<(), ServiceError> {
    match fields.iter().find(|(_, given)| *given) {
        Some((field, _)) => Err(invalid(format!(
            "`{field}` is not a field of {} channels",
            kind.as_str()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refusal(result: Result<impl Sized, ServiceError>) -> String {
        match result {
            Err(ServiceError::Invalid(message)) => message,
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn a_create_request_is_read_as_the_kind_it_names() {
        let webhook = json!({"kind": "webhook", "name": "ops", "url": "https://hooks.example.com/x",
                             "secret": "0123456789abcdef"});
        let hook = new_channel(webhook.clone()).unwrap();
        assert_eq!(hook.kind, ChannelKind::Webhook);
        assert_eq!((hook.service_pattern.as_str(), hook.enabled), ("*", true));
        assert_eq!(hook.secret.as_deref(), Some("0123456789abcdef"));
        let email = json!({"kind": "email", "name": "oncall", "smtp_url": "smtp://relay:2525",
                           "from": "odp@example.com", "to": ["a@example.com"]});
        let mail = new_channel(email).unwrap();
        assert_eq!(mail.kind, ChannelKind::Email);
        assert_eq!(mail.url, "smtp://relay:2525");
        assert_eq!(mail.email_to, ["a@example.com"]);
        // The error names the field of the kind given.
        let mut bad = webhook.clone();
        bad["url"] = json!("ftp://x");
        assert!(refusal(new_channel(bad)).contains("url"));
        let mut email_fields = webhook;
        email_fields["to"] = json!(["a@example.com"]);
        assert!(refusal(new_channel(email_fields)).contains("unknown field `to`"));
        assert!(refusal(new_channel(json!({"kind": "pager"}))).contains("`kind`"));
    }

    #[tokio::test]
    async fn destinations_inside_are_refused_unless_allowed() {
        let strict = EgressPolicy::default();
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://localhost:8080/hook",
            "http://[::1]/hook",
            "http://0.0.0.0/",
            "http://2130706433/",
            "http://127.1/",
            "http://169.254.169.254/latest/meta-data/",
            "https://10.0.0.1/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            let message = refusal(check_destination(&strict, ChannelKind::Webhook, url).await);
            assert!(
                message.starts_with("`url` is refused: ")
                    && message.contains("ODP_ALERT_ALLOWED_DESTINATIONS"),
                "{url}: {message}"
            );
        }
        let message =
            refusal(check_destination(&strict, ChannelKind::Webhook, "http://2130706433:9/").await);
        assert!(
            message.contains("127.0.0.1 is a loopback address"),
            "{message}"
        );
        let message =
            refusal(check_destination(&strict, ChannelKind::Webhook, "http://localhost:9/").await);
        assert!(
            message.contains("localhost resolves to a loopback address"),
            "{message}"
        );
        let message =
            refusal(check_destination(&strict, ChannelKind::Email, "smtp://192.168.0.1:25").await);
        assert!(
            message.contains("`smtp_url` is refused: 192.168.0.1 is a private address"),
            "{message}"
        );
        for url in ["https://8.8.8.8/hook", "https://[2606:4700:4700::1111]/"] {
            assert!(check_destination(&strict, ChannelKind::Webhook, url)
                .await
                .is_ok());
        }
        let allowed =
            EgressPolicy::new(vec!["127.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()]);
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://localhost:8080/",
            "http://127.1/",
        ] {
            assert!(
                check_destination(&allowed, ChannelKind::Webhook, url)
                    .await
                    .is_ok(),
                "{url}"
            );
        }
    }

    #[test]
    fn a_change_must_suit_the_channels_kind() {
        let to_email = UpdateChannelRequest {
            to: Some(vec!["b@example.com".into()]),
            ..UpdateChannelRequest::default()
        };
        assert!(patch(ChannelKind::Email, to_email.clone()).is_ok());
        let message = refusal(patch(ChannelKind::Webhook, to_email));
        assert!(
            message.contains("`to` is not a field of webhook channels"),
            "{message}"
        );
        let rotate = UpdateChannelRequest {
            secret: Some("a new secret of 16+".into()),
            ..UpdateChannelRequest::default()
        };
        let change = patch(ChannelKind::Webhook, rotate).unwrap();
        assert_eq!(change.secret.as_deref(), Some("a new secret of 16+"));
        assert!(refusal(patch(
            ChannelKind::Webhook,
            UpdateChannelRequest {
                secret: Some("short".into()),
                ..UpdateChannelRequest::default()
            }
        ))
        .contains("secret"));
    }
}
