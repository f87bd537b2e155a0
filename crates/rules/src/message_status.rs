//! What one message's status is, on a log with a cursor per consumer group (spec §10.1):
//! a message has no state of its own, so its status is read off the cursors of its
//! partition and the dead letters filed for it.

use chrono::{DateTime, Utc};

use crate::naming::QUEUE_MODE;

/// One group's cursor on the message's partition.
#[derive(Clone, Debug)]
pub struct GroupCursor<'a> {
    pub group: &'a str,
    /// Every offset up to this one is done; -1 when nothing is.
    pub committed: i64,
    /// The end of the group's live lease, and when it expires.
    pub lease: Option<(i64, DateTime<Utc>)>,
}

impl GroupCursor<'_> {
    fn passed(&self, offset: i64) -> bool {
        offset <= self.committed
    }

    fn leases(&self, offset: i64) -> Option<DateTime<Utc>> {
        self.lease
            .filter(|&(end, _)| offset > self.committed && offset <= end)
            .map(|(_, until)| until)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pending,
    Processing,
    Completed,
    DeadLetter,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Processing => "processing",
            Status::Completed => "completed",
            Status::DeadLetter => "dead_letter",
        }
    }

    /// The spec's filter values (`?status=`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Status> {
        [
            Status::Pending,
            Status::Processing,
            Status::Completed,
            Status::DeadLetter,
        ]
        .into_iter()
        .find(|st| st.name() == s)
    }
}

/// How a partition is consumed: by queue mode, named groups (bus), both, or nobody yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Queue,
    Bus,
    Hybrid,
    None,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Queue => "queue",
            Mode::Bus => "bus",
            Mode::Hybrid => "hybrid",
            Mode::None => "none",
        }
    }
}

/// A message's status and what each group made of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub status: Status,
    /// The status in queue mode's view alone (the spec's `queueStatus`).
    pub queue_status: Status,
    pub mode: Mode,
    /// Named groups that have passed it, out of how many named groups read the partition.
    pub consumed_by: usize,
    pub bus_groups: usize,
    /// When the lease over it expires, if a group holds one.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// The status of the message at `offset` given its partition's cursors and whether a dead
/// letter was filed for it. Queue mode decides when it reads the partition (completed once
/// its cursor passed it, processing under its live lease); with named groups only, it is
/// completed once every one of them passed it, processing while one leases it.
pub fn seen(offset: i64, cursors: &[GroupCursor<'_>], dead_lettered: bool) -> Seen {
    let queue = cursors.iter().find(|c| c.group == QUEUE_MODE);
    let named: Vec<&GroupCursor<'_>> = cursors.iter().filter(|c| c.group != QUEUE_MODE).collect();
    let consumed_by = named.iter().filter(|c| c.passed(offset)).count();
    let lease_expires_at = cursors.iter().find_map(|c| c.leases(offset));
    let of = |passed: bool, leased: bool| match (passed, leased) {
        (true, _) => Status::Completed,
        (false, true) => Status::Processing,
        _ => Status::Pending,
    };
    let queue_status = match queue {
        Some(q) => of(q.passed(offset), q.leases(offset).is_some()),
        None => Status::Pending,
    };
    let status = if dead_lettered {
        Status::DeadLetter
    } else if queue.is_some() {
        queue_status
    } else if named.is_empty() {
        Status::Pending
    } else {
        of(
            consumed_by == named.len(),
            named.iter().any(|c| c.leases(offset).is_some()),
        )
    };
    let mode = match (queue.is_some(), named.is_empty()) {
        (true, true) => Mode::Queue,
        (true, false) => Mode::Hybrid,
        (false, false) => Mode::Bus,
        (false, true) => Mode::None,
    };
    Seen {
        status,
        queue_status,
        mode,
        consumed_by,
        bus_groups: named.len(),
        lease_expires_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(group: &str, committed: i64, lease_end: Option<i64>) -> GroupCursor<'_> {
        GroupCursor {
            group,
            committed,
            lease: lease_end.map(|e| (e, Utc::now())),
        }
    }

    #[test]
    fn queue_mode_decides_when_it_reads_the_partition() {
        let cursors = [at(QUEUE_MODE, 4, Some(6)), at("audit", 9, None)];
        let s = |o| seen(o, &cursors, false).status;
        assert_eq!(
            (s(4), s(5), s(7)),
            (Status::Completed, Status::Processing, Status::Pending)
        );
        assert_eq!(seen(7, &cursors, false).mode, Mode::Hybrid);
        assert_eq!(seen(7, &cursors, false).consumed_by, 1);
        assert_eq!(seen(4, &cursors, true).status, Status::DeadLetter);
        assert_eq!(seen(4, &cursors, true).queue_status, Status::Completed);
    }

    #[test]
    fn with_named_groups_only_it_is_completed_once_all_passed_it() {
        let cursors = [at("a", 5, None), at("b", 2, Some(4))];
        let s = |o| seen(o, &cursors, false);
        assert_eq!(s(2).status, Status::Completed);
        assert_eq!(s(3).status, Status::Processing);
        assert_eq!((s(3).consumed_by, s(3).bus_groups), (1, 2));
        assert_eq!(s(5).status, Status::Pending);
        assert_eq!(s(5).mode, Mode::Bus);
        assert!(s(3).lease_expires_at.is_some());
    }

    #[test]
    fn an_unread_partition_is_pending_in_no_mode() {
        let s = seen(0, &[], false);
        assert_eq!((s.status, s.mode), (Status::Pending, Mode::None));
        assert_eq!(Status::parse("dead_letter"), Some(Status::DeadLetter));
        assert_eq!(Status::parse("done"), None);
    }
}
