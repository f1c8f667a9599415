//! `rasgk completions SHELL` and `rasgk man`: the completion scripts load in their shell and
//! the manual page renders with man(1). Without bash or man the test says why and skips, or
//! fails under `RASGK_REQUIRE_TOOLS=1` (CI installs man-db, .ci/run).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `rasgk ARGS`, which must succeed.
fn rasgk(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(args)
        .output()
        .expect("rasgk runs");
    assert!(
        out.status.success(),
        "rasgk {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Whether `tool` runs here; when not, skips test `test` saying why, or fails it under
/// `RASGK_REQUIRE_TOOLS=1`.
fn require(test: &str, tool: &str, package: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|out| out.status.success());
    if found {
        return true;
    }
    if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{test}: {tool} not found and RASGK_REQUIRE_TOOLS=1 (apt-get install {package})");
    }
    eprintln!("skipping {test}: {tool} not found (apt-get install {package})");
    false
}

/// `octets` written to a file of a folder of this test's own.
fn written(name: &str, octets: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rasgk-completions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, octets).unwrap();
    path
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn bash_completions_load_in_bash() {
    const TEST: &str = "bash_completions_load_in_bash";
    if !require(TEST, "bash", "bash") {
        return;
    }
    let script = written("rasgk.bash", &rasgk(&["completions", "bash"]));
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p rasgk"#)
        .arg("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("complete ") && stdout.trim_end().ends_with(" rasgk"),
        "{}",
        text(&out)
    );
}

#[test]
fn zsh_and_fish_completions_name_every_subcommand() {
    for shell in ["zsh", "fish"] {
        let script = String::from_utf8(rasgk(&["completions", shell])).unwrap();
        for subcommand in [
            "serve", "status", "storm", "plan", "bench", "decode", "replay", "man",
        ] {
            assert!(
                script.contains(subcommand),
                "{shell} completions lack {subcommand}"
            );
        }
    }
}

#[test]
fn an_unknown_shell_is_refused_naming_the_ones_there_are() {
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tcsh") && stderr.contains("bash, zsh, fish"),
        "{stderr}"
    );
}

#[test]
fn the_man_page_renders_with_man() {
    const TEST: &str = "the_man_page_renders_with_man";
    let page = rasgk(&["man"]);
    assert!(
        page.starts_with(b".ie") || page.starts_with(b".TH"),
        "not roff"
    );
    if !require(TEST, "man", "man-db groff-base") {
        return;
    }
    let file = written("rasgk.1", &page);
    let out = man(&file);
    assert!(out.status.success(), "{}", text(&out));
    let rendered = String::from_utf8_lossy(&out.stdout);
    for wanted in [
        "NAME",
        "SYNOPSIS",
        "RASGK SERVE",
        "RASGK STORM",
        "RASGK PLAN",
        "--config",
    ] {
        assert!(rendered.contains(wanted), "no {wanted:?} in:\n{rendered}");
    }
}

/// `man -l file`, typeset as plain text for no terminal.
fn man(file: &Path) -> Output {
    Command::new("man")
        .arg("-l")
        .arg(file)
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "")
        .output()
        .expect("man runs")
}
