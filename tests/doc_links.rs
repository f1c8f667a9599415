//! What the README and the guide show a reader works.
//!
//! - Every relative link in `README.md` and `docs/*.md` leads to a file that exists, and every
//!   `#anchor` (alone, or after a Markdown file) to a heading of that file, by GitHub's rules
//!   for heading anchors.
//! - Every `rasgk …` command line in their code blocks parses with the real `rasgk`: its
//!   words, with the shell's part taken off (comments, quotes, `\` continuations, `|`, `&&`,
//!   `;`, `&`, redirections, environment assignments), go to the built binary with `--help`
//!   after them. clap reads every word before it prints the help, so an unknown subcommand,
//!   an unknown flag, a missing value or a value that does not parse fails, and nothing
//!   runs. A command is a line of a shell block (`sh`, `bash`, `shell`, `console`) that
//!   starts with `rasgk`, a line of any block that starts with `$ rasgk`, or either form of
//!   `cargo run --release -- …`.
//! - Every subcommand `rasgk --help` lists has its row in the README's table of subcommands.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The project's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every `docs/*.md`, as (path relative to the root, contents).
fn documents() -> Vec<(PathBuf, String)> {
    let mut paths = vec![PathBuf::from("README.md")];
    let docs = fs::read_dir(root().join("docs")).expect("docs/ reads");
    for entry in docs {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            paths.push(path.strip_prefix(root()).expect("below the root").into());
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(root().join(&path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

/// A line of a Markdown document, with what the checks need to know about it.
struct Line<'a> {
    /// 1-based.
    number: usize,
    text: &'a str,
    /// The language of the fenced block it is in (`""` for a block without one), or `None`
    /// outside blocks. Fence lines themselves are in no block and carry no text to check.
    block: Option<&'a str>,
}

/// The lines of a document, each with the fenced block it is in.
fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut block: Option<&str> = None;
    for (n, text) in text.lines().enumerate() {
        let trimmed = text.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(info.split_whitespace().next().unwrap_or("")),
            };
            continue;
        }
        out.push(Line {
            number: n + 1,
            text,
            block,
        });
    }
    out
}

/// The anchor GitHub gives a heading: lower case, every character that is not a letter, a
/// digit, a space, `-` or `_` left out, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a document's headings; a heading met again gets `-1`, `-2`, … as on
/// GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in lines(text) {
        if line.block.is_some() {
            continue;
        }
        let hashes = line.text.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line.text[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line.text[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.insert(anchor);
    }
    out
}

/// The targets of the inline links `[text](target)` of a line, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '`' => in_code = !in_code,
            ']' if !in_code && chars.get(i + 1) == Some(&'(') => {
                let start = i + 2;
                let mut end = start;
                let mut depth = 0;
                while end < chars.len() {
                    match chars[end] {
                        '(' => depth += 1,
                        ')' if depth == 0 => break,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    end += 1;
                }
                if end < chars.len() {
                    let target: String = chars[start..end].iter().collect();
                    // `[text](target "title")`: the title is not part of the target.
                    let target = target.split_whitespace().next().unwrap_or("").to_string();
                    out.push(target);
                    i = end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// What is wrong with a link of `from`, if anything; `read` gives a document's text by its
/// path relative to the root.
fn check_link(
    from: &Path,
    target: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<(), String> {
    if target.is_empty() {
        return Err("an empty link".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (file, anchor) = match target.split_once('#') {
        Some((file, anchor)) => (file, Some(anchor)),
        None => (target, None),
    };
    let path = if file.is_empty() {
        from.to_path_buf()
    } else {
        normalise(&from.parent().unwrap_or(Path::new("")).join(file))
            .ok_or_else(|| format!("{target} leads out of the repository"))?
    };
    if !root().join(&path).exists() {
        return Err(format!("{target}: {} does not exist", path.display()));
    }
    let Some(anchor) = anchor else {
        return Ok(());
    };
    if path.extension().is_none_or(|e| e != "md") {
        return Err(format!(
            "{target}: an anchor into a file that is not Markdown"
        ));
    }
    let text = read(&path).ok_or_else(|| format!("{target}: cannot read it"))?;
    let known = anchors(&text);
    if known.contains(anchor) {
        Ok(())
    } else {
        Err(format!(
            "{target}: {} has no heading #{anchor} (it has: {})",
            path.display(),
            known.into_iter().collect::<Vec<_>>().join(", ")
        ))
    }
}

/// `a/b/../c` as `a/c`; `None` for a path that climbs above the root.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

fn read_document(path: &Path) -> Option<String> {
    fs::read_to_string(root().join(path)).ok()
}

#[test]
fn every_relative_link_resolves() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in documents() {
        for line in lines(&text) {
            if line.block.is_some() {
                continue;
            }
            for target in link_targets(line.text) {
                checked += 1;
                if let Err(why) = check_link(&path, &target, &read_document) {
                    wrong.push(format!("{}:{}: {why}", path.display(), line.number));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
    // The guide does link its chapters: a check that found nothing would prove nothing.
    assert!(checked > 50, "only {checked} links found");
}

/// The words of a shell line, split into simple commands at `|`, `||`, `&&`, `;` and `&`,
/// with comments, quotes, redirections and the words they redirect to taken off. A command
/// substitution `$(…)` stays one word.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    // The word after a redirection is its file, not an argument.
    let mut redirected = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let finish = |word: &mut String,
                  in_word: &mut bool,
                  redirected: &mut bool,
                  commands: &mut Vec<Vec<String>>| {
        if *in_word {
            if *redirected {
                *redirected = false;
            } else {
                commands
                    .last_mut()
                    .expect("a command")
                    .push(std::mem::take(word));
            }
        }
        word.clear();
        *in_word = false;
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => finish(&mut word, &mut in_word, &mut redirected, &mut commands),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '\\' if i + 1 < chars.len() => {
                in_word = true;
                word.push(chars[i + 1]);
                i += 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                in_word = true;
                let mut depth = 0;
                while i < chars.len() {
                    word.push(chars[i]);
                    match chars[i] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            '|' | ';' | '&' => {
                finish(&mut word, &mut in_word, &mut redirected, &mut commands);
                while i + 1 < chars.len() && matches!(chars[i + 1], '|' | '&') {
                    i += 1;
                }
                commands.push(Vec::new());
            }
            '>' | '<' => {
                // `2>`, `&>`: the digit before belongs to the operator, not to a word.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                finish(&mut word, &mut in_word, &mut redirected, &mut commands);
                while i + 1 < chars.len() && matches!(chars[i + 1], '>' | '&') {
                    i += 1;
                }
                // `2>&1`: the descriptor is the target.
                redirected = true;
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    finish(&mut word, &mut in_word, &mut redirected, &mut commands);
    commands.retain(|c| !c.is_empty());
    commands
}

/// The arguments `rasgk` is given by one simple command, if it runs `rasgk`.
fn rasgk_arguments(words: &[String]) -> Option<Vec<String>> {
    // Environment assignments before the command.
    let start = words
        .iter()
        .position(|w| !(w.contains('=') && !w.starts_with('-') && !w.starts_with('=')))?;
    let words = &words[start..];
    match words.first().map(String::as_str) {
        Some("rasgk") => Some(words[1..].to_vec()),
        Some("cargo") => {
            let rest: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            // `cargo run --release -- ARGS` (and `cargo run -- ARGS`); an example is not rasgk.
            if rest.first() != Some(&"run") || rest.contains(&"--example") {
                return None;
            }
            let dashes = rest.iter().position(|w| *w == "--")?;
            Some(rest[dashes + 1..].iter().map(|w| w.to_string()).collect())
        }
        _ => None,
    }
}

/// The command lines of a document's code blocks that run `rasgk`: (line number, the
/// line as written with its continuations, the arguments of each `rasgk` it runs).
fn rasgk_commands(text: &str) -> Vec<(usize, String, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    let all = lines(text);
    let mut i = 0;
    while i < all.len() {
        let line = &all[i];
        i += 1;
        let Some(language) = line.block else {
            continue;
        };
        let shell = matches!(language, "sh" | "bash" | "shell" | "console");
        let trimmed = line.text.trim_start();
        let command = match trimmed.strip_prefix("$ ") {
            Some(command) => command,
            None if shell => trimmed,
            None => continue,
        };
        let runs = |c: &str| {
            c.starts_with("rasgk ")
                || c == "rasgk"
                || c.starts_with("cargo run")
                || c.split_whitespace().any(|w| w == "rasgk" || w == "cargo")
        };
        if !runs(command) {
            continue;
        }
        // `\` at the end of a line continues it on the next.
        let mut joined = command.to_string();
        while joined.ends_with('\\') && i < all.len() {
            joined.pop();
            joined.push(' ');
            joined.push_str(all[i].text.trim());
            i += 1;
        }
        let invocations: Vec<Vec<String>> = simple_commands(&joined)
            .iter()
            .filter_map(|words| rasgk_arguments(words))
            .collect();
        if !invocations.is_empty() {
            out.push((line.number, joined, invocations));
        }
    }
    out
}

/// Whether the real `rasgk` parses these arguments: `Err` with what it said when not.
fn parses(arguments: &[String]) -> Result<(), String> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rasgk"));
    command.args(arguments);
    // `help …`, `--help` and `--version` print and exit by themselves; anything else is
    // read in full by clap, then the help printed instead of running it.
    let prints = arguments.first().is_some_and(|a| a == "help")
        || arguments
            .iter()
            .any(|a| matches!(a.as_str(), "--help" | "-h" | "--version" | "-V"));
    if !prints {
        command.arg("--help");
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run rasgk: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr)
            .lines()
            .next()
            .unwrap_or("failed")
            .to_string())
    }
}

#[test]
fn every_rasgk_command_line_parses() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in documents() {
        for (number, line, invocations) in rasgk_commands(&text) {
            for arguments in invocations {
                checked += 1;
                if let Err(why) = parses(&arguments) {
                    wrong.push(format!(
                        "{}:{number}: {line}\n    rasgk {}: {why}",
                        path.display(),
                        arguments.join(" ")
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "command lines rasgk does not take:\n{}",
        wrong.join("\n")
    );
    assert!(checked > 30, "only {checked} rasgk command lines found");
}

#[test]
fn anchors_follow_github() {
    assert_eq!(slug("Socket mode"), "socket-mode");
    assert_eq!(slug("Decoding: `rasgk decode`"), "decoding-rasgk-decode");
    assert_eq!(
        slug("H.323 gateways registering as trunks"),
        "h323-gateways-registering-as-trunks"
    );
    assert_eq!(
        slug("The admin port's exposure"),
        "the-admin-ports-exposure"
    );
    assert_eq!(slug("Reload: SIGHUP"), "reload-sighup");
    let text = "# A\n## Same\n```sh\n# not a heading\n```\n## Same\n";
    let found = anchors(text);
    assert!(
        found.contains("same") && found.contains("same-1"),
        "{found:?}"
    );
    assert!(!found.contains("not-a-heading"));
}

#[test]
fn a_broken_link_is_found() {
    let read = |path: &Path| -> Option<String> {
        (path == Path::new("docs/a.md")).then(|| "# A\n## Known heading\n".to_string())
    };
    let from = Path::new("docs/rules.md");
    // Targets beside the checker's own files: docs/rules.md exists in every clone.
    assert!(check_link(from, "rules.md", &read).is_ok());
    assert!(check_link(from, "missing.md", &read).is_err());
    assert!(check_link(from, "../../outside.md", &read).is_err());
    assert!(check_link(from, "https://example.com/x.md", &read).is_ok());
    let targets = link_targets("see [a](x.md#y) and `[not](a-link)`, [b](../README.md)");
    assert_eq!(targets, ["x.md#y", "../README.md"]);
    // An anchor that names no heading of the target.
    let anchors_of = |text: &str| anchors(text);
    assert!(anchors_of("## Known heading\n").contains("known-heading"));
    assert!(!anchors_of("## Known heading\n").contains("unknown-heading"));
}

#[test]
fn shell_lines_are_read_as_the_shell_reads_them() {
    let words = |line: &str| simple_commands(line);
    assert_eq!(
        words("rasgk completions bash > ~/.local/share/bash-completion/completions/rasgk"),
        [vec!["rasgk", "completions", "bash"]]
    );
    assert_eq!(
        words("rasgk serve --print-default-config > lab.toml && rasgk serve --config lab.toml"),
        [
            vec!["rasgk", "serve", "--print-default-config"],
            vec!["rasgk", "serve", "--config", "lab.toml"]
        ]
    );
    assert_eq!(
        words("rasgk serve --config x.toml &   # in the background"),
        [vec!["rasgk", "serve", "--config", "x.toml"]]
    );
    assert_eq!(
        words("rasgk storm --admin '[fd00::60:1]:7000' 2>&1 | tail -n 3"),
        [
            vec!["rasgk", "storm", "--admin", "[fd00::60:1]:7000"],
            vec!["tail", "-n", "3"]
        ]
    );
    assert_eq!(
        words("kill -HUP $(pidof rasgk)"),
        [vec!["kill", "-HUP", "$(pidof rasgk)"]]
    );
    let env = words("RASGK_LOG=rasgk=debug rasgk serve");
    assert_eq!(rasgk_arguments(&env[0]), Some(vec!["serve".to_string()]));
    let cargo = words("cargo run --release -- bench --check");
    assert_eq!(
        rasgk_arguments(&cargo[0]),
        Some(vec!["bench".to_string(), "--check".to_string()])
    );
    let example = words("cargo run --example register -- 127.1.0.5 50001");
    assert_eq!(rasgk_arguments(&example[0]), None);
    let block = "```sh\nrasgk storm --phones 10 \\\n    --regions 1,2\n```\n```text\nrasgk bench: output\n$ rasgk status\n```\n";
    let found: Vec<Vec<Vec<String>>> = rasgk_commands(block)
        .into_iter()
        .map(|(_, _, invocations)| invocations)
        .collect();
    assert_eq!(
        found,
        [
            vec![vec!["storm", "--phones", "10", "--regions", "1,2"]],
            vec![vec!["status"]]
        ]
    );
}

#[test]
fn a_bogus_flag_is_refused() {
    let argv = |words: &str| -> Vec<String> { words.split(' ').map(String::from).collect() };
    assert!(parses(&argv("storm --phones 10")).is_ok());
    assert!(parses(&argv("help storm")).is_ok());
    assert!(parses(&argv("storm --no-such-flag")).is_err());
    assert!(parses(&argv("storm --phones many")).is_err());
    assert!(parses(&argv("no-such-subcommand")).is_err());
}

#[test]
fn every_subcommand_has_a_row_in_the_readme() {
    let output = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .arg("--help")
        .output()
        .expect("rasgk --help runs");
    let help = String::from_utf8_lossy(&output.stdout);
    // The lines under `Commands:`, up to the next blank line: `  NAME  what it does`.
    let subcommands: Vec<&str> = help
        .lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(subcommands.len() >= 8, "{help}");
    let readme = fs::read_to_string(root().join("README.md")).expect("README.md reads");
    let missing: Vec<&&str> = subcommands
        .iter()
        .filter(|name| !readme.contains(&format!("| `rasgk {name}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's table of subcommands lacks {missing:?}"
    );
}
