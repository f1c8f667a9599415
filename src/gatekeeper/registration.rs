//! RRQ → RCF / RRJ, URQ → UCF / URJ, and where a registered phone's socket goes
//! (docs/rules.md §5–7). Also the small ARQ answer that holds until call placement lands.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::events::{AliasTexts, Ending, EndpointKey, Event};
use super::registry::{self, CallSignalAddresses, EndpointAddresses, Registration};
use super::{policy, Gatekeeper, Reply, TTS_RETRY};
use crate::calls::{Member, NoRoute};
use crate::config::{Family, NodeIdx};
use crate::ras::asn::{
    self, AdmissionRequest, BandwidthRequest, DisengageRequest, InfoRequestResponse,
    RegistrationRequest, UnregistrationRequest,
};
use crate::ras::hot_reply::{self, RcfParts};
use crate::ras::reply::{self, AltGkInfo, ArjReason, RrjReason, UrjReason};
use crate::ras::{
    Alias, AliasView, Discovery, FullRegistration, MessageKind, PackedAliases, RasMessage,
};

/// The text of an alias that `[[tts]]` patterns are matched against.
fn alias_text(alias: AliasView<'_>) -> &str {
    match alias {
        AliasView::DialledDigits(text)
        | AliasView::H323Id(text)
        | AliasView::UrlId(text)
        | AliasView::EmailId(text)
        | AliasView::Other(text) => text,
        AliasView::TransportId(_) => "",
    }
}

impl Gatekeeper {
    /// The registration an `endpointIdentifier` names, if it is registered from `from`.
    pub(super) fn registered(&self, id: &asn::EndpointIdentifier, from: SocketAddr) -> Option<u64> {
        self.registered_key(registry::key_of_units(&id.0), from)
    }

    /// `key`, if it names a registration from `from`.
    fn registered_key(&self, key: Option<u64>, from: SocketAddr) -> Option<u64> {
        key.filter(|&key| self.registry.get(key).is_some_and(|r| r.source == from))
    }

    /// Is a phone with these aliases in this home region a TTS phone? First matching
    /// `[[tts]]` rule, else `tts_default`.
    pub(super) fn is_tts(&self, aliases: &[Alias], region: u16) -> bool {
        self.config
            .tts
            .iter()
            .find(|rule| rule.matches(aliases.iter().map(|alias| alias_text(alias.view())), region))
            .map_or(self.config.gatekeeper.tts_default, |rule| rule.tts)
    }

    /// Is a phone known to be TTS already at its GRQ (docs/rules.md §4.3)? With aliases in its
    /// GRQ, by them, as its RRQ will be (phones send the same aliases in GRQ and RRQ, so the
    /// first matching rule is the same). Without, only when the first rule that could
    /// cover it looks at regions alone: a rule on aliases might match the RRQ's aliases,
    /// so the phone is then not known yet and its GCF reserves as any phone's.
    pub(super) fn tts_at_discovery(&self, discovery: &Discovery<'_>, region: u16) -> bool {
        let tts = &self.config.tts;
        if !self.config.gatekeeper.tts_default && tts.iter().all(|rule| !rule.tts) {
            // Nothing makes any phone TTS: the aliases need not be read.
            return false;
        }
        if discovery.has_aliases {
            let aliases: Vec<Alias> = discovery.aliases.clone().collect();
            return self.is_tts(&aliases, region);
        }
        for rule in tts {
            if !rule.regions.is_empty() && !rule.regions.contains(&region) {
                continue;
            }
            // The first rule that could match: known only when it needs no alias.
            return rule.aliases.is_empty() && rule.tts;
        }
        self.config.gatekeeper.tts_default
    }

    fn reject_rrq(&mut self, seq: u16, reason: RrjReason, alt: Option<AltGkInfo>) -> RasMessage {
        let name = match &reason {
            RrjReason::DiscoveryRequired => "discoveryRequired",
            RrjReason::DuplicateAlias(_) => "duplicateAlias",
            RrjReason::ResourceUnavailable => "resourceUnavailable",
            RrjReason::FullRegistrationRequired => "fullRegistrationRequired",
            RrjReason::InvalidCallSignalAddress => "invalidCallSignalAddress",
            RrjReason::SecurityDenial => "securityDenial",
            _ => "other",
        };
        self.note_reject("RRJ", name);
        tracing::debug!(reason = name, "RRJ");
        reply::registration_reject(seq, &self.gatekeeper_id, &reason, alt.as_ref())
    }

    /// An RRQ, full or lightweight.
    pub(super) fn registration_request(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        rrq: &RegistrationRequest,
    ) -> Option<Reply> {
        if rrq.keep_alive == Some(true) {
            let key = rrq
                .endpoint_identifier
                .as_ref()
                .and_then(|id| registry::key_of_units(&id.0));
            let ttl = rrq.time_to_live.as_ref().map(|ttl| ttl.0);
            let seq = rrq.request_seq_num.0;
            Some(self.keep_alive(now, from, seq, key, ttl))
        } else {
            Some(self.full_registration(now, local, from, &rrq.into()))
        }
    }

    /// Granted time to live: what the phone asked for, at most `ttl_s`.
    fn granted_ttl(&self, asked: Option<u32>) -> u32 {
        let ttl = self.config.gatekeeper.ttl_s;
        asked.map_or(ttl, |asked| asked.clamp(1, ttl))
    }

    fn refresh(&mut self, now: Instant, key: u64, ttl_s: u32) {
        let expires = now + Duration::from_secs(u64::from(ttl_s));
        if let Some(registration) = self.registry.get_mut(key) {
            registration.expires = expires;
            registration.ttl_s = ttl_s;
            self.arm_expiry(expires, key);
        }
    }

    /// The RCF of a registration, written by the hand-written encoder with its AGL's
    /// encoding made once per distinct AGL (the generated codec when an alias is outside
    /// what that writes, or for an Avaya endpoint: [`confirm_generated`](Self::confirm_generated)).
    fn confirm(&mut self, seq: u16, key: u64) -> Option<Reply> {
        let registration = self.registry.get(key)?;
        if registration.avaya.is_some() {
            return Some(self.confirm_generated(seq, key, registration));
        }
        let family = registration.family();
        let signal_address = [self.signal_address_for(registration.registered_via, family)];
        let service_frame = self.writes_service_frame(registration);
        let (clans, gatekeeper_id) = (&self.config.clans, &self.gatekeeper_id);
        let agl = match &registration.agl[..] {
            [] => Some(None),
            _ => self.agls[family as usize]
                .encoded(&registration.agl, |list| {
                    hot_reply::agl_octets(&super::agl_entries(clans, gatekeeper_id, list, family))
                })
                .map(Some),
        };
        let (endpoint_id, len) = registry::endpoint_id_octets(key);
        let written = agl.and_then(|agl| {
            hot_reply::registration_confirm(
                &mut self.scratch,
                &RcfParts {
                    request_seq_num: seq,
                    gatekeeper_id: gatekeeper_id.octets(),
                    endpoint_id: &endpoint_id[..len],
                    call_signal_address: &signal_address,
                    aliases: &registration.aliases,
                    time_to_live_s: Some(registration.ttl_s),
                    agl,
                    service_frame,
                },
            )
        });
        match written {
            Some(()) => Some(Reply::Octets(
                MessageKind::Rcf,
                self.arena.copy(&self.scratch),
            )),
            None => Some(self.confirm_generated(seq, key, registration)),
        }
    }

    /// The RCF of registration `key` built for the generated codec. It names the
    /// gatekeeper's call signalling address (H.225.0 7.9.2): the signalling address of the
    /// C-LAN the RRQ came to, where a non-TTS phone opens its socket. To an Avaya endpoint it
    /// goes without `gatekeeperIdentifier`, in the message and its AGL entries
    /// (docs/rules.md §14; see [`ras::avaya`](crate::ras::avaya)); to a phone that asked for
    /// the service frame it confirms the feature (docs/rules.md §8.4).
    fn confirm_generated(&self, seq: u16, key: u64, registration: &Registration) -> Reply {
        let family = registration.family();
        let signal_address = [self.signal_address_for(registration.registered_via, family)];
        let agl = self.agl_entries(&registration.agl, family);
        let mut rcf = reply::registration_confirm(&reply::Rcf {
            request_seq_num: seq,
            gatekeeper_id: &self.gatekeeper_id,
            endpoint_id: &registry::endpoint_id(key),
            call_signal_address: &signal_address,
            aliases: &registration.aliases.to_vec(),
            time_to_live_s: Some(registration.ttl_s),
            agl: &agl,
        });
        if registration.avaya.is_some() {
            crate::ras::avaya::leave_out_gatekeeper_id(&mut rcf);
        }
        if self.writes_service_frame(registration) {
            crate::ras::service_frame::confirm_in(&mut rcf);
        }
        rcf.into()
    }

    /// Does the gatekeeper write the service frame on this phone's socket, and confirm the
    /// feature in its RCFs? Only in socket mode, and only to a phone that asked for it
    /// (docs/rules.md §8.4): no standard endpoint expects that frame.
    pub(super) fn writes_service_frame(&self, registration: &Registration) -> bool {
        registration.service_frame && self.socket_mode()
    }

    /// A lightweight RRQ of sequence number `seq` naming the registration `key` (when its
    /// endpointIdentifier is one of ours), asking for `time_to_live` seconds: refreshes the
    /// registration wherever it arrives; an unknown endpoint (or one from another source)
    /// must register in full. (Its passwords were proven before: [`super::passwords`].)
    pub(super) fn keep_alive(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u16,
        key: Option<u64>,
        time_to_live: Option<u32>,
    ) -> Reply {
        let Some(key) = self.registered_key(key, from) else {
            return self
                .reject_rrq(seq, RrjReason::FullRegistrationRequired, None)
                .into();
        };
        let ttl = self.granted_ttl(time_to_live);
        self.refresh(now, key, ttl);
        self.stats.keep_alives += 1;
        self.confirm(seq, key).unwrap_or_else(|| {
            self.reject_rrq(seq, RrjReason::FullRegistrationRequired, None)
                .into()
        })
    }

    /// Where GCF choice (docs/rules.md §4.1) would send this phone now, as `altGKInfo`.
    fn alternative(&self, region: u16, family: Family) -> Option<AltGkInfo> {
        let tiers = self.topology.tiers(region);
        let clan = policy::choose_clan(
            &tiers,
            &self.loads,
            self.config.gatekeeper.tier_mode,
            family,
        )?;
        Some(AltGkInfo {
            alternates: self.agl_entries(&[clan], family),
            permanent: false,
        })
    }

    /// A full RRQ at a C-LAN, as the hand-written reader read it or taken from its decoded
    /// message. (Its passwords were proven before: [`super::passwords`].)
    pub(super) fn full_registration(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        rrq: &FullRegistration<'_>,
    ) -> Reply {
        let seq = rrq.seq;
        if self.excluded(from) {
            // RegistrationRejectReason has no terminalExcluded: securityDenial says "not
            // allowed here" (as GnuGk answers an RRQ its IP rules refuse).
            tracing::debug!("outside the network map");
            return self.reject_rrq(seq, RrjReason::SecurityDenial, None).into();
        }
        let Some(&clan) = self.topology.clan_at.get(&local) else {
            return self
                .reject_rrq(seq, RrjReason::DiscoveryRequired, None)
                .into();
        };
        if let Some(alternate) = self.alternates.remove(&from) {
            // A drill of the admin port: this RRQ is sent to the alternate.
            let family = Family::of(from.ip());
            let alt = AltGkInfo {
                alternates: self.agl_entries(&[alternate], family),
                permanent: false,
            };
            return self
                .reject_rrq(seq, RrjReason::ResourceUnavailable, Some(alt))
                .into();
        }
        let call_signal_address: CallSignalAddresses = rrq.call_signal_address.clone().collect();
        if call_signal_address.is_empty() {
            return self
                .reject_rrq(seq, RrjReason::InvalidCallSignalAddress, None)
                .into();
        }
        let ras_address = rrq.ras_address.unwrap_or(from);
        // Allocated at their count (`collect` would make room for at least four), so that
        // boxing them below reallocates only when `dedup` took one out.
        let mut aliases = Vec::with_capacity(rrq.aliases.size_hint().0);
        aliases.extend(rrq.aliases.clone());
        aliases.dedup();
        let existing = self.registry.by_source(from);
        // The identifier the endpoint brings back (H323Plus keeps the one it has across a
        // gatekeeper's URQ and its full re-registration, and ignores the one an RCF gives
        // it instead): taken when no endpoint holds it or this one does, as GnuGk does.
        // Held by an endpoint at another address: RRJ securityDenial (GnuGk's answer too;
        // there is no reason for a taken identifier). One not of ours, or above
        // MAX_KEPT_KEY, is not taken: the endpoint gets a new one.
        let kept = rrq
            .endpoint_id
            .and_then(registry::key_of_utf16)
            .filter(|&key| key <= registry::MAX_KEPT_KEY);
        if let Some(key) = kept {
            if self
                .registry
                .get(key)
                .is_some_and(|held| held.source != from)
            {
                tracing::debug!(endpoint = %registry::endpoint_id_text(key), "endpointIdentifier held by another endpoint");
                self.release_reservation(from);
                return self.reject_rrq(seq, RrjReason::SecurityDenial, None).into();
            }
        }
        let taken: Vec<Alias> = aliases
            .iter()
            .filter(|alias| {
                self.registry
                    .by_alias(alias)
                    .is_some_and(|holder| Some(holder) != existing)
            })
            .cloned()
            .collect();
        if !taken.is_empty() {
            // Refused for good: the place its GCF reserved is given back (docs/rules.md §4.3).
            self.release_reservation(from);
            return self
                .reject_rrq(seq, RrjReason::DuplicateAlias(taken), None)
                .into();
        }
        let region = self.home_region(local, from.ip());
        let family = Family::of(from.ip());
        // A gateway is a trunk member, not a phone: never TTS, and it takes no socket.
        let gateway = rrq.gateway;
        let tts = !gateway && self.is_tts(&aliases, region);
        let reservation = self.reservations.get(&from).map(|r| r.clan);
        let own_socket = existing.and_then(|key| self.registry.get(key)?.socket);
        let load = self.loads.get(clan);
        let room = load.in_service
            && (tts
                || gateway
                || load.load() < load.cap
                || reservation == Some(clan)
                || own_socket == Some(clan));
        if !room {
            let alt = self.alternative(region, family);
            return self
                .reject_rrq(seq, RrjReason::ResourceUnavailable, alt)
                .into();
        }

        // A phone registering again as it was (same aliases, not TTS, its socket on this
        // C-LAN) keeps its registry slot and its socket: the same state as unregistering it
        // and registering it anew, without taking its indexes and the C-LAN's load apart
        // and putting them back.
        let in_place = existing.filter(|&key| {
            !tts && reservation != Some(clan)
                && kept.is_none_or(|kept| kept == key)
                && self.registry.get(key).is_some_and(|held| {
                    !held.tts
                        && held.socket == Some(clan)
                        && held.aliases.iter().eq(aliases.iter().map(Alias::view))
                })
        });

        // Accepted: from here on, state changes.
        let key = match (existing, in_place) {
            (_, Some(key)) => {
                self.registration_ended(key, Some(clan), Ending::Reregistered);
                key
            }
            (Some(key), None) => {
                self.unregister(now, key, Ending::Reregistered);
                kept.unwrap_or(key)
            }
            (None, None) => kept.unwrap_or_else(|| self.registry.new_key()),
        };
        // A kept identifier is never handed out again, not even after a restart (the
        // state file's `last_key`).
        self.registry.skip_past(key);
        let socket = if tts || gateway {
            self.release_reservation(from);
            None
        } else {
            if reservation == Some(clan) {
                if let Some(used) = self.reservations.remove(&from) {
                    self.stats.registration_latency.observe(now - used.made);
                }
                self.loads.reservation_to_socket(clan);
            } else {
                self.release_reservation(from);
                if in_place.is_none() {
                    // In place, its socket is still counted on this C-LAN.
                    self.loads.add_socket(clan);
                }
            }
            Some(clan)
        };
        let tiers = self.topology.tiers(region);
        let agl = policy::build_agl(&tiers, &self.loads, &self.config.agl, family, &mut self.rng);
        let agl = self.agls[family as usize].intern(&agl);
        let ttl_s = self.granted_ttl(rrq.time_to_live);
        let registration = Registration {
            aliases: PackedAliases::from(&aliases[..]),
            source: from,
            addresses: EndpointAddresses::new(from, ras_address, call_signal_address),
            gateway: rrq.gateway,
            avaya: rrq.avaya,
            region,
            tts,
            service_frame: rrq.service_frame,
            registered_via: clan,
            socket,
            agl,
            ttl_s,
            expires: now,
        };
        match self.registry.get_mut(key).filter(|_| in_place.is_some()) {
            // Same source and aliases: the registry's indexes still name it rightly.
            Some(held) => *held = registration,
            None => self.registry.insert(key, registration),
        }
        self.refresh(now, key, ttl_s);
        match (tts, self.socket_mode()) {
            (true, false) => self.place_tts(now, key),
            (true, true) => self.await_tts_setup(now, key),
            // A gateway waits for no socket.
            (false, _) if gateway => {
                let prefixes = crate::ras::request::supported_prefixes(rrq.gateway_protocols);
                self.join_trunk(
                    key,
                    prefixes.iter().map(|p| alias_text(p.view()).to_string()),
                );
            }
            // In place, its socket (or its place and connection) stays as it was.
            (false, true) if in_place.is_none() => self.await_connection(now, key, clan),
            (false, _) => {}
        }
        self.stats.registrations += 1;
        let watched = self.events.watched();
        if let Some(registration) = self.registry.get(key).filter(|_| watched) {
            let event = Event::Registered {
                endpoint_id: EndpointKey(key),
                aliases: AliasTexts(registration.aliases.clone()),
                region,
                clan: registration.socket.map(|clan| self.clan_label(clan)),
                tts,
                avaya: registration.avaya,
            };
            self.events.push(event);
        }
        tracing::debug!(
            endpoint = %registry::endpoint_id_text(key),
            clan = %self.config.clans[clan].name,
            tts,
            "RCF"
        );
        self.confirm(seq, key)
            .expect("the registration was stored just above")
    }

    /// Makes the registered gateway `key` a trunk member announcing `prefixes` (see
    /// [`crate::calls::members`]): named by its first alias (its endpoint identifier when
    /// it has none, or beside it when a configured trunk has that name), active on the
    /// node of the C-LAN it registered at.
    pub(super) fn join_trunk(&mut self, key: u64, prefixes: impl IntoIterator<Item = String>) {
        let Some(registration) = self.registry.get(key) else {
            return;
        };
        let Some(&address) = registration.call_signal_address().first() else {
            return;
        };
        let endpoint_id = registry::endpoint_id_text(key);
        let name = match registration.aliases.first().map(alias_text) {
            Some(alias) if !alias.is_empty() => alias.to_string(),
            _ => endpoint_id.clone(),
        };
        let name = if self.config.trunks.iter().any(|trunk| trunk.name == name) {
            format!("{name} ({endpoint_id})")
        } else {
            name
        };
        let clan = &self.config.clans[registration.registered_via];
        let node = self.config.node_index(&clan.node).unwrap_or(0);
        let member = Member::new(name, address, node, prefixes, self.config.nodes.len());
        tracing::debug!(endpoint = %endpoint_id, prefixes = ?member.prefixes, "a gateway joins the trunks");
        self.trunk_members.join(key, member);
    }

    /// Gives a TTS phone its socket on one of its AGL entries (docs/rules.md §7), or queues it
    /// for a retry.
    fn place_tts(&mut self, now: Instant, key: u64) {
        let Some(registration) = self.registry.get(key) else {
            return;
        };
        let tiers = self.topology.tiers(registration.region);
        match policy::choose_tts_clan(&tiers, &self.loads, &registration.agl) {
            Some(clan) if self.socket_mode() => self.place_tts_setup(now, key, clan),
            Some(clan) => {
                self.loads.add_socket(clan);
                if let Some(registration) = self.registry.get_mut(key) {
                    registration.socket = Some(clan);
                }
                if self.tts_pending.remove(&key) {
                    let endpoint_id = registry::endpoint_id_text(key);
                    let clan = self.clan_name(clan);
                    self.events.push(Event::TtsSocket { endpoint_id, clan });
                }
            }
            None => {
                self.tts_pending.insert(key);
                if self.tts_retry_at.is_none() {
                    self.tts_retry_at = Some(now + TTS_RETRY);
                }
            }
        }
    }

    /// Tries every TTS phone still without a socket again. When no entry of its AGL has room
    /// any more, its AGL is built anew first (the phone gets it with its next RCF), so the
    /// socket still goes to one of the phone's AGL entries.
    pub(super) fn place_pending_tts(&mut self, now: Instant) {
        let pending: Vec<u64> = self.tts_pending.iter().copied().collect();
        for key in pending {
            let Some(registration) = self.registry.get(key) else {
                continue;
            };
            let tiers = self.topology.tiers(registration.region).into_owned();
            let family = registration.family();
            if policy::choose_tts_clan(&tiers, &self.loads, &registration.agl).is_none() {
                let agl =
                    policy::build_agl(&tiers, &self.loads, &self.config.agl, family, &mut self.rng);
                let agl = self.agls[family as usize].intern(&agl);
                if let Some(registration) = self.registry.get_mut(key) {
                    registration.agl = agl;
                }
            }
            self.place_tts(now, key);
        }
    }

    /// A URQ from an endpoint: by `endpointIdentifier` when it gives one, else by source.
    pub(super) fn unregistration_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        urq: &UnregistrationRequest,
    ) -> Option<RasMessage> {
        let seq = urq.request_seq_num.0;
        let key = match &urq.endpoint_identifier {
            Some(id) => self.registered(id, from),
            None => self.registry.by_source(from),
        };
        match key {
            Some(key) => {
                self.unregister(now, key, Ending::Urq);
                self.stats.unregistrations += 1;
                Some(reply::unregistration_confirm(seq))
            }
            None => {
                self.note_reject("URJ", "notCurrentlyRegistered");
                Some(reply::unregistration_reject(
                    seq,
                    UrjReason::NotCurrentlyRegistered,
                ))
            }
        }
    }

    /// An IRR: one answering the gatekeeper's IRQ (its `requestSeqNum`) is counted and
    /// raises an `info_response` event. Answered only when it asks (`needResponse`): IACK
    /// from a registered endpoint, INAK `notRegistered` otherwise.
    pub(super) fn info_request_response(
        &mut self,
        now: Instant,
        from: SocketAddr,
        irr: &InfoRequestResponse,
    ) -> Option<RasMessage> {
        let seq = irr.request_seq_num.0;
        let key = self.registered(&irr.endpoint_identifier, from);
        if let Some(key) = key {
            if self
                .pending_irqs
                .get(&key)
                .is_some_and(|&(asked, _)| asked == seq)
            {
                let (_, sent) = self.pending_irqs.remove(&key).unwrap_or((seq, now));
                self.stats.irq_answered += 1;
                if self.events.watched() {
                    self.events.push(Event::InfoResponse {
                        endpoint_id: registry::endpoint_id_text(key),
                        seq,
                        after_ms: now.saturating_duration_since(sent).as_millis() as u64,
                    });
                }
            }
        }
        if irr.need_response != Some(true) {
            return None;
        }
        if key.is_some() {
            Some(reply::info_request_ack(seq))
        } else {
            self.note_reject("INAK", "notRegistered");
            Some(reply::info_request_nak_not_registered(seq))
        }
    }

    /// An ARQ from a registered endpoint: a registered alias in `destinationInfo` gets
    /// that endpoint's call signalling address; otherwise the dialled digits go through
    /// digit analysis to a trunk, and the ACF names the node that places the call
    /// (docs/rules.md §10). No pattern: ARJ `calledPartyNotRegistered`; every trunk busy: ARJ
    /// `resourceUnavailable`.
    pub(super) fn admission_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        arq: &AdmissionRequest,
    ) -> Option<RasMessage> {
        let seq = arq.request_seq_num.0;
        let Some(caller) = self.registered(&arq.endpoint_identifier, from) else {
            self.note_reject("ARJ", "callerNotRegistered");
            return Some(reply::admission_reject(seq, ArjReason::CallerNotRegistered));
        };
        let destination: Vec<Alias> = arq
            .destination_info
            .iter()
            .flatten()
            .map(Alias::from_asn)
            .collect();
        let callee_key = destination
            .iter()
            .find_map(|alias| self.registry.by_alias(alias));
        if self.routed() && (callee_key.is_some() || arq.answer_call) {
            // docs/rules.md §8.7: the call's signalling goes through the C-LANs; the callee's
            // answerCall ARQ is confirmed the same way, whatever its destinationInfo says.
            return self.routed_confirm(
                now,
                caller,
                arq.answer_call,
                call_id(arq),
                seq,
                arq.band_width.0,
            );
        }
        let callee = callee_key
            .and_then(|key| self.registry.get(key))
            .and_then(|r| r.call_signal_address().first().copied());
        if let Some(address) = callee {
            return Some(reply::admission_confirm(
                seq,
                address,
                arq.band_width.0,
                false,
            ));
        }
        // The answering side of a call is never routed out through a trunk.
        let digits = destination.iter().find_map(|alias| match alias {
            Alias::DialledDigits(digits) if !arq.answer_call => Some(digits.as_str()),
            _ => None,
        });
        let Some(digits) = digits else {
            return Some(self.reject_arq(seq, ArjReason::CalledPartyNotRegistered));
        };
        let key = (caller, call_id(arq));
        if let Some(call) = self.trunk_members.call(&key) {
            // The same call asked again: the same gateway, counted once.
            let address = self
                .trunk_members
                .get(call.gateway)
                .map(|member| member.address);
            return Some(match address {
                Some(address) => reply::admission_confirm(seq, address, arq.band_width.0, false),
                None => self.reject_arq(seq, ArjReason::ResourceUnavailable),
            });
        }
        if let Some(call) = self.calls.get(&key) {
            // The same call asked again (not a retransmission): the same node, counted once.
            let node = call.route.node;
            return Some(match self.config.nodes.get(node).and_then(|n| n.address) {
                Some(address) => reply::admission_confirm(seq, address, arq.band_width.0, false),
                None => self.reject_arq(seq, ArjReason::ResourceUnavailable),
            });
        }
        let Some(phone_node) = self.phone_node(caller) else {
            return Some(self.reject_arq(seq, ArjReason::CalledPartyNotRegistered));
        };
        // A registered gateway's prefix more specific than every configured pattern: the
        // call goes to that gateway, straight to its call signalling address (it is
        // registered here, as a called endpoint is); the node route local gives is counted.
        if self.trunk_members.best(digits) > self.calls.best_rank(digits) {
            let Some((gateway, call)) = self.trunk_members.route(key, digits, phone_node) else {
                return Some(self.reject_arq(seq, ArjReason::ResourceUnavailable));
            };
            let node = call.node;
            let Some(member) = self.trunk_members.get(gateway) else {
                return Some(self.reject_arq(seq, ArjReason::ResourceUnavailable));
            };
            tracing::debug!(
                trunk = %member.name,
                node = %self.config.nodes.get(node).map_or("?", |n| n.name.as_str()),
                "ACF for a call to a registered gateway"
            );
            return Some(reply::admission_confirm(
                seq,
                member.address,
                arq.band_width.0,
                false,
            ));
        }
        let route = match self.calls.route(&self.config, digits, phone_node) {
            Ok(route) => route,
            Err(NoRoute::NoPattern) => {
                return Some(self.reject_arq(seq, ArjReason::CalledPartyNotRegistered))
            }
            Err(NoRoute::AllBusy) => {
                return Some(self.reject_arq(seq, ArjReason::ResourceUnavailable))
            }
        };
        let Some(address) = self.config.nodes.get(route.node).and_then(|n| n.address) else {
            return Some(self.reject_arq(seq, ArjReason::ResourceUnavailable));
        };
        self.calls.begin(key, digits, route);
        tracing::debug!(
            trunk = %self.config.trunks[route.trunk].name,
            node = %self.config.nodes[route.node].name,
            hops = route.hops(),
            "ACF for a trunk call"
        );
        Some(reply::admission_confirm(
            seq,
            address,
            arq.band_width.0,
            false,
        ))
    }

    /// Counts an ARJ and builds it.
    fn reject_arq(&mut self, seq: u16, reason: ArjReason) -> RasMessage {
        let name = match reason {
            ArjReason::CalledPartyNotRegistered => "calledPartyNotRegistered",
            ArjReason::ResourceUnavailable => "resourceUnavailable",
            ArjReason::CallerNotRegistered => "callerNotRegistered",
            _ => "other",
        };
        self.note_reject("ARJ", name);
        reply::admission_reject(seq, reason)
    }

    /// The node of a registered endpoint: that of the C-LAN holding its socket, else of the
    /// C-LAN it registered at.
    fn phone_node(&self, key: u64) -> Option<NodeIdx> {
        let registration = self.registry.get(key)?;
        let clan = registration.socket.unwrap_or(registration.registered_via);
        self.config.node_index(&self.config.clans.get(clan)?.node)
    }

    /// A DRQ: DCF for a registered endpoint (ending its call, if it holds one under the
    /// DRQ's `callIdentifier`), DRJ `notRegistered` otherwise.
    pub(super) fn disengage_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        drq: &DisengageRequest,
    ) -> Option<RasMessage> {
        let seq = drq.request_seq_num.0;
        if let Some(caller) = self.registered(&drq.endpoint_identifier, from) {
            let guid = drq
                .call_identifier
                .as_ref()
                .map_or(&drq.conference_id.0, |id| &id.guid);
            let call = (caller, guid_bytes(guid));
            if self.routed() {
                self.disengage_routed(now, caller, call.1);
            }
            self.calls.end(&call);
            self.trunk_members.end(&call);
            Some(reply::disengage_confirm(seq))
        } else {
            self.note_reject("DRJ", "notRegistered");
            Some(reply::disengage_reject_not_registered(seq))
        }
    }

    /// A BRQ: BCF granting what was asked for a registered endpoint, BRJ `notBound`
    /// otherwise.
    pub(super) fn bandwidth_request(
        &mut self,
        from: SocketAddr,
        brq: &BandwidthRequest,
    ) -> Option<RasMessage> {
        let seq = brq.request_seq_num.0;
        if self.registered(&brq.endpoint_identifier, from).is_some() {
            Some(reply::bandwidth_confirm(seq, brq.band_width.0))
        } else {
            self.note_reject("BRJ", "notBound");
            Some(reply::bandwidth_reject_not_bound(seq))
        }
    }
}

/// The call an ARQ is about: its `callIdentifier`, else its `conferenceID`.
fn call_id(arq: &AdmissionRequest) -> [u8; 16] {
    let guid = arq
        .call_identifier
        .as_ref()
        .map_or(&arq.conference_id.0, |id| &id.guid);
    guid_bytes(guid)
}

fn guid_bytes(guid: &crate::ras::asn::GloballyUniqueID) -> [u8; 16] {
    let mut bytes = [0; 16];
    for (to, from) in bytes.iter_mut().zip(guid.0.iter()) {
        *to = *from;
    }
    bytes
}
