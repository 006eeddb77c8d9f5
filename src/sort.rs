//! Stable sorting compiled once for the whole binary.
//!
//! `slice::sort_by` is monomorphised for every element type and every comparator closure:
//! the release binary carried 34 copies of driftsort (about 3.5 KB each, plus unwind tables).
//! These helpers sort a permutation of indices through one comparator type
//! (`&mut dyn FnMut(usize, usize) -> Ordering`), so the algorithm exists once; what is left
//! per call site is the comparator and a loop of swaps that moves the elements into place.
//! The order is the same as `slice::sort_by`'s: stable, equal elements keep their order.
//! Sorts on hot paths with many elements can keep the standard ones; nothing here is faster.

use std::cmp::Ordering;

/// Sorts `items` by `compare`, stably.
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    let order = sorted_order(items.len(), &mut |a, b| compare(&items[a], &items[b]));
    permute(items, order);
}

/// Sorts `items` by the key `key` gives each, stably.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` in their natural order, stably.
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// The indices `0..len` in the order `compare` puts the elements at them. Not generic: the
/// one place the sort algorithm is instantiated.
fn sorted_order(len: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

/// Rearranges `items` so position `k` holds the element that was at `order[k]`, following
/// each cycle of the permutation with swaps (no element is cloned or moved twice per cycle).
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..order.len() {
        let mut at = start;
        // The element that was at `start` travels along the cycle, one swap a step.
        while order[at] != DONE {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator, so the permutation cases vary without a dependency.
    fn shuffled(len: usize, seed: u64) -> Vec<(u8, usize)> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((state >> 59) as u8, i)
            })
            .collect()
    }

    #[test]
    fn orders_like_the_standard_stable_sort() {
        for len in 0..40 {
            for seed in 0..25 {
                let mut ours = shuffled(len, seed);
                let mut std_sorted = ours.clone();
                // Only the first field is compared: equal keys must keep their input order.
                sort_by_key(&mut ours, |item| item.0);
                std_sorted.sort_by_key(|item| item.0);
                assert_eq!(ours, std_sorted, "len {len}, seed {seed}");
            }
        }
    }

    #[test]
    fn sorts_owned_values_without_losing_any() {
        let mut words: Vec<String> = ["pear", "apple", "fig", "apple", "kiwi"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        sort(&mut words);
        assert_eq!(words, ["apple", "apple", "fig", "kiwi", "pear"]);
        // Longest first; "kiwi" and "pear" tie and keep the order the first sort gave them.
        sort_by(&mut words, |a, b| b.len().cmp(&a.len()));
        assert_eq!(words, ["apple", "apple", "kiwi", "pear", "fig"]);
    }
}
