//! Cron expressions in IANA time zones, and what a scheduler tick does with
//! a schedule's due occurrences. Pure: every function takes its times.
//!
//! Expressions are either the standard 5 fields (`minute hour
//! day-of-month month day-of-week`, fired at second 0) or the `cron`
//! crate's 6 or 7 fields (`second minute hour day-of-month month
//! day-of-week [year]`). Day-of-week must be written with names
//! (`MON-FRI`, `SUN`): dialects number weekdays differently (0 or 1 for
//! Sunday), and a silently shifted weekday is worse than a clear error.
//! A day-of-month and a day-of-week that are both restricted must both
//! match (the `cron` crate's rule; classic cron fires when either does).

use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use cron::TimeUnitSpec;

/// How far back a tick enumerates occurrences missed during downtime;
/// older ones are neither fired nor recorded.
pub(crate) const MAX_CATCH_UP: Duration = Duration::days(7);
/// At most this many missed occurrences (the latest) are recorded per tick.
pub(crate) const MAX_MISSED_RECORDED: usize = 1000;

/// Why a schedule's cron expression or zone is refused; the message is
/// for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CronError {
    #[error("unknown time zone {0:?}: use an IANA name such as `Europe/Paris` or `UTC`")]
    Zone(String),
    #[error("`cron` must be at most 200 characters")]
    TooLong,
    #[error(
        "`cron` has {0} fields: give 5 (minute hour day-of-month month \
         day-of-week), or 6 or 7 with seconds first and an optional year"
    )]
    Fields(usize),
    #[error("write day-of-week with names (MON-FRI, SUN), not numbers: {0:?}")]
    NumericDayOfWeek(String),
    #[error("invalid cron expression {expression:?}: {reason}")]
    Invalid { expression: String, reason: String },
    #[error("{0:?} fires more often than once a minute; schedules may fire at most once a minute")]
    SubMinute(String),
}

/// A validated cron expression in a time zone.
#[derive(Debug, Clone)]
pub(crate) struct CronSchedule {
    schedule: cron::Schedule,
    zone: Tz,
}

impl CronSchedule {
    /// Parses and checks `expression` in `timezone`; the error is a
    /// message for the user. Schedules firing more often than once a
    /// minute are refused unless `allow_sub_minute`.
    pub(crate) fn parse(
        expression: &str,
        timezone: &str,
        allow_sub_minute: bool,
    ) -> Result<Self, CronError> {
        let zone = Tz::from_str(timezone).map_err(|_| CronError::Zone(timezone.to_owned()))?;
        if expression.len() > 200 {
            return Err(CronError::TooLong);
        }
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let (full, day_of_week) = match fields.len() {
            5 => (format!("0 {}", fields.join(" ")), fields[4]),
            6 | 7 => (fields.join(" "), fields[5]),
            n => return Err(CronError::Fields(n)),
        };
        if day_of_week.chars().any(|c| c.is_ascii_digit()) {
            return Err(CronError::NumericDayOfWeek(day_of_week.to_owned()));
        }
        let schedule = cron::Schedule::from_str(&full).map_err(|e| CronError::Invalid {
            expression: expression.to_owned(),
            reason: e.to_string(),
        })?;
        if schedule.seconds().count() > 1 && !allow_sub_minute {
            return Err(CronError::SubMinute(expression.to_owned()));
        }
        Ok(CronSchedule { schedule, zone })
    }

    /// The first occurrence strictly after `t`; `None` if there is none
    /// (e.g. a year that has passed).
    pub(crate) fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.schedule
            .after(&t.with_timezone(&self.zone))
            .next()
            .map(|o| o.with_timezone(&Utc))
    }

    /// Occurrences in `[from, to]`, oldest first.
    fn between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> impl Iterator<Item = DateTime<Utc>> + '_ {
        // `after` is exclusive and the crate works in whole seconds.
        let start = (from - Duration::seconds(1)).with_timezone(&self.zone);
        self.schedule
            .after(&start)
            .map(|o| o.with_timezone(&Utc))
            .skip_while(move |o| *o < from)
            .take_while(move |o| *o <= to)
    }
}

/// What one tick does with one due schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TickPlan {
    /// Occurrences not fired, oldest first (at most [`MAX_MISSED_RECORDED`]).
    pub missed: Vec<DateTime<Utc>>,
    /// How many more missed occurrences were left unrecorded.
    pub missed_unrecorded: u64,
    /// The occurrence to fire now, if the latest is within the grace.
    pub fire: Option<DateTime<Utc>>,
    /// The schedule's next occurrence after `now`.
    pub next_run_at: Option<DateTime<Utc>>,
}

/// Plans a tick at `now` for a schedule due since `next_run_at`: every
/// occurrence in `[next_run_at, now]` but the latest is missed (no
/// scheduler ran then, so they are reported, not fired in bulk); the
/// latest fires if it fell due at most `grace` ago, else it is missed too.
pub(crate) fn plan_tick(
    schedule: &CronSchedule,
    next_run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    grace: Duration,
) -> TickPlan {
    let from = next_run_at.max(now - MAX_CATCH_UP);
    let mut missed = std::collections::VecDeque::new();
    let mut missed_unrecorded = 0u64;
    let mut latest = None;
    for occurrence in schedule.between(from, now) {
        if let Some(previous) = latest.replace(occurrence) {
            if missed.len() == MAX_MISSED_RECORDED {
                missed.pop_front();
                missed_unrecorded += 1;
            }
            missed.push_back(previous);
        }
    }
    let fire = match latest {
        Some(latest) if now - latest <= grace => Some(latest),
        Some(late) => {
            if missed.len() == MAX_MISSED_RECORDED {
                missed.pop_front();
                missed_unrecorded += 1;
            }
            missed.push_back(late);
            None
        }
        None => None,
    };
    TickPlan {
        missed: missed.into(),
        missed_unrecorded,
        fire,
        next_run_at: schedule.next_after(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn every_minute() -> CronSchedule {
        CronSchedule::parse("* * * * *", "UTC", false).unwrap()
    }

    #[test]
    fn five_fields_fire_at_second_zero_in_the_zone() {
        let daily = CronSchedule::parse("30 9 * * MON-FRI", "Europe/Paris", false).unwrap();
        // Friday 2026-01-09 10:00 UTC is 11:00 in Paris: next is Monday 09:30
        // Paris, 08:30 UTC (winter time, UTC+1).
        assert_eq!(
            daily.next_after(at("2026-01-09T10:00:00Z")),
            Some(at("2026-01-12T08:30:00Z"))
        );
        // In summer Paris is UTC+2.
        assert_eq!(
            daily.next_after(at("2026-07-01T00:00:00Z")),
            Some(at("2026-07-01T07:30:00Z"))
        );
        let six = CronSchedule::parse("15 0 12 * * *", "UTC", false).unwrap();
        assert_eq!(
            six.next_after(at("2026-01-01T00:00:00Z")),
            Some(at("2026-01-01T12:00:15Z"))
        );
    }

    #[test]
    fn refuses_bad_expressions_zones_and_sub_minute_rates() {
        for (cron, zone) in [
            ("* * * *", "UTC"),
            ("* * * * * * * *", "UTC"),
            ("61 * * * *", "UTC"),
            ("* * * * 1-5", "UTC"),
            ("0 9 * * 0", "UTC"),
            ("nonsense here now please ok", "UTC"),
            ("* * * * *", "Mars/Olympus"),
            ("* * * * *", ""),
            ("*/5 * * * * *", "UTC"),
            ("0,30 * * * * *", "UTC"),
        ] {
            assert!(
                CronSchedule::parse(cron, zone, false).is_err(),
                "{cron} in {zone:?}"
            );
        }
        assert!(CronSchedule::parse("*/5 * * * * *", "UTC", true).is_ok());
        let past = CronSchedule::parse("0 0 0 1 1 * 2020", "UTC", false).unwrap();
        assert_eq!(past.next_after(at("2026-01-01T00:00:00Z")), None);
    }

    #[test]
    fn an_on_time_tick_fires_the_one_due_occurrence() {
        let plan = plan_tick(
            &every_minute(),
            at("2026-03-01T10:05:00Z"),
            at("2026-03-01T10:05:02Z"),
            Duration::seconds(60),
        );
        assert_eq!(plan.fire, Some(at("2026-03-01T10:05:00Z")));
        assert!(plan.missed.is_empty());
        assert_eq!(plan.next_run_at, Some(at("2026-03-01T10:06:00Z")));
    }

    #[test]
    fn after_downtime_earlier_occurrences_are_missed_and_only_the_latest_fires() {
        let plan = plan_tick(
            &every_minute(),
            at("2026-03-01T10:00:00Z"),
            at("2026-03-01T10:05:30Z"),
            Duration::seconds(60),
        );
        assert_eq!(plan.fire, Some(at("2026-03-01T10:05:00Z")));
        let want: Vec<_> = (0..5)
            .map(|m| Utc.with_ymd_and_hms(2026, 3, 1, 10, m, 0).unwrap())
            .collect();
        assert_eq!(plan.missed, want);
        assert_eq!(plan.missed_unrecorded, 0);
        assert_eq!(plan.next_run_at, Some(at("2026-03-01T10:06:00Z")));
    }

    #[test]
    fn a_latest_occurrence_beyond_the_grace_is_missed_too() {
        let hourly = CronSchedule::parse("0 * * * *", "UTC", false).unwrap();
        let plan = plan_tick(
            &hourly,
            at("2026-03-01T09:00:00Z"),
            at("2026-03-01T10:20:00Z"),
            Duration::seconds(60),
        );
        assert_eq!(plan.fire, None);
        assert_eq!(
            plan.missed,
            vec![at("2026-03-01T09:00:00Z"), at("2026-03-01T10:00:00Z")]
        );
        assert_eq!(plan.next_run_at, Some(at("2026-03-01T11:00:00Z")));
    }

    #[test]
    fn long_downtime_records_only_the_latest_missed_occurrences() {
        let now = at("2026-03-10T00:00:30Z");
        let plan = plan_tick(
            &every_minute(),
            at("2026-01-01T00:00:00Z"),
            now,
            Duration::seconds(60),
        );
        assert_eq!(plan.fire, Some(at("2026-03-10T00:00:00Z")));
        assert_eq!(plan.missed.len(), MAX_MISSED_RECORDED);
        assert_eq!(plan.missed.last(), Some(&at("2026-03-09T23:59:00Z")));
        // Seven days of minutes are enumerated, the rest not at all.
        let enumerated = MAX_CATCH_UP.num_minutes() as u64;
        assert_eq!(
            plan.missed_unrecorded + MAX_MISSED_RECORDED as u64 + 1,
            enumerated
        );
    }

    #[test]
    fn a_next_run_at_between_occurrences_has_nothing_due_before_the_next() {
        let hourly = CronSchedule::parse("0 * * * *", "UTC", false).unwrap();
        let plan = plan_tick(
            &hourly,
            at("2026-03-01T09:30:00Z"),
            at("2026-03-01T09:40:00Z"),
            Duration::seconds(60),
        );
        assert_eq!(plan.fire, None);
        assert!(plan.missed.is_empty());
        assert_eq!(plan.next_run_at, Some(at("2026-03-01T10:00:00Z")));
    }
}
