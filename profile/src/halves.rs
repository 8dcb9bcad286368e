//! CPU-bound work over many parts on two threads: reads decode, select and
//! merge many blocks (a month of days, a fleet's hour), and a machine has
//! a core or two to spare for one read.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `work` on each of `items`, the results in the items' order: on two
/// threads from `from` items on, else on the calling thread (a second
/// thread costs more than a few small parts). Each thread takes the next
/// item not taken yet, so parts of unequal cost (a day and an hour) keep
/// both busy to the end.
pub fn map_in_halves<T: Sync, R: Send>(
    items: &[T],
    from: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if items.len() < from.max(2) {
        return items.iter().map(&work).collect();
    }
    let next = AtomicUsize::new(0);
    let take = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, work(item)));
        }
    };
    let mut done = std::thread::scope(|scope| {
        let other = scope.spawn(take);
        let mut done = take();
        done.extend(other.join().expect("work on a part panicked"));
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_split_or_not() {
        let items: Vec<u32> = (0..9).collect();
        let doubled: Vec<u32> = items.iter().map(|i| i * 2).collect();
        assert_eq!(map_in_halves(&items, 2, |i| i * 2), doubled);
        assert_eq!(map_in_halves(&items, 100, |i| i * 2), doubled);
        assert_eq!(
            map_in_halves(&[] as &[u32], 2, |i| i * 2),
            Vec::<u32>::new()
        );
    }
}
