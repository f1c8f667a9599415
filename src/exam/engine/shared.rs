//! The steps that act on the whole gatekeeper — `restart`, `home-out`, `clan-out` — started
//! when every endpoint has reached them, then round by round: one region's or one
//! endpoint's C-LANs out at a time, put back before the next.

use std::net::SocketAddr;
use std::time::Duration;

use crate::exam::catalogue::{self, Needs};
use crate::exam::verdict::Graded;

use super::steps::not_registered;
use super::{Action, Engine, Examinee, Running, Shared, SETTLE};

impl Engine {
    /// The shared steps: started when every endpoint examined is at one, then round by
    /// round.
    pub(super) fn advance_shared(&mut self) {
        if self.shared.is_none() {
            let active: Vec<usize> = (0..self.examinees.len())
                .filter(|&i| {
                    let e = &self.examinees[i];
                    e.registered_at.is_some() && !e.done(&self.drill)
                })
                .collect();
            let waiting: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&i| self.examinees[i].at_barrier)
                .collect();
            if waiting.is_empty() || waiting.len() < active.len() {
                return;
            }
            if self.joining && !self.unmatched().is_empty() {
                return;
            }
            self.joining = false;
            let step = self.examinees[waiting[0]].step;
            let id = self.drill.steps[step].check.id;
            self.shared = Some(Shared {
                id,
                members: waiting,
                out: Vec::new(),
                round: Vec::new(),
                restarted: false,
                next_at: self.now + SETTLE,
                since: self.now,
            });
        }
        let Some(mut shared) = self.shared.take() else {
            return;
        };
        // The round running goes on while any of its endpoints is still at it.
        let round_running = shared
            .round
            .iter()
            .any(|&i| self.examinees[i].running.is_some());
        if round_running {
            self.shared = Some(shared);
            return;
        }
        if !shared.round.is_empty() || !shared.out.is_empty() {
            let back = self.back_in_service(&shared.out);
            self.actions.extend(back);
            shared.out.clear();
            shared.round.clear();
            shared.next_at = self.now + SETTLE;
            shared.since = self.now;
        }
        if self.now < shared.next_at {
            self.shared = Some(shared);
            return;
        }
        if self.next_round(&mut shared) {
            self.shared = Some(shared);
            return;
        }
        // Done: every member goes on.
        for &i in &shared.members {
            let examinee = &mut self.examinees[i];
            examinee.at_barrier = false;
            examinee.step += 1;
        }
        self.shared_done.insert(shared.id);
        for i in 0..self.examinees.len() {
            self.advance_one(i);
        }
        self.advance_shared();
    }

    pub(super) fn back_in_service(&mut self, out: &[usize]) -> Vec<Action> {
        if out.is_empty() {
            return Vec::new();
        }
        for &c in out {
            self.topology.clans[c].in_service = true;
        }
        vec![Action::ClanService {
            clans: out
                .iter()
                .map(|&c| self.topology.clans[c].name.clone())
                .collect(),
            in_service: true,
        }]
    }

    /// Plans and starts the next round of a shared step; false when none is left.
    fn next_round(&mut self, shared: &mut Shared) -> bool {
        let now = self.now;
        // Members not registered now cannot be examined by this step: the gatekeeper has
        // nothing of theirs to restart or to move. The step waits for them, bounded by its
        // wait (an endpoint may be registering again after its last step).
        let check = catalogue::check(shared.id).expect("a shared check");
        let wait = self
            .drill
            .step(shared.id)
            .map_or(Duration::ZERO, |s| s.wait);
        let unregistered = shared.members.iter().any(|&i| {
            let e = &self.examinees[i];
            !e.graded(shared.id) && e.gone.is_none() && !e.registered_now
        });
        // The restart waits for them to settle, too: a registration still retransmitted
        // would meet the restarted gatekeeper before any keep-alive does.
        let unsettled = shared.id == "restart"
            && shared.members.iter().any(|&i| {
                let e = &self.examinees[i];
                !e.graded(shared.id) && e.gone.is_none() && !e.settled(now)
            });
        if (unregistered || unsettled) && self.now < shared.since + wait {
            shared.next_at = self.now + Duration::from_millis(250);
            return true;
        }
        for &i in &shared.members {
            let e = &mut self.examinees[i];
            if !e.graded(shared.id) && e.gone.is_none() && !e.registered_now {
                let why = not_registered(e);
                e.graded.push(Graded::skipped(check, why));
            }
        }
        let pending: Vec<usize> = shared
            .members
            .iter()
            .copied()
            .filter(|&i| !self.examinees[i].graded(shared.id) && self.examinees[i].gone.is_none())
            .collect();
        // Members gone meanwhile are skipped.
        for &i in &shared.members {
            let e = &mut self.examinees[i];
            if !e.graded(shared.id) {
                if let Some(why) = e.gone.clone() {
                    let check = catalogue::check(shared.id).expect("a shared check");
                    e.graded.push(Graded::skipped(check, why));
                }
            }
        }
        if pending.is_empty() {
            return false;
        }
        let step = *self
            .drill
            .step(shared.id)
            .expect("the drill has its shared step");
        let start = |examinee: &mut Examinee, targets: Vec<SocketAddr>, region| {
            examinee.running = Some(Running {
                step,
                started: now,
                deadline: now + step.wait,
                mark: examinee.history.len(),
                targets,
                region,
                agl: examinee.agl.clone(),
                trigger_pending: false,
                call_id: None,
            });
        };
        match shared.id {
            "restart" => {
                if shared.restarted {
                    return false;
                }
                shared.restarted = true;
                for &i in &pending {
                    start(&mut self.examinees[i], Vec::new(), None);
                }
                shared.round = pending;
                self.actions.push(Action::Restart);
                true
            }
            "clan-out" | "home-out" => {
                let home = shared.id == "home-out";
                // Group the endpoints still to grade by where they are now.
                let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new(); // (clans, examinees)
                for &i in &pending {
                    let Some(clan) = self.examinees[i].clan else {
                        let check = catalogue::check(shared.id).expect("a shared check");
                        self.examinees[i].graded.push(Graded::skipped(
                            check,
                            "the exam does not know which C-LAN it registered at",
                        ));
                        continue;
                    };
                    let clans: Vec<usize> = if home {
                        let at = self.topology.clans[clan].region;
                        let region = self.examinees[i].home.unwrap_or(at);
                        if region != at {
                            let check = catalogue::check(shared.id).expect("a shared check");
                            let why = format!(
                                "its socket was on {} of region {at}, outside its home region \
                                 {region}: its home region going out of service would leave it \
                                 registered (docs/rules.md §9.1)",
                                self.topology.clans[clan].name
                            );
                            self.examinees[i].graded.push(Graded::skipped(check, why));
                            continue;
                        }
                        (0..self.topology.clans.len())
                            .filter(|&c| self.topology.clans[c].region == region)
                            .collect()
                    } else {
                        // Its C-LAN as it sees it (where it registered) and the one of its
                        // socket, if another.
                        let mut both = vec![clan];
                        both.extend(self.examinees[i].via.filter(|&v| v != clan));
                        both.sort_unstable();
                        both
                    };
                    let out: Vec<SocketAddr> = clans
                        .iter()
                        .flat_map(|&c| self.topology.clans[c].addresses.clone())
                        .collect();
                    let has_other = self.examinees[i].agl.iter().any(|a| {
                        !out.contains(a)
                            && self
                                .topology
                                .clan_at(*a)
                                .is_some_and(|c| self.topology.clans[c].in_service)
                    });
                    if !has_other {
                        let check = catalogue::check(shared.id).expect("a shared check");
                        self.examinees[i]
                            .graded
                            .push(Graded::skipped(check, Needs::Alternates.missing()));
                        continue;
                    }
                    match groups.iter_mut().find(|(c, _)| *c == clans) {
                        Some((_, members)) => members.push(i),
                        None => groups.push((clans, vec![i])),
                    }
                }
                groups.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
                let Some((clans, members)) = groups.into_iter().next() else {
                    return false;
                };
                let targets: Vec<SocketAddr> = clans
                    .iter()
                    .flat_map(|&c| self.topology.clans[c].addresses.clone())
                    .collect();
                let region = home.then(|| self.topology.clans[clans[0]].region);
                for &i in &members {
                    start(&mut self.examinees[i], targets.clone(), region);
                }
                // All at one instant, so that the URQs carry AGLs without any of them.
                for &c in &clans {
                    self.topology.clans[c].in_service = false;
                }
                self.actions.push(Action::ClanService {
                    clans: clans
                        .iter()
                        .map(|&c| self.topology.clans[c].name.clone())
                        .collect(),
                    in_service: false,
                });
                shared.out = clans;
                shared.round = members;
                true
            }
            _ => false,
        }
    }
}
