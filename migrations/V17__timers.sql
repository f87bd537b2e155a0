-- Queen's timers (`/api/v1/timers`, spec §18.2): a message scheduled under a key, pushed to
-- its queue once its `deliver_at` has passed, by whichever broker takes its row first
-- (docs/design/timers.md).

-- One pending timer per (tenant, queue, timer_key). A schedule of a pending key replaces it;
-- the fire deletes the row in the transaction that pushes its message, so a row is a timer
-- that has not fired. `message_id` and `txn` are promised in the schedule's answer and become
-- the message's id and transaction id. `payload` is the message's JSON text. On Citus the
-- table is distributed by `queue`: every statement of one timer names it.
CREATE TABLE timers (
    tenant        text NOT NULL,
    queue         text NOT NULL,
    timer_key     text NOT NULL,
    txn           text NOT NULL,
    message_id    uuid NOT NULL,
    partition     text NOT NULL,
    payload       text NOT NULL,
    producer_sub  text,
    deliver_at    timestamptz NOT NULL,
    -- Fires that failed (a payload the queue cannot store now); each pushes `deliver_at` on.
    attempts      integer NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, queue, timer_key)
);

-- The firing loop's scans: the nearest deadline of all, and the due timers of one queue.
CREATE INDEX timers_by_deadline ON timers (deliver_at);
CREATE INDEX timers_due_by_queue ON timers (tenant, queue, deliver_at);
