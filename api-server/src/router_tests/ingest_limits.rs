//! The ingest routes against bodies too large to take: 100 MiB streamed,
//! with a declared length and without one (which only the body limit can
//! catch), and gzip bombs. Each is answered 413 with a message, in the
//! route's own error shape; nothing is stored, the server stops reading,
//! and it takes a good push afterwards.

use std::convert::Infallible;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Bytes;
use flate2::write::GzEncoder;
use flate2::Compression;
use futures::StreamExt as _;

use super::*;

const CHUNK: usize = 1 << 20;
/// 100 MiB, in chunks of [`CHUNK`].
const CHUNKS: usize = 100;
/// The one buffer every chunk of a streamed body is.
static ZEROS: [u8; CHUNK] = [0; CHUNK];
const BOUNDARY: &str = "odp-test-boundary";

/// An ingest route and how a client sends to it.
struct Route {
    path: &'static str,
    content_type: &'static str,
    /// The content type of the route's errors.
    answers_in: &'static str,
}

const ROUTES: [Route; 5] = [
    Route {
        path: "/v1development/profiles",
        content_type: "application/x-protobuf",
        answers_in: "application/x-protobuf",
    },
    Route {
        path: "/v1development/profiles",
        content_type: "application/json",
        answers_in: "application/json",
    },
    Route {
        path: "/ingest?name=big.cpu&format=folded",
        content_type: "text/plain",
        answers_in: "application/json",
    },
    Route {
        path: "/ingest?name=big.cpu&format=pprof",
        content_type: "multipart/form-data; boundary=odp-test-boundary",
        answers_in: "application/json",
    },
    Route {
        path: "/push.v1.PusherService/Push",
        content_type: "application/proto",
        answers_in: "application/json",
    },
];

/// 100 MiB of zeros, streamed (a multipart form's part header first, for
/// a form), counting the chunks the server pulled.
fn streamed(route: &Route, pulled: Arc<AtomicUsize>) -> Body {
    let head = if route.content_type.starts_with("multipart/") {
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"profile\"; \
             filename=\"profile.pprof\"\r\n\r\n"
        )
    } else {
        String::new()
    };
    let zeros = futures::stream::iter(0..CHUNKS).map(move |_| {
        pulled.fetch_add(1, Ordering::Relaxed);
        Bytes::from_static(&ZEROS)
    });
    let chunks = futures::stream::once(async move { Bytes::from(head) }).chain(zeros);
    Body::from_stream(chunks.map(Ok::<_, Infallible>))
}

/// 200 MiB of zeros, gzip-compressed to a few hundred KiB (at the best
/// level: zlib-rs's fastest level keeps runs of zeros ten times larger).
fn gzip_bomb() -> Bytes {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    for _ in 0..200 {
        encoder.write_all(&ZEROS).unwrap();
    }
    Bytes::from(encoder.finish().unwrap())
}

struct Answer {
    status: StatusCode,
    content_type: String,
    /// The body as text: every error shape (JSON, or a protobuf
    /// `google.rpc.Status`) carries its message as UTF-8.
    text: String,
}

impl Answer {
    /// Checks this is a 413 saying `message`, in `route`'s error shape.
    fn is_413(&self, route: &Route, message: &str, case: &str) {
        let text = &self.text;
        assert_eq!(self.status, StatusCode::PAYLOAD_TOO_LARGE, "{case}: {text}");
        assert!(text.contains(message), "{case}: {text}");
        assert_eq!(self.content_type, route.answers_in, "{case}");
    }
}

impl InProcess {
    /// Posts `body` to `route` as an ingest token of every service.
    async fn push(&self, route: &Route, extra: &[(&str, String)], body: Body) -> Answer {
        let grant = Grant {
            subject: "pusher".into(),
            role: Role::Ingest,
            services: vec!["*".into()],
        };
        let token = mint_hs256(SECRET, &grant, chrono::Utc::now().timestamp(), 300).unwrap();
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(route.path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, route.content_type);
        for (name, value) in extra {
            request = request.header(*name, value);
        }
        let response = app(self.state.clone())
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            content_type,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    async fn stored(&self) -> Vec<odp_store::ProfileRow> {
        let filter = odp_store::ProfileFilter {
            limit: 100,
            ..Default::default()
        };
        Profiles::new(&self.state.pool).list(&filter).await.unwrap()
    }
}

#[tokio::test]
async fn a_100_mib_body_is_refused_with_413_and_nothing_stored() {
    let api = InProcess::start().await;
    for route in &ROUTES {
        for declared in [false, true] {
            let case = format!("{} {}, declared {declared}", route.path, route.content_type);
            let pulled = Arc::new(AtomicUsize::new(0));
            let length = [(
                header::CONTENT_LENGTH.as_str(),
                (CHUNKS * CHUNK).to_string(),
            )];
            let extra: &[(&str, String)] = if declared { &length } else { &[] };
            let answer = api
                .push(route, extra, streamed(route, pulled.clone()))
                .await;
            answer.is_413(route, "the request body exceeds 33554432 bytes", &case);
            // A declared length over the limit is refused unread; another
            // body is read only up to the limit.
            let pulled = pulled.load(Ordering::Relaxed);
            let most = if declared { 0 } else { 33 };
            assert!(pulled <= most, "{case}: read {pulled} MiB");
        }
    }
    assert!(api.stored().await.is_empty());
    still_takes_a_good_push(&api).await;
}

#[tokio::test]
async fn a_gzip_bomb_is_refused_with_413_and_nothing_stored() {
    let api = InProcess::start().await;
    let bomb = gzip_bomb();
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    // Every route that undoes a gzip Content-Encoding (a multipart form's
    // parts are not encoded as a whole).
    let gzip = [(header::CONTENT_ENCODING.as_str(), "gzip".to_owned())];
    for route in ROUTES
        .iter()
        .filter(|r| !r.content_type.starts_with("multipart/"))
    {
        let case = format!("{} {}", route.path, route.content_type);
        let answer = api.push(route, &gzip, Body::from(bomb.clone())).await;
        answer.is_413(route, "inflates to more than 134217728 bytes", &case);
    }
    assert!(api.stored().await.is_empty());
    still_takes_a_good_push(&api).await;
}

/// The server answers its health check and stores a good push.
async fn still_takes_a_good_push(api: &InProcess) {
    let (status, body) = api.call(Method::GET, "/healthz", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let folded = &ROUTES[2];
    let answer = api
        .push(folded, &[], Body::from("main;work 3\nmain;idle 1\n"))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let stored = api.stored().await;
    let [profile] = stored.as_slice() else {
        panic!("one profile: {stored:?}")
    };
    assert_eq!(profile.service, "big");
}
