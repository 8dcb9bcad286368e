//! Signed commands from the api-server to host agents (`odp.commands`).
//!
//! A command travels as a compact JWS signed with Ed25519 (EdDSA). The
//! claims carry a unique id (`jti`, also the replay nonce), the target host
//! (`sub`), issue and expiry times, and the action. An agent acts on a
//! command only if the signature verifies against the api-server's public
//! key, the command is addressed to its own host, it has not expired and it
//! has not been seen before.

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
    #[error("signing failed: {0}")]
    Signing(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartProfile {
    pub profile_id: Uuid,
    pub target: Target,
    pub duration_ms: u64,
    pub frequency_hz: u32,
    /// Aggregation window; the agent's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The action as JSON: a start may carry the optional fields of
    /// [`StartOptions`] beside those of [`StartProfile`].
    cmd: serde_json::Value,
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
        self.sign_with_options(command, &StartOptions::default())
    }

    /// Signs a command whose start action carries cost-control options (the
    /// options are ignored for other actions). Agents that do not know an
    /// option ignore it.
    pub fn sign_with_options(
        &self,
        command: &Command,
        options: &StartOptions,
    ) -> Result<String, CommandError> {
        let json = |e: serde_json::Error| CommandError::Signing(e.to_string());
        let mut cmd = serde_json::to_value(&command.action).map_err(json)?;
        if let (CommandAction::Start(_), Some(fields)) = (&command.action, cmd.as_object_mut()) {
            if let serde_json::Value::Object(extra) = serde_json::to_value(options).map_err(json)? {
                fields.extend(extra);
            }
        }
        let claims = Claims {
            jti: command.id,
            iss: ISSUER.to_owned(),
            aud: AUDIENCE.to_owned(),
            sub: command.host.clone(),
            iat: command.issued_at,
            exp: command.expires_at,
            cmd,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &self.key)
            .map_err(|e| CommandError::Signing(e.to_string()))
    }
}

/// Verifies commands on an agent and remembers their ids until they expire,
/// so a captured command cannot be replayed.
pub struct CommandVerifier {
    key: DecodingKey,
    host: String,
    seen: HashMap<Uuid, i64>,
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
        })
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
        self.verify_with_options(token, now_unix_s)
            .map(|(command, _)| command)
    }

    /// Like [`verify`](Self::verify), also returning the cost-control
    /// options of a start action (all absent for other actions).
    pub fn verify_with_options(
        &mut self,
        token: &str,
        now_unix_s: i64,
    ) -> Result<(Command, StartOptions), CommandError> {
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.set_audience(&[AUDIENCE]);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Expiry is checked below against the caller's clock, so tests and
        // agents with a known skew get deterministic answers.
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<Claims>(token, &self.key, &validation)
            .map_err(|e| CommandError::Invalid(e.to_string()))?
            .claims;
        let invalid = |e: serde_json::Error| CommandError::Invalid(e.to_string());
        let action: CommandAction = serde_json::from_value(claims.cmd.clone()).map_err(invalid)?;
        let options = match action {
            CommandAction::Start(_) => serde_json::from_value(claims.cmd).map_err(invalid)?,
            _ => StartOptions::default(),
        };
        if claims.exp + (LEEWAY_SECS as i64) < now_unix_s {
            return Err(CommandError::Expired {
                expires_at: claims.exp,
            });
        }
        if claims.sub != self.host {
            return Err(CommandError::WrongHost {
                expected: self.host.clone(),
                got: claims.sub,
            });
        }
        self.seen
            .retain(|_, exp| *exp + (LEEWAY_SECS as i64) >= now_unix_s);
        if self.seen.insert(claims.jti, claims.exp).is_some() {
            return Err(CommandError::Replayed(claims.jti));
        }
        let command = Command {
            id: claims.jti,
            host: claims.sub,
            issued_at: claims.iat,
            expires_at: claims.exp,
            action,
        };
        Ok((command, options))
    }
}

/// A new Ed25519 key pair as (PKCS#8 private PEM, SPKI public PEM).
pub fn generate_keypair() -> Result<(String, String), CommandError> {
    use ring::signature::KeyPair as _;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|e| CommandError::Key(e.to_string()))?;
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|e| CommandError::Key(e.to_string()))?;
    // SPKI for Ed25519 is a fixed 12-byte prefix (RFC 8410) and the key.
    let mut spki = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    spki.extend_from_slice(pair.public_key().as_ref());
    Ok((pem("PRIVATE KEY", pkcs8.as_ref()), pem("PUBLIC KEY", &spki)))
}

fn pem(label: &str, der: &[u8]) -> String {
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
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn undeploy_modes_parse_the_names_they_travel_as() {
        for mode in [UndeployMode::Now, UndeployMode::Drain] {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, mode.as_str());
            assert_eq!(mode.as_str().parse::<UndeployMode>().unwrap(), mode);
        }
        assert!("later".parse::<UndeployMode>().is_err());
    }

    fn start_command(host: &str) -> Command {
        Command {
            id: Uuid::new_v4(),
            host: host.into(),
            issued_at: NOW,
            expires_at: NOW + 60,
            action: CommandAction::Start(StartProfile {
                profile_id: Uuid::new_v4(),
                target: Target::ProcessName("demo".into()),
                duration_ms: 10_000,
                frequency_hz: 99,
                window_ms: None,
            }),
        }
    }

    fn pair() -> (CommandSigner, String) {
        let (private, public) = generate_keypair().unwrap();
        (CommandSigner::from_private_pem(&private).unwrap(), public)
    }

    #[test]
    fn signed_command_verifies_once() {
        let (signer, public) = pair();
        let command = start_command("host-a");
        let token = signer.sign(&command).unwrap();
        let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
        assert_eq!(verifier.verify(&token, NOW + 1).unwrap(), command);
        assert!(
            matches!(verifier.verify(&token, NOW + 2), Err(CommandError::Replayed(id)) if id == command.id)
        );
        assert_eq!(CommandVerifier::unverified_id(&token), Some(command.id));
    }

    #[test]
    fn rejects_other_hosts_expired_and_forged_commands() {
        let (signer, public) = pair();
        let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
        let token = signer.sign(&start_command("host-b")).unwrap();
        assert!(matches!(
            verifier.verify(&token, NOW),
            Err(CommandError::WrongHost { .. })
        ));
        let token = signer.sign(&start_command("host-a")).unwrap();
        assert!(matches!(
            verifier.verify(&token, NOW + 3600),
            Err(CommandError::Expired { .. })
        ));

        let (forger, _) = pair();
        let forged = forger.sign(&start_command("host-a")).unwrap();
        assert!(matches!(
            verifier.verify(&forged, NOW),
            Err(CommandError::Invalid(_))
        ));
        assert!(matches!(
            verifier.verify("garbage", NOW),
            Err(CommandError::Invalid(_))
        ));
        assert_eq!(CommandVerifier::unverified_id("garbage"), None);
    }

    #[test]
    fn tampered_payload_fails_signature() {
        let (signer, public) = pair();
        let token = signer.sign(&start_command("host-a")).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = String::from_utf8(engine.decode(parts[1]).unwrap()).unwrap();
        let tampered = engine.encode(payload.replace("\"demo\"", "\"sshd\""));
        let token = format!("{}.{}.{}", parts[0], tampered, parts[2]);
        let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
        assert!(matches!(
            verifier.verify(&token, NOW),
            Err(CommandError::Invalid(_))
        ));
    }

    fn sync_command(host: &str) -> Command {
        use crate::service::ServiceDefinition;
        Command {
            id: Uuid::new_v4(),
            host: host.into(),
            issued_at: NOW,
            expires_at: NOW + 60,
            action: CommandAction::SyncServices(SyncServices::new(vec![
                ServiceDefinition {
                    name: "checkout".into(),
                    target: Target::ProcessName("checkout".into()),
                },
                ServiceDefinition {
                    name: "cart".into(),
                    target: Target::Cgroup("/system.slice/cart.service".into()),
                },
            ])),
        }
    }

    #[test]
    fn sync_services_round_trips_and_is_checked_like_any_command() {
        let (signer, public) = pair();
        let command = sync_command("host-a");
        let token = signer.sign(&command).unwrap();

        // The action as it travels in the `cmd` claim.
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = engine.decode(token.split('.').nth(1).unwrap()).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        let CommandAction::SyncServices(sync) = &command.action else {
            unreachable!()
        };
        assert_eq!(
            claims["cmd"],
            serde_json::json!({
                "kind": "sync_services",
                "services": [
                    {"name": "cart", "target": {"by": "cgroup", "value": "/system.slice/cart.service"}},
                    {"name": "checkout", "target": {"by": "process_name", "value": "checkout"}},
                ],
                "digest": sync.digest,
            })
        );

        let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
        let (verified, options) = verifier.verify_with_options(&token, NOW + 1).unwrap();
        assert_eq!(verified, command);
        assert_eq!(options, StartOptions::default());
        let CommandAction::SyncServices(got) = verified.action else {
            panic!("expected a sync")
        };
        got.check().unwrap();
        assert!(matches!(
            verifier.verify(&token, NOW + 2),
            Err(CommandError::Replayed(_))
        ));

        // Expired, forged, another host's: refused before the action.
        let late = signer.sign(&sync_command("host-a")).unwrap();
        assert!(matches!(
            verifier.verify(&late, NOW + 3600),
            Err(CommandError::Expired { .. })
        ));
        let (forger, _) = pair();
        let forged = forger.sign(&sync_command("host-a")).unwrap();
        assert!(matches!(
            verifier.verify(&forged, NOW),
            Err(CommandError::Invalid(_))
        ));
        let other = signer.sign(&sync_command("host-b")).unwrap();
        assert!(matches!(
            verifier.verify(&other, NOW),
            Err(CommandError::WrongHost { .. })
        ));
        // A definition swapped in transit breaks the signature.
        let parts: Vec<&str> = token.split('.').collect();
        let text = String::from_utf8(engine.decode(parts[1]).unwrap()).unwrap();
        let tampered = engine.encode(text.replace("\"checkout\"}", "\"sshd\"}"));
        assert_ne!(tampered, parts[1]);
        let tampered = format!("{}.{}.{}", parts[0], tampered, parts[2]);
        let mut fresh = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
        assert!(matches!(
            fresh.verify(&tampered, NOW),
            Err(CommandError::Invalid(_))
        ));
    }

    #[test]
    fn bad_keys_are_errors() {
        assert!(CommandSigner::from_private_pem("nope").is_err());
        assert!(CommandVerifier::from_public_pem("nope", "h").is_err());
    }
}
