//! Start commands as they travel: pinned to tokens signed before the
//! options became a field of [`StartProfile`] (by `sign_with_options`,
//! which added them to the action's JSON). Agents and api-servers are
//! upgraded one at a time, so either side must read the other's tokens,
//! and the same command must sign to the same bytes.

use super::*;
use crate::cost::{DutyCycle, FdaSettings};
use crate::model::{EventKind, Language};

/// A test key, used for nothing else.
const PRIVATE_PEM: &str = "-----BEGIN PRIVATE KEY-----
MFECAQEwBQYDK2VwBCIEIIxFdpD6YMN5O05IMlWbeEpv5fqZAuqts+R+UQzdTBWI
gSEA8sNQVuImYaS+3ertEwUxUatR5ikRO55/KTrnugRDRPw=
-----END PRIVATE KEY-----
";

/// [`start`] with [`every_option`], signed by the code before.
const SIGNED_WITH_OPTIONS: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFZERTQSJ9.eyJqdGkiOiIxMTExMjIyMi0zMzMzLTQ0NDQtNTU1NS02NjY2Nzc3Nzg4ODgiLCJpc3MiOiJvZHAtYXBpLXNlcnZlciIsImF1ZCI6Im9kcC1hZ2VudCIsInN1YiI6Imhvc3QtYSIsImlhdCI6MTgwMDAwMDAwMCwiZXhwIjoxODAwMDAwMDYwLCJjbWQiOnsiZHVyYXRpb25fbXMiOjMwMDAwLCJkdXR5X2N5Y2xlIjp7Im9uX21zIjoxMDAwLCJwZXJpb2RfbXMiOjUwMDB9LCJldmVudCI6Im9mZi1jcHUiLCJmZGEiOnsiZW5hYmxlZCI6dHJ1ZSwibGFtYmRhIjowLjgsIm1heF9oeiI6NDk5LCJtaW5faHoiOjE5LCJzdGFibGVfd2luZG93cyI6NSwidGhldGEiOjAuMSwidG9wX24iOjEwfSwiZnJlcXVlbmN5X2h6Ijo5OSwiZnNwX3NoYXJlIjowLjksImluY2x1ZGVfY2hpbGRyZW4iOnRydWUsImtpbmQiOiJzdGFydCIsIm1pbl93YWl0X3VzIjo1MCwib3ZlcmhlYWRfYnVkZ2V0IjowLjAyLCJwbHVnaW4iOiJuYXRpdmUiLCJwcm9maWxlX2lkIjoiOTk5OWFhYWEtYmJiYi1jY2NjLWRkZGQtZWVlZWZmZmYwMDAwIiwidGFyZ2V0Ijp7ImJ5IjoicGlkIiwidmFsdWUiOjQyNDJ9LCJ3aW5kb3dfbXMiOjUwMDB9fQ.SkFclw-QN3T1O_J_PYcXmjhTZFXLjXjVMwDxf_4oCNAh_h2beXIlEXCq7U4LJ7oipVeXpkivn3PVuzLJ-cHOAQ";

/// [`start`] without options, signed by the code before.
const SIGNED_WITHOUT_OPTIONS: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFZERTQSJ9.eyJqdGkiOiIxMTExMjIyMi0zMzMzLTQ0NDQtNTU1NS02NjY2Nzc3Nzg4ODgiLCJpc3MiOiJvZHAtYXBpLXNlcnZlciIsImF1ZCI6Im9kcC1hZ2VudCIsInN1YiI6Imhvc3QtYSIsImlhdCI6MTgwMDAwMDAwMCwiZXhwIjoxODAwMDAwMDYwLCJjbWQiOnsiZHVyYXRpb25fbXMiOjMwMDAwLCJmcmVxdWVuY3lfaHoiOjk5LCJraW5kIjoic3RhcnQiLCJwcm9maWxlX2lkIjoiOTk5OWFhYWEtYmJiYi1jY2NjLWRkZGQtZWVlZWZmZmYwMDAwIiwidGFyZ2V0Ijp7ImJ5IjoicGlkIiwidmFsdWUiOjQyNDJ9LCJ3aW5kb3dfbXMiOjUwMDB9fQ.DCTrvi6DMtZxb0Sfcok3jmeNXl8i2NLmj6o18DARNJs1HXUE1MndiTlvLh9omqfoH7Y_yTyBek3yk5a9-PTVDA";

fn every_option() -> StartOptions {
    StartOptions {
        fsp_share: Some(0.9),
        fda: Some(FdaSettings {
            theta: 0.1,
            max_hz: Some(499),
            ..FdaSettings::default()
        }),
        duty_cycle: Some(DutyCycle {
            on_ms: 1000,
            period_ms: 5000,
        }),
        overhead_budget: Some(0.02),
        plugin: Some(Language::Native),
        event: Some(EventKind::OffCpu),
        min_wait_us: Some(50),
        include_children: true,
    }
}

fn start(options: StartOptions) -> Command {
    Command {
        id: Uuid::from_u128(0x1111_2222_3333_4444_5555_6666_7777_8888),
        host: "host-a".into(),
        issued_at: NOW,
        expires_at: NOW + 60,
        action: CommandAction::Start(StartProfile {
            profile_id: Uuid::from_u128(0x9999_aaaa_bbbb_cccc_dddd_eeee_ffff_0000),
            target: Target::Pid(4242),
            duration_ms: 30_000,
            frequency_hz: 99,
            window_ms: Some(5_000),
            options,
        }),
    }
}

fn claims(token: &str) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = engine.decode(token.split('.').nth(1).unwrap()).unwrap();
    String::from_utf8(payload).unwrap()
}

#[test]
fn a_start_signs_to_the_same_bytes_as_before() {
    let signer = CommandSigner::from_private_pem(PRIVATE_PEM).unwrap();
    // Ed25519 signatures are deterministic: same claims, same token.
    assert_eq!(
        signer.sign(&start(every_option())).unwrap(),
        SIGNED_WITH_OPTIONS
    );
    assert_eq!(
        signer.sign(&start(StartOptions::default())).unwrap(),
        SIGNED_WITHOUT_OPTIONS
    );
    // The options sit beside the start's own fields, sorted with them.
    assert_eq!(
        claims(SIGNED_WITH_OPTIONS),
        r#"{"jti":"11112222-3333-4444-5555-666677778888","iss":"odp-api-server","aud":"odp-agent","sub":"host-a","iat":1800000000,"exp":1800000060,"cmd":{"duration_ms":30000,"duty_cycle":{"on_ms":1000,"period_ms":5000},"event":"off-cpu","fda":{"enabled":true,"lambda":0.8,"max_hz":499,"min_hz":19,"stable_windows":5,"theta":0.1,"top_n":10},"frequency_hz":99,"fsp_share":0.9,"include_children":true,"kind":"start","min_wait_us":50,"overhead_budget":0.02,"plugin":"native","profile_id":"9999aaaa-bbbb-cccc-dddd-eeeeffff0000","target":{"by":"pid","value":4242},"window_ms":5000}}"#
    );
    // Absent options add no field, not even a null.
    assert_eq!(
        claims(SIGNED_WITHOUT_OPTIONS),
        r#"{"jti":"11112222-3333-4444-5555-666677778888","iss":"odp-api-server","aud":"odp-agent","sub":"host-a","iat":1800000000,"exp":1800000060,"cmd":{"duration_ms":30000,"frequency_hz":99,"kind":"start","profile_id":"9999aaaa-bbbb-cccc-dddd-eeeeffff0000","target":{"by":"pid","value":4242},"window_ms":5000}}"#
    );
}

#[test]
fn a_start_signed_before_verifies_with_its_options() {
    let public = public_pem_of(PRIVATE_PEM).unwrap();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert_eq!(
        verifier.verify(SIGNED_WITH_OPTIONS, NOW).unwrap(),
        start(every_option())
    );
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert_eq!(
        verifier.verify(SIGNED_WITHOUT_OPTIONS, NOW).unwrap(),
        start(StartOptions::default())
    );
}

#[test]
fn an_option_this_build_does_not_know_is_ignored() {
    let signer = CommandSigner::from_private_pem(PRIVATE_PEM).unwrap();
    let command = start(every_option());
    let mut claims = Claims::of(&command).unwrap();
    claims.cmd["option_of_a_later_release"] = serde_json::json!({"on": true});
    let token = signer.sign_claims(&claims).unwrap();
    let public = public_pem_of(PRIVATE_PEM).unwrap();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert_eq!(verifier.verify(&token, NOW).unwrap(), command);
}
