//! Which items of a metrics family are shown by name and which are summed into one `_other`
//! series: the names are clients' (queues, consumer groups), so without a bound one scrape
//! could carry any number of series.

/// The name of the series the items not shown are summed into.
pub const OTHER: &str = "_other";

/// Splits `items` into the `n` heaviest, heaviest first (ties keep their given order), and
/// the rest. An item named [`OTHER`] always goes to the rest, so no shown series has the
/// name of the sum.
pub fn top_n<T>(
    items: Vec<T>,
    n: usize,
    weight: impl Fn(&T) -> i64,
    name: impl Fn(&T) -> &str,
) -> (Vec<T>, Vec<T>) {
    let (mut named, mut rest): (Vec<T>, Vec<T>) = items.into_iter().partition(|i| name(i) != OTHER);
    // Stable: equal weights stay in the caller's order (by name), so the choice is the same
    // at every scrape.
    named.sort_by_key(|i| std::cmp::Reverse(weight(i)));
    if named.len() > n {
        rest.extend(named.split_off(n));
    }
    (named, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(items: &[(&'static str, i64)], n: usize) -> (Vec<&'static str>, Vec<&'static str>) {
        let (shown, rest) = top_n(items.to_vec(), n, |i| i.1, |i| i.0);
        let names = |v: Vec<(&'static str, i64)>| v.into_iter().map(|i| i.0).collect();
        (names(shown), names(rest))
    }

    #[test]
    fn the_heaviest_are_shown_and_the_rest_summed() {
        let items = [("a", 1), ("b", 5), ("c", 3), ("d", 5)];
        assert_eq!(split(&items, 2), (vec!["b", "d"], vec!["c", "a"]));
        assert_eq!(split(&items, 10).1, Vec::<&str>::new());
        assert_eq!(split(&items, 0), (vec![], vec!["b", "d", "c", "a"]));
    }

    #[test]
    fn an_item_named_like_the_sum_is_never_shown() {
        let items = [(OTHER, 100), ("a", 1)];
        assert_eq!(split(&items, 5), (vec!["a"], vec![OTHER]));
    }
}
