//! Extending a live lease.

use uuid::Uuid;

pub use regent_store::lease::Extended;

use crate::{Error, Service};

/// Longer requests are clamped: a lease is a liveness promise, not a reservation.
pub const MAX_EXTEND_SECONDS: i64 = 24 * 3600;

impl Service {
    /// Every partition under the lease gets expiry = max(current, now + seconds). Expired,
    /// released or unknown leases (a malformed id included) are not revived.
    pub async fn extend_lease(
        &self,
        tenant: &str,
        lease_id: &str,
        seconds: i64,
    ) -> Result<Extended, Error> {
        let Ok(id) = Uuid::parse_str(lease_id) else {
            return Ok(Extended::NotFound);
        };
        let seconds = seconds.clamp(1, MAX_EXTEND_SECONDS);
        let client = self.store.client().await?;
        Ok(regent_store::lease::extend(&client, tenant, id, seconds).await?)
    }
}
