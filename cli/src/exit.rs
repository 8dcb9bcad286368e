//! What went wrong, as the exit code scripts read: 0 success; 1 other
//! errors; 2 bad usage (a malformed id or name, a comparison refused
//! without `--force`); 3 the API refused the token (401/403); 4 not found
//! (an unknown id, an aggregate without samples); 5 conflict (a live
//! profile of the target exists, a name is taken, a run has ended); 6 the
//! profile ended failed or expired, or a run ended partial.

use odp_client::ClientError;

/// The exit codes' meanings, as `--help` shows them.
pub(crate) const EXIT_CODES: &str = "Exit codes: 0 success; 1 other errors; 2 bad usage \
(a malformed id or name, a refused comparison); 3 the API refused the token (401/403); \
4 not found (an unknown id, an aggregate without samples); 5 conflict (a live profile of \
the target, a name taken, a run that has ended); 6 the profile ended failed or expired, \
or a run ended partial.";

/// An error the CLI itself decides the exit code of.
#[derive(Debug)]
pub(crate) enum CliError {
    /// Exit 2: the command line asks for something malformed or refused.
    Usage(String),
    /// Exit 4: nothing to show (an aggregate without samples).
    NotFound(String),
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(message) | CliError::NotFound(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CliError {}

/// An exit-2 error carrying `message`.
pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    CliError::Usage(message.into()).into()
}

/// The profile (or a run's member) ran but did not end well.
#[derive(Debug)]
pub(crate) struct ProfileEnded(pub(crate) String);

impl std::fmt::Display for ProfileEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileEnded {}

pub(crate) fn exit_code(error: &anyhow::Error) -> i32 {
    if error.downcast_ref::<ProfileEnded>().is_some() {
        return 6;
    }
    match error.downcast_ref::<CliError>() {
        Some(CliError::Usage(_)) => return 2,
        Some(CliError::NotFound(_)) => return 4,
        None => {}
    }
    match error
        .downcast_ref::<ClientError>()
        .and_then(ClientError::status)
    {
        Some(401 | 403) => 3,
        Some(404) => 4,
        Some(409) => 5,
        Some(400 | 422) => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_its_code() {
        assert_eq!(exit_code(&usage("bad id")), 2);
        assert_eq!(exit_code(&CliError::NotFound("empty".into()).into()), 4);
        assert_eq!(exit_code(&ProfileEnded("failed".into()).into()), 6);
        let status = |status| {
            anyhow::Error::from(ClientError::Status {
                path: "/x".into(),
                status,
                message: String::new(),
            })
        };
        assert_eq!(exit_code(&status(403)), 3);
        assert_eq!(exit_code(&status(404)), 4);
        assert_eq!(exit_code(&status(409)), 5);
        assert_eq!(exit_code(&status(422)), 2);
        assert_eq!(exit_code(&status(500)), 1);
        assert_eq!(exit_code(&anyhow::anyhow!("other")), 1);
        // Context added on the way up keeps the code.
        let wrapped = usage("bad id").context("reading");
        assert_eq!(exit_code(&wrapped), 2);
    }
}
