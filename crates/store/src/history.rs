//! refinery's record of the applied migrations, kept true across the rewrites of applied
//! migrations there have been: V1, V3, V15, V19 and V20 once also held the first bodies of the
//! database functions, which `sql/functions.sql` now defines alone (issue 48); and a comment of
//! V9 was edited by a crate's rename (c5a27f6) and then restored, so a database first migrated
//! between the two recorded the edited text. refinery refuses a database whose recorded
//! checksum of a migration differs from the file's (a divergent migration); that check stays
//! on for every other difference.

use tokio_postgres::Client;

use crate::sql;

/// Each rewritten migration's version and its checksum as databases migrated before the
/// rewrite recorded it (refinery's SipHash of name, version and text).
pub const REWRITTEN: &[(i32, u64)] = &[
    (1, 4_096_425_407_704_351_567),
    (3, 4_916_769_498_948_732_504),
    (9, 16_580_304_531_927_320_558),
    (15, 17_835_690_753_744_375_174),
    (19, 16_456_119_479_269_619_547),
    (20, 15_303_277_511_514_610_114),
];

/// Moves the recorded checksum of each rewritten migration a database applied before the
/// rewrite to the rewritten file's, so refinery takes the database as migrated. Run under the
/// migration lock, before the migrations.
pub async fn rebaseline(client: &Client) -> Result<(), tokio_postgres::Error> {
    let recorded: bool = client.query_one(sql::history::RECORDED, &[]).await?.get(0);
    if !recorded {
        return Ok(());
    }
    let files = crate::embedded::migrations::runner()
        .get_migrations()
        .to_vec();
    for (version, first) in REWRITTEN {
        let Some(file) = files.iter().find(|m| m.version() == *version as u32) else {
            continue;
        };
        let n = client
            .execute(
                sql::history::REBASELINE,
                &[version, &first.to_string(), &file.checksum().to_string()],
            )
            .await?;
        if n > 0 {
            tracing::info!(
                version,
                "recorded checksum moved to the rewritten migration's"
            );
        }
    }
    Ok(())
}

/// Each migration's checksum as a database records it once it has applied the file as it is
/// now. A migration is history: any change to an applied file, a comment's included, makes
/// refinery refuse every database that applied it, so this list changes only with a new
/// migration, or with a rewrite whose old checksum [`REWRITTEN`] carries.
pub const APPLIED: &[(i32, u64)] = &[
    (1, 2_095_844_107_014_512_661),
    (2, 6_953_022_427_838_581_547),
    (3, 8_149_078_195_460_321_023),
    (4, 15_349_059_206_782_751_967),
    (5, 11_954_932_825_230_369_213),
    (6, 11_468_183_939_150_716_060),
    (7, 3_007_464_697_981_662_324),
    (8, 13_638_321_956_070_060_548),
    (9, 1_725_585_725_237_669_280),
    (10, 2_948_053_910_712_449_517),
    (11, 8_375_046_808_124_590_231),
    (12, 17_471_976_538_239_807_201),
    (13, 15_760_072_895_533_465_611),
    (14, 12_463_436_424_346_637_036),
    (15, 11_213_581_075_909_895_402),
    (16, 13_316_502_179_402_334_394),
    (17, 7_203_680_960_484_117_096),
    (18, 10_896_147_877_830_966_628),
    (19, 11_410_300_373_368_605_189),
    (20, 13_885_046_620_230_182_155),
    (21, 17_928_866_280_536_797_556),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// A change to an applied migration fails here, not at a user's next start.
    #[test]
    fn no_applied_migration_is_changed() {
        let mut files: Vec<(i32, u64)> = crate::embedded::migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| (m.version() as i32, m.checksum()))
            .collect();
        files.sort();
        let changed: Vec<i32> = files
            .iter()
            .filter(|(v, sum)| APPLIED.iter().any(|(a, was)| a == v && was != sum))
            .map(|(v, _)| *v)
            .collect();
        assert!(
            changed.is_empty(),
            "migrations {changed:?} differ from the text databases applied: refinery would \
             refuse those databases. Put the change in a new migration."
        );
        assert_eq!(
            files.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            APPLIED.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            "a new migration's checksum belongs in APPLIED"
        );
    }
}
