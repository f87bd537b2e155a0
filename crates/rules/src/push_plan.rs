//! Deduplication inside one push request: the first occurrence of a (partition, transaction
//! id) is appended, later ones are duplicates of it. Deduplication across requests happens
//! in the store, under the partition's lock.

use std::collections::HashMap;
use std::hash::Hash;

/// For each key, `None` when it is the first of its kind, `Some(j)` when it repeats key `j`.
pub fn repeats<K: Eq + Hash>(keys: &[K]) -> Vec<Option<usize>> {
    let mut first: HashMap<&K, usize> = HashMap::with_capacity(keys.len());
    keys.iter()
        .enumerate()
        .map(|(i, k)| match first.get(k) {
            Some(&j) => Some(j),
            None => {
                first.insert(k, i);
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_occurrences_point_at_the_first() {
        let keys = [("p", "a"), ("p", "b"), ("q", "a"), ("p", "a"), ("p", "a")];
        assert_eq!(repeats(&keys), vec![None, None, None, Some(0), Some(0)]);
    }
}
