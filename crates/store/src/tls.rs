//! PostgreSQL over TLS. A database URL's `sslmode` and `sslrootcert` are read the way libpq
//! reads them, so a URL that works with `psql` means the same here; they are taken out of the
//! URL before tokio-postgres parses it, since it knows neither `verify-ca`, `verify-full` nor
//! `sslrootcert`.
//!
//! | `sslmode` | Regent |
//! | --- | --- |
//! | absent, `disable`, `allow`, `prefer` | plain TCP: no TLS is attempted |
//! | `require` | TLS; the certificate is checked against `sslrootcert` (chain only) when one is given, else not at all |
//! | `verify-ca` | TLS; the chain must lead to `sslrootcert` |
//! | `verify-full` | TLS; the chain must lead to `sslrootcert` and the certificate name the host |
//!
//! `prefer` is libpq's default, and libpq then tries TLS and falls back to plain TCP when the
//! handshake fails. tokio-postgres cannot fall back, so trying TLS would turn a deployment
//! that works today (a server offering TLS with a certificate or protocol version rustls
//! refuses) into one that cannot connect; and unverified TLS only stops a passive listener.
//! So without an explicit mode nothing changes: TLS is on when the URL asks for it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use rustls::ClientConfig;
use tokio_postgres_rustls::MakeRustlsConnect;

use regent_tls::{self as tls, verify};

/// How Regent reaches one database.
pub struct Target {
    pub config: tokio_postgres::Config,
    /// `None`: plain TCP.
    pub tls: Option<MakeRustlsConnect>,
    /// TLS that does not check who answers (`require` without `sslrootcert`).
    pub unverified: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Require,
    VerifyCa,
    VerifyFull,
}

pub fn target(url: &str) -> Result<Target> {
    let (rest, options) = take_tls_options(url);
    let mut config: tokio_postgres::Config = rest.parse().context("reading the database URL")?;
    crate::net::bound_silence(&rest, &mut config);
    let mode = match options.sslmode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => None,
        Some("require") => Some(Mode::Require),
        Some("verify-ca") => Some(Mode::VerifyCa),
        Some("verify-full") => Some(Mode::VerifyFull),
        Some(other) => bail!(
            "database URL: sslmode={other} is not a mode; use disable, prefer, require, \
             verify-ca or verify-full"
        ),
    };
    let Some(mode) = mode else {
        return Ok(Target {
            config,
            tls: None,
            unverified: false,
        });
    };
    let root = options.sslrootcert.map(PathBuf::from);
    if root.as_deref().is_some_and(|r| r.as_os_str() == "system") {
        bail!(
            "database URL: sslrootcert=system is not supported; name the PEM file of the CA \
             that signed the server's certificate"
        );
    }
    let roots = root
        .as_deref()
        .map(|r| tls::load_roots("sslrootcert", r))
        .transpose()?;
    let provider = tls::provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let (client, unverified) = match (mode, roots) {
        (Mode::Require, None) => (
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verify::Unverified::new(provider)))
                .with_no_client_auth(),
            true,
        ),
        (Mode::Require | Mode::VerifyCa, Some(roots)) => (
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(
                    verify::ChainOnly::new(roots, provider)
                        .map_err(|e| anyhow!("sslrootcert: {e}"))?,
                ))
                .with_no_client_auth(),
            false,
        ),
        (Mode::VerifyFull, Some(roots)) => (
            builder.with_root_certificates(roots).with_no_client_auth(),
            false,
        ),
        (Mode::VerifyCa | Mode::VerifyFull, None) => bail!(
            "database URL: sslmode={} needs sslrootcert=PATH, the PEM file of the CA that \
             signed the server's certificate",
            options.sslmode.unwrap_or_default()
        ),
    };
    // Our options are spoken for; tokio-postgres only has to insist on TLS.
    config.ssl_mode(tokio_postgres::config::SslMode::Require);
    Ok(Target {
        config,
        tls: Some(MakeRustlsConnect::new(client)),
        unverified,
    })
}

#[derive(Debug, Default, PartialEq, Eq)]
struct TlsOptions {
    sslmode: Option<String>,
    sslrootcert: Option<String>,
}

const OURS: [&str; 2] = ["sslmode", "sslrootcert"];

/// The URL without `sslmode` and `sslrootcert`, and their values. Both of tokio-postgres'
/// forms are read: `postgres://…?k=v&…` and `k=v k='v' …`. Text neither form can read is
/// returned as it is, for tokio-postgres to report.
fn take_tls_options(url: &str) -> (String, TlsOptions) {
    let mut options = TlsOptions::default();
    let mut keep = |key: &str, value: String| -> bool {
        match key {
            "sslmode" => options.sslmode = Some(value),
            "sslrootcert" => options.sslrootcert = Some(value),
            _ => return true,
        }
        false
    };
    let rest = match url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    {
        Some(after_scheme) => {
            // As tokio-postgres does: the query starts after the credentials, at the first `?`.
            let from = url.len() - after_scheme.len() + after_scheme.find('@').unwrap_or(0);
            match url[from..].find('?') {
                None => url.to_string(),
                Some(q) => {
                    let (head, query) = url.split_at(from + q);
                    let kept: Vec<&str> = query[1..]
                        .split('&')
                        .filter(|param| {
                            let mut kv = param.splitn(2, '=');
                            let key = decode(kv.next().unwrap_or(""));
                            !OURS.contains(&key.as_str())
                                || keep(&key, decode(kv.next().unwrap_or("")))
                        })
                        .collect();
                    if kept.is_empty() {
                        head.to_string()
                    } else {
                        format!("{head}?{}", kept.join("&"))
                    }
                }
            }
        }
        None => match key_value_spans(url) {
            Some(params) => {
                let mut rest = String::new();
                let mut at = 0;
                for (key, value, start, end) in params {
                    if !keep(&key, value) {
                        rest.push_str(&url[at..start]);
                        at = end;
                    }
                }
                rest.push_str(&url[at..]);
                rest
            }
            None => url.to_string(),
        },
    };
    (rest, options)
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap() * 16 + hex(l).unwrap()) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `(key, value, start, end)` of each parameter of the `k=v k='v'` form, with libpq's
/// quoting and backslash escapes; `None` when the text does not read as that form.
fn key_value_spans(s: &str) -> Option<Vec<(String, String, usize, usize)>> {
    let mut it = s.char_indices().peekable();
    let mut out = Vec::new();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    loop {
        skip_ws(&mut it);
        let Some(&(start, _)) = it.peek() else {
            return Some(out);
        };
        let mut key = String::new();
        while let Some((_, c)) = it.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        skip_ws(&mut it);
        it.next_if(|(_, c)| *c == '=')?;
        skip_ws(&mut it);
        let mut value = String::new();
        let quoted = it.next_if(|(_, c)| *c == '\'').is_some();
        loop {
            match it.peek() {
                None if quoted => return None,
                None => break,
                Some(&(_, '\'')) if quoted => {
                    it.next();
                    break;
                }
                Some(&(_, c)) if !quoted && c.is_whitespace() => break,
                Some(_) => {
                    let (_, c) = it.next()?;
                    if c == '\\' {
                        value.push(it.next()?.1);
                    } else {
                        value.push(c);
                    }
                }
            }
        }
        let end = it.peek().map_or(s.len(), |&(i, _)| i);
        out.push((key, value, start, end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(url: &str) -> (String, Option<String>, Option<String>) {
        let (rest, o) = take_tls_options(url);
        (rest, o.sslmode, o.sslrootcert)
    }

    fn some(s: &str) -> Option<String> {
        Some(s.into())
    }

    #[test]
    fn url_options_are_taken_out_and_the_rest_kept() {
        assert_eq!(
            take("postgres://u:p@db:5432/x?sslmode=verify-full&application_name=r&sslrootcert=%2Fca%20dir%2Fca.pem"),
            (
                "postgres://u:p@db:5432/x?application_name=r".into(),
                some("verify-full"),
                some("/ca dir/ca.pem")
            )
        );
        assert_eq!(
            take("postgresql://db/x?sslmode=require"),
            ("postgresql://db/x".into(), some("require"), None)
        );
        assert_eq!(
            take("postgres://u:pa?ss@db/x"),
            ("postgres://u:pa?ss@db/x".into(), None, None)
        );
    }

    #[test]
    fn key_value_options_are_taken_out_and_the_rest_kept() {
        assert_eq!(
            take("host=db sslmode = require user=u sslrootcert='/a b\\'c.pem' dbname=x"),
            (
                "host=db  user=u  dbname=x".into(),
                some("require"),
                some("/a b'c.pem")
            )
        );
        // Unreadable text is left for tokio-postgres to report.
        assert_eq!(take("host='db"), ("host='db".into(), None, None));
    }

    #[test]
    fn modes_choose_plain_or_tls() {
        for url in [
            "postgres://db/x",
            "postgres://db/x?sslmode=disable",
            "postgres://db/x?sslmode=prefer",
            "postgres://db/x?sslmode=allow",
        ] {
            assert!(target(url).unwrap().tls.is_none(), "{url}");
        }
        let t = target("postgres://db/x?sslmode=require").unwrap();
        assert!(t.tls.is_some() && t.unverified);
        assert_eq!(
            t.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
    }

    #[test]
    fn bad_tls_options_are_refused_clearly() {
        let e = |url: &str| format!("{:#}", target(url).err().unwrap());
        assert!(e("postgres://db/x?sslmode=verify-full").contains("needs sslrootcert=PATH"));
        assert!(e("postgres://db/x?sslmode=verify-ca").contains("needs sslrootcert=PATH"));
        assert!(e("postgres://db/x?sslmode=on").contains("sslmode=on is not a mode"));
        assert!(
            e("postgres://db/x?sslmode=require&sslrootcert=/nonexistent/ca.pem")
                .starts_with("sslrootcert /nonexistent/ca.pem: cannot read it")
        );
        assert!(e("postgres://db/x?sslmode=verify-full&sslrootcert=system")
            .contains("sslrootcert=system is not supported"));
    }
}
