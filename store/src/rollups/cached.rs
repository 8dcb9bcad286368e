//! A service's hour and day blocks read through the process's
//! [`block_cache`]: the cached ones from memory, the others fetched, then
//! cached once decoded, in the codec that decodes fastest (LZ4). An hour
//! rollup is stored deflate, for its bytes (see [`super::WORTH`]); cached
//! as LZ4 it is a third larger and decodes about 2.3 times faster, and a
//! read of a month decodes every cached block again.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use odp_profile::codec::{decode_weight, is_quick};
use odp_profile::{Level, Profile};

use crate::cpu::in_halves;
use crate::database::Database;
use crate::sql::Sql;
use crate::{Result, StoreError};

use super::block_cache::{block_cache, BlockKey, Tier};

/// A block as a read found it.
pub(crate) struct ReadBlock {
    key: BlockKey,
    pub(super) block: Arc<[u8]>,
    /// Fetched from the database by this read (not in memory).
    pub(super) fetched: bool,
}

impl ReadBlock {
    fn new(key: BlockKey, block: Arc<[u8]>, fetched: bool) -> Self {
        ReadBlock {
            key,
            block,
            fetched,
        }
    }
}

/// Reads blocks of one service.
pub(super) struct Cached<'a> {
    db: &'a Database,
    database: Arc<str>,
    service: &'a str,
}

impl<'a> Cached<'a> {
    pub(super) fn new(db: &'a Database, service: &'a str) -> Self {
        Cached {
            db,
            database: db.identity().into(),
            service,
        }
    }

    fn key(&self, tier: Tier, start: DateTime<Utc>, built_at: DateTime<Utc>) -> BlockKey {
        BlockKey {
            database: self.database.clone(),
            tier,
            service: self.service.to_owned(),
            start,
            built_at,
        }
    }

    /// The blocks of `tier` starting at the times of `wanted` (each with
    /// the `built_at` its row had), in that order: the cached ones from
    /// memory, the others fetched as they are stored now.
    pub(super) async fn blocks(
        &self,
        tier: Tier,
        wanted: &[(DateTime<Utc>, DateTime<Utc>)],
    ) -> Result<Vec<ReadBlock>> {
        let cache = block_cache();
        let mut found: BTreeMap<DateTime<Utc>, ReadBlock> = BTreeMap::new();
        let mut missing = Vec::new();
        for &(start, built_at) in wanted {
            let key = self.key(tier, start, built_at);
            match cache.get(&key) {
                Some(block) => {
                    found.insert(start, ReadBlock::new(key, block, false));
                }
                None => missing.push(start),
            }
        }
        if missing.is_empty() {
            return Ok(found.into_values().collect());
        }
        let select = match tier {
            Tier::Hour => {
                r#"select "hour", built_at, block from service_rollups
                   where service = $1 and "hour" in $2"#
            }
            Tier::Day => {
                r#"select "day", built_at, block from service_days
                   where service = $1 and "day" in $2"#
            }
        };
        let rows: Vec<(DateTime<Utc>, DateTime<Utc>, Vec<u8>)> = Sql::new(select)
            .bind(self.service)
            .bind_list(missing)
            .fetch_all(self.db)
            .await?;
        for (start, built_at, block) in rows {
            let key = self.key(tier, start, built_at);
            found.insert(start, ReadBlock::new(key, block.into(), true));
        }
        Ok(found.into_values().collect())
    }
}

/// `blocks` decoded on two threads, in order; each fetched one is cached
/// as LZ4.
pub(crate) async fn decoded_and_cached(blocks: Vec<ReadBlock>) -> Result<Vec<Profile>> {
    in_halves(
        blocks,
        |b| decode_weight(&b.block),
        |b| decode_and_cache(&b),
    )
    .await
}

/// `read` decoded; cached as LZ4 if this read fetched it and the cache is
/// on (the pipeline's is not: it re-encodes nothing).
pub(crate) fn decode_and_cache(read: &ReadBlock) -> Result<Profile> {
    let profile =
        Profile::decode(&read.block).map_err(|e| StoreError::Corrupt(format!("rollup: {e}")))?;
    if read.fetched && block_cache().is_on() {
        let quick = if is_quick(&read.block) {
            read.block.clone()
        } else {
            profile.encode(Level::Quick).into()
        };
        block_cache().insert(read.key.clone(), quick);
    }
    Ok(profile)
}
