//! The admin HTTP port (axum): the JSON API of docs/rules.md §15 and more, server-sent events, the
//! Prometheus metrics and the live dashboard.
//!
//! Handlers never touch the gatekeeper: they ask the state task over a channel and await its
//! answer, so a slow or stuck HTTP client holds only its own connection, never RAS. The port
//! runs on a thread of its own ([`AdminThread`]), where the event streams' JSON is written.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the dashboard page |
//! | `GET /api/clans`, `/api/clans/{name}` | C-LAN loads |
//! | `GET /api/regions` | per region: C-LANs, sockets, spill |
//! | `GET /api/registrations?region=&clan=&alias=&tts=` | registrations, filtered |
//! | `GET /api/placement?ip=&alias=` | dry run: where such a phone would go now |
//! | `GET /api/rebalance` | rebalancing: on or off, its settings, moves, the last move |
//! | `GET /api/events` | server-sent events, one JSON object each (a round's in one chunk) |
//! | `POST /api/clans/{name}/service` `{"in_service": bool}` | into / out of service |
//! | `POST /api/clans/{name}/cap` `{"max_sockets": n}` | change a cap |
//! | `DELETE /api/registrations/{endpoint_id}` | unregister (gatekeeper-sent URQ) |
//! | `GET /metrics` | Prometheus text format |
//!
//! Changes need `Authorization: Bearer TOKEN` when `[admin] token` is set: none → 401, a wrong
//! one → 403. Errors are JSON: `{"error": "..."}` with 400, 401, 403, 404 or 503.

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt as _;

use super::tap::Tap;
use super::{Events, Query};
use crate::config::pattern_matches;
use crate::gatekeeper::UnknownEndpoint;
use crate::ras::Alias;

/// Why an admin request failed, as a JSON body `{"error": "..."}`.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// A parameter or body is not what the route takes.
    #[error("{0}")]
    BadRequest(String),
    /// A change was asked without the bearer token.
    #[error("this change needs the admin token: send Authorization: Bearer TOKEN")]
    NoToken,
    /// A change was asked with a wrong token.
    #[error("the admin token is wrong")]
    WrongToken,
    /// No such C-LAN, endpoint or route.
    #[error("{0}")]
    NotFound(String),
    /// The change cannot be made in the gatekeeper's present state.
    #[error("{0}")]
    Conflict(String),
    /// The gatekeeper is shutting down.
    #[error("the gatekeeper is shutting down")]
    Unavailable,
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let status = match self {
            AdminError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AdminError::NoToken => StatusCode::UNAUTHORIZED,
            AdminError::WrongToken => StatusCode::FORBIDDEN,
            AdminError::NotFound(_) => StatusCode::NOT_FOUND,
            AdminError::Conflict(_) => StatusCode::CONFLICT,
            AdminError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        };
        let body = Json(serde_json::json!({ "error": self.to_string() }));
        if status == StatusCode::UNAUTHORIZED {
            (status, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
        } else {
            (status, body).into_response()
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
struct Admin {
    queries: mpsc::Sender<Query>,
    events: broadcast::Sender<Events>,
    tap: Tap,
    token: Option<Arc<str>>,
    /// The last status an exam running against this gatekeeper posted (`/api/exam`).
    exam: Arc<std::sync::Mutex<Option<serde_json::Value>>>,
}

impl Admin {
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Query,
    ) -> Result<T, AdminError> {
        let (tx, rx) = oneshot::channel();
        self.queries
            .send(make(tx))
            .await
            .map_err(|_| AdminError::Unavailable)?;
        rx.await.map_err(|_| AdminError::Unavailable)
    }

    /// A change to one registration: the bearer token checked, the query made of the
    /// endpoint's id, and an endpoint the gatekeeper does not know a 404.
    async fn change_endpoint<T>(
        &self,
        headers: &HeaderMap,
        endpoint_id: String,
        make: impl FnOnce(String, oneshot::Sender<Result<T, UnknownEndpoint>>) -> Query,
    ) -> Result<T, AdminError> {
        self.authorize(headers)?;
        self.ask(|reply| make(endpoint_id, reply))
            .await?
            .map_err(|e| AdminError::NotFound(e.to_string()))
    }

    /// Checks the bearer token of a change.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), AdminError> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or(AdminError::NoToken)?;
        if constant_time_eq(given.trim().as_bytes(), token.as_bytes()) {
            Ok(())
        } else {
            Err(AdminError::WrongToken)
        }
    }
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The key/value pairs of a query string (keys may repeat).
fn pairs(query: &Option<String>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn unknown_parameter(key: &str, known: &[&str]) -> AdminError {
    AdminError::BadRequest(format!(
        "unknown parameter {key:?} (this route takes: {})",
        known.join(", ")
    ))
}

/// A JSON body of a change, with the problem named when it is not what the route takes.
fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes, example: &str) -> Result<T, AdminError> {
    serde_json::from_slice(bytes).map_err(|error| {
        AdminError::BadRequest(format!("the body must be like {example}: {error}"))
    })
}

const DASHBOARD: &str = include_str!("dashboard.html");

async fn dashboard() -> impl IntoResponse {
    axum::response::Html(DASHBOARD)
}

async fn clans(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(admin.ask(Query::Clans).await?))
}

async fn clan(
    State(admin): State<Admin>,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, AdminError> {
    let clans = admin.ask(Query::Clans).await?;
    clans
        .into_iter()
        .find(|clan| clan.name == name)
        .map(Json)
        .ok_or_else(|| AdminError::NotFound(format!("no C-LAN is named {name:?}")))
}

async fn calls(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(admin.ask(Query::Calls).await?))
}

async fn trunks(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(admin.ask(Query::Trunks).await?))
}

async fn rebalance(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(admin.ask(Query::Rebalance).await?))
}

async fn regions(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    Ok(Json(admin.ask(Query::Regions).await?))
}

async fn registrations(
    State(admin): State<Admin>,
    RawQuery(query): RawQuery,
) -> Result<impl IntoResponse, AdminError> {
    const KNOWN: [&str; 4] = ["region", "clan", "alias", "tts"];
    let (mut region, mut clan, mut alias, mut tts) = (None, None, None, None);
    for (key, value) in pairs(&query) {
        match key.as_str() {
            "region" => {
                region = Some(value.parse::<u16>().map_err(|_| {
                    AdminError::BadRequest(format!("region={value:?} is not a region number"))
                })?)
            }
            "clan" => clan = Some(value),
            "alias" => alias = Some(value),
            "tts" => {
                tts = Some(value.parse::<bool>().map_err(|_| {
                    AdminError::BadRequest(format!("tts={value:?} is neither true nor false"))
                })?)
            }
            other => return Err(unknown_parameter(other, &KNOWN)),
        }
    }
    if let Some(name) = &clan {
        let clans = admin.ask(Query::Clans).await?;
        if !clans.iter().any(|c| &c.name == name) {
            return Err(AdminError::NotFound(format!("no C-LAN is named {name:?}")));
        }
    }
    let all = admin.ask(Query::Registrations).await?;
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|r| region.is_none_or(|id| r.region == id))
        .filter(|r| {
            clan.as_ref()
                .is_none_or(|name| r.clan.as_ref() == Some(name))
        })
        .filter(|r| {
            alias
                .as_ref()
                .is_none_or(|pattern| r.aliases.iter().any(|a| pattern_matches(pattern, a)))
        })
        .filter(|r| tts.is_none_or(|tts| r.tts == tts))
        .collect();
    Ok(Json(chosen))
}

async fn placement(
    State(admin): State<Admin>,
    RawQuery(query): RawQuery,
) -> Result<impl IntoResponse, AdminError> {
    let mut ip = None;
    let mut aliases = Vec::new();
    for (key, value) in pairs(&query) {
        match key.as_str() {
            "ip" => {
                ip = Some(value.parse::<IpAddr>().map_err(|_| {
                    AdminError::BadRequest(format!("ip={value:?} is not an IP address"))
                })?)
            }
            "alias" => {
                // Digits are an extension (dialledDigits); anything else a name (h323-ID).
                let alias = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                    Alias::dialled_digits(&value)
                } else {
                    Alias::h323_id(&value)
                };
                aliases.push(alias.map_err(|e| AdminError::BadRequest(format!("alias: {e}")))?);
            }
            other => return Err(unknown_parameter(other, &["ip", "alias"])),
        }
    }
    let ip = ip.ok_or_else(|| {
        AdminError::BadRequest(
            "ip is required, e.g. /api/placement?ip=127.1.0.5&alias=50001".into(),
        )
    })?;
    let answer = admin
        .ask(|reply| Query::Placement { ip, aliases, reply })
        .await?;
    Ok(Json(answer))
}

async fn events(State(admin): State<Admin>) -> Response {
    let batches = BroadcastStream::new(admin.events.subscribe()).filter_map(|batch| {
        // A watcher that fell behind skips the batches it missed (Lagged) and goes on.
        let batch = batch.ok()?;
        Some(Ok::<_, Infallible>(Bytes::from(server_sent(&batch))))
    });
    event_stream(batches)
}

/// A batch of events as server-sent events, one `data:` line of JSON each (one that does
/// not serialise is left out): one chunk for the whole batch, so a storm's events cost the
/// connection one write per batch, not one per event.
fn server_sent<T: serde::Serialize>(batch: &[T]) -> Vec<u8> {
    let mut text = Vec::with_capacity(batch.len() * 160);
    for event in batch {
        let start = text.len();
        text.extend_from_slice(b"data: ");
        if serde_json::to_writer(&mut text, event).is_err() {
            text.truncate(start);
            continue;
        }
        text.extend_from_slice(b"\n\n");
    }
    text
}

/// How long an event stream may be silent before a comment line keeps it open (as axum's
/// `KeepAlive` default).
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// A `text/event-stream` response of `chunks`, each one or more whole events, with a
/// comment line every [`KEEP_ALIVE`] so proxies and browsers keep a quiet stream open.
fn event_stream(
    chunks: impl tokio_stream::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
) -> Response {
    let mut ticks = tokio::time::interval(KEEP_ALIVE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let comments = tokio_stream::wrappers::IntervalStream::new(ticks)
        .skip(1)
        .map(|_| Ok::<_, Infallible>(Bytes::from_static(b":\n\n")));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        axum::body::Body::from_stream(chunks.merge(comments)),
    )
        .into_response()
}

/// `GET /api/ras[?peer=ADDRESS-OR-PREFIX]`: server-sent events, one JSON object each for every
/// RAS datagram the gatekeeper receives or sends (`at_ms`, `direction` in or out, `local`,
/// `peer`, `type`, `seq`, `message`), those of the peers in `peer` (an IP, or a prefix such
/// as `127.1.0.0/24`) when given.
async fn ras(
    State(admin): State<Admin>,
    RawQuery(query): RawQuery,
) -> Result<impl IntoResponse, AdminError> {
    let mut peers: Option<ipnet::IpNet> = None;
    for (key, value) in pairs(&query) {
        match key.as_str() {
            "peer" => {
                let net = value
                    .parse::<ipnet::IpNet>()
                    .or_else(|_| value.parse::<IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        AdminError::BadRequest(format!(
                            "peer={value:?} is neither an IP address nor a prefix such as \
                             127.1.0.0/24"
                        ))
                    })?;
                peers = Some(net);
            }
            other => return Err(unknown_parameter(other, &["peer"])),
        }
    }
    let stream = BroadcastStream::new(admin.tap.subscribe()).filter_map(move |seen| {
        // A watcher that fell behind skips what it missed (Lagged) and goes on.
        let seen = seen.ok()?;
        if peers.is_some_and(|net| !net.contains(&seen.peer.ip().to_canonical())) {
            return None;
        }
        let text = server_sent(std::slice::from_ref(&*seen));
        (!text.is_empty()).then(|| Ok::<_, Infallible>(Bytes::from(text)))
    });
    Ok(event_stream(stream))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceChange {
    in_service: bool,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ManyServiceChange {
    clans: Vec<String>,
    in_service: bool,
}

/// `POST /api/clans/service` `{"clans": ["clan-1a", "clan-1b"], "in_service": false}`: several
/// C-LANs out of service (or back) at one instant, as a region's outage takes them: the URQs
/// their phones get carry AGLs without any of them. Nothing changes when one name is
/// unknown (404).
async fn set_many_service(
    State(admin): State<Admin>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<impl IntoResponse, AdminError> {
    admin.authorize(&headers)?;
    let change: ManyServiceChange = body(
        &bytes,
        r#"{"clans": ["clan-1a", "clan-1b"], "in_service": false}"#,
    )?;
    if change.clans.is_empty() {
        return Err(AdminError::BadRequest("clans is empty".into()));
    }
    Ok(Json(
        set_in_service(&admin, change.clans, change.in_service).await?,
    ))
}

async fn set_service(
    State(admin): State<Admin>,
    Path(clan): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<impl IntoResponse, AdminError> {
    admin.authorize(&headers)?;
    let change: ServiceChange = body(&bytes, r#"{"in_service": false}"#)?;
    let views = set_in_service(&admin, vec![clan], change.in_service).await?;
    Ok(Json(views.into_iter().next()))
}

/// C-LANs into or out of service at one instant: their views after.
async fn set_in_service(
    admin: &Admin,
    clans: Vec<String>,
    in_service: bool,
) -> Result<Vec<crate::gatekeeper::ClanView>, AdminError> {
    let result = admin
        .ask(|reply| Query::SetManyInService {
            clans,
            in_service,
            reply,
        })
        .await?;
    result.map_err(|e| AdminError::NotFound(e.to_string()))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CapChange {
    max_sockets: u32,
}

async fn set_cap(
    State(admin): State<Admin>,
    Path(clan): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<impl IntoResponse, AdminError> {
    admin.authorize(&headers)?;
    let change: CapChange = body(&bytes, r#"{"max_sockets": 240}"#)?;
    if change.max_sockets == 0 {
        return Err(AdminError::BadRequest(
            "max_sockets must be at least 1".into(),
        ));
    }
    let result = admin
        .ask(|reply| Query::SetCap {
            clan,
            max_sockets: change.max_sockets,
            reply,
        })
        .await?;
    result
        .map(Json)
        .map_err(|e| AdminError::NotFound(e.to_string()))
}

async fn unregister(
    State(admin): State<Admin>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, AdminError> {
    let id = endpoint_id.clone();
    let make = |endpoint_id, reply| Query::Unregister { endpoint_id, reply };
    admin.change_endpoint(&headers, endpoint_id, make).await?;
    Ok(Json(serde_json::json!({ "unregistered": id })))
}

/// `POST /api/registrations/{endpoint_id}/irq`: the gatekeeper sends the endpoint an IRQ;
/// its IRR shows as an `info_response` event.
async fn request_info(
    State(admin): State<Admin>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, AdminError> {
    let id = endpoint_id.clone();
    let make = |endpoint_id, reply| Query::RequestInfo { endpoint_id, reply };
    let seq = admin.change_endpoint(&headers, endpoint_id, make).await?;
    Ok(Json(serde_json::json!({ "irq": id, "seq": seq })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WithholdAsked {
    request: String,
}

/// `POST /api/registrations/{endpoint_id}/withhold` `{"request": "RRQ"}`: a drill; the
/// answer to the endpoint's next request of that kind is not sent (its retransmission gets
/// it).
async fn withhold(
    State(admin): State<Admin>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<impl IntoResponse, AdminError> {
    let asked: WithholdAsked = body(&bytes, r#"{"request": "RRQ"}"#)?;
    let request = crate::ras::MessageKind::from_short_name(&asked.request)
        .filter(|kind| kind.is_request())
        .ok_or_else(|| {
            AdminError::BadRequest(format!(
                "request {:?} is no RAS request's short name (GRQ, RRQ, URQ, ARQ, BRQ, DRQ, \
                 LRQ, IRR)",
                asked.request
            ))
        })?;
    let id = endpoint_id.clone();
    let make = |endpoint_id, reply| Query::Withhold {
        endpoint_id,
        request,
        reply,
    };
    let peer = admin.change_endpoint(&headers, endpoint_id, make).await?;
    Ok(Json(serde_json::json!({
        "withhold": id,
        "request": request.short_name(),
        "peer": peer.to_string(),
    })))
}

/// `POST /api/restart`: a drill; the gatekeeper loses its state as if its process had
/// restarted (every registration, reservation and call gone, every connection closed), and
/// endpoints' next keep-alives get RRJ `fullRegistrationRequired`.
async fn restart(
    State(admin): State<Admin>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, AdminError> {
    admin.authorize(&headers)?;
    admin
        .ask(Query::Restart)
        .await?
        .map_err(AdminError::Conflict)?;
    Ok(Json(serde_json::json!({ "restarted": true })))
}

/// `GET /api/exam`: the exam running against this gatekeeper (`rasgk exam`), as it last
/// said: each endpoint's step and its verdicts so far; `{"running": false, "endpoints": []}`
/// when none ever ran.
async fn exam(State(admin): State<Admin>) -> impl IntoResponse {
    let status = admin.exam.lock().map(|s| s.clone()).unwrap_or_default();
    Json(status.unwrap_or_else(|| serde_json::json!({ "running": false, "endpoints": [] })))
}

/// `POST /api/exam`: an exam posts its status (a JSON object; at most 1 MiB).
async fn exam_status(
    State(admin): State<Admin>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<impl IntoResponse, AdminError> {
    admin.authorize(&headers)?;
    if bytes.len() > 1 << 20 {
        return Err(AdminError::BadRequest(
            "an exam status is at most 1 MiB".into(),
        ));
    }
    let status: serde_json::Value = body(&bytes, r#"{"running": true, "endpoints": []}"#)?;
    if !status.is_object() {
        return Err(AdminError::BadRequest(
            "an exam status is a JSON object".into(),
        ));
    }
    if let Ok(mut kept) = admin.exam.lock() {
        *kept = Some(status);
    }
    Ok(Json(serde_json::json!({ "kept": true })))
}

/// `POST /api/registrations/{endpoint_id}/alternate`: a drill; the endpoint's next full RRQ
/// is refused with an RRJ naming one alternate C-LAN of its AGL.
async fn alternate(
    State(admin): State<Admin>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, AdminError> {
    let id = endpoint_id.clone();
    let make = |endpoint_id, reply| Query::Alternate { endpoint_id, reply };
    match admin.change_endpoint(&headers, endpoint_id, make).await? {
        Some(clan) => Ok(Json(
            serde_json::json!({ "alternate": clan, "endpoint_id": id }),
        )),
        None => Err(AdminError::Conflict(format!(
            "{id}: its AGL names no C-LAN in service besides the one it registered at"
        ))),
    }
}

async fn metrics(State(admin): State<Admin>) -> Result<impl IntoResponse, AdminError> {
    let figures = admin.ask(Query::Metrics).await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        figures.render(),
    ))
}

async fn not_found() -> AdminError {
    AdminError::NotFound(
        "no such admin route (see / for the dashboard, /api/clans, /api/regions, \
         /api/registrations, /api/placement, /api/rebalance, /api/events, /metrics)"
            .into(),
    )
}

/// The admin routes.
fn router(admin: Admin) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/api/clans", get(clans))
        .route("/api/clans/{name}", get(clan))
        .route("/api/clans/{name}/service", post(set_service))
        .route("/api/clans/service", post(set_many_service))
        .route("/api/clans/{name}/cap", post(set_cap))
        .route("/api/regions", get(regions))
        .route("/api/registrations", get(registrations))
        .route("/api/registrations/{endpoint_id}", delete(unregister))
        .route("/api/registrations/{endpoint_id}/irq", post(request_info))
        .route("/api/registrations/{endpoint_id}/withhold", post(withhold))
        .route("/api/restart", post(restart))
        .route("/api/exam", get(exam).post(exam_status))
        .route(
            "/api/registrations/{endpoint_id}/alternate",
            post(alternate),
        )
        .route("/api/placement", get(placement))
        .route("/api/calls", get(calls))
        .route("/api/trunks", get(trunks))
        .route("/api/rebalance", get(rebalance))
        .route("/api/events", get(events))
        .route("/api/ras", get(ras))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(admin)
}

/// The admin port on a thread of its own (a one-thread runtime), until dropped. HTTP, JSON
/// and the event streams' serialising and writes run there, not on the gatekeeper's thread:
/// the state task only answers queries and hands each batch of events over, once.
pub(super) struct AdminThread {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AdminThread {
    /// Serves `listener` on a new thread.
    pub(super) fn start(
        listener: tokio::net::TcpListener,
        queries: mpsc::Sender<Query>,
        (events, tap): (broadcast::Sender<Events>, Tap),
        token: Option<String>,
    ) -> std::io::Result<AdminThread> {
        let address = listener.local_addr()?;
        let listener = listener.into_std()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("rasgk-admin".into())
            .spawn(move || {
                yield_to_ras();
                let runtime = match super::runtime() {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        tracing::error!(%address, %error, "cannot run the admin port");
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(error) => {
                            tracing::error!(%address, %error, "cannot serve the admin port");
                            return;
                        }
                    };
                    tokio::select! {
                        () = serve(listener, queries, (events, tap), token) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime closes every admin connection still open.
            })?;
        Ok(AdminThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// Lowers this thread's priority to the least (nice 19, Linux), so that on a machine whose
/// CPUs are all busy the RAS thread runs first and the admin port in what is left: a
/// watcher of `/api/events` then lags and skips batches rather than slow RAS down.
fn yield_to_ras() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take and return plain integers; on Linux a thread id
    // names this one thread, so only its own priority changes.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "the admin port keeps its priority");
        }
    }
}

impl Drop for AdminThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves the admin port until its future is dropped.
async fn serve(
    listener: tokio::net::TcpListener,
    queries: mpsc::Sender<Query>,
    (events, tap): (broadcast::Sender<Events>, Tap),
    token: Option<String>,
) {
    let admin = Admin {
        queries,
        events,
        tap,
        token: token.map(Arc::from),
        exam: Arc::default(),
    };
    if let Err(error) = axum::serve(listener, router(admin)).await {
        tracing::error!(%error, "admin port stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gatekeeper::events::Event;

    #[test]
    fn a_batch_is_one_chunk_of_server_sent_events_one_json_line_each() {
        let batch = [
            Event::Rejected {
                message: "GRJ",
                reason: "resourceUnavailable",
            },
            Event::ClanState {
                clan: "clan-a".into(),
                in_service: false,
            },
        ];
        let text = String::from_utf8(server_sent(&batch)).unwrap();
        assert_eq!(
            text,
            "data: {\"type\":\"rejected\",\"message\":\"GRJ\",\"reason\":\"resourceUnavailable\"}\n\n\
             data: {\"type\":\"clan_state\",\"clan\":\"clan-a\",\"in_service\":false}\n\n"
        );
        assert!(server_sent::<Event>(&[]).is_empty());
    }
}
