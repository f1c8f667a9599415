//! The layers of `src/`: which file may use which.
//!
//! - No circle of imports between the files of `src/`: each file can be read knowing only
//!   the files it uses, never the ones that use it.
//! - No subcommand's module uses another subcommand's (`bench` aside: it runs the others).
//!   What two subcommands share lives below both of them.
//!
//! The reader is simple, and these are its limits:
//! - It takes a file's module from its path (`src/storm/life.rs` is `crate::storm::life`,
//!   `src/storm/mod.rs` is `crate::storm`); `#[path]` attributes are not read (`src/` has
//!   none).
//! - It sees the paths that start with `crate::`, `super::` or `self::`, and the `use` paths
//!   and path expressions that start with a child module the file declares (`mod life;` then
//!   `life::run(…)`). A name brought in some other way (a glob import, a macro that writes
//!   a path, a local name that shadows a child module) is not followed.
//! - A path is charged to the file of its longest prefix that is a module, or, where that
//!   file only brings the name in with a `use` (a re-export), to the file the name comes
//!   from: `crate::server::bind_udp` is a use of `src/sockets.rs`.
//! - A module's root file (`mod.rs`, `lib.rs`) and the parts it declares are read together
//!   (the root puts its parts to work, the parts build on what it defines, as the
//!   gatekeeper's `impl Gatekeeper` blocks do): uses between them make no circle. Every
//!   other pair of files does, siblings included.
//! - Comments, string and character literals are blanked before reading (raw strings
//!   included); `mod NAME { … }` blocks in a file are followed by counting braces, so that
//!   `super::` in a file's `mod tests` names the file itself.
//! - `src/main.rs` is the binary's root: it uses every subcommand and nothing uses it, so it
//!   is not read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The modules behind `rasgk`'s subcommands (`inspect` is `rasgk decode`, `server` is
/// `rasgk serve`).
const SUBCOMMANDS: &[&str] = &[
    "storm", "plan", "replay", "inspect", "status", "bench", "server", "exam",
];

/// The one subcommand that may use the others: it runs them.
const RUNS_THE_OTHERS: &str = "bench";

/// A file of `src/`: its path, its module and its text.
struct Source {
    path: String,
    module: Vec<String>,
    text: String,
}

/// One file's use of another: from, to, the line of `from` and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Use {
    from: String,
    to: String,
    line: usize,
    path: String,
}

/// Every `.rs` file below `src/` but `main.rs`.
fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut pending = vec![src.clone()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path
                .strip_prefix(&src)
                .expect("below src/")
                .to_string_lossy()
                .replace('\\', "/");
            if relative == "main.rs" {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
            out.push(Source {
                module: module_of(&relative),
                path: format!("src/{relative}"),
                text,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The module of a file, from its path below `src/`: `storm/mod.rs` is `["storm"]`,
/// `lib.rs` is `[]`.
fn module_of(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text with comments blanked and the insides of string and character literals
/// removed; line breaks stay where they were, so line numbers hold.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Keeps the line breaks of what is skipped.
    let skip = |out: &mut String, from: usize, to: usize| {
        out.extend(chars[from..to].iter().filter(|&&c| c == '\n'));
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len());
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < chars.len() && depth > 0 {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 1;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 1;
                }
                j += 1;
            }
            skip(&mut out, i, j);
            i = j;
        } else if (c == 'r' || c == 'b')
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && raw_string_start(&chars, i).is_some()
        {
            let (hashes, open) = raw_string_start(&chars, i).expect("just seen");
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut j = open + 1;
            while j < chars.len() && !chars[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(chars.len());
            skip(&mut out, i, end);
            out.push_str("\"\"");
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            skip(&mut out, i, end);
            out.push_str("\"\"");
            i = end;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{7b}'), or else a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .map(|j| j + 1)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.push_str("' '");
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At `r"`, `r#"`, `br##"` …: the number of `#` and the index of the opening quote.
fn raw_string_start(chars: &[char], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    if chars[i] == 'b' {
        i += 1;
    }
    if chars.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    (chars.get(i + hashes) == Some(&'"')).then_some((hashes, i + hashes))
}

/// A token of code: an identifier or keyword, `::`, or one character of punctuation.
#[derive(Debug, Clone, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

fn tokens(code: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_alphanumeric() || c == '_' {
                let end = (i..chars.len())
                    .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_'))
                    .unwrap_or(chars.len());
                out.push(Token {
                    text: chars[i..end].iter().collect(),
                    line: index + 1,
                });
                i = end;
            } else if c == ':' && chars.get(i + 1) == Some(&':') {
                out.push(Token {
                    text: "::".into(),
                    line: index + 1,
                });
                i += 2;
            } else {
                if !c.is_whitespace() {
                    out.push(Token {
                        text: c.to_string(),
                        line: index + 1,
                    });
                }
                i += 1;
            }
        }
    }
    out
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// A path of a `use` tree and the name it is brought in as, when renamed (`as NAME`).
type UsePath = (Vec<String>, Option<String>);

/// The paths of a `use` tree starting at `tokens[at]`, with the index after it: `a::{b,
/// c::d as e, f::*}` gives `a::b`, `a::c::d` (as `e`) and `a::f::*`.
fn use_tree(tokens: &[Token], at: usize, prefix: &[String]) -> (Vec<UsePath>, usize) {
    let mut path = prefix.to_vec();
    let mut i = at;
    loop {
        match tokens.get(i).map(|t| t.text.as_str()) {
            Some("{") => {
                let mut paths = Vec::new();
                i += 1;
                while let Some(t) = tokens.get(i) {
                    match t.text.as_str() {
                        "}" => {
                            i += 1;
                            break;
                        }
                        "," => i += 1,
                        _ => {
                            let (inner, after) = use_tree(tokens, i, &path);
                            paths.extend(inner);
                            i = after;
                        }
                    }
                }
                return (paths, i);
            }
            Some("::") => i += 1,
            Some("*") => {
                path.push("*".into());
                return (vec![(path, None)], i + 1);
            }
            Some("as") => {
                let alias = tokens.get(i + 1).map(|t| t.text.clone());
                return (vec![(path, alias)], i + 2);
            }
            // `a::{self, b}`: `self` is `a` itself.
            Some("self") if !path.is_empty() => i += 1,
            Some(t) if is_ident(t) => {
                path.push(t.to_string());
                i += 1;
            }
            _ => return (vec![(path, None)], i),
        }
    }
}

/// What one file says, read without the others.
#[derive(Default)]
struct Reading {
    /// The paths the file writes (outside its tests), from the crate's root: (path, line,
    /// as written).
    paths: Vec<(Vec<String>, usize, String)>,
    /// The names a `use` brings into one of the file's modules: (module, name) to path.
    bindings: BTreeMap<(Vec<String>, String), Vec<String>>,
    /// The glob imports (`use a::b::*`) of the file's modules: module to paths.
    globs: BTreeMap<Vec<String>, Vec<Vec<String>>>,
    /// The items the file defines: (module, name).
    defined: BTreeSet<(Vec<String>, String)>,
    /// The modules the file declares (`mod NAME;` and `mod NAME { … }`).
    declared: BTreeSet<Vec<String>>,
    /// Its modules written out in the file (`mod NAME { … }`).
    inline: BTreeSet<Vec<String>>,
    /// Child modules declared `#[cfg(test)] mod NAME;`: files compiled only for tests.
    test_only: BTreeSet<Vec<String>>,
}

/// The keywords whose next word is the name of an item they define.
const DEFINING: &[&str] = &[
    "fn", "struct", "enum", "const", "static", "type", "trait", "union",
];

/// Reads one file on its own: what it writes, binds, defines and declares.
fn read(source: &Source) -> Reading {
    let code = code_only(&source.text);
    let tokens = tokens(&code);
    let mut reading = Reading::default();
    // Paths as written, with the module they are written in; made absolute at the end, when
    // every binding and declaration of the file is known.
    let mut written: Vec<(Vec<String>, Vec<String>, usize)> = Vec::new();
    let mut uses: Vec<(Vec<String>, UsePath)> = Vec::new();
    // The module the reader is in: the file's, then the `mod NAME {` blocks it is inside,
    // each with the brace depth it opened at and whether it is compiled only for tests.
    let mut module = source.module.clone();
    let mut blocks: Vec<(usize, bool)> = Vec::new();
    let mut depth = 0usize;
    let mut cfg_test = false;
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    let mut i = 0;
    while i < tokens.len() {
        let line = tokens[i].line;
        let in_tests = blocks.iter().any(|&(_, test)| test);
        let at_module_level = depth == blocks.last().map_or(0, |&(open, _)| open + 1);
        if text(i) == "#"
            && (1..=6)
                .map(|k| text(i + k))
                .eq(["[", "cfg", "(", "test", ")", "]"])
        {
            cfg_test = true;
            i += 7;
            continue;
        }
        match text(i) {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if blocks.last().is_some_and(|&(open, _)| open == depth) {
                    blocks.pop();
                    module.pop();
                }
            }
            "mod" if is_ident(text(i + 1)) && matches!(text(i + 2), "{" | ";") => {
                let mut child = module.clone();
                child.push(text(i + 1).to_string());
                reading.declared.insert(child.clone());
                if text(i + 2) == "{" {
                    reading.inline.insert(child.clone());
                    blocks.push((depth, cfg_test || in_tests));
                    module = child;
                    depth += 1;
                } else if cfg_test {
                    reading.test_only.insert(child);
                }
                cfg_test = false;
                i += 3;
                continue;
            }
            "use" if i == 0 || text(i - 1) != "::" => {
                let (paths, after) = use_tree(&tokens, i + 1, &[]);
                for (path, alias) in paths {
                    if !in_tests {
                        written.push((module.clone(), path.clone(), line));
                    }
                    if at_module_level {
                        uses.push((module.clone(), (path, alias)));
                    }
                }
                cfg_test = false;
                i = after;
                continue;
            }
            keyword if DEFINING.contains(&keyword) && is_ident(text(i + 1)) => {
                if at_module_level {
                    reading
                        .defined
                        .insert((module.clone(), text(i + 1).to_string()));
                }
                cfg_test = false;
            }
            "macro_rules" if text(i + 1) == "!" => {
                reading
                    .defined
                    .insert((module.clone(), text(i + 2).to_string()));
            }
            word if is_ident(word) && (i == 0 || text(i - 1) != "::") && text(i + 1) == "::" => {
                let mut path = vec![word.to_string()];
                let mut j = i + 1;
                while text(j) == "::" && is_ident(text(j + 1)) {
                    path.push(text(j + 1).to_string());
                    j += 2;
                }
                if !in_tests {
                    written.push((module.clone(), path, line));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // The `use` bindings first (a `use` may start from another one's name), then every
    // path written.
    let mut pending = uses;
    for _ in 0..8 {
        let mut left = Vec::new();
        for (module, (path, alias)) in pending {
            match absolute(&module, &path, &reading) {
                Some(mut target) if target.last().is_some_and(|s| s == "*") => {
                    target.pop();
                    reading.globs.entry(module).or_default().push(target);
                }
                Some(target) => {
                    let name = alias.or_else(|| target.last().cloned());
                    if let Some(name) = name {
                        reading.bindings.insert((module, name), target);
                    }
                }
                None => left.push((module, (path, alias))),
            }
        }
        pending = left;
    }
    for (module, path, line) in written {
        let as_written = path.join("::");
        if let Some(mut path) = absolute(&module, &path, &reading) {
            path.retain(|s| s != "*");
            reading.paths.push((path, line, as_written));
        }
    }
    reading
}

/// A path written in `module`, from the crate's root; `None` for one that starts outside
/// the crate (`std::…`, another crate) or at a local name.
fn absolute(module: &[String], path: &[String], reading: &Reading) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let mut out = module.to_vec();
    let mut rest = path;
    match first {
        "crate" => {
            out.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop()?;
                rest = &rest[1..];
            }
        }
        _ => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if let Some(bound) = reading.bindings.get(&(module.to_vec(), first.to_string())) {
                out = bound.clone();
                rest = &path[1..];
            } else if !reading.declared.contains(&child) {
                return None;
            }
        }
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// Each file's reading, by the module the file is.
type Readings = BTreeMap<Vec<String>, (String, Reading)>;

/// The file that holds what an absolute path names: the file of its longest prefix that
/// is a module, or, where that file only brings the name in with a `use` (a re-export),
/// the file the name comes from.
fn locate(path: &[String], readings: &Readings) -> Option<String> {
    let mut path = path.to_vec();
    let mut found = None;
    'follow: for _ in 0..16 {
        let n = (0..=path.len())
            .rev()
            .find(|&n| readings.contains_key(&path[..n]))?;
        let (file, reading) = &readings[&path[..n]];
        found = Some(file.clone());
        let mut k = n;
        while k < path.len() {
            let scope = path[..k].to_vec();
            let name = path[k].clone();
            if let Some(target) = reading.bindings.get(&(scope.clone(), name.clone())) {
                path = target.iter().chain(&path[k + 1..]).cloned().collect();
                continue 'follow;
            }
            if reading.inline.contains(&path[..=k]) {
                k += 1;
                continue;
            }
            if reading.defined.contains(&(scope.clone(), name)) {
                break 'follow;
            }
            if let Some(glob) = reading.globs.get(&scope).and_then(|g| g.first()) {
                path = glob.iter().chain(&path[k..]).cloned().collect();
                continue 'follow;
            }
            break 'follow;
        }
        break;
    }
    found
}

/// Every use between files of the crate (a file's uses of itself left out), outside the
/// code compiled only for tests.
fn all_uses(sources: &[Source]) -> Vec<Use> {
    let readings: Readings = sources
        .iter()
        .map(|s| (s.module.clone(), (s.path.clone(), read(s))))
        .collect();
    let test_only: BTreeSet<&Vec<String>> = readings
        .values()
        .flat_map(|(_, reading)| reading.test_only.iter())
        .collect();
    let mut uses = Vec::new();
    for (module, (from, reading)) in &readings {
        if test_only.contains(module) {
            continue;
        }
        for (path, line, as_written) in &reading.paths {
            if let Some(to) = locate(path, &readings) {
                if &to != from {
                    uses.push(Use {
                        from: from.clone(),
                        to,
                        line: *line,
                        path: as_written.clone(),
                    });
                }
            }
        }
    }
    uses.sort();
    uses.dedup();
    uses
}

/// Whether a use is between a module's root file (`mod.rs`, `lib.rs`) and one of the parts
/// it declares, either way. Those two are read together: the root declares its parts and
/// puts them to work, and the parts build on what it defines (`impl Gatekeeper` in the
/// gatekeeper's parts), so such a pair is not counted as a circle.
fn between_root_and_part(u: &Use) -> bool {
    let module = |path: &str| module_of(path.strip_prefix("src/").unwrap_or(path));
    let (from, to) = (module(&u.from), module(&u.to));
    let parent_of =
        |root: &[String], part: &[String]| part.len() == root.len() + 1 && part.starts_with(root);
    parent_of(&from, &to) || parent_of(&to, &from)
}

/// The circles: groups of two or more files each of which reaches all the others
/// (strongly connected components, Tarjan's algorithm).
fn circles(uses: &[Use]) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for u in uses.iter().filter(|u| !between_root_and_part(u)) {
        edges.entry(&u.from).or_default().insert(&u.to);
        edges.entry(&u.to).or_default();
    }
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        groups: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for &next in &self.edges[node] {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    group.push(top.to_string());
                    if top == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for &node in edges.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.groups.sort();
    walk.groups
}

/// The circles, each with the uses inside it, as a message.
fn describe_circles(uses: &[Use]) -> String {
    let mut out = String::new();
    for group in circles(uses) {
        out.push_str(&format!("circle: {}\n", group.join(", ")));
        for u in uses.iter().filter(|u| {
            group.contains(&u.from) && group.contains(&u.to) && !between_root_and_part(u)
        }) {
            out.push_str(&format!(
                "  {}:{} uses {} ({})\n",
                u.from, u.line, u.to, u.path
            ));
        }
    }
    out
}

/// The subcommand a file belongs to, if any.
fn subcommand(path: &str) -> Option<&'static str> {
    let top = path.strip_prefix("src/")?.split(['/', '.']).next()?;
    SUBCOMMANDS.iter().copied().find(|s| *s == top)
}

/// Uses of one subcommand's module by another's, `bench` aside.
fn crossings(uses: &[Use]) -> Vec<&Use> {
    uses.iter()
        .filter(|u| match (subcommand(&u.from), subcommand(&u.to)) {
            (Some(from), Some(to)) => from != to && from != RUNS_THE_OTHERS,
            _ => false,
        })
        .collect()
}

#[test]
fn no_circle_between_the_files_of_src() {
    let uses = all_uses(&sources());
    assert!(
        uses.len() > 100,
        "the reader found only {} uses between files: it has stopped reading",
        uses.len()
    );
    let circles = describe_circles(&uses);
    assert!(circles.is_empty(), "files that use each other:\n{circles}");
}

#[test]
fn no_subcommand_uses_another() {
    let uses = all_uses(&sources());
    let crossings: Vec<String> = crossings(&uses)
        .iter()
        .map(|u| format!("{}:{} uses {} ({})", u.from, u.line, u.to, u.path))
        .collect();
    assert!(
        crossings.is_empty(),
        "a subcommand's module uses another's (share it from below both instead):\n{}",
        crossings.join("\n")
    );
}

// The reader itself, on made-up files.

fn made_up(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            path: format!("src/{path}"),
            module: module_of(path),
            text: text.to_string(),
        })
        .collect()
}

#[test]
fn the_reader_finds_a_planted_circle() {
    let sources = made_up(&[
        ("lib.rs", "pub mod storm;\npub mod wire;\n"),
        ("wire.rs", "pub fn send() {}\n"),
        (
            "storm/mod.rs",
            "mod life;\nmod port;\npub fn run() { life::go() }\n",
        ),
        ("storm/life.rs", "use super::port::Port;\npub fn go() {}\n"),
        (
            "storm/port.rs",
            "pub struct Port;\nfn stamp() { crate::storm::life::go(); crate::wire::send() }\n",
        ),
    ]);
    let uses = all_uses(&sources);
    assert_eq!(
        circles(&uses),
        vec![vec![
            "src/storm/life.rs".to_string(),
            "src/storm/port.rs".to_string()
        ]]
    );
    assert!(uses
        .iter()
        .any(|u| u.from == "src/storm/mod.rs" && u.to == "src/storm/life.rs"));
    assert!(uses
        .iter()
        .any(|u| u.from == "src/storm/port.rs" && u.to == "src/wire.rs"));
}

#[test]
fn the_reader_skips_comments_strings_and_names_tests_modules_right() {
    let sources = made_up(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "pub mod inner;\n// crate::b::x\n/* crate::b::y */\nconst S: &str = \"crate::b::z\";\n\
             const R: &str = r#\"crate::b \"# ;\nconst C: char = '{';\npub fn f() {}\n",
        ),
        (
            "a/inner.rs",
            "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::g;\n    fn t() { g() }\n}\n\
             fn h() { super::f() }\n",
        ),
        (
            "b.rs",
            "use crate::{a::{inner::g, f as ff}, self as me};\npub(crate) fn x() {}\n",
        ),
    ]);
    let uses = all_uses(&sources);
    let pairs: BTreeSet<(&str, &str)> = uses
        .iter()
        .map(|u| (u.from.as_str(), u.to.as_str()))
        .collect();
    assert_eq!(
        pairs,
        BTreeSet::from([
            ("src/a/inner.rs", "src/a/mod.rs"),
            ("src/b.rs", "src/a/inner.rs"),
            ("src/b.rs", "src/a/mod.rs"),
            ("src/b.rs", "src/lib.rs"),
        ])
    );
}

#[test]
fn the_reader_sees_a_subcommand_crossing() {
    let sources = made_up(&[
        ("lib.rs", "pub mod plan;\npub mod storm;\npub mod bench;\n"),
        ("storm/mod.rs", "pub struct Roster;\n"),
        ("plan/mod.rs", "use crate::storm::Roster;\n"),
        (
            "bench/mod.rs",
            "fn run() { crate::plan::go(); crate::storm::go() }\n",
        ),
    ]);
    let uses = all_uses(&sources);
    let crossings: Vec<(&str, &str)> = crossings(&uses)
        .iter()
        .map(|u| (u.from.as_str(), u.to.as_str()))
        .collect();
    assert_eq!(crossings, vec![("src/plan/mod.rs", "src/storm/mod.rs")]);
}
