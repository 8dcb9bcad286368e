//! A bounded memory of the frame and stack ids already stored.

use std::collections::HashSet;

/// The frame and stack hashes recently stored, so a worker does not send
/// the same rows again and again: stacks repeat across windows, hosts and
/// profiles. Bounded: two generations of `capacity / 2` ids each; when
/// the young one fills, the old one is dropped, which keeps the ids in use
/// and forgets the rest.
///
/// Also bounded in time: the young generation turns old after
/// [`GENERATION_MAX_AGE`] however full it is, so an id unused for two
/// generations is forgotten. Retention deletes only frames and stacks that
/// no window of the retention period (a day or more) uses, so no id it
/// deletes can still be trusted here.
#[derive(Debug)]
pub struct StoredIds {
    young: HashSet<u128>,
    old: HashSet<u128>,
    generation: usize,
    young_since: std::time::Instant,
}

/// How long a generation stays young at most.
const GENERATION_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 60);

impl StoredIds {
    pub fn new(capacity: usize) -> Self {
        let generation = (capacity / 2).max(1);
        StoredIds {
            young: HashSet::with_capacity(generation),
            old: HashSet::new(),
            generation,
            young_since: std::time::Instant::now(),
        }
    }

    pub fn contains(&mut self, id: u128) -> bool {
        if self.young_since.elapsed() >= GENERATION_MAX_AGE {
            self.age();
        }
        if self.young.contains(&id) {
            return true;
        }
        if self.old.remove(&id) {
            self.insert(id);
            return true;
        }
        false
    }

    pub fn insert(&mut self, id: u128) {
        if self.young.len() >= self.generation {
            self.age();
        }
        self.young.insert(id);
    }

    /// The young generation becomes the old one; the old one is forgotten.
    fn age(&mut self) {
        self.old = std::mem::take(&mut self.young);
        self.young_since = std::time::Instant::now();
    }

    pub fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        self.young.clear();
        self.old.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::StoredIds;

    #[test]
    fn stored_ids_stay_bounded_and_keep_what_is_used() {
        let mut ids = StoredIds::new(4);
        for id in 0..100 {
            ids.insert(id);
            assert!(ids.len() <= 4, "bounded at {}", ids.len());
        }
        assert!(ids.contains(99) && ids.contains(98));
        assert!(!ids.contains(0), "old ids are forgotten");
        // An id looked up is promoted, so it survives the next turnover.
        ids.insert(200);
        ids.insert(201);
        assert!(ids.contains(200));
        ids.insert(202);
        ids.insert(203);
        assert!(ids.contains(200));
        ids.clear();
        assert!(ids.is_empty() && !ids.contains(200));
    }

    #[test]
    fn ids_unused_for_two_generations_are_forgotten_however_few() {
        let mut ids = StoredIds::new(1000);
        ids.insert(1);
        ids.insert(2);
        let expire = |ids: &mut StoredIds| {
            ids.young_since = std::time::Instant::now() - super::GENERATION_MAX_AGE;
        };
        expire(&mut ids);
        // 1 is used in the next generation, 2 is not.
        assert!(ids.contains(1));
        expire(&mut ids);
        assert!(!ids.contains(2), "unused for two generations");
        assert!(ids.contains(1));
    }

    #[test]
    fn a_zero_capacity_set_remembers_only_the_latest() {
        let mut ids = StoredIds::new(0);
        ids.insert(1);
        ids.insert(2);
        assert!(ids.len() <= 2);
    }
}
