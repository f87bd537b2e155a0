//! What an ack's `status` string means.

/// Normalised ack status. Ordering of strength at the same offset: Dlq > Failed > Retry
/// (Completed is not a signal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckStatus {
    Completed,
    Retry,
    Failed,
    Dlq,
}

impl AckStatus {
    /// `None` = field absent or JSON null. Exact, case-sensitive matching:
    /// completed|success|acked|ok -> Completed; retry -> Retry; dlq -> Dlq; anything else
    /// (incl "", "Completed", "FAILED", "nack") -> Failed.
    ///
    /// The contract deliberately has no validation error here: an unknown spelling is a nack,
    /// so a typo can cost a redelivery but can never silently complete a message.
    pub fn normalise(sent: Option<&str>) -> AckStatus {
        match sent {
            None | Some("completed" | "success" | "acked" | "ok") => AckStatus::Completed,
            Some("retry") => AckStatus::Retry,
            Some("dlq") => AckStatus::Dlq,
            Some(_) => AckStatus::Failed,
        }
    }

    /// An explicit signal clamps the cursor; a completion only ever advances it.
    pub fn is_signal(self) -> bool {
        !matches!(self, AckStatus::Completed)
    }

    /// Strength for precedence at equal offsets: Retry=1, Failed=2, Dlq=3, Completed=0.
    /// Stronger means more final: the strongest instruction at an offset is the one honoured,
    /// so a dead-letter request is never downgraded to a budget-charging or free retry.
    pub fn strength(self) -> u8 {
        match self {
            AckStatus::Completed => 0,
            AckStatus::Retry => 1,
            AckStatus::Failed => 2,
            AckStatus::Dlq => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AckStatus::{self, *};

    #[test]
    fn normalisation_table() {
        let table: &[(Option<&str>, AckStatus)] = &[
            // absent and JSON null both arrive as None
            (None, Completed),
            (Some("completed"), Completed),
            (Some("success"), Completed),
            (Some("acked"), Completed),
            (Some("ok"), Completed),
            (Some("retry"), Retry),
            (Some("dlq"), Dlq),
            (Some("failed"), Failed),
            // everything else is a nack, including near-misses in case or spelling
            (Some(""), Failed),
            (Some("Completed"), Failed),
            (Some("FAILED"), Failed),
            (Some("nack"), Failed),
            (Some("error"), Failed),
            (Some("OK"), Failed),
            (Some("Retry"), Failed),
            (Some("DLQ"), Failed),
            (Some(" completed"), Failed),
            (Some("completed "), Failed),
            (Some("null"), Failed),
        ];
        for &(sent, want) in table {
            assert_eq!(AckStatus::normalise(sent), want, "normalise({sent:?})");
        }
    }

    #[test]
    fn signal_and_strength_table() {
        let table: &[(AckStatus, bool, u8)] = &[
            (Completed, false, 0),
            (Retry, true, 1),
            (Failed, true, 2),
            (Dlq, true, 3),
        ];
        for &(status, signal, strength) in table {
            assert_eq!(status.is_signal(), signal, "{status:?}.is_signal()");
            assert_eq!(status.strength(), strength, "{status:?}.strength()");
        }
    }

    #[test]
    fn precedence_is_dlq_over_failed_over_retry() {
        assert!(Dlq.strength() > Failed.strength());
        assert!(Failed.strength() > Retry.strength());
        assert!(Retry.strength() > Completed.strength());
    }
}
