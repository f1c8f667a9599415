//! `rasgk exam` over real sockets: its own gatekeeper (a child `rasgk serve`), simulated
//! phones on UDP, the drills posted to the admin port. The reports it writes are read back
//! by parsers of their own: JSON as plain JSON, JUnit with an XML parser.

use std::path::Path;
use std::process::Command;

/// The embedded default moved to addresses of this test's own, so that it runs beside
/// other tests on the default's.
fn config(dir: &Path, net: u8) -> std::path::PathBuf {
    let text = rasgk::config::DEFAULT_TOML
        .replace("127.0.1.", &format!("127.0.{net}."))
        .replace("\"127.0.0.1:1719\"", &format!("\"127.0.{net}.200:1719\""));
    let path = dir.join("lab.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A drill like the built-in one, with a time to live of 8 s so that it runs sooner.
fn drill(dir: &Path) -> std::path::PathBuf {
    let text = rasgk::exam::drill::BUILT_IN.replace("ttl_s = 20", "ttl_s = 8");
    let path = dir.join("drill.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rasgk-exam-live-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn three_phones_one_ignoring_irq_are_graded_each_and_the_reports_read_back() {
    let dir = temp_dir("irq");
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "exam",
            "--simulate",
            "3",
            "--misbehave",
            "ignores-irq",
            "--quiet",
        ])
        .arg("--config")
        .arg(config(&dir, 94))
        .arg("--drill")
        .arg(drill(&dir))
        .args(["--admin", "127.0.94.200:7070"])
        .arg("--json")
        .arg(dir.join("exam.json"))
        .arg("--junit")
        .arg(dir.join("exam.xml"))
        .arg("--html")
        .arg(dir.join("exam.html"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("exam.json")).unwrap()).unwrap();
    let endpoints = json["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 3, "{stdout}");
    for endpoint in endpoints {
        let checks = endpoint["checks"].as_array().unwrap();
        assert_eq!(checks.len(), 14);
        for check in checks {
            for field in [
                "id", "verdict", "expected", "observed", "source", "evidence",
            ] {
                assert!(!check[field].is_null(), "{field} in {check}");
            }
            let (id, verdict) = (
                check["id"].as_str().unwrap(),
                check["verdict"].as_str().unwrap(),
            );
            let want = match id {
                "irq" => "fail",
                "socket" | "password" => "skipped",
                _ => "pass",
            };
            assert_eq!(
                verdict, want,
                "{}: {id}: {}\n{stdout}",
                endpoint["endpoint"], check["observed"]
            );
        }
    }

    let xml = std::fs::read_to_string(dir.join("exam.xml")).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let suites: Vec<_> = document
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 3);
    for suite in suites {
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 14);
        let failed: Vec<&str> = cases
            .iter()
            .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
            .map(|c| c.attribute("name").unwrap())
            .collect();
        assert_eq!(failed, ["irq"], "{xml}");
    }
    let html = std::fs::read_to_string(dir.join("exam.html")).unwrap();
    assert!(html.contains("IRQ seq") && html.contains("4003"), "{html}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rasgk exam` of one simulated phone in socket mode with routed calls, the call checks
/// only; (exit status, JSON report, what it said).
fn routed_calls(dir: &Path, net: u8, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let json = dir.join(format!("calls-{net}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["exam", "--simulate", "1", "--quiet"])
        .args(["--sockets", "tcp", "--call-signalling", "routed"])
        .args(["--only", "discovery,socket,call-in,call-out"])
        .args(extra)
        .arg("--config")
        .arg(config(dir, net))
        .args(["--admin", &format!("127.0.{net}.200:7070")])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no JSON report: {said}"));
    (out.status.code(), report, said)
}

fn check<'a>(report: &'a serde_json::Value, id: &str) -> (&'a str, &'a str) {
    let check = report["endpoints"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap();
    (
        check["verdict"].as_str().unwrap(),
        check["observed"].as_str().unwrap(),
    )
}

#[test]
fn routed_calls_through_the_clans_pass_and_a_phone_that_sends_no_drq_fails_both() {
    let dir = temp_dir("calls");
    // A TTS phone: the exam's call reaches it over the socket the gatekeeper opened.
    let (status, report, said) = routed_calls(&dir, 92, &["--tts"]);
    assert_eq!(status, Some(0), "{said}");
    for id in ["socket", "call-in", "call-out"] {
        assert_eq!(check(&report, id).0, "pass", "{id}: {said}");
    }
    let (_, observed) = check(&report, "call-out");
    assert!(observed.contains("gatekeeperRouted"), "{said}");
    // Its Setup arrived at a C-LAN of the embedded default moved to 127.0.92.x.
    assert!(observed.contains("(127.0.92."), "{said}");

    let (status, report, said) = routed_calls(&dir, 93, &["--misbehave", "no-drq"]);
    assert_eq!(status, Some(1), "{said}");
    for id in ["call-in", "call-out"] {
        let (verdict, observed) = check(&report, id);
        assert_eq!(verdict, "fail", "{id}: {said}");
        assert!(observed.contains("no DRQ"), "{id}: {said}");
    }
    assert_eq!(check(&report, "discovery").0, "pass", "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_endpoint_that_never_registers_ends_the_exam_with_exit_2() {
    let dir = temp_dir("never");
    let start = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["exam", "--endpoint", "7777", "--wait-s", "2"])
        .arg("--config")
        .arg(config(&dir, 95))
        .args(["--admin", "127.0.95.200:7070"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no endpoint matching 7777 registered within 2 s"),
        "{stderr}"
    );
    assert!(start.elapsed().as_secs() < 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_are_refused_before_anything_starts() {
    let dir = temp_dir("bad");
    let bad_drill = dir.join("bad.toml");
    std::fs::write(&bad_drill, "ttl_s = 20\nsteps = [\"urq\", \"nope\"]\n").unwrap();
    for (args, said) in [
        (vec!["--endpoint", "127.1.0.0/40"], "not a network"),
        (vec!["--endpoint", ""], "--endpoint is empty"),
        (vec![], "name the endpoint"),
        (
            vec!["--simulate", "1", "--misbehave", "sulks"],
            "no such misbehaviour",
        ),
        (
            vec!["--endpoint", "5001", "--only", "nope"],
            "no check is called",
        ),
        (
            vec!["--endpoint", "5001", "--partner-alias", "bob"],
            "must be dialled digits",
        ),
        (
            vec!["--simulate", "2", "--partner-alias", "4002"],
            "a simulated phone has that number",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
            .arg("exam")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("gatekeeper up"), "{args:?}: {stderr}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["exam", "--endpoint", "5001", "--drill"])
        .arg(&bad_drill)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("steps[1]") && stderr.contains("line 2"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_ends_the_exam_writes_the_partial_report_and_stops_its_gatekeeper() {
    let dir = temp_dir("ctrl-c");
    let admin = "127.0.97.200:7070";
    let child = Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["exam", "--simulate", "2", "--quiet"])
        .arg("--config")
        .arg(config(&dir, 97))
        .args(["--admin", admin])
        .arg("--json")
        .arg(dir.join("exam.json"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Past registration and discovery, inside the keep-alive check.
    std::thread::sleep(std::time::Duration::from_secs(8));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("exam.json")).unwrap()).unwrap();
    let endpoints = json["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 2, "{stdout}");
    for endpoint in endpoints {
        let verdict = |id: &str| {
            endpoint["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id)
                .map(|c| {
                    (
                        c["verdict"].as_str().unwrap().to_string(),
                        c["observed"].to_string(),
                    )
                })
                .unwrap()
        };
        assert_eq!(verdict("discovery").0, "pass", "{stdout}");
        let (restart, why) = verdict("restart");
        assert_eq!(restart, "skipped");
        assert!(why.contains("interrupted"), "{why}");
    }
    // The exam's gatekeeper is gone with it.
    let address: std::net::SocketAddr = admin.parse().unwrap();
    assert!(
        std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_millis(500))
            .is_err(),
        "the exam's gatekeeper still answers"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
