//! A storm against a gatekeeper in the same process: the embedded default topology, moved to
//! 127.0.40.x (discovery and admin on 127.0.40.254) so it runs beside a `rasgk serve`, and 2,000 phones of three regions, a third
//! of them TTS.
//!
//! ```sh
//! cargo run --release --example storm_in_process            # 2,000 phones
//! cargo run --release --example storm_in_process -- 3000    # another count (cap: 3,600)
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser as _;
use rasgk::{config, server, storm};

#[derive(clap::Parser)]
struct Args {
    /// How many phones.
    #[arg(default_value_t = 2000)]
    phones: usize,
}

/// The storm's own options, parsed as `rasgk storm` would parse them.
#[derive(clap::Parser)]
struct StormCli {
    #[command(flatten)]
    storm: storm::StormArgs,
}

fn moved(address: SocketAddr) -> SocketAddr {
    // C-LAN 127.0.1.N → 127.0.40.N.
    let [_, _, _, last] = match address.ip() {
        std::net::IpAddr::V4(ip) => ip.octets(),
        std::net::IpAddr::V6(_) => [0, 0, 0, 1],
    };
    SocketAddr::from(([127, 0, 40, last], address.port()))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut config = config::embedded_default();
    config.gatekeeper.discovery = SocketAddr::from(([127, 0, 40, 254], 1719));
    config.admin.listen = SocketAddr::from(([127, 0, 40, 254], 7000));
    for clan in &mut config.clans {
        clan.address = moved(clan.address);
    }
    let target = config.gatekeeper.discovery;
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let server = match server::Server::bind(config).await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("storm_in_process: {error}");
                return ExitCode::FAILURE;
            }
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let gatekeeper = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        let phones = args.phones.to_string();
        let storm_args = StormCli::try_parse_from([
            "storm",
            "--target",
            &target.to_string(),
            "--admin",
            "127.0.40.254:7000",
            "--phones",
            &phones,
            "--tts-share",
            "0.33",
            "--regions",
            "1,2,3",
        ]);
        let storm_args = match storm_args {
            Ok(cli) => cli.storm,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::FAILURE;
            }
        };
        let result = storm::storm(&storm_args).await;
        let _ = stop.send(());
        let _ = gatekeeper.await;
        match result {
            Ok(report) => {
                print!("{}", report.table());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("storm_in_process: {error}");
                ExitCode::FAILURE
            }
        }
    })
}
