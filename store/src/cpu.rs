//! CPU-bound work (decoding and encoding blocks, selecting samples) off
//! the async threads, shared by the profile blocks, the service rollups
//! and reads.

use crate::{Result, StoreError};

/// Runs CPU-bound work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Corrupt(format!("decoding blocks failed: {e}")))?
}

/// `work` on each of `items`, on two blocking threads (about half of the
/// items' `weight` each), the results in the items' order: reads decode
/// and select many blocks, and a machine has a core or two to spare for
/// one read.
pub(crate) async fn in_halves<T, R>(
    mut items: Vec<T>,
    weight: fn(&T) -> usize,
    work: fn(T) -> Result<R>,
) -> Result<Vec<R>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    let second = items.split_off(half_of(&items, weight));
    let run = |items: Vec<T>| blocking(move || items.into_iter().map(work).collect());
    let (first, second) = tokio::join!(run(items), run(second));
    let mut out: Vec<R> = first?;
    out.extend(second?);
    Ok(out)
}

/// How many of `items`, from the first, make up half of their weight.
fn half_of<T>(items: &[T], weight: fn(&T) -> usize) -> usize {
    let half = items.iter().map(weight).sum::<usize>().div_ceil(2);
    let mut first = 0;
    items
        .iter()
        .position(|item| {
            first += weight(item);
            first >= half
        })
        .map_or(items.len(), |last| last + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_are_split_by_weight() {
        let weight: fn(&usize) -> usize = |w| *w;
        assert_eq!(
            half_of(&[10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], weight),
            1,
            "the heavy one alone"
        );
        assert_eq!(half_of(&[1, 1, 1, 1], weight), 2);
        assert_eq!(half_of(&[1, 1, 1], weight), 2);
        assert_eq!(half_of(&[5], weight), 1);
        assert_eq!(half_of(&[], weight), 0);
    }

    #[tokio::test]
    async fn the_results_keep_the_items_order() {
        let items: Vec<usize> = (0..11).collect();
        let out = in_halves(items.clone(), |_| 1, |w| Ok(w * 2))
            .await
            .unwrap();
        assert_eq!(out, items.iter().map(|w| w * 2).collect::<Vec<_>>());
    }
}
