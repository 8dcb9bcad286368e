//! The store's rows as the API shows them: one function per body, so the
//! store never depends on the REST contract and a field the API adds or
//! hides is decided here, beside no SQL.

use odp_api_types::{
    Channel, ControlRequest, Delivery, DeliveryAttempt, Issue, IssueStack, Profile, ProfileLinks,
    Reanalysis, Rule, RunView, Schedule,
};
use odp_core::domain::ChannelKind;
use odp_store::{
    ChannelRow, DeliveryRow, ProfileRow, RequestRow, RuleRow, ScheduleRow, ScheduleRunRow,
};

/// The profile, without the agent's runtime report and the coverage
/// (which only the profile's own page reads).
pub(crate) fn profile(row: ProfileRow) -> Profile {
    Profile {
        links: ProfileLinks::of(row.id),
        id: row.id,
        host: row.host,
        service: row.service,
        target: row.target,
        mode: row.mode,
        duration_ms: row.duration_ms,
        frequency_hz: row.frequency_hz,
        status: row.status,
        status_reason: row.status_reason,
        requested_by: row.requested_by,
        event: row.event,
        agent_id: row.agent_id,
        created_at: row.created_at,
        updated_at: row.updated_at,
        started_at: row.started_at,
        finished_at: row.finished_at,
        labels: row.labels,
        options: row.options,
        runtime: None,
        coverage: None,
    }
}

pub(crate) fn schedule(row: ScheduleRow) -> Schedule {
    let s = row.schedule;
    Schedule {
        id: s.id,
        name: s.name,
        service: s.service,
        host: s.host,
        target: s.target,
        mode: s.mode,
        duration_secs: s.duration_secs,
        frequency_hz: s.frequency_hz,
        window_secs: s.window_secs,
        cron: s.cron,
        timezone: s.timezone,
        enabled: s.enabled,
        created_by: s.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
        next_run_at: s.next_run_at,
        last_run_at: row.last_run_at,
        options: s.options,
        run: s.run_spec,
    }
}

pub(crate) fn schedule_run(run: ScheduleRunRow) -> RunView {
    RunView {
        scheduled_for: run.scheduled_for,
        fired_at: run.fired_at,
        outcome: run.outcome,
        profile_id: run.profile_id,
        run_id: run.run_id,
        detail: run.detail,
    }
}

/// The channel: its kind's fields, never the secret.
pub(crate) fn channel(row: ChannelRow) -> Channel {
    let (url, smtp_url) = match row.kind {
        ChannelKind::Webhook => (Some(row.url), None),
        ChannelKind::Email => (None, Some(row.url)),
    };
    Channel {
        id: row.id,
        name: row.name,
        kind: row.kind,
        url,
        smtp_url,
        from: row.email_from,
        to: row.email_to,
        service_pattern: row.service_pattern,
        enabled: row.enabled,
        created_at: row.created_at,
    }
}

pub(crate) fn delivery(row: DeliveryRow) -> Delivery {
    Delivery {
        id: row.id,
        profile_id: row.profile_id,
        rule_id: row.rule_id,
        rule_title: row.rule_title,
        service: row.service,
        host: row.host,
        share: row.share,
        threshold_pct: row.threshold_pct,
        detected_at: row.detected_at,
        status: row.status,
        attempts: row.attempts,
        next_attempt_at: row.next_attempt_at,
        created_at: row.created_at,
        finished_at: row.finished_at,
        attempt_log: row.attempt_log.into_iter().map(attempt).collect(),
    }
}

fn attempt(attempt: odp_store::DeliveryAttempt) -> DeliveryAttempt {
    DeliveryAttempt {
        attempt: attempt.attempt,
        attempted_at: attempt.attempted_at,
        status_code: attempt.status_code,
        error: attempt.error,
        success: attempt.success,
    }
}

pub(crate) fn rule(row: RuleRow) -> Rule {
    let rule = row.rule;
    Rule {
        id: rule.id,
        title: rule.title,
        explanation: rule.explanation,
        fix: rule.fix,
        link: rule.link,
        kind: rule.kind,
        spec: rule.spec,
        threshold_pct: rule.threshold_pct,
        service_thresholds: rule.service_thresholds,
        enabled: rule.enabled,
        source: row.source,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// The job, without the worker's cursor.
pub(crate) fn reanalysis(job: odp_store::Reanalysis) -> Reanalysis {
    Reanalysis {
        id: job.id,
        rule_id: job.rule_id,
        requested_by: job.requested_by,
        requested_at: job.requested_at,
        status: job.status,
        profiles_total: job.profiles_total,
        profiles_done: job.profiles_done,
        started_at: job.started_at,
        finished_at: job.finished_at,
        error: job.error,
    }
}

pub(crate) fn control_request(row: RequestRow) -> ControlRequest {
    ControlRequest {
        id: row.id,
        kind: row.request.kind,
        host: row.request.host,
        profile_id: row.request.profile_id,
        mode: row.request.mode,
        requested_by: row.request.requested_by,
        status: row.status,
        status_reason: row.status_reason,
        command_id: row.command_id,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

pub(crate) fn issue(issue: odp_store::Issue) -> Issue {
    Issue {
        rule_id: issue.rule_id,
        kind: issue.kind,
        title: issue.rule.title,
        explanation: issue.rule.explanation,
        fix: issue.rule.fix,
        link: issue.rule.link,
        share: issue.share,
        threshold_pct: issue.threshold_pct,
        samples_matched: issue.samples_matched,
        samples_total: issue.samples_total,
        stacks: issue.stacks.into_iter().map(issue_stack).collect(),
        detail: issue.detail,
        first_evaluated_at: issue.first_evaluated_at,
        last_evaluated_at: issue.last_evaluated_at,
    }
}

fn issue_stack(stack: odp_store::IssueStack) -> IssueStack {
    IssueStack {
        stack_id: stack.stack_id,
        count: stack.count,
        frames: stack.frames,
    }
}
