//! How long a connection to PostgreSQL may stay silent before it is given up.
//!
//! A link cut without a reset (a partition, a dead host, a dropped route) leaves every open
//! connection waiting: by default a sent request is retransmitted for about 15 minutes and an
//! idle connection is probed after two hours. Meanwhile each pooled connection holds a client
//! request that never returns, and the pool's waiters queue behind them. With these bounds a
//! cut is noticed within seconds: the requests on it fail, are answered 503 with
//! `Retry-After`, and the connections are replaced once the link is back.
//!
//! Only silence counts, never slowness: the TCP user timeout fires when sent bytes go
//! unacknowledged, and PostgreSQL's kernel acknowledges them at once however long the
//! statement then runs; keepalive probes are answered by it the same way.

use std::time::Duration;

use tokio_postgres::Config;

/// A connection attempt that has not completed within this is abandoned.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Bytes sent and not acknowledged for this long close the connection.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(5);
/// An idle connection is probed after this long, then every [`KEEPALIVES_INTERVAL`]; the
/// user timeout bounds how long unanswered probes are waited for.
pub const KEEPALIVES_IDLE: Duration = Duration::from_secs(5);
pub const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(2);

/// Applies the bounds above where the database URL (`url`, already parsed into `config`)
/// does not name its own: libpq's `connect_timeout`, `tcp_user_timeout`, `keepalives_idle`
/// and `keepalives_interval` (seconds) win, `0` included.
pub fn bound_silence(url: &str, config: &mut Config) {
    if !names(url, "connect_timeout") {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if !names(url, "tcp_user_timeout") {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    if !names(url, "keepalives_idle") {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    if !names(url, "keepalives_interval") {
        config.keepalives_interval(KEEPALIVES_INTERVAL);
    }
}

/// Whether the URL (either form: `postgres://…?key=value` or `key=value …`) sets `key`.
fn names(url: &str, key: &str) -> bool {
    url.split(['?', '&', ' '])
        .any(|part| part.trim().split('=').next() == Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(url: &str) -> Config {
        let mut config: Config = url.parse().unwrap();
        bound_silence(url, &mut config);
        config
    }

    #[test]
    fn a_url_without_bounds_gets_them() {
        let c = configured("postgres://u@db:5432/regent");
        assert_eq!(c.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
        assert_eq!(c.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        assert_eq!(c.get_keepalives_idle(), KEEPALIVES_IDLE);
        assert_eq!(c.get_keepalives_interval(), Some(KEEPALIVES_INTERVAL));
        assert!(c.get_keepalives());
    }

    #[test]
    fn the_operators_own_bounds_win_in_either_form() {
        for url in [
            "postgres://u@db/regent?connect_timeout=20&tcp_user_timeout=0&keepalives_idle=60",
            "host=db user=u dbname=regent connect_timeout=20 tcp_user_timeout=0 keepalives_idle=60",
        ] {
            let c = configured(url);
            assert_eq!(
                c.get_connect_timeout(),
                Some(&Duration::from_secs(20)),
                "{url}"
            );
            assert_eq!(c.get_tcp_user_timeout(), None, "0 turns it off: {url}");
            assert_eq!(c.get_keepalives_idle(), Duration::from_secs(60), "{url}");
            assert_eq!(
                c.get_keepalives_interval(),
                Some(KEEPALIVES_INTERVAL),
                "{url}"
            );
        }
    }

    #[test]
    fn a_password_that_spells_a_key_is_not_a_setting() {
        let c = configured("postgres://u:connect_timeout@db/regent");
        assert_eq!(c.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
    }
}
