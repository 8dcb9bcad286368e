//! Signed commands from the api-server to host agents (`odp.commands`).
//!
//! A command travels as a compact JWS signed with Ed25519 (EdDSA). The
//! claims carry a unique id (`jti`, also the replay nonce), the target host
//! (`sub`), issue and expiry times, and the action. An agent acts on a
//! command only if the signature verifies against the api-server's public
//! key, the command is addressed to its own host, it has not expired, its
//! expiry is at most [`MAX_COMMAND_LIFETIME_SECS`] away, and it has not been
//! seen before. What the verifier has seen ([`SeenCommands`]) can be taken
//! out and put back, so an agent keeps it across restarts.

use std::collections::HashMap;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

use crate::cost::StartOptions;
use crate::model::Target;
use crate::service::SyncServices;

pub const ISSUER: &str = "odp-api-server";
pub const AUDIENCE: &str = "odp-agent";
/// Clock skew tolerated between api-server and agents.
const LEEWAY_SECS: u64 = 5;

/// Longest a command may be valid: its expiry (`exp`) at most this long
/// after its issue time (`iat`), and after the agent's clock (plus
/// [`MAX_CLOCK_AHEAD_SECS`]).
///
/// The expiry is a delivery deadline, not the profile's length: the
/// api-server signs every command with `exp = iat + --command-ttl-secs`,
/// a flag it bounds to 5..=3600 s (default 60), whatever the duration a
/// start carries (a profile of a week still travels in a command valid for
/// a minute). One hour admits every command the api-server issues, and
/// bounds both how long a captured command can be replayed and how long an
/// agent must remember the ids it has seen. A command valid for years is a
/// signing mistake or an attack, and is refused.
pub const MAX_COMMAND_LIFETIME_SECS: i64 = 3600;

/// How far the api-server's clock may run ahead of an agent's before a
/// command's expiry counts as too far in the future: modest skew, minutes.
pub const MAX_CLOCK_AHEAD_SECS: i64 = 300;

/// Most command ids a verifier remembers at once. Far more than the
/// commands one host gets within [`MAX_COMMAND_LIFETIME_SECS`]; past it the
/// soonest-expiring ids are forgotten and commands expiring no later than
/// them are refused as possible replays ([`SeenCommands::forgotten_until`]).
pub const MAX_REMEMBERED_COMMANDS: usize = 10_000;

#[derive(Debug, Error)]
pub enum CommandError {
    #[error("invalid key: {0}")]
    Key(String),
    #[error("signature or claims invalid: {0}")]
    Invalid(String),
    #[error("command expired at {expires_at}")]
    Expired { expires_at: i64 },
    #[error("command is for host {got:?}, this agent is {expected:?}")]
    WrongHost { expected: String, got: String },
    #[error("command {0} was already received (replay)")]
    Replayed(Uuid),
    #[error(
        "command expires at {expires_at}, more than the {max} s any command may live after \
         its issue time {issued_at} or this agent's time {now} (plus {ahead} s of clock skew)",
        max = MAX_COMMAND_LIFETIME_SECS,
        ahead = MAX_CLOCK_AHEAD_SECS
    )]
    ExpiryTooFar {
        issued_at: i64,
        expires_at: i64,
        now: i64,
    },
    #[error(
        "command {id} expires at {expires_at}, no later than commands this agent no longer \
         remembers (until {forgotten_until}): refused as a possible replay"
    )]
    Forgotten {
        id: Uuid,
        expires_at: i64,
        forgotten_until: i64,
    },
    #[error(
        "command {id} was issued at {issued_at}, before this agent started at {started_at}, \
         and the agent cannot tell whether an earlier run took it: refused as a possible replay"
    )]
    IssuedBeforeStart {
        id: Uuid,
        issued_at: i64,
        started_at: i64,
    },
    #[error("signing failed: {0}")]
    Signing(String),
}

/// A start command: what to profile and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartProfile {
    pub profile_id: Uuid,
    pub target: Target,
    pub duration_ms: u64,
    pub frequency_hz: u32,
    /// Aggregation window; the agent's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    /// Plugin, event and cost-control options. They travel as further
    /// fields of the start action, beside those above (`{"kind":"start",
    /// ..., "fsp_share":0.95}`), each left out when absent: a start without
    /// options reads as it did before they existed, and an agent that does
    /// not know an option ignores it.
    #[serde(flatten)]
    pub options: StartOptions,
}

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UndeployMode {
    /// Stop running profiles, flush them and exit.
    Now,
    /// Refuse new profiles and exit once running ones finish.
    Drain,
}

impl UndeployMode {
    pub fn as_str(self) -> &'static str {
        match self {
            UndeployMode::Now => "now",
            UndeployMode::Drain => "drain",
        }
    }
}

/// A name that is no undeploy mode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown undeploy mode {0:?}")]
pub struct UnknownUndeployMode(pub String);

impl std::str::FromStr for UndeployMode {
    type Err = UnknownUndeployMode;

    fn from_str(text: &str) -> Result<Self, UnknownUndeployMode> {
        [UndeployMode::Now, UndeployMode::Drain]
            .into_iter()
            .find(|m| m.as_str() == text)
            .ok_or_else(|| UnknownUndeployMode(text.to_owned()))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CommandAction {
    Start(StartProfile),
    Stop {
        profile_id: Uuid,
    },
    Undeploy {
        mode: UndeployMode,
    },
    /// Replaces the agent's service definitions wholesale (kept across its
    /// restarts): `{"kind": "sync_services", "services": [{"name", "target"}],
    /// "digest"}`. The agent checks the digest
    /// ([`crate::service::services_digest`]) and the definitions, and
    /// acknowledges by reporting that digest in its next heartbeat.
    SyncServices(SyncServices),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub id: Uuid,
    pub host: String,
    pub issued_at: i64,
    pub expires_at: i64,
    pub action: CommandAction,
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    jti: Uuid,
    iss: String,
    aud: String,
    sub: String,
    iat: i64,
    exp: i64,
    /// The action, as a JSON value so that its keys are written sorted,
    /// as they always were: tokens signed before and after a change of the
    /// action's types stay byte for byte the same.
    cmd: serde_json::Value,
}

impl Claims {
    fn of(command: &Command) -> Result<Claims, serde_json::Error> {
        Ok(Claims {
            jti: command.id,
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            sub: command.host.clone(),
            iat: command.issued_at,
            exp: command.expires_at,
            cmd: serde_json::to_value(&command.action)?,
        })
    }
}

/// Signs commands with the api-server's Ed25519 private key.
pub struct CommandSigner {
    key: EncodingKey,
}

impl CommandSigner {
    /// From a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_private_pem(pem: &str) -> Result<Self, CommandError> {
        let key = EncodingKey::from_ed_pem(pem.as_bytes())
            .map_err(|e| CommandError::Key(e.to_string()))?;
        Ok(CommandSigner { key })
    }

    pub fn sign(&self, command: &Command) -> Result<String, CommandError> {
        let claims = Claims::of(command).map_err(|e| CommandError::Signing(e.to_string()))?;
        self.sign_claims(&claims)
    }

    /// Signs any claims with the command key (agent certificates use it:
    /// `identity::issue_certificate`).
    pub(crate) fn sign_claims(&self, claims: &impl Serialize) -> Result<String, CommandError> {
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), claims, &self.key)
            .map_err(|e| CommandError::Signing(e.to_string()))
    }
}

/// The ids of the commands a verifier took, with their expiry (unix s),
/// as kept across an agent's restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenCommands {
    /// Commands expiring at or before this were forgotten to keep the
    /// memory bounded ([`MAX_REMEMBERED_COMMANDS`]), so they are refused.
    #[serde(default)]
    pub forgotten_until: i64,
    pub commands: Vec<SeenCommand>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenCommand {
    pub id: Uuid,
    pub expires_at: i64,
}

/// Verifies commands on an agent and remembers their ids until they expire,
/// so a captured command cannot be replayed.
pub struct CommandVerifier {
    key: DecodingKey,
    host: String,
    seen: HashMap<Uuid, i64>,
    /// See [`SeenCommands::forgotten_until`].
    forgotten_until: i64,
    /// When set, commands issued before this time (unix s) are refused:
    /// for an agent that could not keep what an earlier run saw.
    issued_not_before: Option<i64>,
}

impl CommandVerifier {
    /// From an SPKI PEM public key (`-----BEGIN PUBLIC KEY-----`).
    pub fn from_public_pem(pem: &str, expected_host: &str) -> Result<Self, CommandError> {
        let key = DecodingKey::from_ed_pem(pem.as_bytes())
            .map_err(|e| CommandError::Key(e.to_string()))?;
        Ok(CommandVerifier {
            key,
            host: expected_host.to_owned(),
            seen: HashMap::new(),
            forgotten_until: i64::MIN,
            issued_not_before: None,
        })
    }

    /// Adds what an earlier run saw (expired ids dropped, the count capped).
    pub fn remember(&mut self, seen: &SeenCommands, now_unix_s: i64) {
        self.forgotten_until = self.forgotten_until.max(seen.forgotten_until);
        for command in &seen.commands {
            let exp = self.seen.entry(command.id).or_insert(command.expires_at);
            *exp = (*exp).max(command.expires_at);
        }
        self.prune(now_unix_s);
    }

    /// The ids still worth remembering at `now_unix_s`, soonest expiring
    /// first, for keeping across a restart.
    pub fn seen(&self, now_unix_s: i64) -> SeenCommands {
        let mut commands: Vec<SeenCommand> = self
            .seen
            .iter()
            .filter(|(_, exp)| !expired(**exp, now_unix_s))
            .map(|(id, exp)| SeenCommand {
                id: *id,
                expires_at: *exp,
            })
            .collect();
        commands.sort_unstable_by_key(|c| (c.expires_at, c.id));
        let forgotten_until = if expired(self.forgotten_until, now_unix_s) {
            0
        } else {
            self.forgotten_until
        };
        SeenCommands {
            forgotten_until,
            commands,
        }
    }

    /// Refuses, from now on, every command issued before `started_at` (unix
    /// s): for an agent that cannot know which commands an earlier run took.
    pub fn refuse_issued_before(&mut self, started_at: i64) {
        self.issued_not_before = Some(started_at);
    }

    /// Drops expired ids, then the soonest expiring ones past
    /// [`MAX_REMEMBERED_COMMANDS`] (raising `forgotten_until` to them).
    fn prune(&mut self, now_unix_s: i64) {
        self.seen.retain(|_, exp| !expired(*exp, now_unix_s));
        if self.seen.len() > MAX_REMEMBERED_COMMANDS {
            let mut expiries: Vec<i64> = self.seen.values().copied().collect();
            let excess = self.seen.len() - MAX_REMEMBERED_COMMANDS;
            let (_, cut, _) = expiries.select_nth_unstable(excess - 1);
            let cut = *cut;
            self.seen.retain(|_, exp| *exp > cut);
            self.forgotten_until = self.forgotten_until.max(cut);
        }
    }

    /// Reads a token's id without trusting it, to name the command in a
    /// rejection report.
    pub fn unverified_id(token: &str) -> Option<Uuid> {
        let payload = token.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        value.get("jti")?.as_str()?.parse().ok()
    }

    pub fn verify(&mut self, token: &str, now_unix_s: i64) -> Result<Command, CommandError> {
        let claims = jsonwebtoken::decode::<Claims>(token, &self.key, &validation_for(AUDIENCE))
            .map_err(|e| CommandError::Invalid(e.to_string()))?
            .claims;
        let action: CommandAction =
            serde_json::from_value(claims.cmd).map_err(|e| CommandError::Invalid(e.to_string()))?;
        if expired(claims.exp, now_unix_s) {
            return Err(CommandError::Expired {
                expires_at: claims.exp,
            });
        }
        if claims.exp.saturating_sub(claims.iat) > MAX_COMMAND_LIFETIME_SECS
            || claims.exp.saturating_sub(now_unix_s)
                > MAX_COMMAND_LIFETIME_SECS + MAX_CLOCK_AHEAD_SECS
        {
            return Err(CommandError::ExpiryTooFar {
                issued_at: claims.iat,
                expires_at: claims.exp,
                now: now_unix_s,
            });
        }
        if claims.sub != self.host {
            return Err(CommandError::WrongHost {
                expected: self.host.clone(),
                got: claims.sub,
            });
        }
        self.prune(now_unix_s);
        if self.seen.contains_key(&claims.jti) {
            return Err(CommandError::Replayed(claims.jti));
        }
        if claims.exp <= self.forgotten_until {
            return Err(CommandError::Forgotten {
                id: claims.jti,
                expires_at: claims.exp,
                forgotten_until: self.forgotten_until,
            });
        }
        if let Some(started_at) = self.issued_not_before.filter(|s| claims.iat < *s) {
            return Err(CommandError::IssuedBeforeStart {
                id: claims.jti,
                issued_at: claims.iat,
                started_at,
            });
        }
        self.seen.insert(claims.jti, claims.exp);
        self.prune(now_unix_s);
        let command = Command {
            id: claims.jti,
            host: claims.sub,
            issued_at: claims.iat,
            expires_at: claims.exp,
            action,
        };
        Ok(command)
    }
}

/// What a token signed with the command key must carry to be taken for
/// `audience` (commands, or agent certificates): EdDSA, our issuer, and
/// `exp`, `iss`, `aud` and `sub`. Expiry is left to the caller, checked
/// against its own clock, so tests and agents with a known skew get
/// deterministic answers.
pub(crate) fn validation_for(audience: &str) -> Validation {
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.set_audience(&[audience]);
    validation.set_issuer(&[ISSUER]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_exp = false;
    validation
}

/// Whether a command expiring at `exp` is past its expiry (and the
/// tolerated skew) at `now_unix_s`.
fn expired(exp: i64, now_unix_s: i64) -> bool {
    exp.saturating_add(LEEWAY_SECS as i64) < now_unix_s
}

/// The SPKI public PEM of a PKCS#8 private PEM: what agents and the
/// pipeline verify with, for a server that was given only its signing key.
pub fn public_pem_of(private_pem: &str) -> Result<String, CommandError> {
    use ring::signature::KeyPair as _;
    let der = pem_der(private_pem).map_err(CommandError::Key)?;
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der)
        .map_err(|e| CommandError::Key(format!("not an Ed25519 PKCS#8 key: {e}")))?;
    let mut spki = ED25519_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    Ok(pem("PUBLIC KEY", &spki))
}

/// A new Ed25519 key pair as (PKCS#8 private PEM, SPKI public PEM).
pub fn generate_keypair() -> Result<(String, String), CommandError> {
    use ring::signature::KeyPair as _;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|e| CommandError::Key(e.to_string()))?;
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|e| CommandError::Key(e.to_string()))?;
    let mut spki = ED25519_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    Ok((pem("PRIVATE KEY", pkcs8.as_ref()), pem("PUBLIC KEY", &spki)))
}

/// SPKI for Ed25519 is this fixed 12-byte prefix and the key (RFC 8410).
pub(crate) const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The DER bytes of a PEM block (its base64 lines between the markers).
pub(crate) fn pem_der(pem: &str) -> Result<Vec<u8>, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("not PEM: {e}"))
}

pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).expect("base64 is ascii"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests;
