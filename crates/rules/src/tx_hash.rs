//! The transaction index's key: a 128-bit hash of a transaction id within its partition.
//!
//! The index stores hashes, not ids, so an entry is 16 bytes whatever the client's id looks
//! like, and the partition is folded into the hash so one GIN key names one id in one
//! partition. With 128 bits, two ids of one partition colliding within the index window is
//! as unlikely as two v4 UUIDs colliding; the check is therefore the hash alone. The hash is
//! not cryptographic: a producer could craft ids that collide, but only within partitions it
//! may already write to, where it could do worse by pushing.
//!
//! Architecture Invariant: the function never changes. Stored hashes must keep matching
//! across upgrades, or duplicates pushed after an upgrade would be appended again.

use uuid::Uuid;
use xxhash_rust::xxh3::xxh3_128_with_seed;

/// The index key of `transaction_id` in `partition`.
pub fn tx_hash(partition: Uuid, transaction_id: &str) -> Uuid {
    let (hi, lo) = partition.as_u64_pair();
    Uuid::from_u128(xxh3_128_with_seed(
        transaction_id.as_bytes(),
        hi ^ lo.rotate_left(32),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_across_releases() {
        let p = Uuid::parse_str("0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b").unwrap();
        assert_eq!(
            tx_hash(p, "order-42").to_string(),
            "8219df98-f500-59a0-7737-fada8cd97b50",
        );
    }

    #[test]
    fn the_partition_is_part_of_the_key() {
        let a = Uuid::parse_str("0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b").unwrap();
        let b = Uuid::parse_str("0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7c").unwrap();
        assert_ne!(tx_hash(a, "order-42"), tx_hash(b, "order-42"));
        assert_ne!(tx_hash(a, "order-42"), tx_hash(a, "order-43"));
        assert_eq!(tx_hash(a, "order-42"), tx_hash(a, "order-42"));
    }
}
