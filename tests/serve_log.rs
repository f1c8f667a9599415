//! `rasgk serve 2> serve.log`: a log written to a file carries no colour escapes. Logs are
//! in colour only when standard error is a terminal (and never with `NO_COLOR` set).
//!
//! Addresses: the gatekeeper on 127.0.61.x, its admin port 127.0.61.1:7061.

mod support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::server::{http_get, terminate};

const ADMIN: &str = "127.0.61.1:7061";

const LAB: &str = "[gatekeeper]\ndiscovery = \"127.0.61.1:1719\"\nseed = 61\n\
                   [[region]]\nid = 1\nnetworks = [\"127.61.0.0/16\"]\n\
                   [admin]\nlisten = \"127.0.61.1:7061\"\n\
                   [[clan]]\nname = \"a\"\nregion = 1\naddress = \"127.0.61.11:1719\"\n\
                   max_sockets = 10\npriority = 1\n";

#[test]
fn a_log_written_to_a_file_has_no_colour_escapes() {
    let dir = std::env::temp_dir().join(format!("rasgk-serve-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("lab.toml");
    std::fs::write(&config, LAB).unwrap();
    let log = dir.join("serve.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("RASGK_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("rasgk starts");
    let admin: SocketAddr = ADMIN.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while http_get(admin, "/api/clans").is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "rasgk serve exited early with {status}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "rasgk serve did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    terminate(&mut child);
    let written = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&written);
    assert!(
        text.lines().count() >= 2,
        "rasgk serve logged too little to judge:\n{text}"
    );
    assert!(
        !written.contains(&0x1b),
        "escape codes in a log written to a file:\n{text:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
