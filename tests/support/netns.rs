//! Tests in a private network namespace: IPv6 on loopback as the host does not give it.
//!
//! Linux makes every address of 127/8 local, so the IPv4 tests give each phone an address of
//! its own on `lo`; IPv6 has only ::1. Inside a namespace of its own (`unshare --net`, as
//! root) a test may route a whole prefix to `lo` (`ip -6 route add local fd00::/16 dev lo`:
//! AnyIP, every address of it local, as 127/8 is) and assign the gatekeeper's addresses,
//! without touching the host's network. The namespace has `lo` alone, so nothing a test
//! sends there can leave the machine.
//!
//! The pattern: an outer `#[test]` calls [`run_inside`] with the name of an inner test,
//! which is `#[ignore]`d and runs its body only when [`enter`] says it is inside. [`tests!`]
//! writes both:
//!
//! ```ignore
//! netns::tests! {
//!     storms_over_ipv6: storms_over_ipv6_inside => storms_over_ipv6;
//! }
//!
//! fn storms_over_ipv6() {
//!     netns::assign(&["fd00::100"]);
//!     // … rasgk serve and rasgk storm on fd00:… addresses …
//! }
//! ```
//!
//! [`run_inside`] runs this test binary again as `unshare --net -- EXE --exact INNER
//! --ignored --nocapture` with [`INSIDE`] set. When `unshare` or `ip` is missing or the
//! namespace cannot be made, it says why and skips, or fails under `RASGK_REQUIRE_TOOLS=1`
//! (as [`super::tshark::require_tshark`] does).
#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set (to `1`) in the environment of an inner test that runs inside its namespace.
pub const INSIDE: &str = "RASGK_NETNS_INSIDE";

/// The IPv6 prefix routed to `lo` inside the namespace: every address of it is local.
pub const PREFIX: &str = "fd00::/16";

/// How long an inner test may run before the outer one stops it.
const INNER_LIMIT: Duration = Duration::from_secs(300);

/// `name` on `$PATH`, or in /usr/sbin or /sbin (where `ip` lives, and root's PATH may lack).
fn find(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
            .iter()
            .map(|dir| PathBuf::from(dir).join(name))
            .find(|p| p.is_file())
    })
}

/// Skips test `test` for `why`, or fails it under `RASGK_REQUIRE_TOOLS=1`.
fn skip(test: &str, why: &str) {
    if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{test}: {why}, and RASGK_REQUIRE_TOOLS=1");
    }
    eprintln!("skipping {test}: {why}");
}

/// Runs test `inner` of this test binary inside a new network namespace and fails when it
/// fails (or did not run). `false` when the namespace could not be had and the test is
/// skipped.
pub fn run_inside(inner: &str) -> bool {
    let Some(unshare) = find("unshare") else {
        skip(
            inner,
            "`unshare` not found (util-linux: apt-get install util-linux)",
        );
        return false;
    };
    let Some(ip) = find("ip") else {
        skip(inner, "`ip` not found (apt-get install iproute2)");
        return false;
    };
    // Can a namespace be made here, and `ip` run in it?
    let probe = Command::new(&unshare)
        .arg("--net")
        .arg("--")
        .arg(&ip)
        .args(["link", "set", "lo", "up"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            let why = format!(
                "cannot make a network namespace (`unshare --net -- ip link set lo up`: {}, \
                 {}; it needs root or CAP_SYS_ADMIN)",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            skip(inner, &why);
            return false;
        }
        Err(error) => {
            skip(inner, &format!("cannot run {}: {error}", unshare.display()));
            return false;
        }
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(&unshare)
        .arg("--net")
        .arg("--")
        .arg(&exe)
        .args(["--exact", inner, "--ignored", "--nocapture"])
        .env(INSIDE, "1")
        .env("RASGK_NETNS_IP", &ip)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {inner} in a namespace: {e}"));
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut { stdout }, &mut text);
        text
    });
    let deadline = Instant::now() + INNER_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait on the inner test") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{inner} did not end within {INNER_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = reader.join().unwrap_or_default();
    print!("{stdout}");
    assert!(
        status.success(),
        "{inner} failed inside its namespace ({status})"
    );
    assert!(
        stdout.contains(&format!("test {inner} ... ok")),
        "{inner} did not run inside its namespace:\n{stdout}"
    );
    true
}

/// `ip ARGS` inside the namespace; panics with what it said when it fails.
pub fn ip(args: &[&str]) {
    let ip = std::env::var_os("RASGK_NETNS_IP").unwrap_or_else(|| "ip".into());
    let out = Command::new(&ip)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ip {}: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "ip {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// In inner test `test`: `true` inside its namespace, with `lo` up and [`PREFIX`] routed
/// to it. Outside (run by hand with `--ignored`) it says so and returns `false`, touching
/// nothing: the host's network is not the test's to change.
pub fn enter(test: &str) -> bool {
    if std::env::var(INSIDE).as_deref() != Ok("1") {
        eprintln!(
            "skipping {test}: it runs inside the network namespace its outer test makes (run \
             that one)"
        );
        return false;
    }
    ip(&["link", "set", "lo", "up"]);
    ip(&["-6", "route", "add", "local", PREFIX, "dev", "lo"]);
    true
}

/// Assigns each of `ips` (IPv6, in [`PREFIX`]) to `lo`, as a host assigns a gatekeeper its
/// addresses: the route makes them local, but a program binds only assigned ones (the storm
/// binds its phones' with `IPV6_FREEBIND`).
pub fn assign(ips: &[&str]) {
    for address in ips {
        ip(&[
            "-6",
            "addr",
            "add",
            &format!("{address}/128"),
            "dev",
            "lo",
            "nodad",
        ]);
    }
}

/// Declares, for each `outer: inner => body;`, a test `outer` that runs the test `inner` in
/// a network namespace of its own ([`run_inside`]), and `inner`, `#[ignore]`d, which runs
/// `body` there (and nothing outside one: [`enter`]).
#[allow(unused_macros)] // each test binary uses a different part of this module
macro_rules! namespace_tests {
    ($($outer:ident: $inner:ident => $body:path;)*) => {$(
        #[test]
        fn $outer() {
            $crate::support::netns::run_inside(stringify!($inner));
        }

        #[test]
        #[ignore = "runs inside the network namespace of its outer test"]
        fn $inner() {
            if $crate::support::netns::enter(stringify!($inner)) {
                $body();
            }
        }
    )*};
}
#[allow(unused_imports)] // each test binary uses a different part of this module
pub(crate) use namespace_tests as tests;
