//! What a continuous segment is compared with when it ends: the same
//! hour of earlier weeks, and, when its host labels its release, the
//! release before.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use crate::database::Database;
use crate::sql::Sql;
use crate::{Labels, Result, RELEASE_LABEL};

/// How far apart a continuous segment's baselines are: a service's hour is
/// compared with the same hour of earlier weeks, so the time of day and the
/// day of the week (traffic, batch jobs) are the same on both sides.
pub const SEGMENT_BASELINE_PERIOD: chrono::Duration = chrono::Duration::weeks(1);

/// Earlier segments read to find the release before a segment's.
const RELEASE_LOOKBACK: i64 = 2000;

/// A segment's baselines: other segments of the same continuous profile
/// on the same host that ended normally, most recent first.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SegmentBaselines {
    /// Those that began the same hour of the previous weeks.
    pub same_hour: Vec<Uuid>,
    /// The latest that ran the release before this one's (by
    /// [`RELEASE_LABEL`]): before and after a deploy. Empty when this
    /// segment is unlabelled, or its host ran no other release in its last
    /// `RELEASE_LOOKBACK` segments.
    pub previous_release: Vec<Uuid>,
}

/// `profile_id`'s baselines, at most `limit` (≤ 52) of each; none when it
/// is not a continuous segment.
pub async fn segment_baselines(
    db: impl Into<Database>,
    profile_id: Uuid,
    limit: i64,
) -> Result<SegmentBaselines> {
    let db = db.into();
    let this: Option<SegmentRow> = Sql::by_id(
        "continuous_id, host, created_at, labels",
        "profiles",
        profile_id,
    )
    .fetch_optional(&db)
    .await?;
    let Some((Some(continuous_id), host, start, Json(labels))) = this else {
        return Ok(SegmentBaselines::default());
    };
    let segment = This {
        continuous_id,
        host,
        start,
        release: labels.get(RELEASE_LABEL).cloned(),
        limit: limit.clamp(0, 52),
    };
    Ok(SegmentBaselines {
        same_hour: same_hour(&db, &segment).await?,
        previous_release: previous_release(&db, &segment).await?,
    })
}

/// A profile's continuous configuration (none unless a segment), host,
/// start and labels.
type SegmentRow = (Option<Uuid>, String, DateTime<Utc>, Json<Labels>);

/// The segment whose baselines are looked for.
struct This {
    continuous_id: Uuid,
    host: String,
    start: DateTime<Utc>,
    release: Option<String>,
    limit: i64,
}

async fn same_hour(db: &Database, this: &This) -> Result<Vec<Uuid>> {
    let starts: Vec<DateTime<Utc>> = (1..=this.limit)
        .map(|weeks| this.start - SEGMENT_BASELINE_PERIOD * weeks as i32)
        .collect();
    if starts.is_empty() {
        return Ok(Vec::new());
    }
    Sql::new(
        "select id from profiles
         where continuous_id = $1 and host = $2 and created_at in $3
           and status in ('finished', 'stopped')
         order by created_at desc",
    )
    .bind(this.continuous_id)
    .bind(this.host.as_str())
    .bind_list(starts)
    .fetch_column(db)
    .await
}

async fn previous_release(db: &Database, this: &This) -> Result<Vec<Uuid>> {
    let Some(release) = &this.release else {
        return Ok(Vec::new());
    };
    let earlier: Vec<(Uuid, Json<Labels>)> = Sql::new(
        "select id, labels from profiles
         where continuous_id = $1 and host = $2 and created_at < $3
           and status in ('finished', 'stopped')
         order by created_at desc
         limit $4",
    )
    .bind(this.continuous_id)
    .bind(this.host.as_str())
    .bind(this.start)
    .bind(RELEASE_LOOKBACK)
    .fetch_all(db)
    .await?;
    let release_of = |Json(labels): &Json<Labels>| labels.get(RELEASE_LABEL).cloned();
    let Some(before) = earlier
        .iter()
        .filter_map(|(_, l)| release_of(l))
        .find(|r| r != release)
    else {
        return Ok(Vec::new());
    };
    Ok(earlier
        .into_iter()
        .filter(|(_, l)| release_of(l).as_ref() == Some(&before))
        .map(|(id, _)| id)
        .take(usize::try_from(this.limit).unwrap_or(0))
        .collect())
}
