//! Each route's description in the OpenAPI document, as prose: one Markdown file per route
//! family (named as the family's module), one `## METHOD /path` section per route, the path
//! as the route table writes it. The prose lives here rather than in the table, so a route's
//! entry stays a few lines (method, path, level, handler, types), and the text reads as the
//! Markdown it is rendered as.
//!
//! A route without its section, or a section naming no served route, fails the test below.

use axum::http::Method;

/// Every family's file.
const FAMILIES: &[&str] = &[
    include_str!("ack.md"),
    include_str!("analytics.md"),
    include_str!("configure.md"),
    include_str!("console.md"),
    include_str!("consumer_groups.md"),
    include_str!("dlq.md"),
    include_str!("ephemeral.md"),
    include_str!("fleet.md"),
    include_str!("health.md"),
    include_str!("kv.md"),
    include_str!("lease.md"),
    include_str!("maintenance.md"),
    include_str!("messages.md"),
    include_str!("metrics.md"),
    include_str!("openapi.md"),
    include_str!("pop.md"),
    include_str!("push.md"),
    include_str!("queue_metrics.md"),
    include_str!("resources.md"),
    include_str!("stats.md"),
    include_str!("status.md"),
    include_str!("streams.md"),
    include_str!("timers.md"),
    include_str!("traces.md"),
    include_str!("transaction.md"),
    include_str!("whoami.md"),
];

/// Every section: its heading (`METHOD /path`) and its text, trimmed.
fn sections() -> impl Iterator<Item = (&'static str, &'static str)> {
    FAMILIES.iter().flat_map(|file| {
        // The text before a file's first section is the file's own preamble.
        file.split("\n## ").skip(1).map(|s| {
            let (heading, text) = s.split_once('\n').unwrap_or((s, ""));
            (heading.trim(), text.trim())
        })
    })
}

/// The description of the route `method path`.
pub(crate) fn of(method: &Method, path: &str) -> Option<&'static str> {
    sections()
        .find(|(heading, _)| heading.split_once(' ') == Some((method.as_str(), path)))
        .map(|(_, text)| text)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_route_has_its_section_and_every_section_a_route() {
        let served: BTreeSet<String> = crate::routes::routes()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        for (heading, text) in sections() {
            if !served.contains(heading) {
                problems.push(format!("`## {heading}`: no such route is served"));
            }
            if !seen.insert(heading) {
                problems.push(format!("`## {heading}`: written twice"));
            }
            if text.is_empty() {
                problems.push(format!("`## {heading}`: no text"));
            }
        }
        for route in served.iter().filter(|r| !seen.contains(r.as_str())) {
            problems.push(format!(
                "{route}: no section (`## {route}` in its family's file under crates/http/src/about/)"
            ));
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn a_section_is_found_by_method_and_path() {
        let kv = of(&Method::POST, "/api/v1/kv").expect("the kv route's section");
        assert!(kv.starts_with("`operations` apply in order"));
        assert_eq!(of(&Method::GET, "/api/v1/kv"), None);
    }
}
