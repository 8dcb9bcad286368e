//! Waiting through an API that is briefly away. `odp-client` makes each
//! call once, so the loops that follow a profile or a run retry here the
//! calls that failed to reach the API or met a 5xx (an api-server
//! restarting, a proxy without upstream), and say so, instead of going
//! silent or giving up on a long wait at the first refused connection.

use std::future::Future;
use std::time::Duration;

use odp_client::ClientError;
use tokio::time::Instant;

/// How a wait retries: pauses of 1, 2, 4 then 5 units, until the API
/// has been away for `give_up_after`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub(crate) unit: Duration,
    pub(crate) give_up_after: Duration,
}

/// Seconds apart, for two minutes.
pub(crate) const WAITS: RetryPolicy = RetryPolicy {
    unit: Duration::from_secs(1),
    give_up_after: Duration::from_secs(120),
};

impl RetryPolicy {
    /// The pause before retry number `attempt` (1, 2, 4, then 5 units).
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let units = (1u32 << attempt.saturating_sub(1).min(3)).min(5);
        self.unit * units
    }
}

/// Whether `error` may pass by itself: the API was not reached, or it
/// answered with a server error.
pub(crate) fn is_transient(error: &ClientError) -> bool {
    match error {
        ClientError::Transport { .. } => true,
        ClientError::Status { status, .. } => matches!(status, 500 | 502 | 503 | 504),
        _ => false,
    }
}

/// What a wait says while it retries: `API unreachable, retrying
/// (attempt 3)…`.
pub(crate) fn retry_message(attempt: u32, error: &ClientError) -> String {
    let what = match error {
        ClientError::Status { status, .. } => format!("API answered {status}"),
        _ => "API unreachable".to_owned(),
    };
    format!("{what}, retrying (attempt {attempt})…")
}

/// Calls `call` until it answers, fails with an error that is not
/// transient, or the API has been away for the policy's
/// `give_up_after`; tells `report` the message of each retry.
pub(crate) async fn retrying<T, F, Fut>(
    policy: RetryPolicy,
    mut call: F,
    mut report: impl FnMut(&str),
) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let since = Instant::now();
    let mut attempt = 1;
    loop {
        match call().await {
            Err(error) if is_transient(&error) && since.elapsed() < policy.give_up_after => {
                attempt += 1;
                report(&retry_message(attempt, &error));
                tokio::time::sleep(policy.backoff(attempt - 1)).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> ClientError {
        ClientError::Status {
            path: "/api/v1/profiles/x".into(),
            status,
            message: String::new(),
        }
    }

    fn refused() -> ClientError {
        ClientError::Transport {
            path: "/api/v1/profiles/x".into(),
            message: "connection refused".into(),
        }
    }

    #[test]
    fn only_unreachable_and_server_errors_are_retried() {
        assert!(is_transient(&refused()));
        assert!(is_transient(&status(503)));
        assert!(!is_transient(&status(404)));
        assert!(!is_transient(&status(401)));
        assert!(!is_transient(&ClientError::Unexpected("bad body".into())));
        assert_eq!(
            retry_message(3, &refused()),
            "API unreachable, retrying (attempt 3)…"
        );
        assert_eq!(
            retry_message(2, &status(502)),
            "API answered 502, retrying (attempt 2)…"
        );
        let pauses: Vec<u64> = (1..=6).map(|a| WAITS.backoff(a).as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 5, 5, 5]);
    }

    /// Milliseconds apart, for a tenth of a second.
    const QUICK: RetryPolicy = RetryPolicy {
        unit: Duration::from_millis(1),
        give_up_after: Duration::from_millis(100),
    };

    #[tokio::test]
    async fn a_wait_says_it_retries_and_goes_on_once_the_api_answers() {
        let mut failures = vec![Err(status(503)), Err(refused()), Err(refused())];
        let mut said = Vec::new();
        let answer = retrying(
            QUICK,
            || {
                let next = failures.pop().unwrap_or(Ok(7));
                async move { next }
            },
            |message| said.push(message.to_owned()),
        )
        .await;
        assert_eq!(answer.unwrap(), 7);
        assert_eq!(
            said,
            [
                "API unreachable, retrying (attempt 2)…",
                "API unreachable, retrying (attempt 3)…",
                "API answered 503, retrying (attempt 4)…",
            ]
        );
        let gone: Result<(), _> = retrying(QUICK, || async { Err(status(404)) }, |_| {}).await;
        assert_eq!(gone.unwrap_err().status(), Some(404));
    }

    #[tokio::test]
    async fn a_wait_gives_up_when_the_api_stays_away() {
        let mut retries = 0;
        let result: Result<(), _> =
            retrying(QUICK, || async { Err(refused()) }, |_| retries += 1).await;
        assert!(matches!(result, Err(ClientError::Transport { .. })));
        // Pauses of 1, 2, 4, 5, 5... ms over 100 ms.
        assert!((2..60).contains(&retries), "{retries}");
    }
}
