//! CPU-bound work over many parts on two threads: reads decode, select and
//! merge many blocks (a month of days, a fleet's hour), and a machine has
//! a core or two to spare for one read.

/// `work` on each of `items`, the results in the items' order: on two
/// threads (a half each) from `from` items on, else on the calling thread
/// (a second thread costs more than a few small parts).
pub fn map_in_halves<T: Sync, R: Send>(
    items: &[T],
    from: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if items.len() < from.max(2) {
        return items.iter().map(&work).collect();
    }
    let (first, second) = items.split_at(items.len() / 2);
    std::thread::scope(|scope| {
        let later = scope.spawn(|| second.iter().map(&work).collect::<Vec<R>>());
        let mut out: Vec<R> = first.iter().map(&work).collect();
        out.extend(later.join().expect("work on a half panicked"));
        out
    })
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
