//! One input for a target: drawn fresh from its field names, or a seed mutated.

use arbitrary::{Result, Unstructured};
use regent_http::fuzz_targets::{Input, Target};

use crate::json::{self, Gen, MAX_BODY};
use crate::{mutate, route};

/// An input of at most `MAX_BODY` bytes (a longer one is cut there).
pub fn next(u: &mut Unstructured, target: &Target) -> Result<Vec<u8>> {
    let mut input = match target.input {
        Input::Body => body(u, target)?,
        Input::Route { params } => route_input(u, target, params)?,
    };
    input.truncate(MAX_BODY);
    Ok(input)
}

fn body(u: &mut Unstructured, target: &Target) -> Result<Vec<u8>> {
    let gen = Gen { keys: &target.keys };
    let seed = u.choose(&target.seeds)?;
    let mut out = Vec::new();
    match u.int_in_range(0..=19)? {
        // Fresh: mostly an object of the body's fields, as a client would send.
        0..=7 => {
            let top = match u.int_in_range(0..=9)? {
                0..=7 => gen.object(u, 0)?,
                _ => gen.value(u, 0)?,
            };
            top.write(&mut out);
        }
        // A seed with its tree edited: well formed, wrong in one place.
        8..=14 => match mutate::tree(u, seed, &gen)? {
            Some(edited) => out = edited,
            None => out.extend_from_slice(seed.as_bytes()),
        },
        // A seed's bytes mangled, with a fresh value or another seed to splice in.
        15..=18 => {
            out.extend_from_slice(seed.as_bytes());
            let mut splice = Vec::new();
            if u.ratio(1, 2)? {
                gen.value(u, 1)?.write(&mut splice);
            } else {
                splice.extend_from_slice(u.choose(&target.seeds)?.as_bytes());
            }
            mutate::bytes(u, &mut out, &splice)?;
        }
        // Not JSON at all.
        _ => match u.int_in_range(0..=3)? {
            0 => {
                out.extend_from_slice(u.choose(&[&b""[..], b" ", b"\n\t\r ", b"\xef\xbb\xbf{}"])?)
            }
            1 => out.extend_from_slice(json::string(u)?.as_bytes()),
            _ => {
                let n = u.int_in_range(0..=64)?;
                out.extend_from_slice(u.bytes(n.min(u.len()))?);
            }
        },
    }
    Ok(out)
}

fn route_input(u: &mut Unstructured, target: &Target, params: usize) -> Result<Vec<u8>> {
    if u.ratio(1, 2)? {
        return route::generate(u, params, &target.keys);
    }
    let seed = u.choose(&target.seeds)?;
    let mut out = seed.as_bytes().to_vec();
    let fresh = route::generate(u, params, &target.keys)?;
    mutate::bytes(u, &mut out, &fresh)?;
    if u.ratio(9, 10)? {
        out = route::escape_invalid(&out);
    }
    Ok(out)
}
