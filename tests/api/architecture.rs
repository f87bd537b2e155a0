//! The documents stay true to the repository: every code path ARCHITECTURE.md (or any other
//! document) names exists, the code map names every crate and every module of `regent-http`,
//! every relative link resolves (to a heading too, when it names one), no document sends a
//! reader outside the repository, and the README stays an entry page. Each check lists every
//! offending item at once.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The repository's root: the `regent` package is the workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &Path) -> String {
    fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{}: {e}", rel.display()))
}

/// Every file under `dir` (relative to the root) whose extension is one of `extensions`,
/// sorted.
fn files_under(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let rel = path
            .strip_prefix(root())
            .expect("under the root")
            .to_path_buf();
        if path.is_dir() {
            files_under(&rel, extensions, out);
        } else if rel
            .extension()
            .is_some_and(|e| extensions.iter().any(|x| e == *x))
        {
            out.push(rel);
        }
    }
}

/// README.md, ARCHITECTURE.md and every Markdown file under docs/: the documents this
/// repository keeps current.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    files_under(Path::new("docs"), &["md"], &mut docs);
    docs
}

/// A Markdown text taken apart: its prose (fenced blocks and code spans blanked out), its
/// code spans, and its headings.
struct Parsed {
    prose: String,
    spans: Vec<String>,
    headings: Vec<String>,
}

fn parse(text: &str) -> Parsed {
    let mut outside = String::new();
    let mut headings = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = &fence {
            if trimmed.starts_with(f.as_str()) {
                fence = None;
            }
            outside.push('\n');
            continue;
        }
        if let Some(mark) = ["```", "~~~"].iter().find(|m| trimmed.starts_with(**m)) {
            let ch = mark.chars().next().expect("a fence character");
            let run = trimmed.chars().take_while(|c| *c == ch).count();
            fence = Some(ch.to_string().repeat(run));
            outside.push('\n');
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            headings.push(trimmed[hashes..].trim().to_string());
        }
        outside.push_str(line);
        outside.push('\n');
    }
    // Code spans: a run of backticks up to the next run of the same length, within one
    // paragraph (a blank line ends the search).
    let chars: Vec<char> = outside.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let mut prose = String::new();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            prose.push(chars[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else if chars[j] == '\n' && chars.get(j + 1) == Some(&'\n') {
                break;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                let span: String = chars[i + n..j].iter().collect();
                spans.push(span.replace('\n', " ").trim().to_string());
                prose.push(' ');
                i = j + n;
            }
            None => {
                prose.extend(&chars[i..i + n]);
                i += n;
            }
        }
    }
    Parsed {
        prose,
        spans,
        headings,
    }
}

/// Where a code span starting with one of these names a path of this repository.
const REPOSITORY_ROOTS: [&str; 9] = [
    "crates/",
    "src/",
    "tests/",
    "migrations/",
    "scripts/",
    "bench/",
    "console/",
    "deploy/",
    "docs/",
];

/// The repository path a code span names, if it names one: its first word, when that starts
/// with one of the repository's top-level folders (`scripts/fuzz [n]` names `scripts/fuzz`).
fn repository_path(span: &str) -> Option<&str> {
    let word = span.split_whitespace().next()?;
    let is_path = REPOSITORY_ROOTS.iter().any(|r| word.starts_with(r))
        && !word.contains("...")
        && !word.contains('<')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-{},*".contains(c));
    is_path.then_some(word)
}

/// Brace forms expanded: `crates/store/src/{fleet,pg_stats}.rs` is two paths.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.to_string()];
    };
    let close = open
        + path[open..]
            .find('}')
            .unwrap_or_else(|| panic!("an unclosed brace in `{path}`"));
    path[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{}{alt}{}", &path[..open], &path[close + 1..])))
        .collect()
}

/// Whether a repository path exists; a glob (`console/test/browser/*`) needs the folder
/// before its first `*`.
fn exists(path: &str) -> bool {
    let literal = match path.find('*') {
        Some(star) => &path[..path[..star].rfind('/').map_or(0, |s| s + 1)],
        None => path,
    };
    root().join(literal).exists()
}

#[test]
fn every_code_path_the_documents_name_exists() {
    let mut missing = Vec::new();
    for doc in documents() {
        for span in parse(&read(&doc)).spans {
            let Some(path) = repository_path(&span) else {
                continue;
            };
            for p in expand(path) {
                if !exists(&p) {
                    missing.push(format!("{}: `{p}` (from `{span}`)", doc.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named in the documents that do not exist:\n{}",
        missing.join("\n")
    );
}

/// The text of ARCHITECTURE.md's "Code map" section, to the next heading of its level.
fn code_map() -> String {
    let text = read(Path::new("ARCHITECTURE.md"));
    let start = text
        .find("\n## Code map\n")
        .expect("ARCHITECTURE.md has a `## Code map` section");
    let body = &text[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
    body[..end].to_string()
}

/// Every path the code map names, expanded.
fn mapped_paths() -> BTreeSet<String> {
    parse(&code_map())
        .spans
        .iter()
        .filter_map(|s| repository_path(s))
        .flat_map(expand)
        .map(|p| p.trim_end_matches('/').to_string())
        .collect()
}

/// The names of a folder's entries, sorted.
fn entries(dir: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| {
            let e = e.expect("a directory entry");
            let is_dir = e.file_type().expect("a file type").is_dir();
            (e.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    out.sort();
    out
}

/// The code map is one paragraph per crate (rust-analyzer's style): every crate has one, and
/// a module is named only where a reader starts.
#[test]
fn the_code_map_names_every_crate() {
    let mapped = mapped_paths();
    let unmapped: Vec<String> = entries("crates")
        .into_iter()
        .filter(|(_, is_dir)| *is_dir)
        .map(|(name, _)| format!("crates/{name}"))
        .filter(|krate| {
            !mapped
                .iter()
                .any(|p| p == krate || p.starts_with(&format!("{krate}/")))
        })
        .collect();
    assert!(
        unmapped.is_empty(),
        "ARCHITECTURE.md's code map does not name the crates:\n{}",
        unmapped.join("\n")
    );
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens;
/// a repeated anchor gets `-1`, `-2`, ….
fn anchors(headings: &[String]) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    headings
        .iter()
        .map(|h| {
            let slug: String = h
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect();
            let n = seen.entry(slug.clone()).or_insert(0);
            let anchor = if *n == 0 { slug } else { format!("{slug}-{n}") };
            *n += 1;
            anchor
        })
        .collect()
}

/// The targets of a text's inline links and images (`[text](target)`, `![alt](target)`) and
/// of its reference definitions (`[name]: target`).
fn link_targets(prose: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = prose;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let mut depth = 0usize;
        let end = after
            .char_indices()
            .find(|&(_, c)| match c {
                '(' => {
                    depth += 1;
                    false
                }
                ')' if depth == 0 => true,
                ')' => {
                    depth -= 1;
                    false
                }
                '\n' => true,
                _ => false,
            })
            .map_or(after.len(), |(i, _)| i);
        let target = after[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &after[end..];
    }
    for line in prose.lines() {
        let line = line.trim_start();
        if let (Some(rest), true) = (line.strip_prefix('['), line.contains("]: ")) {
            if let Some((_, target)) = rest.split_once("]: ") {
                out.push(target.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    }
    out
}

/// `base/../x` and `./x` folded, as a reader's browser folds them.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

#[test]
fn every_relative_link_resolves() {
    let docs = documents();
    let parsed: BTreeMap<PathBuf, Parsed> =
        docs.iter().map(|d| (d.clone(), parse(&read(d)))).collect();
    let mut broken = Vec::new();
    for (doc, p) in &parsed {
        for target in link_targets(&p.prose) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                Some(doc.clone())
            } else {
                normalise(&doc.parent().unwrap_or(Path::new("")).join(path))
            };
            let Some(resolved) = resolved.filter(|r| root().join(r).exists()) else {
                broken.push(format!("{}: ({target}): no such file", doc.display()));
                continue;
            };
            let Some(fragment) = fragment.filter(|f| !f.is_empty()) else {
                continue;
            };
            if resolved.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let headings = match parsed.get(&resolved) {
                Some(p) => anchors(&p.headings),
                None => anchors(&parse(&read(&resolved)).headings),
            };
            if !headings.contains(fragment) {
                broken.push(format!(
                    "{}: ({target}): {} has no heading `#{fragment}`",
                    doc.display(),
                    resolved.display()
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that do not resolve:\n{}",
        broken.join("\n")
    );
}

#[test]
fn no_document_sends_a_reader_outside_the_repository() {
    let mut docs = documents();
    docs.push(PathBuf::from("BENCHMARKS.md"));
    let mut outside = Vec::new();
    for doc in docs {
        for (n, line) in read(&doc).lines().enumerate() {
            for needle in ["../shared", "/work/"] {
                if line.contains(needle) {
                    outside.push(format!(
                        "{}:{}: `{needle}`: {}",
                        doc.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        outside.is_empty(),
        "documents that point outside the repository:\n{}",
        outside.join("\n")
    );
}

#[test]
fn the_readme_is_an_entry_page() {
    let lines = read(Path::new("README.md")).lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; at most 200: what is not an entry belongs in docs/"
    );
}

/// `tests/api/ack_contract.rs` cites docs/api.md, "Acknowledgement", as its contract.
#[test]
fn the_ack_contract_the_tests_cite_is_there() {
    let api = parse(&read(Path::new("docs/api.md")));
    assert!(
        api.headings.iter().any(|h| h == "Acknowledgement"),
        "docs/api.md has no `Acknowledgement` section; tests/api/ack_contract.rs cites it"
    );
}

/// Every source file of the repository's code (Rust and SQL), sorted.
fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["src", "crates", "tests", "migrations"] {
        files_under(Path::new(dir), &["rs", "sql"], &mut out);
    }
    out
}

/// A comment's text with its line breaks and comment markers taken out, so a citation that
/// runs over two comment lines reads as one.
fn joined(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let t = ["//!", "///", "//", "--"]
            .iter()
            .find_map(|m| t.strip_prefix(m))
            .unwrap_or(t);
        out.push(' ');
        out.push_str(t.trim());
    }
    out
}

/// A document and a heading the code cites as `(ARCHITECTURE.md, "Heading")` or
/// `docs/….md, "Heading"` exist: a renamed section fails here, not in a reader's search.
#[test]
fn every_heading_the_code_cites_exists() {
    let mut problems = Vec::new();
    // This file's own examples are not citations.
    for file in sources()
        .into_iter()
        .filter(|f| !f.ends_with("architecture.rs"))
    {
        let text = joined(&read(&file));
        for (i, _) in text.match_indices(".md") {
            let start = text[..i]
                .char_indices()
                .rev()
                .find(|(_, c)| !(c.is_alphanumeric() || "/_-.".contains(*c)))
                .map_or(0, |(s, c)| s + c.len_utf8());
            let doc = &text[start..i + 3];
            let Some(rest) = text[i + 3..]
                .strip_prefix(", \"")
                .or_else(|| text[i + 3..].strip_prefix(" \""))
            else {
                continue;
            };
            let Some(end) = rest.find('"') else { continue };
            let heading = &rest[..end];
            let path = if doc.starts_with("design/") {
                format!("docs/{doc}")
            } else {
                doc.to_string()
            };
            if !root().join(&path).is_file() {
                problems.push(format!(
                    "{}: cites {doc}, which is not there",
                    file.display()
                ));
                continue;
            }
            // A heading may carry more than is cited (BENCHMARKS.md's end in the issue and the
            // date): the cited words must stand in one heading.
            let headings = parse(&read(Path::new(&path))).headings;
            let plain = |h: &String| h.replace('`', "").to_lowercase();
            if !headings
                .iter()
                .any(|h| plain(h).contains(&heading.to_lowercase()))
            {
                problems.push(format!(
                    "{}: cites {path}, \"{heading}\", no such heading",
                    file.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The migrations the documents count and list are the ones in `migrations/`: a new
/// migration is named where the schema's history is told.
#[test]
fn the_documents_name_every_migration() {
    let mut numbers: Vec<u32> = fs::read_dir(root().join("migrations"))
        .expect("migrations/")
        .filter_map(|e| {
            let name = e.expect("an entry").file_name().into_string().ok()?;
            name.strip_prefix('V')?.split("__").next()?.parse().ok()
        })
        .collect();
    numbers.sort();
    let last = *numbers.last().expect("a migration");
    assert_eq!(
        numbers,
        (1..=last).collect::<Vec<_>>(),
        "migrations are numbered without gaps"
    );
    let mut problems = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        for (i, _) in text.match_indices("V1 to V") {
            let n: String = text[i + 7..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if n.parse::<u32>().ok() != Some(last) {
                problems.push(format!(
                    "{}: says V1 to V{n}; the last is V{last}",
                    doc.display()
                ));
            }
        }
    }
    let storage = read(Path::new("docs/design/storage.md"));
    let section = storage
        .split("## Migrations")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/design/storage.md has a Migrations section");
    for n in numbers {
        let named = section
            .match_indices(&format!("V{n}"))
            .any(|(i, m)| !section[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
        if !named {
            problems.push(format!(
                "docs/design/storage.md, Migrations: V{n} is not told"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The names of the functions `CREATE [OR REPLACE] FUNCTION` defines in `text`.
fn functions_defined(text: &str) -> BTreeSet<String> {
    let upper = text.to_uppercase();
    let mut out = BTreeSet::new();
    for (i, _) in upper.match_indices("FUNCTION ") {
        let before = upper[..i].trim_end();
        if !(before.ends_with("CREATE") || before.ends_with("OR REPLACE")) {
            continue;
        }
        let name: String = text[i + 9..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.insert(name);
    }
    out
}

/// Every database function has its one definition in `crates/store/sql/functions.sql`,
/// applied at every start; a migration defines none (it holds the schema and the `DROP
/// FUNCTION IF EXISTS` a changed signature needs), so a change is made in one place.
#[test]
fn every_database_function_has_one_definition() {
    let one = functions_defined(&read(Path::new("crates/store/sql/functions.sql")));
    let mut in_migrations = BTreeSet::new();
    for entry in fs::read_dir(root().join("migrations")).expect("migrations/") {
        let path = entry.expect("an entry").path();
        let rel = path.strip_prefix(root()).expect("under the root");
        for f in functions_defined(&read(rel)) {
            in_migrations.insert(format!("{f} ({})", rel.display()));
        }
    }
    assert!(
        in_migrations.is_empty(),
        "defined by a migration, not only in crates/store/sql/functions.sql: {in_migrations:?}"
    );
    for f in [
        "regent_append",
        "regent_append_known",
        "regent_stream_state",
    ] {
        assert!(one.contains(f), "{f} is not in functions.sql: {one:?}");
    }
}
