//! The control plane: [`dispatch`] signs commands and publishes them to
//! the agents, [`deploy`] starts an agent on a host that has none,
//! [`heartbeats`] tells which agents are live, and this module keeps the
//! control requests other than starts (deploy, undeploy, stop), stored
//! with who asked and how they went. Their HTTP side is
//! `routes/hosts.rs` and `routes/requests.rs`.
//!
//! A deploy runs the configured deployer when the host has no live agent
//! and ends with the host's first heartbeat; the reconciler below settles
//! every open request from what the database shows, so the outcome
//! survives an api-server restart.

pub(crate) mod deploy;
pub(crate) mod dispatch;
pub(crate) mod heartbeats;
pub(crate) mod services_sync;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use odp_store::Database;
use odp_store::{NewRequest, RequestDeadlines, RequestKind, RequestRow, RequestStatus, Requests};
use uuid::Uuid;

use self::deploy::{DeployOptions, Deployer, IssueIdentity};
use self::heartbeats::HeartbeatTracker;
use crate::service_error::ServiceError;

/// `undeploy mode=drain` may wait for the longest profile (1 h) to end.
const DRAIN_DEADLINE_SECS: i64 = 2 * 3600;
const RECONCILE_EVERY: Duration = Duration::from_secs(2);

pub struct Control {
    pub requests: Requests,
    pool: Database,
    deployer: Option<Arc<dyn Deployer>>,
    deadlines: RequestDeadlines,
    /// Heartbeats heard straight from Kafka, ahead of the pipeline.
    heartbeats: Option<Arc<HeartbeatTracker>>,
}

/// What a deploy request came to at once.
pub enum DeployOutcome {
    /// The host already had a live agent.
    AlreadyLive(RequestRow),
    /// The deployer runs; the request ends with the first heartbeat.
    Started(RequestRow),
    /// Another deploy of the host is in flight; this is it.
    InFlight(RequestRow),
}

impl Control {
    /// `command_secs`: how long a stop or an undeploy (now) may take;
    /// `identities` issues the identity of each agent the deployer starts.
    pub(crate) fn new(
        pool: Database,
        options: &DeployOptions,
        command_secs: i64,
        identities: Arc<dyn IssueIdentity>,
    ) -> Result<Self, crate::control::deploy::DeployConfigError> {
        Ok(Control {
            requests: Requests::new(pool.clone()),
            pool,
            deployer: options.build(identities)?.map(Arc::from),
            deadlines: RequestDeadlines {
                live_within_secs: options.agent_live_secs,
                deploy_secs: options.deploy_timeout_secs,
                command_secs,
                drain_secs: DRAIN_DEADLINE_SECS,
            },
            heartbeats: None,
        })
    }

    /// The heartbeats heard straight from Kafka, if followed.
    pub(crate) fn heartbeats(&self) -> Option<Arc<HeartbeatTracker>> {
        self.heartbeats.clone()
    }

    /// Also counts heartbeats `tracker` heard as liveness.
    pub fn with_heartbeats(self, tracker: Arc<HeartbeatTracker>) -> Self {
        Control {
            heartbeats: Some(tracker),
            ..self
        }
    }

    /// How recent a heartbeat must be for its agent to count as live.
    pub fn live_within_secs(&self) -> i64 {
        self.deadlines.live_within_secs
    }

    /// [`Self::live_within_secs`] as a duration.
    pub fn live_within(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.deadlines.live_within_secs.max(0).unsigned_abs())
    }

    pub fn deployer_name(&self) -> Option<&'static str> {
        self.deployer.as_ref().map(|d| d.name())
    }

    /// Whether `host`'s agent heartbeated recently: as heard on Kafka by
    /// this server, or as stored by the pipeline (which may lag, and which
    /// a server that just started has not heard yet).
    pub async fn host_is_live(&self, host: &str) -> Result<bool, ServiceError> {
        let within = self.deadlines.live_within_secs;
        let heard = self
            .heartbeats
            .as_ref()
            .is_some_and(|tracker| tracker.heard_within(host, Duration::from_secs(within as u64)));
        Ok(heard || odp_store::host_is_live(&self.pool, host, within).await?)
    }

    /// Deploys an agent to `host` unless one is live there already.
    pub async fn deploy(
        &self,
        host: &str,
        requested_by: &str,
    ) -> Result<DeployOutcome, ServiceError> {
        let new = NewRequest {
            kind: RequestKind::Deploy,
            host: host.to_owned(),
            profile_id: None,
            mode: None,
            requested_by: requested_by.to_owned(),
        };
        let request = match self.requests.insert(&new).await? {
            Ok(request) => request,
            Err(in_flight) => return Ok(DeployOutcome::InFlight(in_flight)),
        };
        if self.host_is_live(host).await? {
            let reason = "an agent is already live on the host";
            let request = self
                .settle(request.id, RequestStatus::Finished, reason)
                .await?;
            return Ok(DeployOutcome::AlreadyLive(request));
        }
        let Some(deployer) = self.deployer.clone() else {
            let reason = "no live agent on the host and no deployer configured (--deployer)";
            self.settle(request.id, RequestStatus::Failed, reason)
                .await?;
            return Err(ServiceError::Conflict(format!(
                "cannot deploy to {host}: {reason}"
            )));
        };
        let reason = format!("the {} deployer runs", deployer.name());
        let request = self
            .settle(request.id, RequestStatus::Running, &reason)
            .await?;
        let (requests, id, host) = (self.requests.clone(), request.id, host.to_owned());
        tokio::spawn(async move {
            if let Err(reason) = deployer.deploy(&host).await {
                tracing::warn!(%host, %reason, "deploy failed");
                let reason = reason.to_string();
                let failed = requests.transition(id, RequestStatus::Failed, Some(&reason), None);
                if let Err(e) = failed.await {
                    tracing::error!(error = %e, "recording a failed deploy");
                }
            }
        });
        Ok(DeployOutcome::Started(request))
    }

    /// Records a request carried out by one signed command: `send`
    /// publishes it and returns the command id.
    pub async fn record_command<F>(
        &self,
        new: NewRequest,
        send: F,
    ) -> Result<RequestRow, ServiceError>
    where
        F: Future<Output = Result<Uuid, ServiceError>>,
    {
        let request = match self.requests.insert(&new).await? {
            Ok(request) | Err(request) => request,
        };
        match send.await {
            Ok(command_id) => {
                let requests = &self.requests;
                let dispatched = RequestStatus::Dispatched;
                requests
                    .transition(request.id, dispatched, None, Some(command_id))
                    .await?;
                self.load(request.id).await
            }
            Err(e) => {
                let reason = e.to_string();
                self.settle(request.id, RequestStatus::Failed, &reason)
                    .await?;
                Err(e)
            }
        }
    }

    pub async fn load(&self, id: Uuid) -> Result<RequestRow, ServiceError> {
        self.requests
            .get(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no request {id}")))
    }

    async fn settle(
        &self,
        id: Uuid,
        status: RequestStatus,
        reason: &str,
    ) -> Result<RequestRow, ServiceError> {
        self.requests
            .transition(id, status, Some(reason), None)
            .await?;
        self.load(id).await
    }

    /// Settles open requests every few seconds, for as long as it runs.
    pub async fn reconcile_forever(self: Arc<Self>) {
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        loop {
            tick.tick().await;
            match odp_store::resolve_open_requests(&self.pool, self.deadlines).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(settled = n, "control requests settled"),
                Err(e) => tracing::warn!(error = %e, "settling control requests failed"),
            }
        }
    }
}
