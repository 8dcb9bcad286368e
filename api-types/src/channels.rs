//! Alert channels and the log of what was sent to them.

use chrono::{DateTime, Utc};
use odp_core::domain::{ChannelKind, DeliveryStatus};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::enabled;

/// `POST /api/v1/channels`: a webhook or an email channel, told apart by
/// `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum CreateChannelRequest {
    Webhook(CreateWebhookRequest),
    Email(CreateEmailRequest),
}

/// The `kind` of a webhook's create request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WebhookKind {
    Webhook,
}

/// The `kind` of an email channel's create request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EmailKind {
    Email,
}

/// A webhook: alerts POSTed as JSON, signed with `secret`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Always `webhook`: the body names its kind.
    pub kind: WebhookKind,
    /// Unique among channels.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub name: String,
    /// The http(s) URL alerts are POSTed to; no credentials in it.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 2000, pattern = "^https?://")
    )]
    pub url: String,
    /// The HMAC-SHA256 key of `X-ODP-Signature`. Never returned.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 16, max_length = 512, write_only)
    )]
    pub secret: String,
    /// Glob over the services whose alerts go here (`*` any run of
    /// characters, `?` one); all services when absent.
    #[serde(default = "all_services")]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._*?-]+$")
    )]
    pub service_pattern: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
}

/// An email channel: alerts mailed as plain text through an SMTP relay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateEmailRequest {
    /// Always `email`: the body names its kind.
    pub kind: EmailKind,
    /// Unique among channels.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub name: String,
    /// The relay, `smtp://host[:port]` (port 25 by default).
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 2000, pattern = "^smtp://")
    )]
    pub smtp_url: String,
    /// The sender's address, `local@domain`.
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 3, max_length = 254, pattern = "^[^@\\s]+@[^@\\s]+$")
    )]
    pub from: String,
    /// The recipients' addresses, `local@domain`.
    #[cfg_attr(feature = "schema", schema(min_items = 1, max_items = 50))]
    pub to: Vec<String>,
    /// Glob over the services whose alerts go here (`*` any run of
    /// characters, `?` one); all services when absent.
    #[serde(default = "all_services")]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._*?-]+$")
    )]
    pub service_pattern: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
}

fn all_services() -> String {
    "*".into()
}

/// `PATCH /api/v1/channels/{id}`: absent fields stay as they are; each
/// field must suit the channel's kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateChannelRequest {
    #[serde(default)]
    pub enabled: Option<bool>,
    /// A new glob over the services whose alerts go here.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 253, pattern = "^[A-Za-z0-9._*?-]+$")
    )]
    pub service_pattern: Option<String>,
    /// Webhook: a new URL.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 2000, pattern = "^https?://")
    )]
    pub url: Option<String>,
    /// Webhook: a new secret (rotation); deliveries sent from now on are
    /// signed with it.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 16, max_length = 512, write_only)
    )]
    pub secret: Option<String>,
    /// Email: a new relay.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 1, max_length = 2000, pattern = "^smtp://")
    )]
    pub smtp_url: Option<String>,
    /// Email: a new sender address.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schema(min_length = 3, max_length = 254, pattern = "^[^@\\s]+@[^@\\s]+$")
    )]
    pub from: Option<String>,
    /// Email: replaces every recipient.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(min_items = 1, max_items = 50))]
    pub to: Option<Vec<String>>,
}

/// A channel as the API shows it: everything but the webhook's secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Channel {
    pub id: Uuid,
    pub name: String,
    pub kind: ChannelKind,
    /// The webhook's URL; `null` for email.
    pub url: Option<String>,
    /// The email channel's relay; `null` for webhooks.
    pub smtp_url: Option<String>,
    pub from: Option<String>,
    pub to: Vec<String>,
    pub service_pattern: String,
    pub enabled: bool,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ChannelList {
    pub channels: Vec<Channel>,
}

/// One alert to a channel and how sending it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Delivery {
    pub id: Uuid,
    pub profile_id: Uuid,
    pub rule_id: String,
    pub rule_title: String,
    pub service: String,
    pub host: String,
    /// Matched samples, percent of the profile's samples.
    pub share: f64,
    pub threshold_pct: f64,
    pub detected_at: DateTime<Utc>,
    pub status: DeliveryStatus,
    pub attempts: i32,
    /// When a pending delivery is next tried; `null` once it ended.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// Every attempt, first first.
    pub attempt_log: Vec<DeliveryAttempt>,
}

/// One try at sending a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DeliveryAttempt {
    pub attempt: i32,
    pub attempted_at: DateTime<Utc>,
    /// The HTTP status (webhook) or SMTP reply code (email), when the
    /// server answered.
    pub status_code: Option<i32>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    pub success: bool,
}

/// A page of deliveries, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct DeliveriesPage {
    pub deliveries: Vec<Delivery>,
    /// Pass as `before` for the next page; `null` on the last page.
    pub next_before: Option<Uuid>,
}
