//! An agent running in the test's own runtime (not a child process), so a
//! test can set what flags do not reach (segment lengths, windows).

use std::ffi::OsString;
use std::path::Path;

use clap::Parser;
use odp_profiler_service::plugin::Plugins;
use odp_profiler_service::targets::ProcFs;
use odp_profiler_service::{Args, Config};
use tokio::sync::oneshot;

use super::kafka::Harness;

/// An agent running in this test's runtime until stopped.
pub struct InProcessAgent {
    stop: oneshot::Sender<()>,
    pub task: tokio::task::JoinHandle<odp_profiler_service::Result<()>>,
}

impl InProcessAgent {
    /// Starts an agent of the harness's host under `agent_id`, keeping its
    /// state in `state_dir`, its configuration changed by `configure`.
    pub fn start(
        h: &Harness,
        state_dir: &Path,
        agent_id: &str,
        configure: impl FnOnce(&mut Config),
    ) -> InProcessAgent {
        let mut flags = vec![OsString::from("odp-profiler-service")];
        flags.extend(h.agent_args());
        flags.extend(["--state-dir".into(), state_dir.into()]);
        let mut args = Args::try_parse_from(flags).unwrap();
        // The identity is the one in --identity-dir.
        (args.agent_key, args.agent_certificate) = (None, None);
        args.agent_id = Some(agent_id.to_owned());
        let mut config = args.into_config().unwrap();
        configure(&mut config);
        let plugins = Plugins::standard(ProcFs::default(), config.plugins.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(odp_profiler_service::agent::run_until(
            config,
            plugins,
            async move {
                let _ = stopped.await;
            },
        ));
        InProcessAgent { stop, task }
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().expect("the agent ran");
    }
}
