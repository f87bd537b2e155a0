//! Reading dead letters, payloads opened.

pub use regent_store::dead_letters::{DeadLetter, Filter};

use crate::{Error, Service};

impl Service {
    /// A page of the tenant's dead letters, newest failure first, and how many match.
    pub async fn dead_letters(
        &self,
        tenant: &str,
        filter: &Filter<'_>,
    ) -> Result<(Vec<DeadLetter>, i64), Error> {
        let client = self.store.client().await?;
        let (mut letters, total) =
            regent_store::dead_letters::list(&client, tenant, filter).await?;
        for d in &mut letters {
            self.open(&d.queue, &mut d.message.message);
        }
        Ok((letters, total))
    }
}
