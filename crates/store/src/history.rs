//! refinery's record of the applied migrations, kept true across the one rewrite of applied
//! migrations there has been: V1, V3, V15, V19 and V20 once also held the first bodies of the
//! database functions, which `sql/functions.sql` now defines alone (issue 48). refinery refuses
//! a database whose recorded checksum of a migration differs from the file's (a divergent
//! migration); that check stays on for every other difference.

use tokio_postgres::Client;

use crate::sql;

/// Each rewritten migration's version and its checksum as databases migrated before the
/// rewrite recorded it (refinery's SipHash of name, version and text).
pub const REWRITTEN: &[(i32, u64)] = &[
    (1, 4_096_425_407_704_351_567),
    (3, 4_916_769_498_948_732_504),
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
