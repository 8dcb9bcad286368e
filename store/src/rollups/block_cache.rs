//! Service hours' and days' blocks, kept in the memory of the process
//! that reads them, so that a month's second read fetches from the
//! database only what was built since its first (today's hours).
//!
//! A block is written once per `built_at`: a rebuilt hour or day (a late
//! window, retention, downsampling) is written at a later database time.
//! A block keyed by its row's `built_at` therefore never goes stale; an
//! entry of a rebuilt row is just never asked for again, and ages out.
//! Encoded blocks are kept, not decoded profiles: a month of a ten-host
//! service is ~30 MB encoded and some ten times that decoded, and the
//! fetch, not the decode, is what the database cannot do faster.
//!
//! Bounded in bytes, least recently used out first. Off (0 bytes) unless
//! the process turns it on ([`BlockCache::set_capacity`]): the api-server
//! does; the pipeline, whose memory must stay flat, does not.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use chrono::{DateTime, Utc};

/// Which tier a block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Tier {
    Hour,
    Day,
}

/// A stored block: whose, which hour or day, and which write of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BlockKey {
    /// The database it was read from ([`crate::Database::identity`]): a
    /// process may read several.
    pub database: Arc<str>,
    pub tier: Tier,
    pub service: String,
    pub start: DateTime<Utc>,
    pub built_at: DateTime<Utc>,
}

/// What the cache did since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    /// Blocks a read found in memory.
    pub hits: u64,
    /// Blocks a read had to fetch from the database.
    pub misses: u64,
    /// Blocks dropped to stay within the capacity.
    pub evictions: u64,
    pub blocks: u64,
    pub bytes: u64,
    pub capacity_bytes: u64,
}

struct Entry {
    block: Arc<[u8]>,
    /// The use clock's value at its last read.
    used: u64,
}

#[derive(Default)]
struct Blocks {
    capacity: usize,
    entries: HashMap<BlockKey, Entry>,
    /// Keys by last use, oldest first.
    by_use: BTreeMap<u64, BlockKey>,
    bytes: usize,
    clock: u64,
}

impl Blocks {
    fn touch(&mut self, key: &BlockKey) -> Option<Arc<[u8]>> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(key)?;
        let key = self
            .by_use
            .remove(&entry.used)
            .expect("every entry is in by_use");
        entry.used = clock;
        let block = entry.block.clone();
        self.by_use.insert(clock, key);
        Some(block)
    }

    /// Drops the least recently used blocks until `room` more bytes fit;
    /// how many it dropped.
    fn make_room(&mut self, room: usize) -> u64 {
        let mut dropped = 0;
        while self.bytes + room > self.capacity {
            let Some((_, key)) = self.by_use.pop_first() else {
                break;
            };
            let entry = self.entries.remove(&key).expect("every key has its entry");
            self.bytes -= entry.block.len();
            dropped += 1;
        }
        dropped
    }
}

#[derive(Default)]
pub struct BlockCache {
    blocks: Mutex<Blocks>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

static CACHE: LazyLock<BlockCache> = LazyLock::new(BlockCache::default);

/// The process's cache of service blocks.
pub fn block_cache() -> &'static BlockCache {
    &CACHE
}

impl BlockCache {
    fn locked(&self) -> MutexGuard<'_, Blocks> {
        // A panic while the lock was held leaves counts, not broken
        // invariants worth failing reads for: every update is one step.
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps at most `bytes` of blocks (0 turns the cache off), dropping
    /// the least recently used ones now if more are kept.
    pub fn set_capacity(&self, bytes: usize) {
        let mut blocks = self.locked();
        blocks.capacity = bytes;
        let dropped = blocks.make_room(0);
        self.evictions.fetch_add(dropped, Ordering::Relaxed);
    }

    /// Whether it keeps anything at all.
    pub(crate) fn is_on(&self) -> bool {
        self.locked().capacity > 0
    }

    pub(crate) fn get(&self, key: &BlockKey) -> Option<Arc<[u8]>> {
        let found = self.locked().touch(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `block` under `key`, unless it alone is larger than the
    /// capacity.
    pub(crate) fn insert(&self, key: BlockKey, block: Arc<[u8]>) {
        let mut blocks = self.locked();
        if block.len() > blocks.capacity || blocks.entries.contains_key(&key) {
            return;
        }
        let dropped = blocks.make_room(block.len());
        self.evictions.fetch_add(dropped, Ordering::Relaxed);
        blocks.clock += 1;
        let used = blocks.clock;
        blocks.bytes += block.len();
        blocks.by_use.insert(used, key.clone());
        blocks.entries.insert(key, Entry { block, used });
    }

    pub fn stats(&self) -> BlockCacheStats {
        let blocks = self.locked();
        BlockCacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            blocks: blocks.entries.len() as u64,
            bytes: blocks.bytes as u64,
            capacity_bytes: blocks.capacity as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(hour: i64, built_at: i64) -> BlockKey {
        BlockKey {
            database: "db".into(),
            tier: Tier::Hour,
            service: "checkout".into(),
            start: DateTime::from_timestamp(hour * 3600, 0).unwrap(),
            built_at: DateTime::from_timestamp(built_at, 0).unwrap(),
        }
    }

    fn block(len: usize, byte: u8) -> Arc<[u8]> {
        vec![byte; len].into()
    }

    #[test]
    fn a_block_is_found_only_under_the_write_it_was_read_as() {
        let cache = BlockCache::default();
        cache.set_capacity(1000);
        cache.insert(key(1, 10), block(100, 1));
        assert_eq!(cache.get(&key(1, 10)).unwrap()[0], 1);
        assert!(
            cache.get(&key(1, 11)).is_none(),
            "a rebuilt hour is read anew"
        );
        let mut other = key(1, 10);
        other.database = "another".into();
        assert!(cache.get(&other).is_none());
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (1, 2));
    }

    #[test]
    fn the_least_recently_used_blocks_leave_first_within_the_capacity() {
        let cache = BlockCache::default();
        cache.set_capacity(300);
        for hour in 0..3 {
            cache.insert(key(hour, 1), block(100, hour as u8));
        }
        assert!(
            cache.get(&key(0, 1)).is_some(),
            "hour 0 is now the newest used"
        );
        cache.insert(key(3, 1), block(100, 3));
        assert!(
            cache.get(&key(1, 1)).is_none(),
            "hour 1 was the least recently used"
        );
        for hour in [0, 2, 3] {
            assert!(cache.get(&key(hour, 1)).is_some(), "hour {hour}");
        }
        let stats = cache.stats();
        assert_eq!((stats.blocks, stats.bytes, stats.evictions), (3, 300, 1));
        cache.insert(key(4, 1), block(301, 4));
        assert!(
            cache.get(&key(4, 1)).is_none(),
            "larger than the whole cache"
        );
        cache.set_capacity(150);
        assert_eq!(
            cache.stats().blocks,
            1,
            "shrinking drops down to the capacity"
        );
        assert!(
            cache.get(&key(3, 1)).is_some(),
            "the most recently used stays"
        );
    }

    #[test]
    fn an_unset_cache_keeps_nothing() {
        let cache = BlockCache::default();
        assert!(!cache.is_on());
        cache.insert(key(0, 1), block(1, 0));
        assert!(cache.get(&key(0, 1)).is_none());
        assert_eq!(cache.stats().bytes, 0);
    }
}
