//! The project stands on its own: what a clone holds explains every rule it relies on.
//!
//! - No file of the project (README, `docs/`, sources, tests, benches, examples, fuzzing,
//!   fixtures, CI) points at documents outside the repository: the developers' notes beside
//!   the checkout are not part of a clone. The one folder outside it that tests may read is
//!   the third-party captures (docs/testing.md, *Third-party captures*), which they skip without.
//! - Every `docs/rules.md §N` (or `§N.M`, or a range `§N–M`) cited anywhere names a section
//!   that `docs/rules.md` has, and every other `§` cites a named standard (`H.225.0 §7.2.1`,
//!   `RFC 1006 §6`), so no comment is left citing a section of a document nobody has.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The project's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Folders the checks walk (with every file below them) and single files they read.
const FOLDERS: &[&str] = &[
    "docs", "src", "tests", "benches", "examples", "fuzz", "fixtures", ".ci", "asn1",
];
const FILES: &[&str] = &["README.md", "Cargo.toml"];

/// Build output and generated corpora below the folders, never part of a clone.
const SKIPPED: &[&str] = &[
    "fuzz/target",
    "fuzz/corpus",
    "fuzz/artifacts",
    "asn1/codegen/target",
];

/// Every text file the checks read, as (path relative to the root, contents). Binary files
/// (captures, fuzz regressions) are left out.
fn project_files() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending: Vec<PathBuf> = FOLDERS.iter().map(|f| root().join(f)).collect();
    pending.extend(FILES.iter().map(|f| root().join(f)));
    while let Some(path) = pending.pop() {
        let relative = path
            .strip_prefix(root())
            .expect("below the root")
            .to_string_lossy()
            .replace('\\', "/");
        if SKIPPED.contains(&relative.as_str()) {
            continue;
        }
        if path.is_dir() {
            let entries = fs::read_dir(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
            pending.extend(entries.map(|entry| entry.expect("a directory entry").path()));
        } else if let Ok(text) = fs::read_to_string(&path) {
            out.push((relative, text));
        }
    }
    assert!(
        out.iter().any(|(path, _)| path == "docs/rules.md"),
        "docs/rules.md is missing"
    );
    out.sort();
    out
}

/// What must not appear in the project, built so that this file does not hold it either:
/// the developers' behaviour notes and the vendor documents they were made from.
fn forbidden() -> Vec<String> {
    vec![
        ["domain", ".md"].concat(),
        ["shared", "/docs"].concat(),
        ["shared", "/seeds"].concat(),
        ["seeds", "/"].concat(),
        ["/work", "/main"].concat(),
    ]
}

#[test]
fn nothing_points_outside_the_repository() {
    let forbidden = forbidden();
    let outside = ["shared", "/"].concat();
    let captures = ["shared", "/captures"].concat();
    let mut found = Vec::new();
    for (path, text) in project_files() {
        for (n, line) in text.lines().enumerate() {
            for word in &forbidden {
                if line.contains(word.as_str()) {
                    found.push(format!("{path}:{}: {word:?} in {line:?}", n + 1));
                }
            }
            // The shared folder beside the checkout: its captures only.
            let mut rest = line;
            while let Some(at) = rest.find(outside.as_str()) {
                if !rest[at..].starts_with(captures.as_str()) {
                    found.push(format!("{path}:{}: {line:?}", n + 1));
                    break;
                }
                rest = &rest[at + outside.len()..];
            }
        }
    }
    assert!(
        found.is_empty(),
        "these lines point outside the repository; cite docs/rules.md §N instead:\n{}",
        found.join("\n")
    );
}

/// A `§` citation: its section numbers (both ends of a range), and where it stands.
#[derive(Debug)]
struct Citation {
    /// Section numbers cited, as "N" or "N.M".
    sections: Vec<String>,
    /// Whether a named standard precedes it (`H.225.0 §7`, `RFC 1006 §6`).
    of_a_standard: bool,
    /// Whether `rules.md` comes before it on its line.
    after_rules: bool,
}

/// Standards whose sections the project cites by number.
const STANDARDS: &[&str] = &["H.225.0", "H.235", "H.245", "X.691", "X.697", "RFC"];

/// The `§` citations of one line. `§N` written as a placeholder (a letter after `§`) is
/// not one.
fn citations(line: &str) -> Vec<Citation> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices('§') {
        let before = &line[..at];
        let after = &line[at + '§'.len_utf8()..];
        let number = |text: &str| -> (String, usize) {
            let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
            let mut len = digits.len();
            let mut number = digits;
            if let Some(sub) = text[len..].strip_prefix('.') {
                let more: String = sub.chars().take_while(char::is_ascii_digit).collect();
                if !more.is_empty() {
                    len += 1 + more.len();
                    number = format!("{number}.{more}");
                }
            }
            (number, len)
        };
        let (first, len) = number(after);
        if first.is_empty() {
            continue;
        }
        let mut sections = vec![first];
        let tail = &after[len..];
        if let Some(end) = tail.strip_prefix('–').or_else(|| tail.strip_prefix('-')) {
            let (last, _) = number(end);
            if !last.is_empty() {
                sections.push(last);
            }
        }
        let mut words = before
            .trim_end()
            .rsplit(' ')
            .map(|word| word.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()));
        let (last, second_last) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        // `H.225.0 §7`, or `RFC 1006 §6`.
        let of_a_standard = STANDARDS.iter().any(|s| last == *s || second_last == *s);
        out.push(Citation {
            sections,
            of_a_standard,
            after_rules: before.contains("rules.md"),
        });
    }
    out
}

/// The sections `docs/rules.md` has: `## §N …` and `### §N.M …` headings.
fn rules_sections(rules: &str) -> BTreeSet<String> {
    rules
        .lines()
        .filter_map(|line| {
            let heading = line.strip_prefix("### §").or(line.strip_prefix("## §"))?;
            let number = heading.split(' ').next()?;
            Some(number.to_string())
        })
        .collect()
}

#[test]
fn rules_sections_are_numbered_in_order() {
    let rules = fs::read_to_string(root().join("docs/rules.md")).expect("docs/rules.md reads");
    let sections: Vec<String> = rules
        .lines()
        .filter_map(|line| {
            let heading = line.strip_prefix("### §").or(line.strip_prefix("## §"))?;
            Some(heading.split(' ').next()?.to_string())
        })
        .collect();
    assert!(sections.len() >= 15, "{sections:?}");
    let mut last = (0u32, 0u32);
    for section in &sections {
        let mut parts = section
            .split('.')
            .map(|p| p.parse::<u32>().expect("a number"));
        let major = parts.next().expect("a section number");
        let minor = parts.next().unwrap_or(0);
        let expected = if minor == 0 {
            (last.0 + 1, 0)
        } else {
            (last.0, last.1 + 1)
        };
        assert_eq!(
            (major, minor),
            expected,
            "docs/rules.md: §{section} follows §{}.{}",
            last.0,
            last.1
        );
        last = (major, minor);
    }
}

#[test]
fn every_rules_citation_names_a_section_that_exists() {
    let files = project_files();
    let rules = &files
        .iter()
        .find(|(path, _)| path == "docs/rules.md")
        .expect("docs/rules.md")
        .1;
    let sections = rules_sections(rules);
    let mut cited = 0;
    let mut wrong = Vec::new();
    for (path, text) in &files {
        for (n, line) in text.lines().enumerate() {
            let place = format!("{path}:{}", n + 1);
            for citation in citations(line) {
                if citation.of_a_standard {
                    continue;
                }
                if !citation.after_rules && path != "docs/rules.md" {
                    wrong.push(format!(
                        "{place}: a § that names no document (write docs/rules.md §N on the \
                         same line): {line:?}"
                    ));
                    continue;
                }
                for section in &citation.sections {
                    cited += 1;
                    if !sections.contains(section) {
                        wrong.push(format!(
                            "{place}: docs/rules.md has no §{section}: {line:?}"
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The code does cite the rules: a check that found nothing would prove nothing.
    assert!(cited > 50, "only {cited} citations of docs/rules.md found");
}

#[test]
fn citations_are_read_as_meant() {
    // `\u{a7}` is the section sign, escaped so that this file does not cite anything itself.
    let line = "// tiers (docs/rules.md \u{a7}2.3, \u{a7}4\u{2013}6), H.225.0 \u{a7}7.2.1, RFC 1006 \u{a7}6";
    let found = citations(line);
    let sections: Vec<Vec<&str>> = found
        .iter()
        .map(|c| c.sections.iter().map(String::as_str).collect())
        .collect();
    // One level of subsection is all docs/rules.md has: 7.2.1 reads as 7.2.
    assert_eq!(
        sections,
        [vec!["2.3"], vec!["4", "6"], vec!["7.2"], vec!["6"]]
    );
    assert!(found[0].after_rules && !found[0].of_a_standard);
    assert!(found[1].after_rules && !found[1].of_a_standard);
    assert!(found[2].of_a_standard && found[3].of_a_standard);
    assert!(citations("the code cites `docs/rules.md \u{a7}N`").is_empty());
    let bare = citations("/// the next candidate of \u{a7}4");
    assert!(!bare[0].after_rules && !bare[0].of_a_standard);
    let quoted = citations("a standard (`H.225.0 \u{a7}7.2.1`)");
    assert!(quoted[0].of_a_standard);
}
