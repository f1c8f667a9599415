//! Ctrl-C during a storm. The first ends the storm early: the phones stop where they are
//! (registering, calling or staying), unregister unless `--leave-registered` (each with at
//! most [`UNREGISTER_WITHIN`](super::life::UNREGISTER_WITHIN) for its UCF), and the report
//! is printed as far as the storm got. A second quits at once, leaving whatever is
//! registered to its time to live.

use tokio::sync::watch;

/// Listens for Ctrl-C from now on (the process no longer ends on the first): the receiver
/// turns `true` at the first. What is said goes through `progress`, so the bar stays whole.
pub(super) fn on_ctrl_c(progress: indicatif::ProgressBar) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        progress.suspend(|| {
            eprintln!(
                "rasgk storm: interrupted: the phones unregister and the report follows \
                 (Ctrl-C again to quit at once)"
            )
        });
        let _ = tx.send(true);
        if tokio::signal::ctrl_c().await.is_ok() {
            progress.suspend(|| eprintln!("rasgk storm: quit; the phones are left registered"));
            std::process::exit(130);
        }
    });
    rx
}
