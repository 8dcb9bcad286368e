use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::{Arc, Mutex};

use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::{issue_certificate, parse_public_key};
use serde_json::{json, Value};

use super::*;
use crate::identity::Verifier;

const TOKEN: &str = "odp-enroll-the-right-one";

/// An api-server's enrollment route on loopback, plain HTTP: it certifies
/// the key of a request with [`TOKEN`] and refuses any other token with a
/// 401, as the real one does. Keeps the bodies it was sent.
struct Api {
    url: String,
    verifier: Verifier,
    bodies: Arc<Mutex<Vec<Value>>>,
}

fn api() -> Api {
    let (private, public) = generate_keypair().unwrap();
    let signer = CommandSigner::from_private_pem(&private).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&bodies);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let body = read_body(&mut stream);
            kept.lock().unwrap().push(body.clone());
            let (status, reply) = if body["token"] == TOKEN {
                let host = body["host"].as_str().unwrap();
                let key = parse_public_key(body["public_key"].as_str().unwrap()).unwrap();
                let now = odp_plumbing::signed::unix_now();
                let (id, certificate) =
                    issue_certificate(&signer, host, &key, now, now + 86_400).unwrap();
                let issued = json!({"id": id, "host": host, "certificate": certificate,
                    "public_key": body["public_key"], "issued_at": "2026-11-28T06:00:00Z",
                    "expires_at": "2026-11-29T06:00:00Z", "issued_by": "alice"});
                ("201 Created", issued)
            } else {
                let error = json!({"error": {"code": "unauthorized",
                    "message": "the enrollment token is not valid"}});
                ("401 Unauthorized", error)
            };
            let reply = reply.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    Api {
        url,
        verifier: Verifier::from_public_pem(&public).unwrap(),
        bodies,
    }
}

/// The JSON body of one HTTP request.
fn read_body(stream: &mut std::net::TcpStream) -> Value {
    let mut bytes = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        let read = stream.read(&mut chunk).unwrap();
        bytes.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return serde_json::from_slice(&bytes[end + 4..end + 4 + length]).unwrap();
            }
        }
        assert!(read > 0, "the request ended early");
    }
}

fn place(test: &str) -> IdentityPlace {
    let dir = std::env::temp_dir().join(format!("odp-enroll-{test}-{}", Uuid::new_v4()));
    IdentityPlace {
        dir,
        key: None,
        certificate: None,
    }
}

fn enrollment(api: &Api, token: &str) -> Enrollment {
    Enrollment {
        token: Secret(token.to_owned()),
        api_url: api.url.clone(),
        ca_pem: None,
    }
}

#[test]
fn a_new_agent_enrolls_sending_only_its_public_key_and_then_loads_its_identity() {
    let api = api();
    let place = place("new");
    let enrolled = place
        .enroll_if_new(&enrollment(&api, TOKEN), "web-1")
        .unwrap();
    let Enrolled::Now(id) = enrolled else {
        panic!("{enrolled:?}")
    };
    let sent = api.bodies.lock().unwrap().clone();
    let [body] = sent.as_slice() else {
        panic!("one request: {sent:?}")
    };
    assert_eq!(
        (body["token"].as_str(), body["host"].as_str()),
        (Some(TOKEN), Some("web-1"))
    );
    assert!(!body.to_string().contains("PRIVATE"), "{body}");

    let key = place.dir.join(KEY_FILE);
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let now = odp_plumbing::signed::unix_now();
    let identity = place
        .load(
            &api.verifier,
            Path::new("/etc/odp/command.pub.pem"),
            "web-1",
            now,
        )
        .unwrap();
    assert_eq!(identity.certificate().id, id);
    assert_eq!(identity.certificate().host, "web-1");

    // Started again with the same token: the identity is kept, nothing sent.
    let again = place
        .enroll_if_new(&enrollment(&api, TOKEN), "web-1")
        .unwrap();
    assert_eq!(again, Enrolled::Already);
    assert_eq!(api.bodies.lock().unwrap().len(), 1);
    std::fs::remove_dir_all(&place.dir).unwrap();
}

#[test]
fn a_refused_token_is_reported_at_once_and_writes_nothing() {
    let api = api();
    let place = place("refused");
    let error = place
        .enroll_if_new(&enrollment(&api, "odp-enroll-guessed"), "web-1")
        .unwrap_err();
    assert!(
        error.contains("refused the enrollment of host web-1")
            && error.contains("HTTP 401")
            && error.contains("not valid"),
        "{error}"
    );
    // A 4xx is not retried.
    assert_eq!(api.bodies.lock().unwrap().len(), 1);
    assert!(!place.dir.join(KEY_FILE).exists());
    assert!(!place.dir.join(CERTIFICATE_FILE).exists());
}

#[test]
fn an_identity_in_the_environment_or_half_in_the_directory_is_never_enrolled_over() {
    // Nothing listens here: a request would fail the test.
    let nowhere = Enrollment {
        token: Secret(TOKEN.to_owned()),
        api_url: "http://127.0.0.1:9".into(),
        ca_pem: None,
    };
    let from_env = IdentityPlace {
        key: Some(Secret("a key".into())),
        certificate: Some("a certificate".into()),
        ..place("env")
    };
    assert_eq!(
        from_env.enroll_if_new(&nowhere, "web-1"),
        Ok(Enrolled::Already)
    );
    let half = place("half");
    std::fs::create_dir_all(&half.dir).unwrap();
    std::fs::write(half.dir.join(CERTIFICATE_FILE), "a certificate").unwrap();
    assert_eq!(half.enroll_if_new(&nowhere, "web-1"), Ok(Enrolled::Already));
    assert!(!half.dir.join(KEY_FILE).exists());
    std::fs::remove_dir_all(&half.dir).unwrap();
}
